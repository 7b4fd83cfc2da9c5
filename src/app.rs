//! Start-up of the server: builds the shared parts, starts the long-lived
//! threads with the handles they use, then the HTTP layer with its `App`.
//!
//! [`main`] is what the binary runs: logging, config, database, first-run
//! administrator, listen, serve until a signal. [`run`] is the part tests can
//! drive in-process with their own listener, clock and shutdown switch.

use crate::activity::silences::{self, Silences};
use crate::activity::ActivitySink;
use crate::agents::feed;
use crate::agents::readings::Latest;
use crate::agents::session::SessionHandles;
use crate::agents::AgentRegistry;
use crate::auth::oidc::Oidc;
use crate::auth::rate_limit::RateLimiter;
use crate::auth::sealed::SealKey;
use crate::auth::session::SessionKeys;
use crate::auth::users::{self, Bootstrap};
use crate::clock::{iso, SharedClock, SystemClock};
use crate::clusters;
use crate::config::settings::{Settings, HISTORY_RETENTION_DEFAULT, HISTORY_RETENTION_KEY};
use crate::config::{self, Env, ServerConfig};
use crate::db::Db;
use crate::ha;
use crate::heartbeat::{self, Heartbeat};
use crate::http::sessions::outbound::{DialHandles, Dialer};
use crate::http::{self, App};
use crate::lifecycle::{self, Reload, Shutdown};
use crate::live::Hub;
use crate::provisioning::{self, Provisioning};
use crate::schedulers::{self, Scheduler};
use crate::webhooks::delivery::Dispatcher;
use crate::webhooks::live::Webhooks;
use crate::{fatal, logging};
use parking_lot::Mutex;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Open connections get this long to finish after a stop signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A failure that ends the start (exit code 1).
#[derive(Debug)]
pub struct FatalError(pub String);

impl std::fmt::Display for FatalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The database file in the data directory.
pub const DB_FILE: &str = crate::db::FILE;

/// The binary's entry point; returns the exit code.
pub fn main() -> i32 {
    // Everything the server writes (database, config, password file) is private.
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    tune_malloc();
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
    let reload = Reload::new();
    if let Err(e) = lifecycle::handle_signals(shutdown.clone(), reload.clone()) {
        fatal!("Cannot install signal handlers: {e}");
        return 1;
    }
    match run_with_reload(
        loaded.config,
        listener,
        Arc::new(SystemClock),
        shutdown,
        reload,
    ) {
        Ok(()) => 0,
        Err(e) => {
            fatal!("{e}");
            1
        }
    }
}

/// glibc's malloc tuning, before other threads start. Rust's allocations go to
/// jemalloc (`src/main.rs`); what still reaches glibc is C code's, SQLite's
/// above all (its page caches and statements, on the writer and on any thread
/// that reads). The settings were measured when glibc served everything
/// (ARCHITECTURE.md, Memory) and are kept for those:
///
/// - a fixed mmap threshold (128 KiB): glibc otherwise raises it after the first
///   large block is freed, and later large blocks stay resident for good
///   (measured with Argon2's 19 MiB: 26 MiB instead of 8 after a login);
/// - one arena per core (`M_ARENA_MAX`), not up to 8: with a thread per
///   connection, every extra arena keeps its own free memory;
/// - no fastbins (`M_MXFAST` 0): with thousands of threads sharing those arenas,
///   their consolidation on every allocation of a kilobyte or more was 6% of the
///   CPU at 5,000 agents.
fn tune_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only changes allocator tuning; called before other threads start.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
            libc::mallopt(libc::M_MXFAST, 0);
        }
    }
}

/// Serves on `listener` until `shutdown` is triggered, then gives open requests
/// [`SHUTDOWN_GRACE`] to finish. The provisioning files are read at start only
/// (tests in-process); [`run_with_reload`] reads them again on each ask.
pub fn run(
    config: ServerConfig,
    listener: TcpListener,
    clock: SharedClock,
    shutdown: Shutdown,
) -> Result<(), FatalError> {
    run_with_reload(config, listener, clock, shutdown, Reload::new())
}

/// As [`run`]; each `reload` ask (SIGHUP) reads the provisioning files again.
pub fn run_with_reload(
    config: ServerConfig,
    listener: TcpListener,
    clock: SharedClock,
    shutdown: Shutdown,
    reload: Reload,
) -> Result<(), FatalError> {
    let db_path = config.data_dir.join(DB_FILE);
    let (db, _writer) = Db::open(&db_path, &iso(clock.utc()))
        .map_err(|e| FatalError(format!("Database {}: {e}", db_path.display())))?;

    let db = Arc::new(db);
    let oidc = discover_oidc(&config)?;
    let initial_password = bootstrap_admin(&config, &db, &clock)?;
    let Shared {
        role,
        gate,
        webhooks,
        hub,
        agents,
        readings,
        settings,
        counters,
        silences,
        activity,
    } = shared_state(&config, &db, &clock)?;
    // Before any thread reads the settings or any event is offered to webhooks.
    let provisioning_handles = provision_at_start(
        &config,
        provisioning::apply::Handles {
            db: db.clone(),
            clock: clock.clone(),
            settings: settings.clone(),
            silences: silences.clone(),
            activity: Arc::new(activity.clone()),
            webhooks: webhooks.clone(),
            allowed_networks: config.webhooks.allowed_networks.clone(),
            state: Arc::new(Provisioning::new(provisioning::dir_of(&config.path))),
        },
    )?;
    start_silence_expiry(
        silences::Handles {
            silences: silences.clone(),
            clock: clock.clone(),
            activity: Arc::new(activity.clone()),
            incidents: Arc::new(clusters::thread::StoredIncidents(db.clone())),
        },
        &shutdown,
    )?;

    if config.ha.vip.is_some() || config.test_hooks {
        ha::spawn(role.clone(), gate, shutdown.clone())
            .map_err(|e| FatalError(format!("Cannot start the ha-watch thread: {e}")))?;
        if let Some(vip) = config.ha.vip {
            log::info!(
                "Pair mode: webhooks are sent while {vip} is on a local interface ({} now)",
                if role.is_active() {
                    "active"
                } else {
                    "standby"
                }
            );
        }
    }

    let clients_changed = start_clients_feed(&db, &agents, &hub, &shutdown)?;
    let history = clusters::history::store::SharedMirror::default();
    let board = Arc::new(clusters::board::Board::default());
    let clusters_feed = Arc::new(clusters::feed::ClustersFeed::new(
        board.clone(),
        hub.clone(),
    ));
    clusters::feed::spawn(clusters_feed.clone(), shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the clusters-feed thread: {e}")))?;
    let evaluate = start_evaluator(
        clusters::thread::Handles {
            db: db.clone(),
            clock: clock.clone(),
            agents: agents.clone(),
            readings: readings.clone(),
            activity: activity.clone(),
            history: history.clone(),
            board: board.clone(),
        },
        &shutdown,
    )?;
    let (token_cleanup, notification_cleanup) = start_schedulers(
        schedulers::Handles {
            db: db.clone(),
            clock: clock.clone(),
            hub: hub.clone(),
            activity: activity.clone(),
            settings: settings.clone(),
        },
        history.clone(),
        config.audit_retention_days,
        &shutdown,
    )?;
    let provisioning = provisioning_handles.state.clone();
    start_provisioning(
        provisioning_handles,
        provisioning::apply::Wake {
            token_cleanup: Some(token_cleanup.clone()),
            notification_cleanup: Some(notification_cleanup.clone()),
        },
        reload,
        &shutdown,
    )?;

    let session = SessionHandles {
        db: db.clone(),
        clock: clock.clone(),
        agents: agents.clone(),
        readings: readings.clone(),
        hub: hub.clone(),
        activity: activity.clone(),
        clients_changed: clients_changed.clone(),
        evaluator: Arc::new(evaluate.clone()),
        actions: Arc::default(),
        fingerprint_key: crate::agents::session::fingerprint_key(&config.jwt_secret).into(),
    };
    let outbound = start_dialling(&config, session.clone(), &shutdown)?;
    let port = listener
        .local_addr()
        .map_err(|e| FatalError(format!("Cannot read the listen address: {e}")))?
        .port();
    let heartbeat = Arc::new(Heartbeat::new(config.heartbeat.clone()));
    heartbeat::spawn(
        heartbeat.clone(),
        heartbeat::Handles {
            db: db.clone(),
            clock: clock.clone(),
            evaluate: evaluate.clone(),
            board: board.clone(),
            agents: agents.clone(),
            port,
            version: crate::cli::VERSION,
        },
        shutdown.clone(),
    )
    .map_err(|e| FatalError(format!("Cannot start the heartbeat thread: {e}")))?;

    // A drill cut by the last stop is failed, saying which host to check.
    match crate::drills::store::interrupted(&db, clock.utc()) {
        Ok(cut) => {
            for d in cut {
                log::warn!(
                    "Drill {} of {} was cut by the last stop: check that {} is undrained",
                    d.id,
                    d.cluster,
                    d.old_master.as_deref().unwrap_or("its old master")
                );
            }
        }
        Err(e) => log::error!("Cannot read the drills: {e}"),
    }
    let app = Arc::new(App {
        drills: Arc::default(),
        sessions: SessionKeys::new(&config.jwt_secret, config.jwt_expires_in),
        login_limiter: RateLimiter::login(),
        oidc,
        port,
        hub,
        agents,
        readings,
        settings,
        activity,
        silences,
        webhooks,
        token_cleanup,
        notification_cleanup,
        config_file: Mutex::new(()),
        clients_changed,
        evaluate,
        session,
        outbound,
        initial_password: Mutex::new(initial_password),
        counters,
        history,
        board,
        clusters_feed,
        heartbeat,
        ha: role,
        provisioning,
        config,
        db,
        clock,
    });
    serve(app, listener, &shutdown)
}

/// The OIDC provider, when the config names one: discovered at start, so a
/// wrong issuer ends the start instead of every login.
fn discover_oidc(config: &ServerConfig) -> Result<Option<Oidc>, FatalError> {
    let oidc = Oidc::discover(&config.oidc).map_err(|e| {
        FatalError(format!(
            "OIDC discovery at {} failed: {e}",
            config.oidc.issuer
        ))
    })?;
    if let Some(oidc) = &oidc {
        log::info!("OIDC login through {}", oidc.issuer());
    }
    Ok(oidc)
}

/// What the threads and the HTTP layer share, built once at start.
struct Shared {
    role: Arc<ha::Role>,
    gate: Arc<ha::Gate>,
    /// The webhook definitions, compiled; the dispatcher reads them.
    webhooks: Arc<Webhooks>,
    hub: Arc<Hub>,
    agents: Arc<AgentRegistry>,
    readings: Arc<Latest>,
    settings: Arc<Settings>,
    counters: Arc<crate::metrics::Counters>,
    silences: Arc<Silences>,
    activity: ActivitySink,
}

fn shared_state(
    config: &ServerConfig,
    db: &Arc<Db>,
    clock: &SharedClock,
) -> Result<Shared, FatalError> {
    let hub = Arc::new(Hub::default());
    let agents = Arc::new(AgentRegistry::default());
    let readings = Arc::new(
        Latest::load(db)
            .map_err(|e| FatalError(format!("Cannot read the stored readings: {e}")))?,
    );
    let settings = Arc::new(
        Settings::new(config.settings.clone())
            .map_err(|e| FatalError(format!("settings.activity_level_overrides: {e}")))?,
    );
    let counters = Arc::new(crate::metrics::Counters::default());
    let definitions = Arc::new(
        Webhooks::load(db.clone())
            .map_err(|e| FatalError(format!("Cannot read the webhooks: {e}")))?,
    );
    let webhooks = Arc::new(Dispatcher::new(
        db.clone(),
        definitions.clone(),
        clock.clone(),
        counters.clone(),
        config.webhooks.allowed_networks.clone(),
    ));
    // Of a pair, only the server holding `ha.vip` sends webhooks.
    let role = Arc::new(ha::Role::new(&config.ha, clock.utc()));
    let webhooks = Arc::new(ha::Gate::new(
        webhooks,
        role.clone(),
        clock.clone(),
        &config.ha,
    ));
    let silences = Arc::new(
        Silences::load(db.clone())
            .map_err(|e| FatalError(format!("Cannot read the silences: {e}")))?,
    );
    let activity = ActivitySink::new(
        db.clone(),
        settings.clone(),
        hub.clone(),
        webhooks.clone(),
        counters.clone(),
        silences.clone(),
    );
    Ok(Shared {
        role,
        gate: webhooks,
        webhooks: definitions,
        hub,
        agents,
        readings,
        settings,
        counters,
        silences,
        activity,
    })
}

/// The `clients-feed` thread: the dashboards' client list, sent when it changes.
fn start_clients_feed(
    db: &Arc<Db>,
    agents: &Arc<AgentRegistry>,
    hub: &Arc<Hub>,
    shutdown: &Shutdown,
) -> Result<feed::ClientsChanged, FatalError> {
    feed::spawn(
        feed::Handles {
            db: db.clone(),
            agents: agents.clone(),
            hub: hub.clone(),
        },
        shutdown.clone(),
    )
    .map_err(|e| FatalError(format!("Cannot start the clients-feed thread: {e}")))
}

/// The `cluster-eval` thread: groups readings into clusters and confirms
/// their changes.
fn start_evaluator(
    handles: clusters::thread::Handles,
    shutdown: &Shutdown,
) -> Result<clusters::thread::EvalSender, FatalError> {
    let (evaluate, inbox) = crossbeam_channel::unbounded();
    clusters::thread::spawn(handles, inbox, shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the cluster-eval thread: {e}")))?;
    Ok(clusters::thread::EvalSender::new(evaluate))
}

/// Serves HTTP until shutdown, then gives open requests their grace.
fn serve(app: Arc<App>, listener: TcpListener, shutdown: &Shutdown) -> Result<(), FatalError> {
    let local = listener
        .local_addr()
        .map_err(|e| FatalError(format!("Cannot read the listen address: {e}")))?;
    let server = http::start(app.clone(), listener, shutdown.clone())
        .map_err(|e| FatalError(format!("Cannot start the HTTP server: {e}")))?;
    log::info!("vrrp-monitor listening on http://{local} (log in at http://localhost:{}/ with POST /api/login)", local.port());

    shutdown.wait();
    // Agents and dashboards are told why their socket ends (1001) instead of
    // seeing it drop (1006); agents reconnect as usual.
    let grace_ends = std::time::Instant::now() + SHUTDOWN_GRACE;
    app.agents.close_all(vrrp_protocol::Refusal::new(
        vrrp_protocol::close::GOING_AWAY,
        "Server shutting down",
    ));
    app.hub
        .close_all(vrrp_protocol::close::GOING_AWAY, "Server shutting down");
    if !server.wait_sockets_closed(grace_ends) {
        log::warn!("Some sockets did not close within {SHUTDOWN_GRACE:?}");
    }
    if !server.drain(grace_ends.saturating_duration_since(std::time::Instant::now())) {
        log::warn!("Open connections did not finish within {SHUTDOWN_GRACE:?}; stopping anyway");
    }
    log::info!("Stopped");
    Ok(())
}

/// Reads the provisioning directory once: a file that does not parse or
/// validate ends the start, as an invalid config file does.
fn provision_at_start(
    config: &ServerConfig,
    handles: provisioning::apply::Handles,
) -> Result<provisioning::apply::Handles, FatalError> {
    provisioning::apply::reload(&handles, "start", &provisioning::apply::Wake::default()).map_err(
        |e| {
            FatalError(format!(
                "Invalid provisioning file in {}: {e}",
                provisioning::dir_of(&config.path).display()
            ))
        },
    )?;
    Ok(handles)
}

/// The `provisioning` thread: reads the files again on each SIGHUP.
fn start_provisioning(
    handles: provisioning::apply::Handles,
    wake: provisioning::apply::Wake,
    reload: Reload,
    shutdown: &Shutdown,
) -> Result<(), FatalError> {
    let (asks, stop) = (reload.asks(), shutdown.clone());
    std::thread::Builder::new()
        .name("provisioning".into())
        .spawn(move || provisioning::apply::run(handles, wake, asks, stop))
        .map_err(|e| FatalError(format!("Cannot start the provisioning thread: {e}")))?;
    Ok(())
}

/// The `silences` thread: ends silences when they expire.
fn start_silence_expiry(handles: silences::Handles, shutdown: &Shutdown) -> Result<(), FatalError> {
    let stop = shutdown.clone();
    std::thread::Builder::new()
        .name("silences".into())
        .spawn(move || silences::run_expiry(handles, stop))
        .map_err(|e| FatalError(format!("Cannot start the silences thread: {e}")))?;
    Ok(())
}

/// The two cleanup schedulers (tokens; activity and cluster history), each
/// on a `sched:*` thread, their status read back from the database first.
fn start_schedulers(
    scheduler_handles: schedulers::Handles,
    history: clusters::history::store::SharedMirror,
    audit_retention_days: u32,
    shutdown: &Shutdown,
) -> Result<(Arc<Scheduler>, Arc<Scheduler>), FatalError> {
    let token_cleanup = Arc::new(Scheduler::new(
        "token-cleanup",
        "token_cleanup_interval_hours",
        Box::new(|h, now| {
            schedulers::clean_tokens(&h.db, h.settings.number("token_retention_days", 30), now)
        }),
        scheduler_handles.clone(),
    ));
    let notification_cleanup = Arc::new(Scheduler::new(
        "notification-cleanup",
        "notification_cleanup_interval_hours",
        Box::new(move |h, now| {
            let days = h.settings.number("notification_retention_days", 90);
            let keep = h.settings.number("notification_retention_count", 500);
            let removed = schedulers::clean_activity(&h.db, days, keep, now)?;
            // The cluster history has its own retention; its intervals are not
            // activity, so they are logged rather than counted in `removed`.
            let history_days = match h
                .settings
                .number(HISTORY_RETENTION_KEY, HISTORY_RETENTION_DEFAULT)
            {
                0 => HISTORY_RETENTION_DEFAULT,
                d => d,
            };
            let cutoff = now - chrono::Duration::days(history_days as i64);
            let trimmed =
                clusters::history::store::trim(&h.db, &history, cutoff.timestamp_millis())
                    .map_err(|e| format!("cluster history: {e}"))?;
            if trimmed > 0 {
                log::info!("notification-cleanup removed {trimmed} cluster history intervals older than {history_days} days");
            }
            // The audit log keeps its own, longer time (`audit.retention_days`).
            let cutoff = now - chrono::Duration::days(i64::from(audit_retention_days));
            let pruned =
                crate::audit::prune(&h.db, cutoff).map_err(|e| format!("audit log: {e}"))?;
            if pruned > 0 {
                log::info!("notification-cleanup removed {pruned} audit entries older than {audit_retention_days} days");
            }
            Ok(removed)
        }),
        scheduler_handles,
    ));
    for scheduler in [&token_cleanup, &notification_cleanup] {
        scheduler.load().map_err(|e| {
            FatalError(format!("Cannot read the status of {}: {e}", scheduler.name))
        })?;
        let (scheduler, stop) = (scheduler.clone(), shutdown.clone());
        std::thread::Builder::new()
            .name(format!("sched:{}", scheduler.name))
            .spawn(move || scheduler.run_timer(&stop))
            .map_err(|e| FatalError(format!("Cannot start a scheduler thread: {e}")))?;
    }

    Ok((token_cleanup, notification_cleanup))
}

/// The outbound dialler, with a `dial:*` thread per outbound client.
fn start_dialling(
    config: &ServerConfig,
    session: SessionHandles,
    shutdown: &Shutdown,
) -> Result<Arc<Dialer>, FatalError> {
    let outbound = Arc::new(Dialer::new(DialHandles {
        clock: session.clock.clone(),
        session,
        seal_key: config
            .secret_key_persisted
            .then(|| SealKey::from_secret_key(&config.secret_key)),
        allow_self_signed: config.security.allow_self_signed_agent_certificates,
        shutdown: shutdown.clone(),
    }));
    // An agent that does not answer is no error of the start: its thread keeps
    // dialling on the ladder. Only failing to start the dialling ends the start.
    let dialled = outbound
        .start_all()
        .map_err(|e| FatalError(format!("Cannot start the outbound connections: {e}")))?;
    if dialled > 0 {
        log::info!("Dialling {dialled} outbound agent(s)");
    }

    Ok(outbound)
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
        iso(clock.utc()),
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

/// `vrrp-monitor backup <file>`: copies the database of the data directory the
/// environment names (as the server finds it) to `file`; returns the exit code.
pub fn backup(file: &std::path::Path) -> i32 {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let env = Env::from_process();
    let source = config::data_dir(&env).join(DB_FILE);
    match crate::db::backup(&source, file) {
        Ok(bytes) => {
            println!(
                "Backed up {} to {} ({bytes} bytes)",
                source.display(),
                file.display()
            );
            0
        }
        Err(e) => {
            eprintln!("vrrp-monitor backup: {e}");
            1
        }
    }
}
