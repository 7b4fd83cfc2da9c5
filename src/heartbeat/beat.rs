//! One beat: the three probes with their deadline, the summary a POST carries
//! ([`summary`], pure), and the call to the URL.

use crate::agents::AgentRegistry;
use crate::clock::{iso, SharedClock};
use crate::clusters::board::Board;
use crate::clusters::thread::{open_incidents, EvalMsg, EvalSender};
use crate::config::heartbeat::{mask_url, HeartbeatConfig, Method};
use crate::db::Db;
use crate::lifecycle::Shutdown;
use chrono::{DateTime, Duration, Utc};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// The longest the URL and the listener probe get, whatever the interval.
const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// What the `heartbeat` thread uses.
pub struct Handles {
    pub db: Arc<Db>,
    pub clock: SharedClock,
    pub evaluate: EvalSender,
    /// The cluster list as last published, for the summary.
    pub board: Arc<Board>,
    pub agents: Arc<AgentRegistry>,
    /// Where this server listens (the listener probe calls it on loopback).
    pub port: u16,
    /// The server's version, for the summary.
    pub version: &'static str,
}

/// Asks the writer, the cluster thread and the listener; `Ok` with the summary
/// when all three answered before one interval passed since `at` (on the
/// server's clock, and in real time), else which did not.
pub(super) fn probe(
    handles: &Handles,
    config: &HeartbeatConfig,
    at: DateTime<Utc>,
    shutdown: &Shutdown,
) -> Result<Value, String> {
    let interval = config.interval_seconds;
    let deadline = at + Duration::seconds(interval as i64);
    let real_deadline = Instant::now() + std::time::Duration::from_secs(interval);
    let writer = handles.db.probe_writer();
    let (reply, clusters) = crossbeam_channel::bounded(1);
    handles.evaluate.tell(EvalMsg::Ping(reply));
    let listener = probe_listener(handles.port, interval);

    let mut wrote: Option<bool> = None;
    let mut list: Option<()> = None;
    loop {
        if wrote.is_none() {
            match writer.try_recv() {
                Ok(ok) => wrote = Some(ok),
                Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    return Err("not sent: the SQLite writer is gone".into())
                }
                Err(crossbeam_channel::TryRecvError::Empty) => {}
            }
        }
        if list.is_none() {
            list = clusters.try_recv().ok();
        }
        if wrote.is_some() && list.is_some() {
            break;
        }
        if handles.clock.utc() >= deadline || Instant::now() >= real_deadline || shutdown.is_set() {
            let late: Vec<&str> = [
                wrote.is_none().then_some("the SQLite writer"),
                list.is_none().then_some("the cluster thread"),
            ]
            .into_iter()
            .flatten()
            .collect();
            return Err(format!(
                "not sent: {} did not answer within {interval} s",
                late.join(" and ")
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    listener?;
    if wrote == Some(false) {
        return Err("not sent: the SQLite writer could not commit".into());
    }
    let snapshot = handles.board.latest();
    let healths: Vec<&str> = snapshot
        .clusters
        .iter()
        .map(|c| c.health.as_str())
        .collect();
    let incidents = open_incidents(&handles.db).map_err(|e| format!("not sent: {e}"))?;
    let total = crate::agents::clients::list(&handles.db)
        .map_err(|e| format!("not sent: {e}"))?
        .len();
    Ok(summary(
        &healths,
        incidents,
        (handles.agents.online_count(), total),
        handles.version,
        handles.clock.utc(),
    ))
}

/// `GET /api/v1/ping` on our own listener over loopback.
fn probe_listener(port: u16, interval: u64) -> Result<(), String> {
    let timeout = CALL_TIMEOUT.min(std::time::Duration::from_secs(interval));
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        .build()
        .into();
    match agent
        .get(&format!("http://127.0.0.1:{port}/api/v1/ping"))
        .call()
    {
        Ok(answer) if answer.status().is_success() => Ok(()),
        Ok(answer) => Err(format!(
            "not sent: the HTTP listener answered {}",
            answer.status().as_u16()
        )),
        Err(e) => Err(format!(
            "not sent: the HTTP listener did not answer within {} s ({e})",
            timeout.as_secs()
        )),
    }
}

/// The JSON a POST carries: `status` (`ok` when every cluster is ok, else
/// `degraded`), clusters by health, open incidents, agents online and total,
/// the server's version and time.
pub(super) fn summary(
    healths: &[&str],
    incidents_open: u64,
    (online, total): (usize, usize),
    version: &str,
    now: DateTime<Utc>,
) -> Value {
    let mut by_health: Map<String, Value> = Map::new();
    for health in healths {
        let n = by_health.get(*health).and_then(Value::as_u64).unwrap_or(0);
        by_health.insert((*health).to_owned(), json!(n + 1));
    }
    let all_ok = healths.iter().all(|h| *h == "ok");
    json!({
        "status": if all_ok { "ok" } else { "degraded" },
        "clusters": { "total": healths.len(), "byHealth": by_health },
        "incidentsOpen": incidents_open,
        "agents": { "online": online, "total": total },
        "server": { "name": "vrrp-monitor", "version": version, "time": iso(now) },
    })
}

/// Calls the URL: POST with the summary, or GET without a body; a 2xx answer
/// within [`CALL_TIMEOUT`] is a beat. Errors never carry the URL itself.
pub(super) fn send(config: &HeartbeatConfig, summary: &Value) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(CALL_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let answer = match config.method {
        Method::Post => agent
            .post(&config.url)
            .header("content-type", "application/json")
            .send(summary.to_string()),
        Method::Get => agent.get(&config.url).call(),
    };
    match answer {
        Ok(a) if a.status().is_success() => Ok(()),
        Ok(a) => Err(format!("answered {}", a.status().as_u16())),
        Err(e) => Err(scrub(&e.to_string(), &config.url)),
    }
}

/// An error text with the URL (and its path) replaced by the masked form.
fn scrub(text: &str, url: &str) -> String {
    let masked = mask_url(url);
    let mut out = text.replace(url, &masked);
    if let Ok(uri) = url.parse::<ureq::http::Uri>() {
        if let Some(pq) = uri.path_and_query().map(|p| p.as_str()) {
            if pq.len() > 1 {
                out = out.replace(pq, "/…");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn summary_counts_and_status() {
        let now = Utc.with_ymd_and_hms(2026, 11, 27, 6, 0, 0).unwrap();
        let ok = summary(&["ok", "ok"], 0, (3, 4), "1.2.3", now);
        assert_eq!(ok["status"], "ok");
        assert_eq!(ok["clusters"]["byHealth"]["ok"], 2);
        assert_eq!(ok["agents"], json!({"online": 3, "total": 4}));
        assert_eq!(ok["server"]["time"], "2026-11-27T06:00:00.000Z");
        let bad = summary(&["ok", "critical"], 1, (1, 1), "1", now);
        assert_eq!(bad["status"], "degraded");
        assert_eq!(bad["incidentsOpen"], 1);
        assert_eq!(bad["clusters"]["total"], 2);
        assert_eq!(summary(&[], 0, (0, 0), "1", now)["status"], "ok");
    }

    #[test]
    fn errors_lose_the_token() {
        let url = "https://hc-ping.com/5e1f-secret?x=1";
        let text = scrub(&format!("bad uri {url}: refused"), url);
        assert!(!text.contains("secret"), "{text}");
        let text = scrub("GET /5e1f-secret?x=1 failed", url);
        assert!(!text.contains("secret"), "{text}");
    }
}
