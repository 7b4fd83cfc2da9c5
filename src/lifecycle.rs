//! Start, stop and failure policy of the process.
//!
//! - SIGINT/SIGTERM trigger [`Shutdown`] once; a second signal changes nothing.
//! - SIGHUP asks for the provisioning files to be read again ([`Reload`]).
//! - A panic inside [`contain_panics`] (one request, later one WebSocket session)
//!   is logged and answered there. Any other panic is an uncaught fatal error:
//!   logged at fatal level, and the process exits with code 1 after 250 ms.
//! - Except in threads we did not create: a library's threads (tiny_http's accept,
//!   connection and reaper threads) are judged by the observer registered with
//!   [`on_foreign_panic`], which may let that thread's step end alone (tiny_http
//!   catches the unwind: that connection ends, accepting goes on).

use crossbeam_channel::{bounded, Receiver, Sender};
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// A one-way switch every long-lived thread watches.
#[derive(Clone)]
pub struct Shutdown {
    flag: Arc<AtomicBool>,
    // Dropping the only sender wakes every waiter at once.
    wake_tx: Arc<parking_lot::Mutex<Option<Sender<()>>>>,
    wake_rx: Receiver<()>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    pub fn new() -> Self {
        let (tx, rx) = bounded(0);
        Shutdown {
            flag: Arc::new(AtomicBool::new(false)),
            wake_tx: Arc::new(parking_lot::Mutex::new(Some(tx))),
            wake_rx: rx,
        }
    }

    /// Returns true the first time only.
    pub fn trigger(&self) -> bool {
        let first = !self.flag.swap(true, Ordering::SeqCst);
        self.wake_tx.lock().take();
        first
    }

    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Sleeps up to `timeout`; true when shutdown was triggered.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let _ = self.wake_rx.recv_timeout(timeout);
        self.is_set()
    }

    pub fn wait(&self) {
        while !self.is_set() {
            let _ = self.wake_rx.recv();
        }
    }
}

/// Asks for the provisioning files to be read again (SIGHUP). Asks made while
/// one waits are one ask: a reading reads the files as they are by then.
#[derive(Clone)]
pub struct Reload {
    tx: Sender<()>,
    rx: Receiver<()>,
}

impl Default for Reload {
    fn default() -> Self {
        Self::new()
    }
}

impl Reload {
    pub fn new() -> Self {
        let (tx, rx) = bounded(1);
        Reload { tx, rx }
    }

    /// Never blocks.
    pub fn ask(&self) {
        let _ = self.tx.try_send(());
    }

    /// Where the asks arrive (the `provisioning` thread).
    pub fn asks(&self) -> Receiver<()> {
        self.rx.clone()
    }
}

/// Turns SIGINT and SIGTERM into a shutdown and SIGHUP into a [`Reload`] ask,
/// on a thread named `signals`.
pub fn handle_signals(shutdown: Shutdown, reload: Reload) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if signal == SIGHUP {
                    if shutdown.is_set() {
                        log::info!("Received SIGHUP while shutting down: ignored");
                    } else {
                        log::info!("Received SIGHUP: reading the provisioning files again");
                        reload.ask();
                    }
                } else if shutdown.trigger() {
                    log::info!(
                        "Received signal {signal}: shutting down (open connections get 5 s)"
                    );
                } else {
                    log::info!("Received signal {signal} again: already shutting down");
                }
            }
        })?;
    Ok(())
}

thread_local! {
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f`; a panic inside it is logged and returned as `None` instead of ending
/// the process.
pub fn contain_panics<R>(f: impl FnOnce() -> R) -> Option<R> {
    let outer = CONTAINED.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(outer));
    result.ok()
}

/// Decides about a panic outside [`contain_panics`] in a thread of the kernel name
/// `comm` (a library's thread inherits its creator's name) and thread id `tid`:
/// `true` lets that thread end alone (the observer logged what it wants to);
/// `false` keeps the fatal policy.
pub type ForeignPanic = dyn Fn(i32, &str, &str) -> bool + Send + Sync;

static FOREIGN: RwLock<Option<Arc<ForeignPanic>>> = RwLock::new(None);

/// Registers the observer for panics in threads named by a library (see the
/// module docs); a later call replaces it.
pub fn on_foreign_panic(observer: Arc<ForeignPanic>) {
    if let Ok(mut slot) = FOREIGN.write() {
        *slot = Some(observer);
    }
}

/// The kernel's name of the calling thread. Read with `prctl`, not from `/proc`:
/// a panic for want of descriptors must not need one.
fn kernel_thread_name() -> String {
    let mut buf = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes (NUL included) into the buffer.
    let rc = unsafe {
        libc::prctl(
            libc::PR_GET_NAME,
            buf.as_mut_ptr() as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Installs the panic policy described in the module docs.
pub fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        let name = thread.name().unwrap_or("unnamed");
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "panic".to_owned());
        if CONTAINED.with(Cell::get) {
            log::error!(
                "Thread {name} panicked{location}: {message} (contained; the server goes on)"
            );
        } else {
            // A clone of the observer: it may log, and must not run under the lock.
            let observer = FOREIGN.read().ok().and_then(|o| o.clone());
            if thread.name().is_none() {
                if let Some(observer) = observer {
                    let tid = nix::unistd::gettid().as_raw();
                    if observer(tid, &kernel_thread_name(), &format!("{message}{location}")) {
                        return;
                    }
                }
            }
            crate::fatal!("Uncaught panic in thread {name}{location}: {message}");
            std::thread::sleep(Duration::from_millis(250));
            std::process::exit(1);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_triggers_once_and_wakes_waiters() {
        let s = Shutdown::new();
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || s.wait_timeout(Duration::from_secs(30)))
        };
        assert!(s.trigger());
        assert!(!s.trigger());
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn contained_panic_is_an_error() {
        install_panic_hook();
        assert_eq!(contain_panics(|| 5), Some(5));
        assert_eq!(contain_panics(|| -> i32 { panic!("boom") }), None);
    }
}
