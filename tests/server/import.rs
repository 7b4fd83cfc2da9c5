//! `vrrp-monitor import-kasm`: the real binary takes over a database built from
//! keepalived-status-monitor 1.0's own migrations (tests/fixtures/kasm/), every
//! field of every kind arrives, an agent of the original authenticates over the
//! real /ws/agent, a bcrypt password logs in (and becomes Argon2id), the webhook
//! sends; each refusal exits 1 and leaves source and target as they were.

use crate::harness::{binary, mode, Auth, Launch, Ws};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::mpsc;
use std::time::Duration;
use vrrp_monitor::auth::sealed::SealKey;

const SCHEMA: &str = include_str!("../fixtures/kasm/schema.sql");
const ROWS: &str = include_str!("../fixtures/kasm/rows.sql");
const KASM_CONFIG: &str = include_str!("../fixtures/kasm/config.yaml");
const INBOUND_ID: &str = "6f1c1a4e-0000-4000-8000-000000000001";
const OUTBOUND_ID: &str = "6f1c1a4e-0000-4000-8000-000000000002";
const INBOUND_TOKEN: &str = "inbound-agent-token-0123456789abcdef";
const OUTBOUND_TOKEN: &str = "outbound-agent-token-0123456789abcdef";
const INBOUND_HASH: &str = "790c5fe3d1e9ab54ea588992dfbb0d9075a9d9131c6c7788cda32145c0d39a0c";
const ALICE_BCRYPT: &str = "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW";

/// The original's installation: its database (in WAL mode, as it runs) and config.
struct Original {
    _dir: tempfile::TempDir,
    db: PathBuf,
    config: PathBuf,
}

fn original(webhook_port: u16, config: &str) -> Original {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("server.db");
    let c = Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA journal_mode = WAL;").unwrap();
    c.execute_batch(SCHEMA).unwrap();
    c.execute_batch(ROWS).unwrap();
    c.execute(
        "UPDATE webhooks SET url = replace(url, '127.0.0.1:9/', ?1) WHERE name = 'ops chat'",
        [format!("127.0.0.1:{webhook_port}/")],
    )
    .unwrap();
    drop(c);
    let config_path = dir.path().join("config.yaml");
    std::fs::write(&config_path, config).unwrap();
    Original {
        _dir: dir,
        db,
        config: config_path,
    }
}

fn import(launch: &Launch, db: &Path, config: Option<&Path>) -> Output {
    let mut cmd = Command::new(binary());
    cmd.env_clear()
        .env("SVC_SERVER_DATA_DIR", launch.data_dir())
        .args(["import-kasm", "--db"])
        .arg(db);
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    cmd.output().unwrap()
}

/// Every file of a directory with its bytes, but SQLite's `-shm`: the shared
/// memory index every reader of a WAL database updates (read marks), which
/// holds no data; the database and its `-wal` are compared byte for byte.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| !p.display().to_string().ends_with("-shm"))
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect()
}

/// File names and sizes, for a failure message that can be read.
fn sizes(files: &BTreeMap<String, Vec<u8>>) -> Vec<(String, usize)> {
    files.iter().map(|(k, v)| (k.clone(), v.len())).collect()
}

fn rows(db: &Path, sql: &str) -> Vec<Value> {
    let c = Connection::open(db).unwrap();
    let mut stmt = c.prepare(sql).unwrap();
    let names: Vec<String> = stmt.column_names().map(|s| s.to_string()).collect();
    stmt.query_map([], |r| {
        let mut m = serde_json::Map::new();
        for (i, n) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                rusqlite::types::ValueRef::Null => Value::Null,
                rusqlite::types::ValueRef::Integer(n) => json!(n),
                rusqlite::types::ValueRef::Real(f) => json!(f),
                rusqlite::types::ValueRef::Text(t) => json!(String::from_utf8_lossy(t)),
                rusqlite::types::ValueRef::Blob(_) => json!("blob"),
            };
            m.insert(n.clone(), v);
        }
        Ok(Value::Object(m))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// One HTTP request on loopback: (request line, headers, body); answers 200.
fn receiver() -> (u16, mpsc::Receiver<(String, String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let (mut headers, mut length) = (String::new(), 0usize);
            loop {
                let mut h = String::new();
                reader.read_line(&mut h).unwrap();
                if h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
                headers.push_str(&h);
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            if tx
                .send((line, headers, String::from_utf8_lossy(&body).into_owned()))
                .is_err()
            {
                return;
            }
        }
    });
    (port, rx)
}

#[test]
fn every_kind_comes_over_and_agents_users_and_webhooks_work_after_it() {
    let (port, received) = receiver();
    let kasm = original(port, KASM_CONFIG);
    let source_before = files(kasm.db.parent().unwrap());
    let launch = Launch::new();
    let out = import(&launch, &kasm.db, Some(&kasm.config));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for line in [
        "clients: 2 (1 inbound, 1 outbound)",
        "readings: 1",
        "users: 3",
        "registration tokens: 1",
        "webhooks: 1",
        "activity events: 2",
        "seen marks: 2",
        "settings: 6",
        "1 confirmed cluster states",
        "client 6f1c1a4e-0000-4000-8000-000000000003: connection mode \"sideways\" is neither inbound nor outbound",
        "reading 6f1c1a4e-0000-4000-8000-000000000003: its client was not imported",
        "user 5: it has no user name",
        "registration token 11111111: expired",
        "registration token 22222222: already used",
        "webhook 9e000000-0000-4000-8000-000000000002: bodyTemplate",
        "setting retention_invalid_tokens_count: not a setting of this server",
        "Skipped: 7",
    ] {
        assert!(stdout.contains(line), "{line:?} missing from:\n{stdout}");
    }
    for secret in [
        INBOUND_TOKEN,
        OUTBOUND_TOKEN,
        INBOUND_HASH,
        "$2a$",
        "$2b$",
        "kasm-original-secret-key",
        "909a0cac0ef7",
    ] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} printed"
        );
    }
    assert_eq!(
        files(kasm.db.parent().unwrap()),
        source_before,
        "the source changed"
    );

    let db = launch.data_dir().join("vrrp-monitor.db");
    assert_eq!(mode(&db), 0o600);
    assert_eq!(mode(&launch.config_path()), 0o600);
    let ours: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(launch.config_path()).unwrap()).unwrap();
    let key = SealKey::from_secret_key(ours["secretKey"].as_str().unwrap());

    let clients = rows(&db, "SELECT * FROM clients ORDER BY id");
    assert_eq!(clients.len(), 2);
    let mut outbound = clients[1].clone();
    let sealed = outbound["auth_token_encrypted"].take();
    assert_eq!(key.open(sealed.as_str().unwrap()).unwrap(), OUTBOUND_TOKEN);
    assert_eq!(
        clients[0],
        json!({ "id": INBOUND_ID, "hostname": "lb-1", "display_name": "Load balancer 1", "site": "dc-east",
                "connection_mode": "inbound", "auth_token_hash": INBOUND_HASH, "auth_token_encrypted": null,
                "inbound_allowed_ip": "127.0.0.0/8", "inbound_last_ip": "192.0.2.11", "outbound_target_address": null,
                "last_seen": "2026-11-20 10:00:00", "version": "1.0.0", "created_at": "2026-01-05 10:00:00",
                "updated_at": "2026-11-20 10:00:00" })
    );
    assert_eq!(
        outbound,
        json!({ "id": OUTBOUND_ID, "hostname": "lb-2", "display_name": null, "site": null,
                "connection_mode": "outbound", "auth_token_hash": null, "auth_token_encrypted": null,
                "inbound_allowed_ip": null, "inbound_last_ip": null, "outbound_target_address": "127.0.0.1:9",
                "last_seen": "2026-11-20 10:00:01", "version": "1.0.0", "created_at": "2026-01-06 10:00:00",
                "updated_at": null })
    );
    let states = rows(&db, "SELECT * FROM keepalived_states");
    assert_eq!(states.len(), 1);
    assert_eq!(
        (
            states[0]["client_id"].as_str(),
            states[0]["received_at"].as_str()
        ),
        (Some(INBOUND_ID), Some("2026-11-20T10:00:00.500Z"))
    );
    let payload: Value = serde_json::from_str(states[0]["payload"].as_str().unwrap()).unwrap();
    assert_eq!(
        (payload["extra"].as_str(), payload["pid"].as_i64()),
        (Some("kept"), Some(42))
    );
    assert_eq!(payload["instances"][0]["name"], "VI_1");
    let last: Value =
        serde_json::from_str(states[0]["last_known_instances"].as_str().unwrap()).unwrap();
    assert_eq!(last[0]["priority"], 150);

    assert_eq!(
        rows(&db, "SELECT id, username, password_hash, auth_methods, token_version, created_at, updated_at FROM users ORDER BY id"),
        vec![
            json!({ "id": 1, "username": "alice", "password_hash": ALICE_BCRYPT, "auth_methods": "local", "token_version": 2, "created_at": "2026-01-02 03:04:05", "updated_at": "2026-01-03 03:04:05" }),
            json!({ "id": 3, "username": "bob@example.org", "password_hash": null, "auth_methods": "oidc", "token_version": 0, "created_at": "2026-02-02 03:04:05", "updated_at": "2026-02-02 03:04:05" }),
            json!({ "id": 4, "username": "carol", "password_hash": ALICE_BCRYPT.replace("$2a$", "$2b$"), "auth_methods": "local,oidc", "token_version": 0, "created_at": "2026-03-02 03:04:05", "updated_at": "2026-03-02 03:04:05" }),
        ]
    );
    assert_eq!(
        rows(&db, "SELECT * FROM registration_tokens"),
        vec![
            json!({ "token_hash": "909a0cac0ef7e790012d8006f72e2be3c72357b8a4c6db0060be270eea83b6bb", "created_at": "2026-11-01T00:00:00.000Z",
                     "expires_at": "2099-01-01T00:00:00.000Z", "used_at": null, "display_name": "lb-4", "allowed_ip": "192.0.2.14" })
        ]
    );
    assert_eq!(
        rows(&db, "SELECT * FROM activity ORDER BY id"),
        vec![
            json!({ "id": "0b7e0000-0000-4000-8000-00000000000a", "occurred_at": "2026-11-20T09:59:59.000Z", "received_at": "2026-11-20T10:00:00.000Z",
                    "source": "agent", "client_id": INBOUND_ID, "kind": "keepalived.state_changed", "level": "warning", "correlation_id": null,
                    "subject": "{\"instance\":\"VI_1\"}", "data": "{\"from\":\"BACKUP\",\"to\":\"MASTER\"}" }),
            json!({ "id": "0b7e0000-0000-4000-8000-00000000000b", "occurred_at": "2026-01-05T10:00:00.000Z", "received_at": "2026-01-05T10:00:00.000Z",
                    "source": "server", "client_id": null, "kind": "client.registered", "level": "info", "correlation_id": "corr-1",
                    "subject": "{}", "data": "{}" }),
        ]
    );
    assert_eq!(
        rows(&db, "SELECT * FROM activity_seen ORDER BY user_id"),
        vec![
            json!({ "activity_id": "0b7e0000-0000-4000-8000-00000000000a", "user_id": 1 }),
            json!({ "activity_id": "0b7e0000-0000-4000-8000-00000000000b", "user_id": 3 })
        ]
    );
    let hooks = rows(&db, "SELECT * FROM webhooks");
    assert_eq!(
        hooks,
        vec![
            json!({ "id": "9e000000-0000-4000-8000-000000000001", "name": "ops chat", "enabled": 1,
                     "url": format!("http://127.0.0.1:{port}/hook/{{{{event.kind}}}}"), "method": "PUT",
                     "headers": "{\"X-Token\":\"abc {{event.level}}\"}",
                     "body_template": "{\"text\": \"{{event.message}}\", \"kind\": \"{{event.kind}}\"}",
                     "min_level": "info", "kinds": "[\"keepalived.*\",\"client.*\"]", "timeout_ms": 2000,
                     "last_status": 200, "last_error": null, "last_attempt_at": "2026-11-20T10:00:01.000Z",
                     "created_at": "2026-02-01T00:00:00.000Z", "updated_at": "2026-02-02T00:00:00.000Z",
                     "provisioned_from": null })
        ]
    );
    assert!(rows(&db, "SELECT * FROM cluster_states").is_empty());
    assert_eq!(
        ours["settings"],
        json!({ "token_retention_days": "14", "token_cleanup_interval_hours": "12", "notification_retention_days": "60",
                "notification_retention_count": "800", "notification_cleanup_interval_hours": "6",
                "activity_level_overrides": "agent.queue_dropped=none,keepalived.state_changed=error",
                "history_retention_days": "400" })
    );

    // The imported server: the original's agent authenticates as it always did.
    let server = launch.start();
    let mut ws = Ws::connect(
        server.port(),
        &format!("/ws/agent?clientId={INBOUND_ID}&token={INBOUND_TOKEN}"),
        &[],
    );
    ws.send(
        "AUTH",
        json!({ "hostname": "lb-1", "version": "1.0.0", "capabilities": ["vrrp"] }),
    );
    assert_eq!(ws.expect("AUTH_SUCCESS")["clientId"], INBOUND_ID);
    // Its queued event, already imported, is acknowledged and not stored twice;
    // a new one is stored and sent to the webhook.
    let events = json!({ "events": [
        { "id": "0b7e0000-0000-4000-8000-00000000000a", "occurredAt": "2026-11-20T09:59:59.000Z", "kind": "keepalived.state_changed", "level": "warning", "subject": {"instance": "VI_1"}, "data": {"from": "BACKUP", "to": "MASTER"} },
        { "id": "0b7e0000-0000-4000-8000-00000000000c", "occurredAt": "2026-11-27T00:00:00.000Z", "kind": "keepalived.state_changed", "level": "warning", "subject": {"instance": "VI_1"}, "data": {"from": "MASTER", "to": "BACKUP"} }
    ]});
    ws.send("ACTIVITY", events);
    let ack = ws.expect("ACTIVITY_ACK");
    assert_eq!(ack["ids"].as_array().unwrap().len(), 2, "{ack}");
    let (line, headers, body) = received
        .recv_timeout(Duration::from_secs(20))
        .expect("the webhook sent");
    assert!(
        line.starts_with("PUT /hook/keepalived.state_changed "),
        "{line}"
    );
    assert!(
        headers.to_ascii_lowercase().contains("x-token: abc error"),
        "{headers}"
    );
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["kind"], "keepalived.state_changed");
    assert_eq!(
        rows(
            &db,
            "SELECT COUNT(*) AS n FROM activity WHERE id LIKE '0b7e0000-%'"
        )[0]["n"],
        3
    );
    let wrong = Ws::connect(
        server.port(),
        &format!("/ws/agent?clientId={INBOUND_ID}&token=not-the-token"),
        &[],
    );
    drop(wrong);

    // A user of the original logs in with its password; the hash becomes Argon2id.
    assert_eq!(server.login_answer("alice", "wrong").status, 401);
    let cookie = server.login("alice", "U*U");
    let hash =
        rows(&db, "SELECT password_hash FROM users WHERE id = 1")[0]["password_hash"].clone();
    assert!(hash.as_str().unwrap().starts_with("$argon2id$"), "{hash}");
    server.login("alice", "U*U");
    let me = server.get("/api/v1/clients", Auth::Cookie(&cookie));
    assert_eq!(me.status, 200);
    let names: Vec<&str> = me
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["hostname"].as_str())
        .collect();
    assert_eq!(names.len(), 2, "{:?}", me.body);
    // Imported users were administrators (everyone was, in the original); the
    // import left one audit entry, from the command line, without a secret.
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&cookie)).body["role"],
        "admin"
    );
    let audit = server.get("/api/v1/audit?action=import.done", Auth::Cookie(&cookie));
    let entries = audit.body["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{}", audit.body);
    assert_eq!(
        (entries[0]["via"].as_str(), entries[0]["sourceIp"].clone()),
        (Some("cli"), Value::Null)
    );
    assert!(!audit.body.to_string().contains(INBOUND_TOKEN));
    server.stop();
}

#[test]
fn refusals_say_why_exit_1_and_change_nothing() {
    let kasm = original(9, KASM_CONFIG);
    // A target with its first-run administrator: a start, then a stop.
    let (_, launch) = Launch::new().start().stop();
    let data = launch.data_dir();
    let sources = kasm.db.parent().unwrap().to_owned();
    let refused = |db: &Path, config: Option<&Path>, sentence: &str| {
        let (before, source_before) = (files(&data), files(&sources));
        let out = import(&launch, db, config);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{sentence}: {stderr}");
        assert!(stderr.contains(sentence), "{sentence:?} not in {stderr}");
        assert!(out.stdout.is_empty());
        let after = files(&data);
        assert!(
            after == before,
            "{sentence}: the target changed: {:?} -> {:?}",
            sizes(&before),
            sizes(&after)
        );
        assert!(
            files(&sources) == source_before,
            "{sentence}: the source changed"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    refused(&dir.path().join("missing.db"), None, "cannot read");
    let text = dir.path().join("notes.db");
    std::fs::write(
        &text,
        "this is not a database, just some text long enough to be a page",
    )
    .unwrap();
    refused(&text, None, "as a SQLite database");
    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x);")
        .unwrap();
    refused(
        &other,
        None,
        "is not a keepalived-status-monitor 1.0 database: it has no umzug_migrations table",
    );
    refused(
        &data.join("vrrp-monitor.db"),
        None,
        "is not a keepalived-status-monitor 1.0 database",
    );
    let older = dir.path().join("older.db");
    let c = Connection::open(&older).unwrap();
    c.execute_batch(SCHEMA).unwrap();
    c.execute_batch("DELETE FROM umzug_migrations WHERE name = '11_protect_agent_tokens'")
        .unwrap();
    drop(c);
    refused(
        &older,
        None,
        "its migration 11_protect_agent_tokens was not applied",
    );
    refused(&kasm.db, None, "give that file with --config PATH");
    let wrong = dir.path().join("wrong.yaml");
    std::fs::write(
        &wrong,
        KASM_CONFIG.replace("kasm-original-secret-key-for-tests", "another-key"),
    )
    .unwrap();
    refused(
        &kasm.db,
        Some(&wrong),
        "do not decrypt with the secretKey of",
    );

    // The first-run administrator makes way for the original's users ...
    let out = import(&launch, &kasm.db, Some(&kasm.config));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<Value> = rows(
        &data.join("vrrp-monitor.db"),
        "SELECT username FROM users ORDER BY id",
    )
    .into_iter()
    .map(|r| r["username"].clone())
    .collect();
    assert_eq!(
        names,
        [json!("alice"), json!("bob@example.org"), json!("carol")]
    );
    // ... and a target that holds records is refused.
    refused(
        &kasm.db,
        Some(&kasm.config),
        "already holds 2 clients, 1 webhooks and 3 users",
    );
}
