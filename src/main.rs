fn main() {
    std::process::exit(vrrp_monitor::app::main());
}
