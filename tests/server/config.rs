//! Configuration: generation on first start, rewrite rules, env overrides, and
//! every way an invalid value ends the start.

use crate::harness::*;
use serde_json::Value;

fn yaml(path: &std::path::Path) -> Value {
    serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn first_start_creates_a_private_config_with_generated_secrets() {
    let server = Server::start();
    let path = server.launch.config_path();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&server.launch.data_dir()), 0o700);
    assert_eq!(
        mode(&server.launch.data_dir().join("vrrp-monitor.db")),
        0o600
    );
    let doc = yaml(&path);
    let jwt = doc["jwtSecret"].as_str().unwrap();
    assert_eq!(jwt.len(), 128, "64 random bytes as hex");
    assert!(jwt.bytes().all(|b| b.is_ascii_hexdigit()));
    assert!(doc["secretKey"].as_str().unwrap().len() >= 32);
    assert_ne!(doc["secretKey"], doc["jwtSecret"]);
    assert_eq!(doc["settings"]["token_retention_days"], "30");
    assert_eq!(doc["settings"]["notification_retention_count"], "500");
    assert_eq!(doc["settings"]["activity_level_overrides"], "");
    // No secret reaches the log.
    let log = server.log_text();
    assert!(!log.contains(jwt));
    assert!(!log.contains(doc["secretKey"].as_str().unwrap()));
    assert!(!log.contains(ADMIN_PASSWORD));
}

#[test]
fn a_complete_file_is_not_rewritten_and_secrets_survive_a_restart() {
    let server = Server::start();
    let token = server.admin();
    let (status, launch) = server.stop();
    assert!(status.success());
    let before = std::fs::read_to_string(launch.config_path()).unwrap();
    let server = launch.start();
    assert_eq!(
        std::fs::read_to_string(server.launch.config_path()).unwrap(),
        before
    );
    assert_eq!(
        server.get("/api/v1/me", Auth::Cookie(&token)).status,
        200,
        "the same jwtSecret signs across restarts"
    );
}

#[test]
fn missing_known_keys_are_added_keeping_comments_and_unknown_keys() {
    let text = "# my own notes\nport: 3999 # overridden by SVC_SERVER_PORT\nfavouriteColour: teal\nsettings:\n    # keep tokens two months\n    token_retention_days: 60\n    my_extra: 'x'\n";
    let server = Launch::new().config(text).start();
    let written = std::fs::read_to_string(server.launch.config_path()).unwrap();
    assert!(written.contains("# my own notes"));
    assert!(written.contains("# keep tokens two months"));
    assert!(written.contains("favouriteColour: teal"));
    let doc = yaml(&server.launch.config_path());
    assert_eq!(
        doc["settings"]["token_retention_days"], 60,
        "the operator's value is left as written"
    );
    assert_eq!(doc["settings"]["notification_retention_days"], "90");
    assert_eq!(doc["settings"]["my_extra"], "x");
    assert_eq!(doc["jwtSecret"].as_str().unwrap().len(), 128);
    assert_eq!(mode(&server.launch.config_path()), 0o600);
    let log = server.log_text();
    assert!(
        log.contains("Unknown configuration key \\\"favouriteColour\\\""),
        "{log}"
    );
    assert!(
        log.contains("Unknown settings key \\\"settings.my_extra\\\""),
        "{log}"
    );
}

#[test]
fn old_settings_keys_are_ignored_with_an_unknown_key_warning() {
    let server = Launch::new().config("settings:\n  retention_invalid_tokens_days: '7'\n  retention_invalid_tokens_count: '3'\n").start();
    let doc = yaml(&server.launch.config_path());
    assert_eq!(
        doc["settings"]["token_retention_days"], "30",
        "the old value is not taken over"
    );
    let log = server.log_text();
    assert!(log.contains("settings.retention_invalid_tokens_days"));
    assert!(log.contains("settings.retention_invalid_tokens_count"));
}

#[test]
fn a_json_config_loads_and_stays_json() {
    let launch = Launch::new().without_env("SVC_SERVER_PORT");
    let port = launch.port;
    let launch = launch.config(&format!(
        "{{\"port\": {port}, \"security\": {{\"hsts\": true}}}}"
    ));
    // The harness passes SVC_SERVER_PORT; run this one by hand without it.
    let mut cmd = std::process::Command::new(binary());
    cmd.env_clear()
        .env("SVC_SERVER_DATA_DIR", launch.data_dir())
        .env("SVC_ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("LOG_FORMAT", "json")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let agent = http_agent();
    let url = format!("http://127.0.0.1:{port}/api/health");
    let mut answer = None;
    for _ in 0..400 {
        if let Ok(r) = agent.get(&url).call() {
            answer = Some(r);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    let answer = answer.expect("server listens on the port from the JSON file");
    assert!(answer.headers().get("strict-transport-security").is_some());
    let _ = child.kill();
    let _ = child.wait();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(launch.config_path()).unwrap())
        .expect("still JSON");
    assert_eq!(doc["port"], port);
    assert_eq!(doc["jwtSecret"].as_str().unwrap().len(), 128);
    assert_eq!(doc["settings"]["notification_cleanup_interval_hours"], "24");
}

/// Starts with `launch`, expects exit code 1 and exactly one fatal line containing `field`.
fn assert_start_fails(launch: Launch, field: &str) {
    let (status, lines) = launch.run_to_exit();
    assert_eq!(status.code(), Some(1), "exit code; log: {lines:?}");
    let fatal = fatal_lines(&lines);
    assert_eq!(fatal.len(), 1, "one fatal line: {lines:?}");
    assert!(
        fatal[0].contains(field),
        "fatal line names {field}: {}",
        fatal[0]
    );
}

#[test]
fn invalid_values_end_the_start_with_one_fatal_line_naming_the_field() {
    let cases: &[(&str, &str)] = &[
        ("port: 70000\n", "port"),
        ("jwtExpiresIn: 12x\n", "jwtExpiresIn"),
        ("logLevel: chatty\n", "logLevel"),
        (
            "security:\n  trusted_proxies: ['loopback', 'not-an-ip']\n",
            "security.trusted_proxies[1]",
        ),
        (
            "security:\n  allowed_networks: ['10.0.0.0/33']\n",
            "security.allowed_networks[0]",
        ),
        (
            "security:\n  metrics_allowed_networks: ['10.0.0.0/8', 'everyone']\n",
            "security.metrics_allowed_networks[1]",
        ),
        ("security:\n  hsts: 'sometimes'\n", "security.hsts"),
        (
            "oidc:\n  enabled: true\n  issuer: https://id.example\n",
            "oidc.client_id",
        ),
        (
            "settings:\n  token_retention_days: -1\n",
            "settings.token_retention_days",
        ),
        (
            "settings:\n  notification_retention_count: lots\n",
            "settings.notification_retention_count",
        ),
        ("port: [1, 2\n", "config"),
        ("- just\n- a list\n", "config"),
    ];
    for (text, field) in cases {
        assert_start_fails(Launch::new().config(text), field);
    }
}

#[test]
fn invalid_environment_overrides_end_the_start() {
    for port in ["0", "65536", "http"] {
        assert_start_fails(
            Launch::new().env("SVC_SERVER_PORT", port),
            "SVC_SERVER_PORT",
        );
    }
    assert_start_fails(
        Launch::new().env("SVC_TRUSTED_PROXIES", "loopback,nonsense"),
        "SVC_TRUSTED_PROXIES",
    );
    assert_start_fails(Launch::new().env("LOG_LEVEL", "loud"), "LOG_LEVEL");
    assert_start_fails(Launch::new().env("LOG_FORMAT", "xml"), "LOG_FORMAT");
}

#[test]
fn a_port_in_use_ends_the_start() {
    let holder = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let launch = Launch::new().env("SVC_SERVER_PORT", &port.to_string());
    assert_start_fails(launch, &format!(":{port}"));
}

#[test]
fn a_failed_migration_ends_the_start() {
    let launch = Launch::new();
    std::fs::create_dir_all(launch.data_dir()).unwrap();
    let conn = rusqlite::Connection::open(launch.data_dir().join("vrrp-monitor.db")).unwrap();
    // Ours (the first migration is recorded) but with a table in the way of the second.
    conn.execute_batch(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL);
         INSERT INTO schema_migrations VALUES (1, '0001_users.sql', 't');
         CREATE TABLE clients (something_else TEXT);",
    )
    .unwrap();
    drop(conn);
    assert_start_fails(launch, "0002_agents.sql");
}

fn sha256_of(path: &std::path::Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// A database file we must not write to: one fatal line naming the file and the
/// way out, exit 1, and the file byte for byte as it was (no journal, no WAL).
fn assert_refused_untouched(launch: Launch, prepare: impl FnOnce(&std::path::Path), says: &str) {
    std::fs::create_dir_all(launch.data_dir()).unwrap();
    let db = launch.data_dir().join("vrrp-monitor.db");
    prepare(&db);
    let before = sha256_of(&db);
    let (status, lines) = launch.run_to_exit();
    assert_eq!(status.code(), Some(1), "exit code; log: {lines:?}");
    let fatal = fatal_lines(&lines);
    assert_eq!(fatal.len(), 1, "one fatal line: {lines:?}");
    assert!(
        fatal[0].contains(&db.display().to_string()),
        "names the file: {}",
        fatal[0]
    );
    assert!(fatal[0].contains(says), "says {says:?}: {}", fatal[0]);
    assert!(fatal[0].contains("left untouched"), "{}", fatal[0]);
    assert_eq!(sha256_of(&db), before, "the file is unchanged");
    for side in ["vrrp-monitor.db-wal", "vrrp-monitor.db-journal"] {
        assert!(!launch.data_dir().join(side).exists(), "{side} was created");
    }
}

#[test]
fn a_corrupt_database_file_ends_the_start_and_is_left_untouched() {
    assert_refused_untouched(
        Launch::new(),
        |db| std::fs::write(db, vec![0x42u8; 16384]).unwrap(),
        "Restore a backup",
    );
}

#[test]
fn a_damaged_page_in_our_database_ends_the_start() {
    assert_refused_untouched(
        Launch::new(),
        |db| {
            let mut conn = rusqlite::Connection::open(db).unwrap();
            vrrp_monitor::db::migrations::apply(&mut conn, "t").unwrap();
            conn.execute_batch("PRAGMA journal_mode = DELETE; CREATE TABLE filler (x BLOB)")
                .unwrap();
            for _ in 0..40 {
                conn.execute("INSERT INTO filler VALUES (randomblob(3000))", [])
                    .unwrap();
            }
            drop(conn);
            // Overwrite the middle of the file: b-tree pages, not the header.
            let mut bytes = std::fs::read(db).unwrap();
            let middle = bytes.len() / 2;
            for b in &mut bytes[middle..middle + 8192] {
                *b = 0xff;
            }
            std::fs::write(db, bytes).unwrap();
        },
        "damaged",
    );
}

#[test]
fn another_programs_database_ends_the_start_and_is_left_untouched() {
    assert_refused_untouched(
        Launch::new(),
        |db| {
            let conn = rusqlite::Connection::open(db).unwrap();
            conn.execute_batch("CREATE TABLE moz_places (id INTEGER, url TEXT)")
                .unwrap();
        },
        "not a vrrp-monitor database",
    );
}

#[test]
fn log_level_and_format_from_the_environment() {
    let (status, _) = Launch::new()
        .env("LOG_LEVEL", "silent")
        .env("SVC_SERVER_PORT", "0")
        .run_to_exit();
    assert_eq!(status.code(), Some(1));
    let out = std::process::Command::new(binary())
        .env_clear()
        .env("SVC_SERVER_DATA_DIR", tempfile::tempdir().unwrap().path())
        .env("SVC_SERVER_PORT", "0")
        .env("LOG_LEVEL", "silent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stderr.is_empty(),
        "silent prints nothing: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = std::process::Command::new(binary())
        .env_clear()
        .env("SVC_SERVER_DATA_DIR", tempfile::tempdir().unwrap().path())
        .env("SVC_SERVER_PORT", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("FATAL"),
        "pretty is the default outside production: {text}"
    );
    let out = std::process::Command::new(binary())
        .env_clear()
        .env("SVC_SERVER_DATA_DIR", tempfile::tempdir().unwrap().path())
        .env("SVC_SERVER_PORT", "0")
        .env("NODE_ENV", "production")
        .output()
        .unwrap();
    let lines = parse_log(&String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        fatal_lines(&lines).len(),
        1,
        "JSON under NODE_ENV=production"
    );
}

#[test]
fn a_generated_admin_password_goes_to_a_private_file_not_the_log() {
    let server = Launch::new().without_env("SVC_ADMIN_PASSWORD").start();
    let file = server.launch.data_dir().join("initial-admin-password");
    assert_eq!(mode(&file), 0o600);
    let password = std::fs::read_to_string(&file).unwrap().trim().to_owned();
    assert!(password.len() >= 16);
    assert!(!server.log_text().contains(&password));
    assert!(server.log_text().contains("initial-admin-password"));
    let token = server.login("admin", &password);
    // Changing that password removes the file.
    let me = server.get("/api/v1/me", Auth::Cookie(&token)).body;
    let id = me["id"].as_i64().unwrap();
    let a = server.put(
        &format!("/api/v1/users/{id}"),
        Auth::Cookie(&token),
        r#"{"password": "a-new-password"}"#,
    );
    assert_eq!(a.status, 200);
    assert!(!file.exists());
}
