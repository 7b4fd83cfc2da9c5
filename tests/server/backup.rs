//! `vrrp-monitor backup <file>` while agents keep writing: the copy, restored
//! into a fresh data directory, holds every event acknowledged before the backup
//! began and every client.

use crate::harness::{binary, event_batch, reading, Auth, Launch, Server};
use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[test]
fn a_backup_taken_under_load_restores_every_acknowledged_event_and_client() {
    let server = Server::start();
    let admin = server.admin();
    let agents: Vec<_> = (0..4)
        .map(|i| server.register_agent(&admin, &format!("lb-{i}")))
        .collect();

    // Load: each agent sends batches of events and a reading, as fast as the
    // server acknowledges them; every acknowledged id is noted.
    let acked = Arc::new(Mutex::new(HashSet::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut load = Vec::new();
    for (i, agent) in agents.iter().enumerate() {
        let mut ws = server.connect_agent(agent);
        let (acked, stop) = (acked.clone(), stop.clone());
        load.push(std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) && n < 60 {
                let ids: Vec<String> = (0..5).map(|k| format!("ev-{i}-{n}-{k}")).collect();
                ws.send("ACTIVITY", event_batch(&ids));
                ws.send(
                    "KEEPALIVED_UPDATE",
                    reading(&[("VI_1", if n % 2 == 0 { "MASTER" } else { "BACKUP" })]),
                );
                let ack = ws.expect("ACTIVITY_ACK");
                let mut acked = acked.lock().unwrap();
                for id in ack["ids"].as_array().unwrap() {
                    acked.insert(id.as_str().unwrap().to_owned());
                }
                n += 1;
            }
            ws
        }));
    }
    // Let the load get going, then back up in the middle of it.
    while acked.lock().unwrap().len() < 100 {
        std::thread::sleep(Duration::from_millis(5));
    }
    let before: HashSet<String> = acked.lock().unwrap().clone();
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("backup.db");
    let out = Command::new(binary())
        .args(["backup", &copy.display().to_string()])
        .env("SVC_SERVER_DATA_DIR", server.launch.data_dir())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.starts_with("Backed up "), "{said}");
    let after_backup = acked.lock().unwrap().len();
    stop.store(true, Ordering::Relaxed);
    let _sockets: Vec<_> = load.into_iter().map(|t| t.join().unwrap()).collect();
    eprintln!(
        "backup under load: {} events acknowledged before it began, {} by its end",
        before.len(),
        after_backup
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&copy).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // Restore: a fresh data directory with the copy as its database.
    let fresh = Launch::new();
    std::fs::create_dir_all(fresh.data_dir()).unwrap();
    std::fs::copy(&copy, fresh.data_dir().join("vrrp-monitor.db")).unwrap();
    let restored = fresh.start();
    let token = restored.admin();
    let activity = restored.get("/api/v1/activity", Auth::Cookie(&token));
    assert_eq!(activity.status, 200);
    let stored: HashSet<String> = activity
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_owned))
        .collect();
    let missing: Vec<_> = before.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged events missing, e.g. {:?}",
        missing.len(),
        missing.first()
    );
    let clients = restored.get("/api/v1/clients", Auth::Cookie(&token));
    let ids: HashSet<&str> = clients
        .body
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    for agent in &agents {
        assert!(
            ids.contains(agent.id.as_str()),
            "client {} missing",
            agent.id
        );
    }
}

#[test]
fn a_backup_without_a_database_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(binary())
        .args(["backup", &dir.path().join("b.db").display().to_string()])
        .env("SVC_SERVER_DATA_DIR", dir.path().join("nothing-here"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("no database at"), "{said}");
    assert!(!dir.path().join("b.db").exists());
}
