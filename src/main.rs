//! The `vrrp-monitor` binary: the command line (`cli`), then the library
//! (`app::main` runs the server, `app::backup` copies its database).

use vrrp_monitor::cli::{self, Command};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse(&args) {
        Ok(Command::Serve) => vrrp_monitor::app::main(),
        Ok(Command::Help) => {
            print!("{}", cli::help());
            0
        }
        Ok(Command::Version) => {
            println!("vrrp-monitor {}", cli::VERSION);
            0
        }
        Ok(Command::Backup(file)) => vrrp_monitor::app::backup(&file),
        Err(e) => {
            eprintln!("vrrp-monitor: {e}\nTry: vrrp-monitor --help");
            2
        }
    };
    std::process::exit(code);
}
