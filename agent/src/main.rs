//! The `vrrp-agent` binary: the command line (`cli`), then the library
//! (`lifecycle::main`, or `register_once::main` for `vrrp-agent register`).

use vrrp_agent::cli::{self, Command};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let code = match cli::parse(&args) {
        Ok(Command::Run) => vrrp_agent::lifecycle::main(),
        Ok(Command::Help) => {
            print!("{}", cli::help());
            0
        }
        Ok(Command::Register { token_file }) => {
            vrrp_agent::register_once::main(token_file.as_deref())
        }
        Ok(Command::Version) => {
            println!("vrrp-agent {}", vrrp_agent::lifecycle::VERSION);
            0
        }
        Err(e) => {
            eprintln!("vrrp-agent: {e}\nTry: vrrp-agent --help");
            2
        }
    };
    std::process::exit(code);
}
