//! Fuzz target `http_request`: see `fuzz/src/checks.rs` for what it feeds and asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vrrp_fuzz::checks::http_request(data));
