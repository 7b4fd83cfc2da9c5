//! Silences defined by provisioning files, matched by their name across
//! reloads (the id is derived from it, `db::stable_id`): created, changed or
//! taken away so that the provisioned ones are what the files say, and applying
//! the same files twice changes nothing.
//!
//! A window already over when its file first names it is stored as ended,
//! without events. One taken out of its file is deleted while it has not
//! started, ended now while active (the `silences` thread then expires it as
//! any other, delivering what it held back), and kept as history once ended.

use super::{silence_event, FromFile, NewSilence, Silence, Silences};
use crate::activity::event::Recorder;
use crate::clock::iso;
use crate::db::{stable_id, DbError};
use chrono::{DateTime, Utc};
use rusqlite::params;

/// A silence as a file defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub file: String,
    pub name: String,
    pub silence: NewSilence,
}

/// The id a provisioned silence of this name has.
pub fn id_for(name: &str) -> String {
    stable_id("silence", name)
}

enum Op {
    Insert(Silence),
    Update(Silence),
    Delete(String),
}

fn same(s: &Silence, w: &Wanted) -> bool {
    s.matcher == w.silence.matcher
        && s.starts_at == w.silence.starts_at
        && s.ends_at == w.silence.ends_at
        && s.comment == w.silence.comment
        && s.provisioned.as_ref().map(|p| p.file.as_str()) == Some(w.file.as_str())
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", name.escape_debug())
}

impl Silences {
    /// Brings the provisioned silences in line with `wanted`; one sentence per
    /// change. `silence.created` is recorded for each new window not yet over.
    pub fn provision(
        &self,
        wanted: Vec<Wanted>,
        now: DateTime<Utc>,
        sink: &dyn Recorder,
    ) -> Result<Vec<String>, DbError> {
        let mut list = self.list.write();
        let mut next = list.clone();
        let (mut ops, mut events, mut changes) = (Vec::new(), Vec::new(), Vec::new());
        let mut kept = Vec::new();
        for w in wanted {
            let id = id_for(&w.name);
            kept.push(id.clone());
            let until = iso(w.silence.ends_at);
            match next.iter_mut().find(|s| s.id == id) {
                None => {
                    let s = Silence {
                        id,
                        matcher: w.silence.matcher,
                        starts_at: w.silence.starts_at,
                        ends_at: w.silence.ends_at,
                        comment: w.silence.comment,
                        created_by: "provisioning".into(),
                        created_at: now,
                        expired: w.silence.ends_at <= now,
                        provisioned: Some(FromFile {
                            file: w.file.clone(),
                            name: w.name.clone(),
                        }),
                    };
                    if !s.expired {
                        events.push(silence_event("silence.created", &s, now));
                    }
                    changes.push(format!(
                        "silence {} created from {} (until {until})",
                        quoted(&w.name),
                        w.file
                    ));
                    ops.push(Op::Insert(s.clone()));
                    next.push(s);
                }
                Some(s) if same(s, &w) => {}
                Some(s) => {
                    s.matcher = w.silence.matcher;
                    s.starts_at = w.silence.starts_at;
                    s.ends_at = w.silence.ends_at;
                    s.comment = w.silence.comment;
                    // A window moved into the future is live again.
                    s.expired = s.expired && s.ends_at <= now;
                    s.provisioned = Some(FromFile {
                        file: w.file.clone(),
                        name: w.name.clone(),
                    });
                    changes.push(format!(
                        "silence {} changed by {} (until {until})",
                        quoted(&w.name),
                        w.file
                    ));
                    ops.push(Op::Update(s.clone()));
                }
            }
        }
        let mut deleted = Vec::new();
        for s in next
            .iter_mut()
            .filter(|s| s.provisioned.is_some() && !kept.contains(&s.id))
        {
            let p = s.provisioned.clone().unwrap_or_else(|| FromFile {
                file: String::new(),
                name: s.id.clone(),
            });
            if s.expired || s.ends_at <= now {
                continue;
            }
            if s.starts_at > now {
                deleted.push(s.id.clone());
                ops.push(Op::Delete(s.id.clone()));
                changes.push(format!(
                    "silence {} removed (no longer in {})",
                    quoted(&p.name),
                    p.file
                ));
            } else {
                s.ends_at = now;
                ops.push(Op::Update(s.clone()));
                changes.push(format!(
                    "silence {} ended (no longer in {})",
                    quoted(&p.name),
                    p.file
                ));
            }
        }
        if ops.is_empty() {
            return Ok(changes);
        }
        next.retain(|s| !deleted.contains(&s.id));
        self.db.write(move |c| {
            for op in ops {
                match op {
                    Op::Insert(s) => {
                        let p = s.provisioned.clone().unwrap_or_else(|| FromFile {
                            file: String::new(),
                            name: String::new(),
                        });
                        c.execute(
                            "INSERT INTO silences (id, cluster_key, client_id, kind, starts_at, ends_at, comment, created_by, created_at, expired, provisioned_from, provisioned_name)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                            params![s.id, s.matcher.cluster_key, s.matcher.client_id, s.matcher.kind,
                                iso(s.starts_at), iso(s.ends_at), s.comment, s.created_by, iso(s.created_at),
                                s.expired as i64, p.file, p.name],
                        )?;
                    }
                    Op::Update(s) => {
                        let file = s.provisioned.as_ref().map(|p| p.file.clone());
                        c.execute(
                            "UPDATE silences SET cluster_key = ?2, client_id = ?3, kind = ?4, starts_at = ?5, ends_at = ?6,
                                 comment = ?7, expired = ?8, provisioned_from = ?9 WHERE id = ?1",
                            params![s.id, s.matcher.cluster_key, s.matcher.client_id, s.matcher.kind,
                                iso(s.starts_at), iso(s.ends_at), s.comment, s.expired as i64, file],
                        )?;
                    }
                    Op::Delete(id) => {
                        c.execute("DELETE FROM silences WHERE id = ?1", [id])?;
                    }
                }
            }
            Ok::<_, DbError>(())
        })?;
        *list = next;
        drop(list);
        if !events.is_empty() {
            sink.record(events);
        }
        Ok(changes)
    }
}
