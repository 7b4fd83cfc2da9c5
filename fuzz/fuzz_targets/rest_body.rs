//! Fuzz target `rest_body`: see `fuzz/src/checks.rs` for what it feeds and asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vrrp_fuzz::checks::rest_body(data));
