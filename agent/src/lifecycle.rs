//! Start-up and shutdown of the agent: the one place that wires its threads.
//!
//! Order at start: configuration, data directory and identity, the local web server (and
//! the setup PIN block once it listens), then readings, then the connection to the
//! server. SIGINT and SIGTERM stop the web server, flush the queue and exit 0. The
//! threads it starts get what they need as arguments and never import this module;
//! a thread that dies of a panic is fatal (see [`crate::fatal`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::clock::SystemClock;
use crate::config::{self, Config, Mode};
use crate::connection::{self, ConnState, ConnStatus};
use crate::fatal::flush_on_fatal;
use crate::keepalived::{self, fifo};
use crate::logging;
use crate::reader::{self, FifoState, KeepalivedStatus};
use crate::registration::pin;
use crate::registration::{PinBlock, RegShared};
use crate::store::datadir::{DataDir, ExtraServer, Identity, IdentityLoad};
use crate::store::persist;
use crate::store::queue::{ActivityQueue, Queue};
use crate::web;

/// The version resolved at build time (see build.rs), sent in AUTH.
pub const VERSION: &str = env!("VRRP_AGENT_VERSION");

/// This host's name as the server will show it.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| nix::unistd::gethostname().ok()?.into_string().ok())
        .unwrap_or_else(|| "unknown".into())
}

fn env_map() -> HashMap<String, String> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

fn agent_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."))
}

fn stamp() -> String {
    chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string()
}

/// Stops the start with one log line. The logger may not exist yet.
fn stop_start(msg: &str) -> i32 {
    log::error!("{msg}");
    1
}

/// A start-up step that failed: the error is logged, the agent exits with this code.
type Stopped = i32;

/// The whole agent; returns the exit code. Start-up runs in the spec's order
/// (configuration, data directory, queue and persistence, the web server, the
/// reader, the connection); shutdown in reverse.
pub fn main() -> i32 {
    // Installed first: a SIGTERM that arrives during start-up is held until the agent is
    // up and then stops it cleanly (exit 0) instead of killing it half-started.
    let mut signals = match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
    ]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("cannot install signal handlers: {e}");
            return 1;
        }
    };
    let running = match start() {
        Ok(r) => r,
        Err(code) => return code,
    };
    // Wait for SIGINT / SIGTERM on this (the main) thread.
    let sig = signals.forever().next();
    log::info!(
        "Stopping on signal {}",
        sig.map_or_else(|| "?".into(), |s| s.to_string())
    );
    running.stop();
    log::info!("Stopped");
    0
}

/// Every part of a started agent, in the order it stops.
struct Running {
    web: Option<web::WebHandle>,
    /// One per server slot.
    conns: Vec<connection::ConnHandle>,
    fifo: Option<fifo::FifoHandle>,
    reader: reader::ReaderHandle,
    store: Store,
}

impl Running {
    /// Reverse order of start: the web server first (as the spec says), then
    /// triggers, the reader, and last the writer, which flushes what is pending.
    fn stop(self) {
        if let Some(w) = self.web {
            w.stop();
        }
        for c in self.conns {
            c.stop();
        }
        if let Some(f) = self.fifo {
            f.stop();
        }
        self.reader.stop();
        if !self.store.persist.stop(Duration::from_secs(5)) {
            log::error!("pending writes could not be flushed in time");
        }
        let _ = self.store.persist_thread.join();
    }
}

fn start() -> Result<Running, Stopped> {
    let configured = configure()?;
    let config = configured.config.clone();
    let store = open_store(&config, configured.file_text.as_deref())?;
    let status = Arc::new(RwLock::new(KeepalivedStatus {
        fifo: if config.keepalived.notify_fifo.is_some() {
            FifoState::Missing
        } else {
            FifoState::Off
        },
        ..Default::default()
    }));
    // The reader's channel exists before the web server so the notify endpoint can use
    // it; the reader thread itself starts after the web server, as the spec orders.
    let (reader_tx, reader_rx) = crossbeam_channel::unbounded();
    let trigger = reader::Trigger::from_sender(reader_tx.clone());
    let front = start_web(&configured, &store, &status, &trigger)?;
    let (reader, fifo) = start_reading(
        &config,
        &store,
        &status,
        (reader_tx, reader_rx),
        &trigger,
        &front.slots,
    )?;
    // The connections last: readings already run, so a failover is seen while the server
    // is unreachable. Without a complete identity a thread waits for a registration.
    let mut conns = Vec::new();
    for (i, pending) in front.pending.into_iter().enumerate() {
        let Some(slot) = front.slots.get(i) else {
            break;
        };
        match connection::spawn_slot(
            i,
            connection::Deps {
                target: pending.target,
                hostname: hostname(),
                version: VERSION.to_string(),
                clock: Arc::new(SystemClock),
                jitter: Box::new(rand::random::<f64>),
                queue: Arc::new(store.queue.clone()),
                trigger: trigger.clone(),
                status: slot.status.clone(),
            },
            slot.inbox.clone(),
            pending.rx,
        ) {
            Ok(c) => conns.push(c),
            Err(e) => {
                return Err(stop_start(&format!(
                    "cannot start the connection thread: {e}"
                )))
            }
        }
    }
    Ok(Running {
        web: front.web,
        conns,
        fifo,
        reader,
        store,
    })
}

/// The configuration as read at start, with what start-up takes out of it.
struct Configured {
    config: Arc<Config>,
    /// The config file's text (identity may still live there, from older agents).
    file_text: Option<String>,
    /// Kept out of `Config`: it lives in `RegShared` only, so it can be dropped once used.
    registration_secret: Option<config::Secret>,
}

/// Reads and validates the configuration and starts logging as it says.
fn configure() -> Result<Configured, Stopped> {
    let env = env_map();
    let cfg_path = config::config_path(&env);
    let file_text = match std::fs::read_to_string(&cfg_path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            logging::init(config::LogLevel::Info, config::LogFormat::Pretty);
            return Err(stop_start(&format!(
                "{}: cannot read the config file: {e}",
                cfg_path.display()
            )));
        }
    };
    let loaded = match config::load(&env, file_text.as_deref(), &agent_dir()) {
        Ok(l) => l,
        Err(e) => {
            logging::init(e.log_level, e.log_format);
            return Err(stop_start(&format!("Invalid configuration: {}", e.message)));
        }
    };
    logging::init(loaded.config.log_level, loaded.config.log_format);
    for w in &loaded.warnings {
        log::warn!("{w}");
    }
    let mut config = loaded.config;
    let registration_secret = config.registration_secret.take();
    let config = Arc::new(config);
    log::info!(
        "vrrp-agent {} starting (config {}, data {})",
        VERSION,
        config.config_path.display(),
        config.data_dir.display()
    );
    Ok(Configured {
        config,
        file_text,
        registration_secret,
    })
}

/// The data directory, the identity in it, and the queue with its persistence.
struct Store {
    dir: DataDir,
    identity: Option<Identity>,
    /// Servers registered after the first (servers.json), in slot order.
    extra: Vec<ExtraServer>,
    mode: Mode,
    queue: ActivityQueue,
    baseline: Option<crate::reader::events::Baseline>,
    persist: persist::PersistHandle,
    persist_thread: std::thread::JoinHandle<()>,
}

/// Opens the data directory and starts persistence first: every later part may
/// produce events.
fn open_store(config: &Config, file_text: Option<&str>) -> Result<Store, Stopped> {
    let dir = match DataDir::open(&config.data_dir) {
        Ok(d) => d,
        Err(e) => {
            return Err(stop_start(&format!(
                "Data directory {} cannot be used: {e}",
                config.data_dir.display()
            )))
        }
    };
    let identity = load_identity(&dir, config, file_text);
    let mode = Mode::derive(identity.is_some(), config.server_url.is_some());
    log::info!("Agent mode: {}", mode.as_str());
    let extra = load_extra_servers(&dir, identity.as_ref());
    let queue_state = dir.load_queue_state().unwrap_or_else(|e| {
        log::warn!("{e}");
        Default::default()
    });
    let baseline = dir.load_baseline().unwrap_or_else(|e| {
        log::warn!("{e}");
        None
    });
    let (ptx, prx) = persist::channel();
    let mut queue_policy = Queue::from_state(queue_state, chrono::Utc::now());
    // Each registered server's position in the one queue is keyed by its client id.
    queue_policy.set_servers(
        identity
            .iter()
            .chain(extra.iter().map(|s| &s.identity))
            .map(|i| i.client_id.clone()),
    );
    let queue = ActivityQueue::new(queue_policy, ptx.clone());
    if !queue.is_empty() {
        log::info!(
            "{} activity events waiting from before the restart",
            queue.len()
        );
    }
    let (persist, persist_thread) = match persist::spawn(dir.clone(), queue.clone(), ptx, prx) {
        Ok(p) => p,
        Err(e) => {
            return Err(stop_start(&format!(
                "cannot start the persistence thread: {e}"
            )))
        }
    };
    let flusher = persist.clone();
    flush_on_fatal(move |within| {
        flusher.flush(within);
    });
    Ok(Store {
        dir,
        identity,
        extra,
        mode,
        queue,
        baseline,
        persist,
        persist_thread,
    })
}

/// What the web server's start hands on to the connections.
struct Front {
    web: Option<web::WebHandle>,
    slots: connection::Slots,
    /// Per slot: the server to dial (inbound) and the thread's receiving side.
    pending: Vec<PendingConn>,
}

struct PendingConn {
    target: Option<connection::Target>,
    rx: connection::Inbox,
}

/// The setup PIN, the registration state and the local web server (when its
/// routes ask for one).
fn start_web(
    configured: &Configured,
    store: &Store,
    status: &Arc<RwLock<KeepalivedStatus>>,
    trigger: &reader::Trigger,
) -> Result<Front, Stopped> {
    let config = &configured.config;
    let (identity, mode) = (&store.identity, store.mode);
    let registered = usize::from(identity.is_some()) + store.extra.len();
    // Registered servers keep their slots even if `maxServers` was lowered since.
    let max_servers = config.max_servers.max(registered);
    let full = registered >= max_servers;
    let registration_secret = configured.registration_secret.clone();
    // The setup PIN: every start of an agent with room for a server, only in memory and
    // the log (for a one-server agent: while unregistered, as before).
    let setup_pin = pin::wanted(
        full,
        config.enable_register_page,
        config.server_url.is_some(),
        registration_secret.is_some(),
    )
    .then(|| pin::Pin::generate(&mut rand::thread_rng()));
    let routes = web::Routes::for_servers(
        config,
        mode,
        registered,
        store.extra.iter().any(|s| s.server_url.is_none()),
    );
    let bind = routes.bind(config);
    let registration_secret = match (registration_secret, full) {
        (Some(_), true) => {
            log::warn!(
                "A registration secret is set but this agent is already registered; it is not used. Remove SVC_REGISTRATION_SECRET / SVC_REGISTRATION_SECRET_FILE from the agent's environment"
            );
            None
        }
        (s, _) => s,
    };
    let scheme = web::scheme(config.tls.is_some());
    // Read before anything listens: a tls block that cannot be used ends the start.
    let tls = match &config.tls {
        Some((cert, key)) if !matches!(bind, web::Bind::None(_)) => {
            match web::TlsPem::read(cert, key) {
                Ok(p) => Some(p),
                Err(e) => return Err(stop_start(&format!("Invalid configuration: {e}"))),
            }
        }
        _ => None,
    };
    let reg = Arc::new(
        RegShared::new(
            setup_pin,
            routes.register_page,
            identity.clone(),
            config.server_url.clone(),
            registration_secret,
            PinBlock {
                scheme,
                port: config.listen_port,
                outbound_hint: mode == Mode::Unregistered && config.server_url.is_none(),
            },
        )
        .with_servers(store.extra.clone(), max_servers),
    );
    // One connection per server slot; slots past the registered ones wait for a
    // registration (a one-server agent has exactly one, as before).
    let mut urls: Vec<Option<String>> = vec![config.server_url.clone()];
    urls.extend(store.extra.iter().map(|s| s.server_url.clone()));
    let ids: Vec<&Identity> = identity
        .iter()
        .chain(store.extra.iter().map(|s| &s.identity))
        .collect();
    let mut slots = Vec::new();
    let mut pending = Vec::new();
    for i in 0..max_servers {
        let target = match (ids.get(i), urls.get(i).and_then(Option::as_ref)) {
            (Some(id), Some(url)) => Some(connection::Target {
                base_url: url.clone(),
                client_id: id.client_id.clone(),
                token: config::Secret::new(id.auth_token.clone()),
                allow_self_signed: config.allow_self_signed,
            }),
            _ => None,
        };
        let status = Arc::new(RwLock::new(ConnStatus {
            state: ConnState::Disconnected,
            has_target: target.is_some(),
            ..Default::default()
        }));
        let (inbox, rx) = match connection::inbox() {
            Ok(x) => x,
            Err(e) => {
                return Err(stop_start(&format!(
                    "cannot create the connection's wake pipe: {e}"
                )))
            }
        };
        slots.push(connection::Slot { inbox, status });
        pending.push(PendingConn { target, rx });
    }
    let slots = connection::Slots::new(slots);
    let web = listen(
        bind,
        tls,
        web::WebState {
            routes: routes.clone(),
            config: config.clone(),
            mode,
            status: status.clone(),
            trigger: trigger.clone(),
            reg: reg.clone(),
            conns: slots.clone(),
            dir: store.dir.clone(),
            hostname: hostname(),
            version: VERSION.to_string(),
            clock: Arc::new(SystemClock),
            queue: store.queue.clone(),
            save_status: store.persist.save_status(),
        },
    )?;
    Ok(Front {
        web,
        slots,
        pending,
    })
}

/// Starts the local web server where `bind` says; a busy port is logged and
/// the agent goes on without it, a `tls` block that cannot be used ends the start.
fn listen(
    bind: web::Bind,
    tls: Option<web::TlsPem>,
    state: web::WebState,
) -> Result<Option<web::WebHandle>, Stopped> {
    if let web::Bind::None(why) = &bind {
        log::info!("Web server not started: {why}");
        return Ok(None);
    }
    let scheme = web::scheme(tls.is_some());
    let reg = state.reg.clone();
    match web::start(state, &bind, tls) {
        Ok(Some(h)) => {
            log::info!("Web server listening on {scheme}://{}", h.addr);
            reg.log_pin();
            Ok(Some(h))
        }
        Ok(None) => Ok(None),
        Err(web::StartError::Tls(e)) => Err(stop_start(&format!("Invalid configuration: {e}"))),
        Err(web::StartError::Listen(e)) => {
            log::error!("Web server not started, continuing without it: {e}");
            Ok(None)
        }
    }
}

/// The reader thread (with its poll timer) and the notify FIFO's watcher.
fn start_reading(
    config: &Config,
    store: &Store,
    status: &Arc<RwLock<KeepalivedStatus>>,
    (reader_tx, reader_rx): (
        crossbeam_channel::Sender<reader::ReaderMsg>,
        crossbeam_channel::Receiver<reader::ReaderMsg>,
    ),
    trigger: &reader::Trigger,
    slots: &connection::Slots,
) -> Result<(reader::ReaderHandle, Option<fifo::FifoHandle>), Stopped> {
    let (lvl, line) = keepalived::startup_check(&config.proc_dir);
    log::log!(lvl, "{line}");
    let poll = (config.keepalived.poll_interval_secs > 0.0)
        .then(|| Duration::from_secs_f64(config.keepalived.poll_interval_secs));
    let prober = keepalived::Prober::new(config.keepalived.clone(), config.proc_dir.clone());
    let drain = match &config.actions.drain_file {
        Some(file) => {
            log::info!(
                "Host actions on: the server may drain this host through {}",
                file.display()
            );
            Some(crate::actions::Drainer::open(
                file.clone(),
                &config.data_dir,
            ))
        }
        None => {
            log::info!("Host actions off (no actions.drainFile): every action is refused");
            None
        }
    };
    let reader = match reader::spawn_with(
        reader_tx,
        reader_rx,
        reader::Reader {
            prober,
            baseline: store.baseline.clone(),
            queue: store.queue.clone(),
            persist: store.persist.clone(),
            status: status.clone(),
            poll,
            observer: Some({
                let slots = slots.clone();
                Box::new(move |n| slots.note(n))
            }),
            drain,
        },
    ) {
        Ok(r) => r,
        Err(e) => return Err(stop_start(&format!("cannot start the reader thread: {e}"))),
    };
    let fifo = match &config.keepalived.notify_fifo {
        Some(path) => match fifo::spawn(
            config.proc_dir.clone(),
            path.clone(),
            trigger.clone(),
            status.clone(),
        ) {
            Ok(h) => Some(h),
            Err(e) => {
                log::error!("cannot start the notify FIFO watcher: {e}");
                None
            }
        },
        None => None,
    };
    Ok((reader, fifo))
}

/// servers.json: the servers registered after the first. Without a first identity they
/// are not used (the agent starts unregistered, as the spec says for a lost identity).
fn load_extra_servers(dir: &DataDir, identity: Option<&Identity>) -> Vec<ExtraServer> {
    let extra = match dir.load_servers(&stamp()) {
        Ok(s) => s,
        Err(e) => {
            log::error!("{e}");
            return Vec::new();
        }
    };
    if identity.is_none() && !extra.is_empty() {
        log::warn!(
            "servers.json lists {} more servers but identity.json is missing; starting unregistered",
            extra.len()
        );
        return Vec::new();
    }
    for (i, s) in extra.iter().enumerate() {
        log::info!(
            "Also registered with server {} as client {} ({})",
            i + 2,
            s.identity.client_id,
            match &s.server_url {
                Some(u) => format!("inbound, {u}"),
                None => "outbound".to_string(),
            }
        );
    }
    extra
}

fn load_identity(dir: &DataDir, config: &Config, file_text: Option<&str>) -> Option<Identity> {
    let mut identity = match dir.load_identity(&stamp()) {
        Ok(IdentityLoad::Found(i)) => Some(i),
        Ok(IdentityLoad::Missing) => None,
        Ok(IdentityLoad::Corrupt { moved_to, reason }) => {
            log::error!(
                "identity.json is damaged ({reason}); moved to {} and starting unregistered",
                moved_to.display()
            );
            None
        }
        Err(e) => {
            log::error!("identity.json cannot be read ({e}); starting unregistered");
            None
        }
    };
    if let (Some((client_id, token)), Some(text)) = (&config.legacy_identity, file_text) {
        if identity.is_some() {
            log::warn!(
                "{} still holds clientId/authToken, but identity.json exists; the identity file wins and the config keys are left for you to remove",
                config.config_path.display()
            );
        } else {
            let id = Identity {
                client_id: client_id.clone(),
                auth_token: token.expose().to_string(),
            };
            match dir.save_identity(&id) {
                Ok(()) => {
                    match config::without_legacy_identity(text).map_err(std::io::Error::other)
                        .and_then(|t| vrrp_fs::write_private_atomic(&config.config_path, t.as_bytes()))
                    {
                        Ok(()) => log::info!(
                            "Migrated clientId/authToken from {} to identity.json",
                            config.config_path.display()
                        ),
                        Err(e) => log::warn!(
                            "identity migrated to identity.json, but clientId/authToken could not be removed from {}: {e}",
                            config.config_path.display()
                        ),
                    }
                    identity = Some(id);
                }
                Err(e) => log::error!(
                    "cannot migrate clientId/authToken to identity.json ({e}); they stay in the config file"
                ),
            }
        }
    }
    identity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_is_derived_from_identity_and_server_url() {
        assert_eq!(Mode::derive(false, true), Mode::Unregistered);
        assert_eq!(Mode::derive(false, false), Mode::Unregistered);
        assert_eq!(Mode::derive(true, true), Mode::Inbound);
        assert_eq!(Mode::derive(true, false), Mode::Outbound);
    }
}
