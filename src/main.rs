//! The `vrrp-monitor` binary: everything lives in the library (`app::main`).

fn main() {
    std::process::exit(vrrp_monitor::app::main());
}
