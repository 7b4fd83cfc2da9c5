//! Delivering events to webhooks: one `webhook:<id>` thread per webhook, so
//! deliveries to one run in order and a slow or dead one never delays another,
//! ingest or the dashboards.
//!
//! Each newly stored event is offered to every enabled webhook whose level and
//! kinds it passes; beyond [`QUEUE`] waiting events, new ones are dropped for that
//! webhook with a warning. A delivery that got no answer, a 5xx or a 429 is
//! retried after 1 s and 5 s (on the server's clock). The outcome goes to the
//! webhook's lastStatus/lastError/lastAttemptAt and the log, never the activity list.

use super::live::{LiveHook, Rendered, Webhooks};
use super::store;
use super::template::Context;
use crate::activity::messages::compose;
use crate::activity::{ActivityRecord, StoredEvents};
use crate::clock::{iso, SharedClock};
use crate::db::Db;
use crate::metrics::{Counters, Outcome};
use chrono::Duration;
use crossbeam_channel::{bounded, Sender, TrySendError};
use parking_lot::Mutex;
use rusqlite::params;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Deliveries waiting per webhook before new events are dropped for it.
pub const QUEUE: usize = 100;
/// Waits before the retries of a failed delivery.
pub const RETRY_AFTER_SECS: [i64; 2] = [1, 5];

/// The outcome of one attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    pub status: Option<u16>,
    pub error: Option<String>,
    /// The first 500 characters of the answer.
    pub response: String,
}

impl Attempt {
    pub fn ok(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// Nothing answered, a 5xx, or a 429: worth another try.
    pub fn retryable(&self) -> bool {
        match self.status {
            // A target the rules refuse (`target::check`, errors "url: …")
            // stays refused: no retry.
            None => !self.error.as_deref().is_some_and(|e| e.starts_with("url:")),
            Some(s) => s >= 500 || s == 429,
        }
    }
}

/// What every webhook's template reads of one event (`event` with its
/// `message` and `detail`, `client`, `readiness`); a webhook's own `webhook`
/// is layered over it ([`Context::layered`]).
pub fn shared_context(db: &Db, event: Value) -> Value {
    let client = event["clientId"]
        .as_str()
        .and_then(|id| crate::agents::clients::get(db, id).ok().flatten())
        .map(|c| ClientView {
            id: c.id.clone(),
            name: c.name().to_owned(),
            hostname: c.hostname.clone(),
            site: c.site.clone(),
        });
    shared_context_of(event, client.as_ref())
}

/// A webhook's own layer of the context.
pub fn own_context(webhook_name: &str) -> Value {
    json!({ "webhook": { "name": webhook_name } })
}

/// The client fields a template sees.
pub struct ClientView {
    pub id: String,
    pub name: String,
    pub hostname: String,
    pub site: Option<String>,
}

/// [`shared_context`] without the database: the event's client already looked
/// up. An event without `message` (a sample) has its texts composed here; a
/// stored event's come with it, composed once for the dashboards and every
/// webhook.
pub fn shared_context_of(mut event: Value, client: Option<&ClientView>) -> Value {
    if let Some(o) = event.as_object_mut() {
        o.remove("seen");
        if !o.contains_key("message") {
            let (message, detail) = compose(
                o.get("kind").and_then(Value::as_str).unwrap_or_default(),
                o.get("subject").unwrap_or(&Value::Null),
                o.get("data").unwrap_or(&Value::Null),
                client.map(|c| c.name.as_str()),
            );
            o.insert("message".into(), json!(message));
            o.insert("detail".into(), json!(detail));
        }
    }
    let readiness = readiness_context(&event);
    json!({
        "event": event,
        "client": client.map(|c| json!({ "id": c.id, "name": c.name, "hostname": c.hostname, "site": c.site })),
        "readiness": readiness,
    })
}

/// `readiness` of a template's context, for `cluster.readiness_changed` (null for
/// other kinds): the verdict before and after, the findings, their checks and
/// sentences, so that a template needs no loop to say what is wrong.
fn readiness_context(event: &Value) -> Value {
    if event["kind"] != "cluster.readiness_changed" {
        return Value::Null;
    }
    let findings = event["data"]["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let of = |severity: &str| -> Vec<Value> {
        findings
            .iter()
            .filter(|f| f["severity"] == severity)
            .map(|f| f["message"].clone())
            .collect()
    };
    json!({
        "verdict": event["data"]["after"],
        "previousVerdict": event["data"]["before"],
        "ready": event["data"]["after"] == "ready",
        "findings": findings,
        "checks": findings.iter().map(|f| f["check"].clone()).collect::<Vec<_>>(),
        "blocking": of("blocking"),
        "warnings": of("warning"),
        "summary": findings.iter().filter_map(|f| f["message"].as_str()).collect::<Vec<_>>().join("; "),
    })
}

/// A definition not (necessarily) saved, rendered once with an event (a
/// sample): the API's test and preview. Also answers the context's shared part.
pub fn render_once(
    db: &Db,
    spec: &store::WebhookSpec,
    event: Value,
) -> Result<(Rendered, Value), String> {
    let templates = super::live::Templates::compile(spec)?;
    let shared = shared_context(db, event);
    let own = own_context(&spec.name);
    Ok((templates.render(Context::layered(&own, &shared)), shared))
}

/// One attempt, with the webhook's timeout.
pub fn send(hook: &store::WebhookSpec, rendered: &Rendered, allowed: &[ipnet::IpNet]) -> Attempt {
    if let Err(e) = super::target::check(&rendered.url, allowed) {
        return Attempt {
            status: None,
            error: Some(e),
            response: String::new(),
        };
    }
    // No redirect is followed: a 3xx could send the event (or, turned into a
    // GET, fetch an answer) somewhere the operator never named.
    let config = ureq::Agent::config_builder()
        .timeout_global(Some(std::time::Duration::from_millis(hook.timeout_ms)))
        .http_status_as_error(false)
        .max_redirects(0)
        .build();
    let agent = ureq::Agent::with_parts(
        config,
        ureq::unversioned::transport::DefaultConnector::new(),
        super::target::Resolver {
            allowed: allowed.into(),
        },
    );
    let body = rendered.body.to_string();
    let mut request = ureq::http::Request::builder()
        .method(hook.method.as_str())
        .uri(&rendered.url);
    for (k, v) in &rendered.headers {
        if !k.eq_ignore_ascii_case("content-type") {
            request = request.header(k.as_str(), v.as_str());
        }
    }
    let request = match request
        .header("content-type", "application/json")
        .body(body)
    {
        Ok(r) => r,
        Err(e) => {
            return Attempt {
                status: None,
                error: Some(format!("cannot build the request: {e}")),
                response: String::new(),
            }
        }
    };
    match agent.run(request) {
        Ok(mut answer) => {
            let status = answer.status().as_u16();
            let text = answer.body_mut().read_to_string().unwrap_or_default();
            let response: String = text.chars().take(500).collect();
            let error = if (300..400).contains(&status) {
                let location = answer
                    .headers()
                    .get("location")
                    .and_then(|l| l.to_str().ok())
                    .unwrap_or("(none)")
                    .escape_debug()
                    .to_string();
                Some(format!(
                    "answered {status}, a redirect to {location}: not followed"
                ))
            } else {
                (!(200..300).contains(&status)).then(|| format!("answered {status}"))
            };
            Attempt {
                status: Some(status),
                error,
                response,
            }
        }
        Err(e) => Attempt {
            status: None,
            // A refusal of the resolver is our own sentence: no "io:" before it.
            error: Some(match e {
                ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
                    io.to_string()
                }
                e => e.to_string(),
            }),
            response: String::new(),
        },
    }
}

/// What a webhook thread uses: the definitions in memory, the database (the
/// outcomes, the event's client) and the server's clock (retry times).
#[derive(Clone)]
struct Handles {
    db: Arc<Db>,
    hooks: Arc<Webhooks>,
    clock: SharedClock,
    /// Delivery outcomes by webhook, for `GET /metrics`.
    counters: Arc<Counters>,
    /// `webhooks.allowed_networks`: link-local targets that may be reached.
    allowed_networks: Arc<[ipnet::IpNet]>,
}

/// One stored event on its way to the webhooks that want it: the record
/// (texts composed once, by the activity sink) and the context every
/// webhook's template reads, built by the first webhook thread to need it.
struct Delivery {
    record: Arc<ActivityRecord>,
    shared: OnceLock<Value>,
}

impl Delivery {
    fn shared(&self, db: &Db) -> &Value {
        self.shared.get_or_init(|| {
            shared_context(db, serde_json::to_value(&*self.record).unwrap_or_default())
        })
    }
}

/// The webhook threads, one per webhook that had something to deliver.
pub struct Dispatcher {
    handles: Handles,
    queues: Mutex<HashMap<String, Sender<Arc<Delivery>>>>,
}

impl Dispatcher {
    pub fn new(
        db: Arc<Db>,
        hooks: Arc<Webhooks>,
        clock: SharedClock,
        counters: Arc<Counters>,
        allowed_networks: Vec<ipnet::IpNet>,
    ) -> Dispatcher {
        Dispatcher {
            handles: Handles {
                db,
                hooks,
                clock,
                counters,
                allowed_networks: allowed_networks.into(),
            },
            queues: Mutex::new(HashMap::new()),
        }
    }

    fn queue_of(&self, hook: &LiveHook) -> Sender<Arc<Delivery>> {
        let id = &hook.hook.id;
        let mut queues = self.queues.lock();
        if let Some(tx) = queues.get(id) {
            return tx.clone();
        }
        let (tx, rx) = bounded::<Arc<Delivery>>(QUEUE);
        let (handles, thread_id) = (self.handles.clone(), id.clone());
        let spawned = std::thread::Builder::new()
            // The id, never the name: a name is user text (a NUL made
            // `Builder::name` panic on the cluster thread and end the process).
            .name(format!("webhook:{}", short_id(id)))
            .spawn(move || {
                for delivery in rx {
                    // The definition as saved now: it may have changed since the
                    // event was queued; a deleted webhook ends its thread.
                    let Some(hook) = handles.hooks.get(&thread_id) else {
                        return;
                    };
                    crate::lifecycle::contain_panics(|| deliver(&handles, &hook, &delivery));
                }
            });
        if let Err(e) = spawned {
            log::error!(
                "Cannot start the thread of webhook \"{}\": {e}",
                hook.hook.spec.name
            );
        }
        queues.insert(id.clone(), tx.clone());
        tx
    }
}

impl StoredEvents for Dispatcher {
    /// Offers newly stored events to every webhook that wants them: no
    /// database read, no template compiled, one shared copy per event.
    fn offer(&self, records: &[Arc<ActivityRecord>]) {
        let hooks = self.handles.hooks.current();
        let deliveries: Vec<Arc<Delivery>> = records
            .iter()
            .map(|r| {
                Arc::new(Delivery {
                    record: r.clone(),
                    shared: OnceLock::new(),
                })
            })
            .collect();
        for live in hooks.iter().filter(|h| h.hook.spec.enabled) {
            let spec = &live.hook.spec;
            for delivery in deliveries
                .iter()
                .filter(|d| spec.wants(&d.record.event.kind, d.record.event.level.as_str()))
            {
                let tx = self.queue_of(live);
                match tx.try_send(delivery.clone()) {
                    Ok(()) => {}
                    Err(TrySendError::Full(_)) => {
                        self.handles
                            .counters
                            .webhook_outcome(&spec.name, Outcome::Dropped);
                        log::warn!("Webhook \"{}\": {QUEUE} deliveries waiting; event {} is dropped for it", spec.name, delivery.record.event.id)
                    }
                    Err(TrySendError::Disconnected(_)) => {
                        self.queues.lock().remove(&live.hook.id);
                    }
                }
            }
        }
    }
}

/// The first 8 characters of an id (a UUID), for a thread name: Linux keeps 15 bytes.
fn short_id(id: &str) -> String {
    id.chars()
        .filter(char::is_ascii_alphanumeric)
        .take(8)
        .collect()
}

/// Delivers one event, with the retries, and records the outcome.
fn deliver(h: &Handles, live: &LiveHook, delivery: &Delivery) {
    let hook = &live.hook;
    let rendered = match &live.templates {
        Ok(t) => {
            let own = own_context(&hook.spec.name);
            t.render(Context::layered(&own, delivery.shared(&h.db)))
        }
        Err(e) => {
            h.counters.webhook_outcome(&hook.spec.name, Outcome::Failed);
            record(
                h,
                &hook.id,
                &Attempt {
                    status: None,
                    error: Some(format!("cannot render: {e}")),
                    response: String::new(),
                },
            );
            return;
        }
    };
    // The schedule is fixed from the first attempt (retries at +1 s and +1+5 s),
    // so how long an attempt took does not shift the next.
    let mut due = h.clock.utc();
    let allowed = &h.allowed_networks;
    let mut attempt = send(&hook.spec, &rendered, allowed);
    for wait in RETRY_AFTER_SECS {
        if attempt.ok() || !attempt.retryable() {
            break;
        }
        due += Duration::seconds(wait);
        while h.clock.utc() < due {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        attempt = send(&hook.spec, &rendered, allowed);
    }
    if !attempt.ok() {
        log::warn!(
            "Webhook \"{}\": delivery of event {} failed: {}",
            hook.spec.name,
            delivery.record.event.id,
            attempt.error.as_deref().unwrap_or("?")
        );
    }
    let outcome = if attempt.ok() {
        Outcome::Delivered
    } else {
        Outcome::Failed
    };
    h.counters.webhook_outcome(&hook.spec.name, outcome);
    record(h, &hook.id, &attempt);
}

fn record(h: &Handles, id: &str, attempt: &Attempt) {
    let (id, status, error, at) = (
        id.to_owned(),
        attempt.status.map(i64::from),
        attempt.error.clone(),
        iso(h.clock.utc()),
    );
    let saved = h.db.write(move |c| {
        c.execute("UPDATE webhooks SET last_status = ?2, last_error = ?3, last_attempt_at = ?4 WHERE id = ?1", params![id, status, error, at])?;
        Ok::<_, crate::db::DbError>(())
    });
    if let Err(e) = saved {
        log::error!("Cannot record a webhook outcome: {e}");
    }
}

/// Sample events for `POST /api/v1/webhooks/test`, one per kind worth showing.
pub fn samples(now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let at = iso(now);
    let cluster = json!({
        "site": "dc-1", "vrid": 51, "networks": ["192.0.2.0/24"], "vips": ["192.0.2.100/24"], "health": "split-brain",
        "master": null, "masters": ["lb-1", "lb-2"],
        "members": [
            { "host": "lb-1", "clientId": null, "instanceName": "VI_1", "state": "MASTER", "priority": 130, "effectivePriority": 130, "online": true, "reporting": true, "readAt": at, "vips": ["192.0.2.100/24"] },
            { "host": "lb-2", "clientId": null, "instanceName": "VI_1", "state": "MASTER", "priority": 120, "effectivePriority": 120, "online": true, "reporting": true, "readAt": at, "vips": ["192.0.2.100/24"] }
        ]
    });
    let incident = |health: Value, extra: Value| {
        let mut i = json!({ "id": "sample-incident", "health": health, "previousHealth": "ok",
            "reasons": [{ "type": "split-brain", "text": "lb-1 and lb-2 are both MASTER at once (split brain).", "hosts": ["lb-1", "lb-2"] }],
            "history": ["split-brain"], "openedAt": at, "confirmedAt": at });
        if let (Some(o), Some(e)) = (i.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        i
    };
    let event = |kind: &str,
                 level: &str,
                 source: &str,
                 subject: Value,
                 data: Value,
                 correlation: Option<&str>| {
        json!({ "id": format!("sample-{kind}"), "occurredAt": at, "receivedAt": at, "source": source, "clientId": null,
                "kind": kind, "level": level, "correlationId": correlation, "subject": subject, "data": data })
    };
    let vrrp = json!({ "instanceName": "VI_1", "vrid": 51, "interface": "eth0" });
    // The incident update's cluster: lb-2 in FAULT, and why.
    let mut degraded = cluster.clone();
    degraded["health"] = json!("degraded");
    degraded["master"] = json!("lb-1");
    degraded["masters"] = json!(["lb-1"]);
    degraded["members"][1]["state"] = json!("FAULT");
    degraded["members"][1]["effectivePriority"] = json!(0);
    degraded["members"][1]["faultReason"] = json!("track script chk_haproxy failed");
    let fault_text = "lb-2 is in FAULT: track script chk_haproxy failed.";
    let causes = json!([{ "kind": "script", "name": "chk_haproxy", "status": "BAD" }]);
    vec![
        // The default sample: a FAULT and its cause, what an operator most needs
        // a receiver to show.
        event(
            "vrrp.state_changed",
            "error",
            "agent",
            vrrp.clone(),
            json!({ "from": "MASTER", "to": "FAULT", "priority": 130, "effectivePriority": 130, "causes": causes }),
            None,
        ),
        event(
            "vrrp.track_changed",
            "warning",
            "agent",
            vrrp.clone(),
            json!({ "kind": "script", "name": "chk_haproxy", "from": "GOOD", "to": "BAD", "ok": false }),
            None,
        ),
        event(
            "vrrp.master_changed",
            "info",
            "server",
            vrrp.clone(),
            json!({ "cluster": cluster, "previousMaster": "lb-1" }),
            None,
        ),
        event(
            "vrrp.split_brain",
            "info",
            "server",
            vrrp.clone(),
            json!({ "cluster": cluster, "previousMaster": "lb-1" }),
            None,
        ),
        event(
            "vrrp.incident_opened",
            "warning",
            "server",
            vrrp.clone(),
            json!({ "cluster": cluster, "incident": incident(json!("split-brain"), json!({})) }),
            Some("sample-incident"),
        ),
        event(
            "vrrp.incident_updated",
            "warning",
            "server",
            vrrp.clone(),
            json!({ "cluster": degraded, "incident": incident(json!("degraded"), json!({
                "previousHealth": "split-brain", "history": ["split-brain", "degraded"],
                "reasons": [{ "type": "fault", "text": fault_text, "host": "lb-2", "causes": causes }],
                "added": [fault_text],
                "cleared": ["lb-1 and lb-2 are both MASTER at once (split brain)."] })) }),
            Some("sample-incident"),
        ),
        event(
            "vrrp.incident_resolved",
            "info",
            "server",
            vrrp,
            json!({ "cluster": cluster, "incident": incident(json!("ok"), json!({ "reasons": [], "resolvedAt": at, "durationSeconds": 312, "resolution": "recovered" })) }),
            Some("sample-incident"),
        ),
        event(
            "cluster.readiness_changed",
            "warning",
            "server",
            json!({}),
            json!({ "cluster": degraded, "before": "ready", "after": "not_ready", "previousFindings": [],
                "findings": [{ "check": "no_ready_backup", "severity": "blocking", "hosts": ["lb-2"],
                    "message": "lb-2 is in FAULT (track script chk_haproxy failed): no backup could take over from lb-1" }] }),
            None,
        ),
        event(
            "keepalived.stopped",
            "warning",
            "agent",
            json!({}),
            json!({ "pid": 4242, "version": "2.2.7" }),
            None,
        ),
        event(
            "client.connected",
            "trace",
            "server",
            json!({}),
            json!({ "connectionMode": "inbound", "version": "1.0.0", "clientName": "lb-1" }),
            None,
        ),
    ]
}

/// The sample for a webhook's kinds: the first one its patterns match, else
/// `vrrp.state_changed`.
pub fn sample_for(spec: &store::WebhookSpec, now: chrono::DateTime<chrono::Utc>) -> Value {
    let all = samples(now);
    all.iter()
        .find(|e| {
            spec.kinds
                .iter()
                .any(|p| store::kind_matches(p, e["kind"].as_str().unwrap_or_default()))
        })
        .unwrap_or(&all[0])
        .clone()
}
