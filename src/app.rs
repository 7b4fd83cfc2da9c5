//! Start-up of the server and the state every request shares.
//!
//! [`main`] is what the binary runs: logging, config, database, first-run
//! administrator, listen, serve until a signal. [`run`] is the part tests can
//! drive in-process with their own listener, clock and shutdown switch.

use crate::activity::{self, Event, LevelPolicy};
use crate::agents::clients;
use crate::agents::AgentRegistry;
use crate::auth::rate_limit::RateLimiter;
use crate::auth::session::SessionKeys;
use crate::auth::users::{self, Bootstrap};
use crate::clock::{iso, SharedClock, SystemClock};
use crate::clusters;
use crate::config::settings::Settings;
use crate::config::{self, Env, ServerConfig};
use crate::db::Db;
use crate::db::DbError;
use crate::lifecycle::{self, Shutdown};
use crate::live::{envelope, Hub};
use crate::schedulers::{self, Scheduler};
use crate::{fatal, http, logging};
use parking_lot::Mutex;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Changes of the client list within this window go out as one CLIENTS_UPDATE.
pub const CLIENTS_COALESCE: Duration = Duration::from_millis(100);

/// Open connections get this long to finish after a stop signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// What every request handler shares. Built once at start.
/// How long a cluster list request waits for the `cluster-eval` thread.
pub const LIST_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

pub struct App {
    pub config: ServerConfig,
    pub db: Db,
    pub clock: SharedClock,
    pub sessions: SessionKeys,
    pub login_limiter: RateLimiter,
    /// The port we listen on: how an upgraded connection's socket is found.
    pub port: u16,
    pub hub: Hub,
    pub agents: AgentRegistry,
    /// Every client's last reading, mirrored from the database.
    pub readings: crate::agents::readings::Latest,
    /// The settings block, live: retention, intervals, level overrides.
    pub settings: Settings,
    pub token_cleanup: Scheduler,
    pub notification_cleanup: Scheduler,
    /// One writer of the config file at a time.
    pub config_file: Mutex<()>,
    clients_changed: crossbeam_channel::Sender<()>,
    /// The webhook threads.
    pub webhooks: crate::webhooks::delivery::Dispatcher,
    /// To the `cluster-eval` thread.
    evaluate: crossbeam_channel::Sender<crate::clusters::thread::EvalMsg>,
    /// The first-run administrator and the file holding its generated password,
    /// removed once that password is changed.
    initial_password: Mutex<Option<(i64, PathBuf)>>,
}

impl App {
    /// Every client with its live status, as the API shows them.
    pub fn client_list(&self) -> Result<serde_json::Value, DbError> {
        let list = clients::list(&self.db)?;
        Ok(serde_json::Value::Array(
            list.iter()
                .map(|c| c.to_json(self.agents.capabilities(&c.id).as_deref()))
                .collect(),
        ))
    }

    /// `GET /api/v1/keepalived/clusters` as JSON: from the `cluster-eval` thread,
    /// which keeps the grouping up to date anyway (a few ms at 2,000 hosts instead
    /// of grouping every reading anew). Should that thread not answer in
    /// [`LIST_WAIT`], the list is built here from the stored readings.
    pub fn cluster_list_json(&self) -> Result<Vec<u8>, DbError> {
        let (reply, answer) = crossbeam_channel::bounded(1);
        if self
            .evaluate
            .send(crate::clusters::thread::EvalMsg::List(reply))
            .is_ok()
        {
            match answer.recv_timeout(LIST_WAIT) {
                Ok(body) => return Ok(body),
                Err(_) => log::warn!(
                    "The cluster evaluator did not answer within {} s; the cluster list is built without it",
                    LIST_WAIT.as_secs()
                ),
            }
        }
        let list = self.cluster_list()?;
        Ok(serde_json::to_vec(&list).unwrap_or_else(|_| b"[]".to_vec()))
    }

    /// Every cluster as the dashboard shows it, worst first, grouped anew from the
    /// stored readings.
    pub fn cluster_list(&self) -> Result<Vec<clusters::Cluster>, DbError> {
        let hosts: Vec<clusters::HostView> = clients::list(&self.db)?
            .into_iter()
            .filter_map(|c| {
                let reading = self.readings.get(&c.id)?;
                Some(clusters::HostView::new(
                    &c,
                    &reading,
                    self.agents.is_online(&c.id),
                ))
            })
            .collect();
        Ok(clusters::group(&hosts))
    }

    /// Tells the cluster evaluator something changed; never blocks.
    pub fn tell_evaluator(&self, msg: crate::clusters::thread::EvalMsg) {
        let _ = self.evaluate.send(msg);
    }

    /// Tells every dashboard the client list changed.
    ///
    /// The list is built by the `clients-feed` thread, at most once per
    /// [`CLIENTS_COALESCE`]: a thousand agents connecting at once cost one list
    /// per window, not a thousand lists of a thousand clients each.
    pub fn broadcast_clients(&self) {
        let _ = self.clients_changed.try_send(());
    }

    /// Stores events whose ids are new (after the level policy), and passes the
    /// newly stored on to dashboards. False only when storing failed.
    pub fn record_activity(&self, events: Vec<Event>) -> bool {
        let kept: Vec<Event> = events
            .into_iter()
            .filter_map(|mut e| {
                e.level = self.settings.level_for(&e.kind, e.level)?;
                Some(e)
            })
            .collect();
        match activity::insert_new(&self.db, kept) {
            Ok(stored) => {
                if !stored.is_empty() {
                    let records: Vec<_> = stored.iter().map(|e| e.to_json(false)).collect();
                    self.hub.broadcast(envelope(
                        "ACTIVITY_APPENDED",
                        serde_json::Value::Array(records),
                    ));
                    self.webhooks.offer(&stored);
                }
                true
            }
            Err(e) => {
                log::error!("Cannot store activity: {e}");
                false
            }
        }
    }

    pub fn first_admin_id(&self) -> i64 {
        self.initial_password
            .lock()
            .as_ref()
            .map_or(-1, |(id, _)| *id)
    }

    pub fn forget_initial_password(&self) {
        if let Some((_, path)) = self.initial_password.lock().take() {
            if std::fs::remove_file(&path).is_ok() {
                log::info!(
                    "The first-run administrator changed its password; removed {}",
                    path.display()
                );
            }
        }
    }
}

/// A failure that ends the start (exit code 1).
#[derive(Debug)]
pub struct FatalError(pub String);

impl std::fmt::Display for FatalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The binary's entry point; returns the exit code.
pub fn main() -> i32 {
    // Everything the server writes (database, config, password file) is private.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    fix_mmap_threshold();
    let env = Env::from_process();
    let format = match config::log_format(&env) {
        Ok(f) => f,
        Err(e) => {
            logging::init(config::LogFormat::Pretty, config::LogLevel::Info);
            fatal!("Invalid configuration: {e}");
            return 1;
        }
    };
    let env_level = config::env_log_level(&env);
    logging::init(
        format,
        env_level
            .clone()
            .ok()
            .flatten()
            .unwrap_or(config::LogLevel::Info),
    );
    let loaded = match config::load(&env) {
        Ok(l) => l,
        Err(e) => {
            fatal!("Invalid configuration: {e}");
            return 1;
        }
    };
    logging::set_level(loaded.config.log_level);
    for notice in &loaded.notices {
        log::info!("{notice}");
    }
    for warning in &loaded.warnings {
        log::warn!("{warning}");
    }
    lifecycle::install_panic_hook();

    let addr = format!("0.0.0.0:{}", loaded.config.port);
    let listener = match TcpListener::bind(&addr) {
        Ok(l) => l,
        Err(e) => {
            fatal!("Cannot listen on {addr}: {e}");
            return 1;
        }
    };
    let shutdown = Shutdown::new();
    if let Err(e) = lifecycle::handle_signals(shutdown.clone()) {
        fatal!("Cannot install signal handlers: {e}");
        return 1;
    }
    match run(loaded.config, listener, Arc::new(SystemClock), shutdown) {
        Ok(()) => 0,
        Err(e) => {
            fatal!("{e}");
            1
        }
    }
}

/// Argon2 allocates 19 MiB per password hash. glibc raises its mmap threshold after
/// the first such block is freed, so later ones come from the heap and can stay
/// resident for good (measured: 26 MiB instead of 8 after a login and 10,000
/// requests). A fixed threshold gives every large block back when it is freed.
fn fix_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator tuning; called before other threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Serves on `listener` until `shutdown` is triggered, then gives open requests
/// [`SHUTDOWN_GRACE`] to finish.
pub fn run(
    config: ServerConfig,
    listener: TcpListener,
    clock: SharedClock,
    shutdown: Shutdown,
) -> Result<(), FatalError> {
    let db_path = config.data_dir.join("vrrp-monitor.db");
    let (db, _writer) = Db::open(&db_path, &iso(clock.now()))
        .map_err(|e| FatalError(format!("Database {}: {e}", db_path.display())))?;

    let initial_password = bootstrap_admin(&config, &db, &clock)?;
    let local = listener
        .local_addr()
        .map_err(|e| FatalError(format!("Cannot read the listen address: {e}")))?;
    let (clients_changed, clients_feed) = crossbeam_channel::bounded(1);
    let (evaluate, eval_inbox) = crossbeam_channel::unbounded();
    let app = Arc::new(App {
        sessions: SessionKeys::new(&config.jwt_secret, config.jwt_expires_in),
        login_limiter: RateLimiter::login(),
        port: local.port(),
        hub: Hub::default(),
        agents: AgentRegistry::default(),
        readings: crate::agents::readings::Latest::load(&db)
            .map_err(|e| FatalError(format!("Cannot read the stored readings: {e}")))?,
        settings: Settings::new(config.settings.clone())
            .map_err(|e| FatalError(format!("settings.activity_level_overrides: {e}")))?,
        token_cleanup: Scheduler::new(
            "token-cleanup",
            "token_cleanup_interval_hours",
            Box::new(|app, now| {
                schedulers::clean_tokens(
                    &app.db,
                    app.settings.number("token_retention_days", 30),
                    now,
                )
            }),
        ),
        notification_cleanup: Scheduler::new(
            "notification-cleanup",
            "notification_cleanup_interval_hours",
            Box::new(|app, now| {
                let days = app.settings.number("notification_retention_days", 90);
                let keep = app.settings.number("notification_retention_count", 500);
                schedulers::clean_activity(&app.db, days, keep, now)
            }),
        ),
        config_file: Mutex::new(()),
        clients_changed,
        evaluate,
        webhooks: Default::default(),
        initial_password: Mutex::new(initial_password),
        config,
        db,
        clock,
    });

    spawn_clients_feed(app.clone(), clients_feed, shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the clients-feed thread: {e}")))?;
    app.webhooks.attach(&app);
    crate::clusters::thread::spawn(app.clone(), eval_inbox, shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the cluster-eval thread: {e}")))?;
    for which in [Which::Tokens, Which::Notifications] {
        let scheduler = which.of(&app);
        scheduler.load(&app.db).map_err(|e| {
            FatalError(format!("Cannot read the status of {}: {e}", scheduler.name))
        })?;
        let (app, stop) = (app.clone(), shutdown.clone());
        std::thread::Builder::new()
            .name(format!("sched:{}", scheduler.name))
            .spawn(move || which.of(&app).run_timer(&app, &stop))
            .map_err(|e| FatalError(format!("Cannot start a scheduler thread: {e}")))?;
    }
    let server = http::start(app.clone(), listener, shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the HTTP server: {e}")))?;
    log::info!("vrrp-monitor listening on http://{local} (log in at http://localhost:{}/ with POST /api/login)", local.port());

    shutdown.wait();
    if !server.drain(SHUTDOWN_GRACE) {
        log::warn!("Open connections did not finish within {SHUTDOWN_GRACE:?}; stopping anyway");
    }
    log::info!("Stopped");
    Ok(())
}

/// Names one of the two schedulers (a thread cannot borrow from the `Arc<App>` it owns).
#[derive(Clone, Copy)]
pub enum Which {
    Tokens,
    Notifications,
}

impl Which {
    pub fn of(self, app: &App) -> &Scheduler {
        match self {
            Which::Tokens => &app.token_cleanup,
            Which::Notifications => &app.notification_cleanup,
        }
    }
}

/// The `clients-feed` thread: sends the client list to dashboards when it changed,
/// coalescing the changes of one window into one list that replaces any list a
/// slow dashboard has not taken yet.
fn spawn_clients_feed(
    app: Arc<App>,
    changed: crossbeam_channel::Receiver<()>,
    shutdown: Shutdown,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("clients-feed".into())
        .spawn(move || {
            while !shutdown.is_set() {
                if changed.recv_timeout(Duration::from_millis(500)).is_err() {
                    continue;
                }
                std::thread::sleep(CLIENTS_COALESCE);
                let _ = changed.try_recv();
                match app.client_list() {
                    Ok(list) => app.hub.broadcast_latest(envelope("CLIENTS_UPDATE", list)),
                    Err(e) => log::error!("Cannot list clients for the dashboards: {e}"),
                }
            }
        })?;
    Ok(())
}

/// Creates the administrator on first run. A generated password is shown on the
/// terminal when there is one, and otherwise written to a 0600 file in the data
/// directory: it never goes into a log line.
fn bootstrap_admin(
    config: &ServerConfig,
    db: &Db,
    clock: &SharedClock,
) -> Result<Option<(i64, PathBuf)>, FatalError> {
    let result = users::bootstrap_admin(
        db,
        &config.admin_username,
        config.admin_password.as_deref(),
        iso(clock.now()),
    )
    .map_err(|e| FatalError(format!("Cannot create the first-run administrator: {e:?}")))?;
    match result {
        Bootstrap::NotNeeded => Ok(None),
        Bootstrap::Created { username } => {
            log::info!("Created the first-run administrator \"{username}\" with the password from SVC_ADMIN_PASSWORD");
            Ok(None)
        }
        Bootstrap::CreatedWithGenerated { username, password } => {
            let id = users::find_by_username(db, &username)
                .ok()
                .flatten()
                .map_or(-1, |u| u.id);
            let path = config.data_dir.join("initial-admin-password");
            vrrp_fs::write_private_atomic(&path, format!("{password}\n").as_bytes())
                .map_err(|e| FatalError(format!("Cannot write {}: {e}", path.display())))?;
            log::warn!(
                "Created the first-run administrator \"{username}\"; its password is in {} (mode 0600, removed when the password is changed). Change it after the first login.",
                path.display()
            );
            if nix::unistd::isatty(std::io::stdout()).unwrap_or(false) {
                println!("\n  First-run administrator: {username}\n  Password:                {password}\n");
            }
            Ok(Some((id, path)))
        }
    }
}
