//! HTTP calls the agent makes to the server (ureq 3, rustls with ring): the register
//! call and the reachability check. Certificate checking is chosen per call by building
//! an `ureq::Agent` for it; nothing process-wide is switched.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Result of one HTTP exchange: either nothing answered, or a status and a body.
pub enum Answer {
    Nothing(String),
    Status(u16, String),
}

fn agent(insecure: bool, timeout: Duration) -> ureq::Agent {
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .disable_verification(insecure)
        .build();
    ureq::Agent::config_builder()
        .timeout_global(Some(timeout))
        .http_status_as_error(false)
        // The agent talks to its management server directly; an environment proxy
        // would otherwise see the registration token.
        .proxy(None)
        .tls_config(tls)
        .build()
        .into()
}

/// `{base}/{path}` with exactly one slash between them.
pub fn join(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

const MAX_BODY: u64 = 64 * 1024;

fn finish(r: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
    match r {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let body = resp
                .body_mut()
                .with_config()
                .limit(MAX_BODY)
                .read_to_string()
                .unwrap_or_default();
            Answer::Status(status, body)
        }
        Err(e) => Answer::Nothing(e.to_string()),
    }
}

/// `POST {base}/api/v1/register` with `{token, hostname}`.
pub fn register(base: &str, token: &str, hostname: &str, insecure: bool) -> Answer {
    finish(
        agent(insecure, Duration::from_secs(10))
            .post(join(base, "/api/v1/register"))
            .send_json(json!({ "token": token, "hostname": hostname })),
    )
}

/// `GET {base}/api/v1/ping`: always tolerates a self-signed certificate (it sends nothing).
pub fn ping(base: &str) -> Value {
    let t0 = Instant::now();
    match finish(
        agent(true, Duration::from_secs(5))
            .get(join(base, "/api/v1/ping"))
            .call(),
    ) {
        Answer::Status(s, _) => json!({
            "configured": true,
            "url": base,
            "reachable": (200..300).contains(&s),
            "status": s,
            "latencyMs": t0.elapsed().as_millis() as u64,
            "error": if (200..300).contains(&s) { Value::Null } else { json!(format!("server answered {s}")) },
        }),
        Answer::Nothing(e) => json!({
            "configured": true, "url": base, "reachable": false, "status": null,
            "latencyMs": null, "error": e,
        }),
    }
}
