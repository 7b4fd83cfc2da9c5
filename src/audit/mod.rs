//! The audit log: who changed what, when, from where, and how they were
//! authenticated. One entry per change, written by the HTTP layer after the
//! change succeeded (and by logins and the import for themselves).
//!
//! Invariant: no secret reaches an entry. Summaries are composed here and in
//! the handlers from names and ids, never from request bodies; a test searches
//! the table for the secrets a run used. Entries are never deleted through the
//! API, only pruned after `audit.retention_days`.

use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::{params, params_from_iter, Row};
use serde::Serialize;

/// How the actor proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// A password login's session (or a session JWT sent as a bearer token).
    Session,
    /// An API token.
    Token,
    /// A session from a single sign-on login.
    Oidc,
    /// The command line on the server's host (`vrrp-monitor import-kasm`).
    Cli,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Session => "session",
            Via::Token => "token",
            Via::Oidc => "oidc",
            Via::Cli => "cli",
        }
    }
}

/// What a handler says about the change it made; the HTTP layer adds who,
/// when and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct Note {
    /// `<thing>.<verb>`, e.g. `webhook.updated`.
    pub action: &'static str,
    /// What was changed, e.g. `webhook 3` or `user alice`.
    pub target: Option<String>,
    /// One sentence, without secrets.
    pub summary: String,
}

impl Note {
    pub fn new(
        action: &'static str,
        target: impl Into<String>,
        summary: impl Into<String>,
    ) -> Note {
        Note {
            action,
            target: Some(target.into()),
            summary: summary.into(),
        }
    }
}

/// One stored entry.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub id: i64,
    pub at: String,
    pub actor: String,
    pub via: String,
    pub source_ip: Option<String>,
    pub action: String,
    pub target: Option<String>,
    pub summary: String,
}

/// Who did it.
#[derive(Debug, Clone)]
pub struct Actor {
    pub name: String,
    pub via: Via,
    pub source_ip: Option<String>,
}

/// Writes one entry. A failure is logged and returned: the change itself is
/// already made, and the caller decides whether its answer says so.
pub fn record(db: &Db, actor: &Actor, note: Note, at: DateTime<Utc>) -> Result<(), DbError> {
    let (name, via, ip) = (actor.name.clone(), actor.via, actor.source_ip.clone());
    let at = crate::clock::iso(at);
    let result = db.write(move |c| {
        c.execute(
            "INSERT INTO audit_log (at, actor, via, source_ip, action, target, summary)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                at,
                name,
                via.as_str(),
                ip,
                note.action,
                note.target,
                note.summary
            ],
        )?;
        Ok::<_, DbError>(())
    });
    if let Err(e) = &result {
        log::error!("Cannot write an audit entry: {e}");
    }
    result
}

/// A query of the log: every filter optional; newest first.
#[derive(Debug, Default, Clone)]
pub struct Filter {
    pub actor: Option<String>,
    pub action: Option<String>,
    /// Matches entries whose target contains this text.
    pub target: Option<String>,
    pub from: Option<String>,
    pub to: Option<String>,
    /// Entries older than this id (the previous page's `nextBefore`).
    pub before: Option<i64>,
    pub limit: usize,
}

pub const DEFAULT_LIMIT: usize = 100;
pub const MAX_LIMIT: usize = 1000;

/// One page, newest first, and the id to ask `before` for the next one.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub entries: Vec<Entry>,
    pub next_before: Option<i64>,
}

fn entry_from_row(r: &Row<'_>) -> rusqlite::Result<Entry> {
    Ok(Entry {
        id: r.get("id")?,
        at: r.get("at")?,
        actor: r.get("actor")?,
        via: r.get("via")?,
        source_ip: r.get("source_ip")?,
        action: r.get("action")?,
        target: r.get("target")?,
        summary: r.get("summary")?,
    })
}

pub fn list(db: &Db, filter: &Filter) -> Result<Page, DbError> {
    let mut clauses = Vec::new();
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    let mut add = |clause: &str, value: rusqlite::types::Value| {
        args.push(value);
        clauses.push(clause.replace('?', &format!("?{}", args.len())));
    };
    if let Some(a) = &filter.actor {
        add("actor = ?", a.clone().into());
    }
    if let Some(a) = &filter.action {
        add("action = ?", a.clone().into());
    }
    if let Some(t) = &filter.target {
        add("instr(target, ?) > 0", t.clone().into());
    }
    if let Some(f) = &filter.from {
        add("at >= ?", f.clone().into());
    }
    if let Some(t) = &filter.to {
        add("at <= ?", t.clone().into());
    }
    if let Some(b) = filter.before {
        add("id < ?", b.into());
    }
    let limit = filter.limit.clamp(1, MAX_LIMIT);
    let sql = format!(
        "SELECT * FROM audit_log {} ORDER BY id DESC LIMIT {}",
        if clauses.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", clauses.join(" AND "))
        },
        limit + 1
    );
    let mut entries = db.read(|c| {
        let mut stmt = c.prepare(&sql)?;
        let rows = stmt
            .query_map(params_from_iter(args.iter()), entry_from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok::<_, DbError>(rows)
    })?;
    let next_before = if entries.len() > limit {
        entries.truncate(limit);
        entries.last().map(|e| e.id)
    } else {
        None
    };
    Ok(Page {
        entries,
        next_before,
    })
}

/// Deletes entries older than `cutoff`; returns how many.
pub fn prune(db: &Db, cutoff: DateTime<Utc>) -> Result<usize, DbError> {
    let cutoff = crate::clock::iso(cutoff);
    db.write(move |c| Ok(c.execute("DELETE FROM audit_log WHERE at < ?1", [cutoff])?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, day, 12, 0, 0).unwrap()
    }

    #[test]
    fn entries_are_listed_newest_first_filtered_paged_and_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("a.db"), "now").unwrap();
        let alice = Actor {
            name: "alice".into(),
            via: Via::Session,
            source_ip: Some("192.0.2.1".into()),
        };
        let bot = Actor {
            name: "terraform".into(),
            via: Via::Token,
            source_ip: None,
        };
        for day in 1..=5 {
            let who = if day % 2 == 0 { &bot } else { &alice };
            let note = Note::new("webhook.updated", format!("webhook {day}"), "changed");
            record(&db, who, note, at(day)).unwrap();
        }
        let all = list(
            &db,
            &Filter {
                limit: 100,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(all.entries.len(), 5);
        assert_eq!(all.entries[0].target.as_deref(), Some("webhook 5"));
        assert_eq!(all.next_before, None);
        let bots = list(
            &db,
            &Filter {
                actor: Some("terraform".into()),
                limit: 100,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(bots.entries.len(), 2);
        assert!(bots.entries.iter().all(|e| e.via == "token"));
        let page = list(
            &db,
            &Filter {
                limit: 2,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(page.entries.len(), 2);
        let rest = list(
            &db,
            &Filter {
                limit: 10,
                before: page.next_before,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(rest.entries.len(), 3);
        let window = list(
            &db,
            &Filter {
                from: Some(crate::clock::iso(at(2))),
                to: Some(crate::clock::iso(at(3))),
                target: Some("webhook".into()),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(window.entries.len(), 2);
        assert_eq!(prune(&db, at(3)).unwrap(), 2);
        assert_eq!(
            list(
                &db,
                &Filter {
                    limit: 10,
                    ..Default::default()
                }
            )
            .unwrap()
            .entries
            .len(),
            3
        );
    }
}
