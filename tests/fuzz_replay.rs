//! Replays every input of the fuzz corpus (`fuzz/corpus/<target>/`, minimised, and
//! `fuzz/artifacts/<target>/` reproducers of crashes once fixed) through the same
//! checks the fuzz targets run, so CI holds what the fuzzer found. The fuzzer itself
//! needs a nightly toolchain: `scripts/fuzz.sh`.

#[path = "../fuzz/src/checks.rs"]
mod checks;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut inputs = 0;
    for dir in ["corpus", "artifacts"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            let outcome = std::panic::catch_unwind(|| check(&data));
            assert!(outcome.is_ok(), "{target}: {} fails", path.display());
            inputs += 1;
        }
    }
    assert!(inputs > 0, "{target}: no corpus under fuzz/corpus/{target}");
}

#[test]
fn dump_data() {
    replay("dump_data", checks::dump_data);
}

#[test]
fn dump_stats() {
    replay("dump_stats", checks::dump_stats);
}

#[test]
fn dump_json() {
    replay("dump_json", checks::dump_json);
}

#[test]
fn template() {
    replay("template", checks::template);
}

#[test]
fn agent_message() {
    replay("agent_message", checks::agent_message);
}

#[test]
fn server_message() {
    replay("server_message", checks::server_message);
}

#[test]
fn rest_body() {
    replay("rest_body", checks::rest_body);
}

#[test]
fn agent_config() {
    replay("agent_config", checks::agent_config);
}

#[test]
fn http_request() {
    replay("http_request", checks::http_request);
}
