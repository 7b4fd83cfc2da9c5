//! The `vrrp-monitor` binary: the command line (`cli`), then the library
//! (`app::main` runs the server, `app::backup` copies its database,
//! `import::main` takes over the original project's).

use vrrp_monitor::cli::{self, Command};

/// jemalloc, not glibc's malloc, for everything Rust allocates: a thread per
/// agent connection meets glibc's per-thread cache (tcache, about 45 KiB a
/// thread) and its arenas' fragmentation. See ARCHITECTURE.md, Memory.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read once at its start (`malloc_conf`): one arena per
/// CPU, no per-thread cache (thousands of threads each holding freed blocks is
/// the cost being avoided), freed pages returned after a second by jemalloc's
/// own background thread, so a quiet server gives memory back too (Argon2's
/// 19 MiB per login).
#[used]
#[export_name = "_rjem_malloc_conf"]
static JEMALLOC_OPTIONS: Options = Options(
    c"percpu_arena:percpu,tcache:false,dirty_decay_ms:1000,muzzy_decay_ms:0,background_thread:true"
        .as_ptr(),
);

/// A C string pointer that may sit in a static (jemalloc reads it as `const char *`).
#[repr(transparent)]
struct Options(*const std::ffi::c_char);
// SAFETY: it points at a static string that nothing writes.
unsafe impl Sync for Options {}

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
        Ok(Command::ImportKasm { db, config }) => {
            vrrp_monitor::import::main(&db, config.as_deref())
        }
        Err(e) => {
            eprintln!("vrrp-monitor: {e}\nTry: vrrp-monitor --help");
            2
        }
    };
    std::process::exit(code);
}
