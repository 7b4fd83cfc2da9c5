//! `vrrp-monitor import-kasm`: moves a keepalived-status-monitor 1.0 installation
//! (its SQLite database and config file) into this server's data directory, so
//! its agents reconnect here with the credentials they already hold.
//!
//! Run once, with this server stopped. Order matters, and each step before the
//! write refuses without touching the target: read the original (read-only) and
//! open its outbound tokens with its key; look at the target (read-only); load
//! our config (created on a fresh installation, as a first start would); then
//! migrate and write in one transaction, and take the settings over.
//! `source` and `target` are the I/O, `map` the pure rules, `kasm_key` the
//! original's key derivation. Nothing secret is printed: records are named by
//! id or user name, registration tokens by the first 8 characters of their hash.

pub mod kasm_key;
pub mod map;
pub mod source;
pub mod target;

use crate::clock::{iso, Clock, SystemClock};
use crate::config::{self, Env};
use crate::db::{Db, FILE as DB_FILE};
use map::{KeyProblem, Skip};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::path::Path;
use target::Import;

/// A refusal: one sentence, exit code 1.
#[derive(Debug)]
pub struct Refused(pub String);

/// The original's config file: the key that opens its outbound tokens and its
/// settings block.
struct KasmConfig {
    path: String,
    secret_key: Option<String>,
    settings: Map<String, Value>,
}

fn read_kasm_config(path: &Path) -> Result<KasmConfig, Refused> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Refused(format!(
            "cannot read the original's config file {}: {e}",
            path.display()
        ))
    })?;
    let root: Value = serde_yaml_ng::from_str(&text)
        .map_err(|e| Refused(format!("{} is not YAML: {e}", path.display())))?;
    let Value::Object(root) = root else {
        return Err(Refused(format!(
            "{} is not a keepalived-status-monitor config file",
            path.display()
        )));
    };
    Ok(KasmConfig {
        path: path.display().to_string(),
        secret_key: root
            .get("secretKey")
            .and_then(Value::as_str)
            .map(str::to_owned),
        settings: root
            .get("settings")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
    })
}

/// The command: prints the summary, returns the exit code.
pub fn main(db: &Path, config_file: Option<&Path>) -> i32 {
    nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    match run(db, config_file, &Env::from_process()) {
        Ok(summary) => {
            print!("{summary}");
            0
        }
        Err(Refused(sentence)) => {
            eprintln!("vrrp-monitor import-kasm: {sentence}");
            1
        }
    }
}

fn run(db: &Path, config_file: Option<&Path>, env: &Env) -> Result<String, Refused> {
    let now = SystemClock.utc();
    let kasm_config = config_file.map(read_kasm_config).transpose()?;
    let rows = source::read(db).map_err(|e| match e {
        source::SourceError::Unreadable(why) => Refused(format!(
            "cannot read {} as a SQLite database: {why}",
            db.display()
        )),
        source::SourceError::Foreign(why) => Refused(format!(
            "{} is not a keepalived-status-monitor 1.0 database: {why}",
            db.display()
        )),
    })?;
    let their_key = kasm_config
        .as_ref()
        .and_then(|c| c.secret_key.as_deref())
        .map(kasm_key::derive);
    let mut skipped: Vec<Skip> = Vec::new();
    let mut import = Import::default();
    for row in rows.clients {
        match map::client(row, their_key.as_ref()) {
            Ok(Ok(c)) => import.clients.push(c),
            Ok(Err(s)) => skipped.push(s),
            Err(KeyProblem::NoKey) => {
                return Err(Refused(match &kasm_config {
                    None => "the original has outbound clients, whose tokens are sealed with the secretKey of its config file: give that file with --config PATH".into(),
                    Some(c) => format!("{} has no secretKey, which the original's outbound tokens are sealed with", c.path),
                }))
            }
            Err(KeyProblem::WrongKey) => {
                return Err(Refused(format!(
                    "the original's outbound tokens do not decrypt with the secretKey of {}: is it the config file of the installation this database belongs to?",
                    kasm_config.as_ref().map(|c| c.path.as_str()).unwrap_or("")
                )))
            }
        }
    }
    let client_ids: HashSet<&str> = import.clients.iter().map(|c| c.id.as_str()).collect();
    for row in rows.readings {
        if !client_ids.contains(row.0.as_str()) {
            skipped.push(Skip {
                kind: "reading",
                id: row.0,
                reason: "its client was not imported".into(),
            });
            continue;
        }
        match map::reading(row) {
            Ok(r) => import.readings.push(r),
            Err(s) => skipped.push(s),
        }
    }
    drop(client_ids);
    for row in rows.users {
        match map::user(row) {
            Ok(u) => import.users.push(u),
            Err(s) => skipped.push(s),
        }
    }
    for row in rows.tokens {
        match map::token(row, now) {
            Ok(t) => import.tokens.push(t),
            Err(s) => skipped.push(s),
        }
    }
    for (e, subject, data) in rows.events {
        match map::event(e, subject, data) {
            Ok(e) => import.events.push(e),
            Err(s) => skipped.push(s),
        }
    }
    let event_ids: HashSet<&str> = import.events.iter().map(|e| e.id.as_str()).collect();
    let user_ids: HashSet<i64> = import.users.iter().map(|u| u.id).collect();
    import.seen = rows
        .seen
        .into_iter()
        .filter(|(a, u)| event_ids.contains(a.as_str()) && user_ids.contains(u))
        .collect();
    drop(event_ids);
    for row in rows.webhooks {
        match map::webhook(row) {
            Ok(w) => import.webhooks.push(w),
            Err(s) => skipped.push(s),
        }
    }
    let known: Vec<&str> = config::SETTINGS_DEFAULTS.iter().map(|(k, _)| *k).collect();
    let (settings, settings_skipped) = kasm_config
        .as_ref()
        .map(|c| map::settings(&c.settings, &known))
        .unwrap_or_default();
    skipped.extend(settings_skipped);

    // The target: refused before anything in it changes.
    let data_dir = config::data_dir(env);
    let db_file = data_dir.join(DB_FILE);
    let held = target::held(&db_file).map_err(|e| {
        Refused(format!(
            "cannot read this server's database {}: {e}",
            db_file.display()
        ))
    })?;
    if let Some(why) = held.refusal() {
        return Err(Refused(format!(
            "this server's database {}: {why}",
            db_file.display()
        )));
    }
    let loaded =
        config::load(env).map_err(|e| Refused(format!("this server's configuration: {e}")))?;
    let outbound = import.clients.iter().filter(|c| c.outbound).count();
    if outbound > 0 && !loaded.config.secret_key_persisted {
        return Err(Refused(format!(
            "{} cannot be written, so this server's secretKey would not outlive a restart and the outbound tokens could not be opened again",
            loaded.config.path.display()
        )));
    }
    let ours = crate::auth::sealed::SealKey::from_secret_key(&loaded.config.secret_key);
    let (db_handle, writer) = Db::open(&db_file, &iso(now))
        .map_err(|e| Refused(format!("this server's database {}: {e}", db_file.display())))?;
    drop(db_handle);
    let _ = writer.join();
    target::write(&db_file, &import, &ours, held.fresh_admin, &iso(now)).map_err(|e| {
        Refused(format!(
            "writing {} failed, nothing was imported: {e}",
            db_file.display()
        ))
    })?;
    if !settings.is_empty() {
        config::write_settings(&loaded.config.path, &settings).map_err(|e| {
            Refused(format!(
                "the records were imported, but the settings were not: {e}"
            ))
        })?;
    }
    Ok(summary(
        &import,
        outbound,
        settings.len(),
        rows.cluster_states,
        &skipped,
        &db_file,
    ))
}

fn summary(
    i: &Import,
    outbound: usize,
    settings: usize,
    cluster_states: i64,
    skipped: &[Skip],
    db_file: &Path,
) -> String {
    let mut out = format!("Imported into {}:\n", db_file.display());
    let counts = [
        (
            "clients",
            format!(
                "{} ({} inbound, {outbound} outbound)",
                i.clients.len(),
                i.clients.len() - outbound
            ),
        ),
        ("readings", i.readings.len().to_string()),
        ("users", i.users.len().to_string()),
        ("registration tokens", i.tokens.len().to_string()),
        ("webhooks", i.webhooks.len().to_string()),
        ("activity events", i.events.len().to_string()),
        ("seen marks", i.seen.len().to_string()),
        ("settings", settings.to_string()),
    ];
    for (kind, n) in counts {
        out.push_str(&format!("  {kind}: {n}\n"));
    }
    out.push_str(&format!(
        "Not imported by design: {cluster_states} confirmed cluster states (taken again at first sighting)\n"
    ));
    if skipped.is_empty() {
        out.push_str("Skipped: none\n");
    } else {
        out.push_str(&format!("Skipped: {}\n", skipped.len()));
        for s in skipped {
            out.push_str(&format!("  {} {}: {}\n", s.kind, s.id, s.reason));
        }
    }
    out
}
