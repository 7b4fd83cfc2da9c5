//! The `vrrp-agent` binary: everything lives in the library (`lifecycle::main`).

fn main() {
    std::process::exit(vrrp_agent::lifecycle::main());
}
