//! `GET /metrics`: gathers the snapshot (cluster list, clients with their
//! readings, open incidents, counters, process facts) and answers the text
//! `metrics::render` makes of it. No session: a Prometheus server scrapes it;
//! when `security.metrics_allowed_networks` is set, only callers inside it may,
//! and when `security.metrics_token` is set, only with that token (or any API
//! token) as `Authorization: Bearer`.

use crate::clusters::readiness::{Status, Verdict};
use crate::clusters::thread::open_incidents;
use crate::clusters::Cluster;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::state::App;
use crate::metrics::{self, ClientFacts, ClientLine, ClusterFacts, Snapshot};
use std::net::IpAddr;

/// What the metrics show of a cluster (the metrics domain is a leaf: it is
/// handed plain facts, not the clusters' types).
fn cluster_facts(c: &Cluster) -> ClusterFacts {
    ClusterFacts::new(
        c.site.as_deref().unwrap_or(""),
        c.vrid,
        &c.networks,
        c.health.as_str(),
        c.members.iter().map(|m| (m.live(), m.state())),
        c.readiness.verdict == Verdict::Ready,
        c.readiness
            .checks
            .iter()
            .map(|o| (o.check.as_str(), o.status == Status::Fail)),
    )
}

/// The exposition format's content type (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub fn serve(app: &App, req: &Req) -> ApiResult {
    let allowed = &app.config.security.metrics_allowed_networks;
    if !allowed.is_empty() && !allowed_caller(allowed, req.client_ip) {
        log::warn!(
            "GET /metrics refused to {}: outside security.metrics_allowed_networks",
            req.client_ip
        );
        return Err(ApiError::new(403, "Access denied"));
    }
    if let Some(expected) = &app.config.security.metrics_token {
        if !bearer_allowed(app, req, expected)? {
            log::warn!(
                "GET /metrics refused to {}: no valid bearer token",
                req.client_ip
            );
            return Err(ApiError::unauthorized().header("www-authenticate", "Bearer"));
        }
    }
    let now = app.clock.utc();
    let snapshot = Snapshot {
        clusters: app
            .cluster_snapshot()
            .clusters
            .iter()
            .map(|c| cluster_facts(c))
            .collect(),
        clients: app
            .client_list()?
            .into_iter()
            .map(|c| {
                let reading = app.readings.get(&c.id);
                let line = ClientLine {
                    name: c.name().to_owned(),
                    online: c.status == "online",
                    site: c.site.unwrap_or_default(),
                    id: c.id,
                };
                ClientFacts::new(line, reading.as_deref(), now)
            })
            .collect(),
        incidents_open: open_incidents(&app.db)?,
        activity: app.counters.activity(),
        webhooks: app.counters.webhooks(),
        // Counted by the HTTP server's own means (one `poll` over the descriptor
        // table): `metrics` reads only `/proc/self` files.
        process: metrics::process::read(tiny_http::process_usage().descriptors.map(|n| n as u64)),
        queues: vec![
            ("sqlite-writer", app.db.queued_writes()),
            ("cluster-eval", app.evaluate.queued()),
        ],
    };
    let mut text = metrics::render(&snapshot);
    text.push_str(&metrics::render_heartbeat(
        app.heartbeat.status().last_success_unix,
    ));
    Ok(Resp {
        status: 200,
        headers: Vec::new(),
        body: text.into_bytes(),
        content_type: CONTENT_TYPE,
        after_sent: None,
        audit: None,
    })
}

/// The bearer token is `security.metrics_token` (compared in constant time)
/// or a valid API token of any role.
fn bearer_allowed(
    app: &App,
    req: &Req,
    expected: &crate::config::MetricsToken,
) -> Result<bool, ApiError> {
    let Some(presented) = req.bearer_token() else {
        return Ok(false);
    };
    if expected.matches(presented) {
        return Ok(true);
    }
    if crate::auth::api_tokens::looks_like_token(presented) {
        return Ok(
            crate::auth::api_tokens::authenticate(&app.db, presented, app.clock.utc())?.is_ok(),
        );
    }
    Ok(false)
}

/// IPv4 callers inside one of the networks (an IPv4-mapped IPv6 address counts
/// as its IPv4 address); other IPv6 callers are refused, as the list is IPv4.
fn allowed_caller(allowed: &[ipnet::Ipv4Net], ip: IpAddr) -> bool {
    let v4 = match ip {
        IpAddr::V4(v4) => Some(v4),
        IpAddr::V6(v6) => v6.to_ipv4_mapped(),
    };
    v4.is_some_and(|v4| allowed.iter().any(|n| n.contains(&v4)))
}
