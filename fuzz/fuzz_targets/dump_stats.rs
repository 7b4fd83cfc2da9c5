//! Fuzz target `dump_stats`: see `fuzz/src/checks.rs` for what it feeds and asserts.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| vrrp_fuzz::checks::dump_stats(data));
