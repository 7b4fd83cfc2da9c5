//! Fatal errors of the agent: a thread whose body panics ends the process.
//!
//! [`guard`] wraps every long-lived thread's body; [`fatal`] logs at fatal level,
//! flushes what persistence has pending (registered once with
//! [`flush_on_fatal`]) and exits 1 after 250 ms. The threads get this from here,
//! not from `lifecycle`, which starts them.

use crate::logging;
use std::sync::OnceLock;
use std::time::Duration;

/// How a fatal error flushes pending writes, waiting at most the given time.
type Flush = Box<dyn Fn(Duration) + Send + Sync>;

/// Set once persistence runs, so a fatal error can flush pending writes. A
/// function rather than the persistence handle: persistence's thread runs
/// inside [`guard`], so naming its handle here would make the two modules
/// import each other.
static PERSIST: OnceLock<Flush> = OnceLock::new();

/// Makes a fatal error call `flush` (persistence's, with a deadline) before the
/// process exits.
pub fn flush_on_fatal(flush: impl Fn(Duration) + Send + Sync + 'static) {
    let _ = PERSIST.set(Box::new(flush));
}

/// Runs a thread body; a panic escaping it is fatal for the process.
pub fn guard<F: FnOnce()>(name: &str, f: F) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).is_err() {
        fatal(&format!("thread {name} failed"));
    }
}

/// Logs at fatal level, flushes pending writes, exits 1 after 250 ms.
pub fn fatal(msg: &str) -> ! {
    log::error!(target: logging::FATAL, "{msg}; exiting");
    if let Some(flush) = PERSIST.get() {
        flush(Duration::from_secs(2));
    }
    std::thread::sleep(Duration::from_millis(250));
    std::process::exit(1);
}
