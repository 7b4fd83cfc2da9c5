use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::Duration;

/// Manages a collection of threads.
///
/// A new thread is created every time all the existing threads are full.
/// Any idle thread will automatically die after a few seconds.
pub struct TaskPool {
    sharing: Arc<Sharing>,
}

struct Sharing {
    // list of the tasks to be done by worker threads
    todo: Mutex<VecDeque<Box<dyn FnMut() + Send>>>,

    // condvar that will be notified whenever a task is added to `todo`
    condvar: Condvar,

    // number of total worker threads running
    active_tasks: AtomicUsize,

    // number of idle worker threads
    waiting_tasks: AtomicUsize,
}

/// Minimum number of active threads.
static MIN_THREADS: usize = 4;

struct Registration<'a> {
    nb: &'a AtomicUsize,
}

impl<'a> Registration<'a> {
    fn new(nb: &'a AtomicUsize) -> Registration<'a> {
        nb.fetch_add(1, Ordering::Release);
        Registration { nb }
    }
}

impl<'a> Drop for Registration<'a> {
    fn drop(&mut self) {
        self.nb.fetch_sub(1, Ordering::Release);
    }
}

impl TaskPool {
    pub fn new() -> TaskPool {
        let pool = TaskPool {
            sharing: Arc::new(Sharing {
                todo: Mutex::new(VecDeque::new()),
                condvar: Condvar::new(),
                active_tasks: AtomicUsize::new(0),
                waiting_tasks: AtomicUsize::new(0),
            }),
        };

        for _ in 0..MIN_THREADS {
            // vrrp-monitor patch: a thread that cannot start now is started
            // with the first connection that needs it.
            let _ = pool.add_thread(None);
        }

        pool
    }

    /// Executes a function in a thread.
    /// If no thread is available, spawns a new one. vrrp-monitor patch: when no
    /// thread can be started, the task is dropped and that is an error (upstream
    /// panicked, which ended the accept thread).
    pub fn spawn(&self, code: Box<dyn FnMut() + Send>) -> std::io::Result<()> {
        let mut queue = self.sharing.todo.lock().unwrap();

        // vrrp-monitor patch: upstream queued the task whenever one thread was
        // waiting, but a notified thread counts as waiting until it wakes, so a
        // burst queued many tasks behind one waiting thread. A task is a whole
        // connection, so the rest waited for some other connection to end (for a
        // WebSocket: never). Both counts change only under this lock: queue a
        // task only for a waiting thread that no queued task has claimed yet.
        if self.sharing.waiting_tasks.load(Ordering::Acquire) > queue.len() {
            queue.push_back(code);
            self.sharing.condvar.notify_one();
            Ok(())
        } else {
            drop(queue);
            self.add_thread(Some(code))
        }
    }

    fn add_thread(&self, initial_fn: Option<Box<dyn FnMut() + Send>>) -> std::io::Result<()> {
        let sharing = self.sharing.clone();

        // vrrp-monitor patch: a `Builder` reports running out of threads instead
        // of panicking; the kernel name (not the Rust one, see `conns::name_thread`)
        // says what the thread is; a panic in a task ends that connection only.
        thread::Builder::new().spawn(move || {
            crate::conns::name_thread("http-conn");
            let sharing = sharing;
            let _active_guard = Registration::new(&sharing.active_tasks);

            if let Some(f) = initial_fn {
                run_contained(f);
            }

            loop {
                let mut task: Box<dyn FnMut() + Send> = {
                    let mut todo = sharing.todo.lock().unwrap();

                    let task;
                    loop {
                        if let Some(poped_task) = todo.pop_front() {
                            task = poped_task;
                            break;
                        }
                        let _waiting_guard = Registration::new(&sharing.waiting_tasks);

                        let received =
                            if sharing.active_tasks.load(Ordering::Acquire) <= MIN_THREADS {
                                todo = sharing.condvar.wait(todo).unwrap();
                                true
                            } else {
                                let (new_lock, waitres) = sharing
                                    .condvar
                                    .wait_timeout(todo, Duration::from_millis(5000))
                                    .unwrap();
                                todo = new_lock;
                                !waitres.timed_out()
                            };

                        if !received && todo.is_empty() {
                            return;
                        }
                    }

                    task
                };

                run_contained(task);
            }
        })?;
        Ok(())
    }
}

/// vrrp-monitor patch: runs one connection's task; its panic (already reported
/// by the panic hook) ends that connection, not the pool's thread.
fn run_contained(mut task: Box<dyn FnMut() + Send>) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || task()));
}

impl Drop for TaskPool {
    fn drop(&mut self) {
        self.sharing
            .active_tasks
            .store(999_999_999, Ordering::Release);
        self.sharing.condvar.notify_all();
    }
}
