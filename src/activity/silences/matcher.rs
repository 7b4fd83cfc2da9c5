//! Which events a silence covers, and what a silence body must be (pure).
//!
//! A matcher has any combination of a cluster key, a client id and a kind
//! pattern (`*` stands for any run of characters); every part given must match.
//! A client id also matches the cluster events of the clusters that host is a
//! member of: maintenance on a host degrades its clusters, and those incidents
//! name the other host.

use crate::activity::event::{is_about_cluster, Event};
use chrono::{DateTime, Duration, Utc};
use serde_json::{Map, Value};

/// The longest silence: a week, so nothing is forgotten behind one.
pub const MAX_SILENCE_DAYS: i64 = 7;

#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Matcher {
    pub cluster_key: Option<String>,
    pub client_id: Option<String>,
    pub kind: Option<String>,
}

/// `*` matches any run of characters (none included); everything else itself.
pub fn kind_matches(pattern: &str, kind: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == kind;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !kind.starts_with(first) || kind.len() < first.len() + last.len() || !kind.ends_with(last) {
        return false;
    }
    let mut rest = &kind[first.len()..kind.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

impl Matcher {
    pub fn matches(&self, event: &Event) -> bool {
        if let Some(key) = &self.cluster_key {
            if !is_about_cluster(&event.data, key) {
                return false;
            }
        }
        if let Some(id) = &self.client_id {
            let member = event.data.get("cluster").map_or(&Value::Null, |c| c)["members"]
                .as_array()
                .is_some_and(|ms| ms.iter().any(|m| m["clientId"].as_str() == Some(id)));
            if event.client_id.as_deref() != Some(id.as_str()) && !member {
                return false;
            }
        }
        if let Some(kind) = &self.kind {
            if !kind_matches(kind, &event.kind) {
                return false;
            }
        }
        true
    }
}

/// A silence as asked for by `POST /api/v1/silences`.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSilence {
    pub matcher: Matcher,
    pub starts_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub comment: String,
}

fn optional_text(
    m: &Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<String>, (String, String)> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => {
            Err((path.into(), "must not be empty".into()))
        }
        Some(Value::String(s)) => Ok(Some(s.trim().to_owned())),
        Some(_) => Err((path.into(), "must be a string".into())),
    }
}

fn time(m: &Map<String, Value>, key: &str) -> Result<Option<DateTime<Utc>>, (String, String)> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => DateTime::parse_from_rfc3339(s)
            .map(|t| Some(t.with_timezone(&Utc)))
            .map_err(|_| (key.into(), "must be an ISO 8601 timestamp".into())),
        Some(_) => Err((key.into(), "must be a string".into())),
    }
}

/// Checks a body: `matcher` (`clusterKey`, `clientId`, `kind`; at least one),
/// `startsAt` (default now), `endsAt` (after `startsAt` and now, at most 7 days
/// after `startsAt`), `comment` (required). The first offending field is named;
/// rules between fields come after the shape.
pub fn validate(
    body: &Map<String, Value>,
    now: DateTime<Utc>,
) -> Result<NewSilence, (String, String)> {
    let matcher = match body.get("matcher") {
        None | Some(Value::Null) => return Err(("matcher".into(), "is required".into())),
        Some(Value::Object(m)) => Matcher {
            cluster_key: optional_text(m, "clusterKey", "matcher.clusterKey")?,
            client_id: optional_text(m, "clientId", "matcher.clientId")?,
            kind: optional_text(m, "kind", "matcher.kind")?,
        },
        Some(_) => return Err(("matcher".into(), "must be an object".into())),
    };
    let starts_at = time(body, "startsAt")?;
    let ends_at =
        time(body, "endsAt")?.ok_or_else(|| ("endsAt".to_owned(), "is required".to_owned()))?;
    let comment = match body.get("comment") {
        None | Some(Value::Null) => return Err(("comment".into(), "is required".into())),
        Some(Value::String(s)) if s.trim().is_empty() => {
            return Err(("comment".into(), "must not be empty".into()))
        }
        Some(Value::String(s)) if s.chars().count() > 500 => {
            return Err(("comment".into(), "must be at most 500 characters".into()))
        }
        // A comment reaches event data, log lines and webhooks: no control characters.
        Some(Value::String(s)) if s.chars().any(char::is_control) => {
            return Err((
                "comment".into(),
                "must not contain control characters".into(),
            ))
        }
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(_) => return Err(("comment".into(), "must be a string".into())),
    };
    if matcher == Matcher::default() {
        return Err((
            "matcher".into(),
            "needs at least one of clusterKey, clientId, kind".into(),
        ));
    }
    // Whole milliseconds, as events carry their times: an event received in the
    // very millisecond a silence starts is covered by it.
    let starts_at = chrono::SubsecRound::trunc_subsecs(starts_at.unwrap_or(now), 3);
    if ends_at <= starts_at.max(now) {
        return Err((
            "endsAt".into(),
            "must be later than startsAt and now".into(),
        ));
    }
    if ends_at - starts_at > Duration::days(MAX_SILENCE_DAYS) {
        return Err((
            "endsAt".into(),
            "must be at most 7 days after startsAt".into(),
        ));
    }
    Ok(NewSilence {
        matcher,
        starts_at,
        ends_at,
        comment,
    })
}
