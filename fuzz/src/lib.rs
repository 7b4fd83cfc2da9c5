//! The fuzz targets' bodies, shared with the regular tests that replay the corpus
//! (`tests/fuzz_replay.rs` includes `checks.rs` by path), so CI runs exactly what
//! the fuzzer ran.

pub mod checks;
