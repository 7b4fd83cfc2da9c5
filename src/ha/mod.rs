//! A server pair behind keepalived (doc/ha.md): which of the two
//! sends webhooks. No consensus of our own: the server that has `ha.vip` on a
//! local interface (keepalived put it there) is *active* and sends; the other
//! is *standby*, records everything as always and sends nothing.
//!
//! [`Role`] is what this server is now, kept by the `ha-watch` thread, which
//! reads the local addresses (`getifaddrs`) every [`WATCH_EVERY`]. [`Gate`]
//! stands between the activity sink and the webhook `Dispatcher`: it passes
//! events on while active and keeps every event of the last
//! `ha.handover_seconds` with whether it was passed on; when the VIP arrives it
//! passes on those it had not (the old holder may or may not have sent them: a
//! receiver may see a duplicate in that window, never a gap). Without `ha.vip`
//! the server is always active and the gate only passes events on.

use crate::activity::{ActivityRecord, StoredEvents};
use crate::clock::SharedClock;
use crate::config::ha::HaConfig;
use crate::lifecycle::Shutdown;
use chrono::{DateTime, Duration, Utc};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How often the `ha-watch` thread reads the local addresses.
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_millis(200);
/// Most events the gate keeps for a handover, whatever the window.
const KEPT_MAX: usize = 100_000;

/// Whether `addr` is on one of this machine's interfaces (in this network namespace).
pub fn holds_address(addr: IpAddr) -> bool {
    let Ok(addrs) = nix::ifaddrs::getifaddrs() else {
        return false;
    };
    for ifa in addrs {
        let Some(a) = ifa.address else { continue };
        let local = if let Some(v4) = a.as_sockaddr_in() {
            IpAddr::V4(v4.ip())
        } else if let Some(v6) = a.as_sockaddr_in6() {
            IpAddr::V6(v6.ip())
        } else {
            continue;
        };
        if local == addr {
            return true;
        }
    }
    false
}

/// What this server is in the pair.
pub struct Role {
    vip: Option<IpAddr>,
    active: AtomicBool,
    since: Mutex<DateTime<Utc>>,
    /// Test hook (`SVC_TEST_HOOKS=1`): holds the VIP or not, whatever the interfaces say.
    forced: Mutex<Option<bool>>,
}

impl Role {
    /// Judged at once, before any event is offered.
    pub fn new(config: &HaConfig, now: DateTime<Utc>) -> Role {
        let active = config.vip.is_none_or(holds_address);
        Role {
            vip: config.vip,
            active: AtomicBool::new(active),
            since: Mutex::new(now),
            forced: Mutex::new(None),
        }
    }

    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// Test hook: `Some(held)` overrides the interfaces, `None` ends that.
    pub fn force(&self, held: Option<bool>) {
        *self.forced.lock() = held;
    }

    /// `GET /api/v1/ha`: `{configured, vip, role: active|standby, since}`.
    pub fn status(&self) -> HaStatus {
        HaStatus {
            configured: self.vip.is_some(),
            vip: self.vip,
            role: if self.is_active() {
                "active"
            } else {
                "standby"
            },
            since: *self.since.lock(),
        }
    }

    fn holds_now(&self) -> bool {
        match (*self.forced.lock(), self.vip) {
            (Some(held), _) => held,
            (None, None) => true,
            (None, Some(vip)) => holds_address(vip),
        }
    }
}

/// What `GET /api/v1/ha` answers.
#[derive(Debug, serde::Serialize)]
pub struct HaStatus {
    pub configured: bool,
    pub vip: Option<IpAddr>,
    pub role: &'static str,
    #[serde(with = "crate::clock::iso_millis")]
    pub since: DateTime<Utc>,
}

struct Kept {
    at: DateTime<Utc>,
    record: Arc<ActivityRecord>,
    passed: bool,
}

/// Between the activity sink and the webhooks: passes events on while active,
/// keeps the window's events for a handover.
pub struct Gate {
    inner: Arc<dyn StoredEvents>,
    role: Arc<Role>,
    clock: SharedClock,
    window: Duration,
    kept: Mutex<VecDeque<Kept>>,
}

impl Gate {
    pub fn new(
        inner: Arc<dyn StoredEvents>,
        role: Arc<Role>,
        clock: SharedClock,
        config: &HaConfig,
    ) -> Gate {
        Gate {
            inner,
            role,
            clock,
            window: Duration::seconds(config.handover_seconds as i64),
            kept: Mutex::new(VecDeque::new()),
        }
    }

    /// The VIP arrived: passes on the window's events not passed on yet;
    /// returns how many.
    fn handover(&self) -> usize {
        let now = self.clock.utc();
        let mut kept = self.kept.lock();
        prune(&mut kept, now - self.window);
        let mut due = Vec::new();
        for k in kept.iter_mut().filter(|k| !k.passed) {
            k.passed = true;
            due.push(k.record.clone());
        }
        if !due.is_empty() {
            self.inner.offer(&due);
        }
        due.len()
    }
}

fn prune(kept: &mut VecDeque<Kept>, before: DateTime<Utc>) {
    while kept
        .front()
        .is_some_and(|k| k.at < before || kept.len() > KEPT_MAX)
    {
        kept.pop_front();
    }
}

impl StoredEvents for Gate {
    fn offer(&self, records: &[Arc<ActivityRecord>]) {
        let now = self.clock.utc();
        let mut kept = self.kept.lock();
        // Read under the lock: a handover sets the role first, then takes it.
        let active = self.role.is_active();
        if self.role.vip.is_some() {
            prune(&mut kept, now - self.window);
            kept.extend(records.iter().map(|r| Kept {
                at: now,
                record: r.clone(),
                passed: active,
            }));
        }
        if active {
            self.inner.offer(records);
        }
    }
}

/// Starts the `ha-watch` thread (only with `ha.vip` set, or test hooks on).
pub fn spawn(role: Arc<Role>, gate: Arc<Gate>, shutdown: Shutdown) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ha-watch".into())
        .spawn(move || {
            while !shutdown.is_set() {
                let held = role.holds_now();
                if held != role.is_active() {
                    role.active.store(held, Ordering::SeqCst);
                    *role.since.lock() = gate.clock.utc();
                    let vip = role.vip.map_or("(none)".into(), |v| v.to_string());
                    if held {
                        let sent = gate.handover();
                        log::warn!("This server holds the VIP {vip} now: it sends webhooks; {sent} event(s) of the last {} s it had not sent are sent now", gate.window.num_seconds());
                    } else {
                        log::warn!("The VIP {vip} left this server: it is standby and sends no webhooks");
                    }
                }
                std::thread::sleep(WATCH_EVERY);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    #[derive(Default)]
    struct Seen(Mutex<Vec<String>>);
    impl StoredEvents for Seen {
        fn offer(&self, records: &[Arc<ActivityRecord>]) {
            self.0
                .lock()
                .extend(records.iter().map(|r| r.event.id.clone()));
        }
    }

    fn event(id: &str) -> Arc<ActivityRecord> {
        let mut e = crate::activity::Event::server(
            "client.connected",
            vrrp_protocol::ActivityLevel::Info,
            None,
            serde_json::json!({}),
            Utc::now(),
        );
        e.id = id.into();
        Arc::new(e.record(false))
    }

    #[test]
    fn loopback_is_held_and_a_test_net_address_is_not() {
        assert!(holds_address("127.0.0.1".parse().unwrap()));
        assert!(!holds_address("192.0.2.222".parse().unwrap()));
    }

    #[test]
    fn standby_holds_back_and_the_handover_sends_the_window_once() {
        let clock = ManualClock::new(Utc::now());
        let config = HaConfig {
            vip: Some("192.0.2.222".parse().unwrap()),
            handover_seconds: 30,
        };
        let role = Arc::new(Role::new(&config, clock.utc()));
        assert!(!role.is_active(), "the VIP is on no interface here");
        let seen = Arc::new(Seen::default());
        let gate = Gate::new(seen.clone(), role.clone(), Arc::new(clock.clone()), &config);
        gate.offer(&[event("old")]);
        clock.advance(Duration::seconds(31));
        gate.offer(&[event("a"), event("b")]);
        assert!(seen.0.lock().is_empty(), "standby sends nothing");
        role.active.store(true, Ordering::SeqCst);
        assert_eq!(gate.handover(), 2, "only the window's events");
        gate.offer(&[event("c")]);
        assert_eq!(gate.handover(), 0, "nothing twice");
        assert_eq!(*seen.0.lock(), ["a", "b", "c"]);
    }
}
