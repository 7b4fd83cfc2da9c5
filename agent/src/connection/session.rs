//! One authenticated session with the server, without I/O: the connection thread feeds
//! it messages, pings, readings and the time, and carries out the `Action`s it returns.
//!
//! Owns: the ping deadline (35 s), the reading resend rule (changed apart from counters,
//! asked for, or 30 s since the last one; a changed password is a change), which queued
//! events are out on the wire (re-offered 1 minute after they went out unacknowledged),
//! and this server's fingerprint key: each reading is sent with its passwords'
//! fingerprints under that key (`fingerprint`), made as it goes out. Incoming messages
//! go through one type-to-handler table (`HANDLERS`); an unknown type is dropped.
//!
//! HOST_ACTION is handed to the reader thread (`Action::Host`, under a token this
//! session keeps); its HOST_ACTION_RESULT comes back with the reading taken after it
//! and goes out just before that reading, to this session only. A HOST_ACTION
//! without an id the agent can echo is dropped like any other malformed message.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use vrrp_protocol::{kind, ActivityAck, ActivityEvent, Reading};

use super::fingerprint::{self, FingerprintKey};
use crate::actions::ActionDone;
use crate::reader::TriggerSource;

pub const PING_DEADLINE: Duration = Duration::from_secs(35);
pub const RESEND: Duration = Duration::from_secs(30);
pub const REOFFER: Duration = Duration::from_secs(60);
/// Events per ACTIVITY message (the queue holds at most 500).
pub const MAX_BATCH: usize = 500;

/// What the session needs from the activity queue. `server` is the client id the
/// session's server issued: each server has its own acknowledgements.
pub trait QueueView {
    fn offer(&self, server: &str, now: DateTime<Utc>, max: usize) -> Vec<ActivityEvent>;
    fn ack(&self, server: &str, ids: &[String]) -> usize;
}

impl QueueView for crate::store::queue::ActivityQueue {
    fn offer(&self, server: &str, now: DateTime<Utc>, max: usize) -> Vec<ActivityEvent> {
        self.offer_batch_for(server, now, max)
    }
    fn ack(&self, server: &str, ids: &[String]) -> usize {
        self.ack_for(server, ids)
    }
}

impl QueueView for parking_lot::Mutex<crate::store::queue::Queue> {
    fn offer(&self, server: &str, now: DateTime<Utc>, max: usize) -> Vec<ActivityEvent> {
        self.lock().batch_for(server, now, max)
    }
    fn ack(&self, server: &str, ids: &[String]) -> usize {
        self.lock().ack_for(server, ids)
    }
}

/// What the connection thread does for the session.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// One text frame (an envelope).
    Send(String),
    /// Ask the reader for a reading; it arrives later through `on_reading`.
    Read(TriggerSource),
    /// Hand a HOST_ACTION's payload to the reader; its answer arrives later through
    /// `on_action_results` under `token`.
    Host { token: u64, request: Value },
    /// End the connection (the ladder takes over).
    Close(String),
}

/// `{"type": .., "payload": ..}` as one text frame (`vrrp_protocol`'s envelope).
pub fn envelope(kind: &str, payload: Value) -> String {
    vrrp_protocol::messages::envelope::encode(kind, &payload)
}

/// Splits an incoming frame into (type, payload); `None` when it is not an envelope.
pub fn parse_envelope(text: &str) -> Option<(String, Value)> {
    vrrp_protocol::messages::envelope::decode(text)
}

type Handler = fn(&mut Session, &Value, &Ctx) -> Vec<Action>;

/// Time and queue for one step.
pub struct Ctx<'a> {
    pub now: Instant,
    pub utc: DateTime<Utc>,
    pub queue: &'a dyn QueueView,
    /// The client id of the session's server (its queue position).
    pub server: &'a str,
}

/// Every server message the agent handles, by type. AUTH_SUCCESS belongs to the connect
/// procedure (it is awaited before a session exists); AUTH_FAILURE is not handled on its
/// own (the server closes the socket).
pub const HANDLERS: &[(&str, Handler)] = &[
    (kind::REQUEST_STATE_UPDATE, Session::request_state_update),
    (kind::ACTIVITY_ACK, Session::activity_ack),
    (kind::HOST_ACTION, Session::host_action),
];

/// Tokens of host actions, unique in the process (every server's session draws here,
/// and every answer reaches every connection).
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

pub struct Session {
    last_ping: Instant,
    last_sent: Option<(Arc<Reading>, Instant)>,
    /// A resend reading was asked for at this time and has not come yet.
    resend_asked: Option<Instant>,
    /// Event id → when it last went out unacknowledged.
    offered: HashMap<String, Instant>,
    /// The key this session's server sent in AUTH_SUCCESS, if any.
    fingerprint_key: Option<FingerprintKey>,
    /// Host actions this session's server asked for whose answer has not come yet.
    pending_actions: HashSet<u64>,
}

impl Session {
    /// AUTH_SUCCESS arrived from a server that sent no fingerprint key.
    pub fn start(ctx: &Ctx) -> (Session, Vec<Action>) {
        Session::start_keyed(ctx, None)
    }

    /// AUTH_SUCCESS arrived, with the server's fingerprint key if it sent one: read at
    /// once, offer the whole queue.
    pub fn start_keyed(
        ctx: &Ctx,
        fingerprint_key: Option<FingerprintKey>,
    ) -> (Session, Vec<Action>) {
        let mut s = Session {
            last_ping: ctx.now,
            last_sent: None,
            resend_asked: None,
            offered: HashMap::new(),
            fingerprint_key,
            pending_actions: HashSet::new(),
        };
        let mut out = vec![Action::Read(TriggerSource::Connection)];
        out.extend(s.offer(ctx));
        (s, out)
    }

    pub fn on_text(&mut self, text: &str, ctx: &Ctx) -> Vec<Action> {
        let Some((kind, payload)) = parse_envelope(text) else {
            log::debug!("server sent a frame that is not a message; dropped");
            return Vec::new();
        };
        match HANDLERS.iter().find(|(k, _)| *k == kind) {
            Some((_, h)) => h(self, &payload, ctx),
            None => {
                log::debug!("server sent an unknown message type {kind:?}; dropped");
                Vec::new()
            }
        }
    }

    /// A WebSocket ping frame arrived (the pong is tungstenite's job).
    pub fn on_ping(&mut self, now: Instant) {
        self.last_ping = now;
    }

    fn request_state_update(&mut self, _: &Value, _: &Ctx) -> Vec<Action> {
        vec![Action::Read(TriggerSource::ServerRequest)]
    }

    fn host_action(&mut self, payload: &Value, _: &Ctx) -> Vec<Action> {
        if vrrp_protocol::actions::request_id(payload).is_none() {
            log::debug!("HOST_ACTION without an id to answer to; dropped");
            return Vec::new();
        }
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        self.pending_actions.insert(token);
        vec![Action::Host {
            token,
            request: payload.clone(),
        }]
    }

    /// Host actions were carried out: the answers to this session's own requests go
    /// out (those of another server's session are not this one's).
    pub fn on_action_results(&mut self, done: &[ActionDone]) -> Vec<Action> {
        done.iter()
            .filter(|d| self.pending_actions.remove(&d.token))
            .filter_map(|d| match serde_json::to_value(&d.result) {
                Ok(v) => Some(Action::Send(envelope(kind::HOST_ACTION_RESULT, v))),
                Err(e) => {
                    log::error!("host action result cannot be encoded: {e}");
                    None
                }
            })
            .collect()
    }

    fn activity_ack(&mut self, payload: &Value, ctx: &Ctx) -> Vec<Action> {
        let ack: ActivityAck = match serde_json::from_value(payload.clone()) {
            Ok(a) => a,
            Err(e) => {
                log::debug!("ACTIVITY_ACK without an ids list ({e}); dropped");
                return Vec::new();
            }
        };
        for id in &ack.ids {
            self.offered.remove(id);
        }
        let n = ctx.queue.ack(ctx.server, &ack.ids);
        log::debug!(
            "server acknowledged {} events ({n} dropped from the queue)",
            ack.ids.len()
        );
        Vec::new()
    }

    /// A reading finished (whatever triggered it). Sent when asked for (a connection,
    /// a server's request or host action, the resend), when it differs
    /// from the last one sent apart from counters (its passwords included: they are part
    /// of the shared reading, their fingerprints are not), or when the last one is 30 s
    /// old. New events the reading queued go out with it.
    pub fn on_reading(
        &mut self,
        reading: &Arc<Reading>,
        sources: &[TriggerSource],
        ctx: &Ctx,
    ) -> Vec<Action> {
        let asked = sources.iter().any(|s| {
            matches!(
                s,
                TriggerSource::Connection
                    | TriggerSource::ServerRequest
                    | TriggerSource::Resend
                    | TriggerSource::HostAction
            )
        });
        if sources.contains(&TriggerSource::Resend) {
            self.resend_asked = None;
        }
        let mut out = self.offer(ctx);
        let send = asked
            || match &self.last_sent {
                None => true,
                Some((last, at)) => {
                    !last.same_apart_from_counters(reading) || ctx.now >= *at + RESEND
                }
            };
        if send {
            match fingerprint::payload(reading, self.fingerprint_key.as_ref()) {
                Ok(v) => {
                    out.push(Action::Send(envelope(kind::KEEPALIVED_UPDATE, v)));
                    self.last_sent = Some((reading.clone(), ctx.now));
                }
                Err(e) => log::error!("reading cannot be encoded: {e}"),
            }
        }
        out
    }

    /// Deadlines: dead without a ping, resend, re-offer.
    pub fn on_tick(&mut self, ctx: &Ctx) -> Vec<Action> {
        if ctx.now >= self.last_ping + PING_DEADLINE {
            return vec![Action::Close(format!(
                "no ping from the server within {} s",
                PING_DEADLINE.as_secs()
            ))];
        }
        let mut out = Vec::new();
        let resend_due = self
            .last_sent
            .as_ref()
            .is_some_and(|(_, at)| ctx.now >= *at + RESEND);
        // Ask again if a reading asked for never came (30 s is far beyond any dump wait).
        let asked_recently = self.resend_asked.is_some_and(|t| ctx.now < t + RESEND);
        if resend_due && !asked_recently {
            self.resend_asked = Some(ctx.now);
            out.push(Action::Read(TriggerSource::Resend));
        }
        if self.next_reoffer().is_some_and(|t| ctx.now >= t) {
            out.extend(self.offer(ctx));
        }
        out
    }

    /// The earliest time `on_tick` has something to do.
    pub fn next_deadline(&self) -> Instant {
        let mut t = self.last_ping + PING_DEADLINE;
        if let Some((_, at)) = &self.last_sent {
            t = t.min(*at + RESEND);
        }
        if let Some(r) = self.next_reoffer() {
            t = t.min(r);
        }
        t
    }

    fn next_reoffer(&self) -> Option<Instant> {
        self.offered.values().min().map(|t| *t + REOFFER)
    }

    /// Offers what is queued and not already out on the wire within the last minute.
    fn offer(&mut self, ctx: &Ctx) -> Vec<Action> {
        let events = ctx.queue.offer(ctx.server, ctx.utc, MAX_BATCH);
        // Forget ids that left the queue some other way (age, size limit).
        self.offered
            .retain(|id, _| events.iter().any(|e| &e.id == id));
        let due: Vec<ActivityEvent> = events
            .into_iter()
            .filter(|e| {
                self.offered
                    .get(&e.id)
                    .is_none_or(|t| ctx.now >= *t + REOFFER)
            })
            .collect();
        if due.is_empty() {
            return Vec::new();
        }
        for e in &due {
            self.offered.insert(e.id.clone(), ctx.now);
        }
        log::debug!("offering {} activity events", due.len());
        vec![Action::Send(envelope(
            kind::ACTIVITY,
            json!({ "events": due }),
        ))]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::queue::Queue;
    use parking_lot::Mutex;
    use vrrp_protocol::{VrrpInstance, VrrpState};

    struct T {
        q: Mutex<Queue>,
        t0: Instant,
        u0: DateTime<Utc>,
    }

    impl T {
        fn new() -> T {
            T {
                q: Mutex::new(Queue::default()),
                t0: Instant::now(),
                u0: Utc::now(),
            }
        }
        fn at(&self, secs: u64) -> Ctx<'_> {
            Ctx {
                now: self.t0 + Duration::from_secs(secs),
                utc: self.u0 + chrono::TimeDelta::seconds(secs as i64),
                queue: &self.q,
                server: "c1",
            }
        }
        fn push(&self, id: &str) {
            self.q.lock().push(ActivityEvent {
                id: id.into(),
                occurred_at: self.u0.to_rfc3339(),
                kind: "vrrp.state_changed".into(),
                ..Default::default()
            });
        }
    }

    fn sent(actions: &[Action]) -> Vec<(String, Value)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Send(t) => parse_envelope(t),
                _ => None,
            })
            .collect()
    }

    fn offered_ids(actions: &[Action]) -> Vec<String> {
        sent(actions)
            .into_iter()
            .filter(|(k, _)| k == "ACTIVITY")
            .flat_map(|(_, p)| {
                p["events"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|e| e["id"].as_str().unwrap().to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    fn reading(state: VrrpState, adverts: u64) -> Arc<Reading> {
        Arc::new(Reading {
            collected_at: format!("t{adverts}"),
            running: true,
            instances: vec![VrrpInstance {
                name: "VI_1".into(),
                state,
                stats: Some([("advertisements_received".to_string(), adverts)].into()),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    #[test]
    fn auth_success_reads_at_once_and_offers_the_whole_queue() {
        let t = T::new();
        t.push("a");
        t.push("b");
        let (_, out) = Session::start(&t.at(0));
        assert_eq!(out[0], Action::Read(TriggerSource::Connection));
        assert_eq!(offered_ids(&out), ["a", "b"]);
    }

    #[test]
    fn ack_drops_ids_and_unacked_batch_is_offered_again_after_a_minute() {
        let t = T::new();
        t.push("a");
        t.push("b");
        let (mut s, _) = Session::start(&t.at(0));
        s.on_text(&envelope("ACTIVITY_ACK", json!({"ids": ["a"]})), &t.at(1));
        assert_eq!(t.q.lock().len(), 1);
        // A new event goes out at once, without re-offering "b" before its minute is up.
        t.push("c");
        let out = s.on_reading(
            &reading(VrrpState::Master, 1),
            &[TriggerSource::Poll],
            &t.at(2),
        );
        assert_eq!(offered_ids(&out), ["c"]);
        assert!(offered_ids(&s.on_tick(&t.at(59))).is_empty());
        assert_eq!(
            s.next_deadline(),
            t.at(32).now,
            "the resend (30 s after the reading at 2 s) comes first"
        );
        s.on_ping(t.at(30).now);
        let out = s.on_tick(&t.at(60));
        assert_eq!(offered_ids(&out), ["b"]);
        // "c" went out at 2 s: due at 62 s.
        assert!(offered_ids(&s.on_tick(&t.at(61))).is_empty());
        assert_eq!(offered_ids(&s.on_tick(&t.at(62))), ["c"]);
    }

    #[test]
    fn readings_go_out_when_changed_asked_for_or_30_s_old() {
        let t = T::new();
        let (mut s, _) = Session::start(&t.at(0));
        let kinds = |a: &[Action]| sent(a).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let out = s.on_reading(
            &reading(VrrpState::Master, 1),
            &[TriggerSource::Connection],
            &t.at(0),
        );
        assert_eq!(kinds(&out), ["KEEPALIVED_UPDATE"]);
        // Only the counters moved: not sent.
        let out = s.on_reading(
            &reading(VrrpState::Master, 2),
            &[TriggerSource::Poll],
            &t.at(5),
        );
        assert!(kinds(&out).is_empty());
        // The state changed: sent.
        let out = s.on_reading(
            &reading(VrrpState::Backup, 3),
            &[TriggerSource::Fifo],
            &t.at(6),
        );
        assert_eq!(kinds(&out), ["KEEPALIVED_UPDATE"]);
        // REQUEST_STATE_UPDATE: a reading is asked for and sent although unchanged.
        let out = s.on_text(&envelope("REQUEST_STATE_UPDATE", json!({})), &t.at(7));
        assert_eq!(out, [Action::Read(TriggerSource::ServerRequest)]);
        let out = s.on_reading(
            &reading(VrrpState::Backup, 3),
            &[TriggerSource::ServerRequest],
            &t.at(7),
        );
        assert_eq!(kinds(&out), ["KEEPALIVED_UPDATE"]);
        // 30 s after the last one the tick asks for a reading, once.
        s.on_ping(t.at(30).now);
        assert!(s.on_tick(&t.at(36)).is_empty());
        assert_eq!(s.on_tick(&t.at(37)), [Action::Read(TriggerSource::Resend)]);
        assert!(s.on_tick(&t.at(38)).is_empty());
        let out = s.on_reading(
            &reading(VrrpState::Backup, 4),
            &[TriggerSource::Resend],
            &t.at(38),
        );
        assert_eq!(kinds(&out), ["KEEPALIVED_UPDATE"]);
        // A poll reading 30 s after the last send goes out unchanged too.
        s.on_ping(t.at(60).now);
        let out = s.on_reading(
            &reading(VrrpState::Backup, 5),
            &[TriggerSource::Poll],
            &t.at(68),
        );
        assert_eq!(kinds(&out), ["KEEPALIVED_UPDATE"]);
    }

    #[test]
    fn a_changed_password_is_a_changed_reading_and_goes_out_fingerprinted() {
        use vrrp_protocol::AuthPassword;
        let t = T::new();
        let key = FingerprintKey::from_bytes(b"k");
        let (mut s, _) = Session::start_keyed(&t.at(0), Some(key));
        let with = |password: &str, adverts: u64| {
            let mut r = (*reading(VrrpState::Master, adverts)).clone();
            r.instances[0].auth_password = Some(AuthPassword::new(password));
            Arc::new(r)
        };
        let fp = |actions: &[Action]| {
            sent(actions)
                .into_iter()
                .find(|(k, _)| k == "KEEPALIVED_UPDATE")
                .map(|(_, p)| p["instances"][0]["authFingerprint"].clone())
        };
        let out = s.on_reading(&with("one", 1), &[TriggerSource::Connection], &t.at(0));
        let first = fp(&out).unwrap();
        assert_eq!(first, AuthPassword::new("one").fingerprint(b"k").as_str());
        // Only the counters moved: not sent.
        let out = s.on_reading(&with("one", 2), &[TriggerSource::Poll], &t.at(1));
        assert_eq!(fp(&out), None);
        // The password changed, nothing else: sent, with the new fingerprint.
        let out = s.on_reading(&with("two", 3), &[TriggerSource::Poll], &t.at(2));
        let second = fp(&out).unwrap();
        assert_ne!(second, first);
        assert!(!sent(&out)
            .iter()
            .any(|(_, p)| p.to_string().contains("two")));
        // A session without a key sends the same reading without a fingerprint.
        let (mut plain, _) = Session::start(&t.at(0));
        let out = plain.on_reading(&with("one", 1), &[TriggerSource::Connection], &t.at(0));
        assert_eq!(fp(&out), Some(Value::Null));
    }

    #[test]
    fn a_host_action_goes_to_the_reader_and_only_its_own_answer_comes_back() {
        use vrrp_protocol::HostActionResult;
        let t = T::new();
        let (mut s, _) = Session::start(&t.at(0));
        let ask = json!({"id": "r1", "action": "drain", "reason": "drill", "by": "alice"});
        let out = s.on_text(&envelope("HOST_ACTION", ask.clone()), &t.at(1));
        let token = match &out[..] {
            [Action::Host { token, request }] if *request == ask => *token,
            other => panic!("{other:?}"),
        };
        // No id to answer to: dropped, as any malformed message.
        for bad in [json!({"action": "drain"}), json!({"id": 7}), json!("drain")] {
            assert!(s
                .on_text(&envelope("HOST_ACTION", bad), &t.at(1))
                .is_empty());
        }
        let done = |token| ActionDone {
            token,
            result: HostActionResult {
                id: "r1".into(),
                ok: true,
                ..Default::default()
            },
        };
        // Another session's answer is not sent here; this one's once.
        assert!(s.on_action_results(&[done(token + 1_000_000)]).is_empty());
        let out = s.on_action_results(&[done(token)]);
        let sent = sent(&out);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].0, "HOST_ACTION_RESULT");
        assert_eq!(sent[0].1["id"], "r1");
        assert_eq!(sent[0].1["ok"], true);
        assert!(s.on_action_results(&[done(token)]).is_empty());
    }

    #[test]
    fn dead_after_35_s_without_a_ping() {
        let t = T::new();
        let (mut s, _) = Session::start(&t.at(0));
        s.on_ping(t.at(20).now);
        assert!(!s
            .on_tick(&t.at(54))
            .iter()
            .any(|a| matches!(a, Action::Close(_))));
        let out = s.on_tick(&t.at(55));
        assert!(matches!(&out[..], [Action::Close(_)]), "{out:?}");
    }

    #[test]
    fn unknown_types_and_junk_are_dropped() {
        let t = T::new();
        t.push("a");
        let (mut s, _) = Session::start(&t.at(0));
        assert!(s.on_text("not json", &t.at(1)).is_empty());
        assert!(s
            .on_text(&envelope("SOMETHING_NEW", json!({"x": 1})), &t.at(1))
            .is_empty());
        assert!(s
            .on_text(&envelope("ACTIVITY_ACK", json!("nope")), &t.at(1))
            .is_empty());
        assert!(s.on_text(r#"{"type": 5}"#, &t.at(1)).is_empty());
        assert_eq!(t.q.lock().len(), 1, "nothing acknowledged");
        // ACK with unknown extra fields still works.
        s.on_text(
            &envelope("ACTIVITY_ACK", json!({"ids": ["a"], "later": true})),
            &t.at(1),
        );
        assert!(t.q.lock().is_empty());
    }
}
