//! Applying provisioning files against a real database: the same files twice
//! change nothing, an edit changes only what it edits, a broken file changes
//! nothing, and what the API made is never touched.

use super::*;
use crate::activity::Event;
use crate::clock::{Clock, ManualClock};
use crate::webhooks::store;
use chrono::TimeZone;
use parking_lot::Mutex;
use serde_json::{json, Map};
use std::path::Path;

#[derive(Default)]
struct Events(Mutex<Vec<String>>);

impl Recorder for Events {
    fn record(&self, events: Vec<Event>) -> bool {
        self.0.lock().extend(events.into_iter().map(|e| e.kind));
        true
    }
}

struct Fixture {
    dir: tempfile::TempDir,
    h: Handles,
    events: Arc<Events>,
    clock: ManualClock,
    _writer: std::thread::JoinHandle<()>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let (db, writer) = Db::open(&dir.path().join("p.db"), "now").unwrap();
    let db = Arc::new(db);
    let clock = ManualClock::new(chrono::Utc.with_ymd_and_hms(2030, 6, 1, 12, 0, 0).unwrap());
    let events = Arc::new(Events::default());
    let mut values = Map::new();
    values.insert("token_retention_days".into(), json!("30"));
    values.insert("activity_level_overrides".into(), json!(""));
    let h = Handles {
        db: db.clone(),
        clock: Arc::new(clock.clone()),
        settings: Arc::new(Settings::new(values).unwrap()),
        silences: Arc::new(Silences::load(db.clone()).unwrap()),
        activity: events.clone(),
        webhooks: Arc::new(crate::webhooks::live::Webhooks::load(db).unwrap()),
        allowed_networks: Vec::new(),
        state: Arc::new(Provisioning::new(dir.path().join("provisioning"))),
    };
    std::fs::create_dir(dir.path().join("provisioning")).unwrap();
    Fixture {
        dir,
        h,
        events,
        clock,
        _writer: writer,
    }
}

impl Fixture {
    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join("provisioning").join(name), text).unwrap();
    }

    fn reload(&self) -> Result<Vec<String>, String> {
        reload(&self.h, "SIGHUP", &Wake::default())
    }

    fn audit_entries(&self) -> Vec<crate::audit::Entry> {
        let filter = crate::audit::Filter {
            limit: 100,
            ..Default::default()
        };
        crate::audit::list(&self.h.db, &filter).unwrap().entries
    }

    fn hooks(&self) -> Vec<store::Webhook> {
        store::list(&self.h.db).unwrap()
    }
}

const FILE: &str = r#"webhooks:
  - name: chat
    url: http://127.0.0.1:9/hook
    headers: { X-Token: s3cret }
    bodyTemplate: { text: "{{event.message}}" }
settings:
  token_retention_days: 7
  activity_level_overrides: { client.connected: none }
silences:
  - name: patching
    matcher: { kind: "keepalived.*" }
    startsAt: 2030-06-01T11:00:00Z
    endsAt: 2030-06-01T14:00:00Z
    comment: Kernel updates
"#;

fn dir_path(f: &Fixture) -> &Path {
    f.dir.path()
}

#[test]
fn the_same_files_twice_change_nothing() {
    let f = fixture();
    // One webhook of the API's, which provisioning never touches.
    let api = store::validate(
        json!({ "name": "chat", "url": "https://api.example/", "bodyTemplate": "{}" })
            .as_object()
            .unwrap(),
    )
    .unwrap();
    let api = store::create(&f.h.db, api, f.clock.utc()).unwrap();
    f.write("webhooks.yaml", FILE);
    let changes = f.reload().unwrap();
    assert_eq!(changes.len(), 4, "{changes:?}");
    let hooks = f.hooks();
    assert_eq!(hooks.len(), 2);
    let hook = hooks.iter().find(|h| h.provisioned_from.is_some()).unwrap();
    assert_eq!(hook.id, crate::webhooks::provisioned::id_for("chat"));
    assert_eq!(hook.provisioned_from.as_deref(), Some("webhooks.yaml"));
    assert_eq!(f.h.settings.number("token_retention_days", 0), 7);
    assert_eq!(
        f.h.settings
            .provisioned_from("token_retention_days")
            .as_deref(),
        Some("webhooks.yaml")
    );
    use crate::activity::LevelPolicy;
    assert_eq!(
        f.h.settings
            .level_for("client.connected", vrrp_protocol::ActivityLevel::Info),
        None
    );
    assert_eq!(*f.events.0.lock(), ["silence.created"]);
    let entries = f.audit_entries();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(
        (
            entry.actor.as_str(),
            entry.via.as_str(),
            entry.action.as_str()
        ),
        ("provisioning", "cli", "provisioning.applied")
    );
    assert!(
        !entry.summary.contains("s3cret") && !entry.summary.contains("/hook"),
        "no header, no URL path: {}",
        entry.summary
    );

    assert_eq!(f.reload().unwrap(), Vec::<String>::new());
    assert_eq!(
        f.audit_entries().len(),
        1,
        "a reading without changes leaves no entry"
    );
    assert_eq!(f.events.0.lock().len(), 1);
    let again = f.hooks();
    assert_eq!(
        again
            .iter()
            .map(|h| (&h.id, &h.updated_at))
            .collect::<Vec<_>>(),
        hooks
            .iter()
            .map(|h| (&h.id, &h.updated_at))
            .collect::<Vec<_>>()
    );
    assert!(f.h.state.status().ok);

    // An edit changes what it edits, keeping the webhook's id.
    f.write(
        "webhooks.yaml",
        &FILE.replace("{{event.message}}", "{{event.kind}}"),
    );
    let changes = f.reload().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert!(changes[0].starts_with("webhook \"chat\""), "{changes:?}");
    let hook = store::get(&f.h.db, &hook.id).unwrap().unwrap();
    assert!(hook.spec.body_template.contains("{{event.kind}}"));
    assert_eq!(f.audit_entries().len(), 2);

    // A broken file: nothing changes, the status says where.
    f.write("webhooks.yaml", "webhooks:\n  - name: chat\n   url: x\n");
    let e = f.reload().unwrap_err();
    assert!(e.starts_with("webhooks.yaml:3: "), "{e}");
    let status = f.h.state.status();
    assert!(!status.ok && status.error.as_deref() == Some(e.as_str()));
    assert_eq!(status.files, ["webhooks.yaml"], "the files in force");
    assert_eq!(f.hooks().len(), 2);
    assert_eq!(f.h.settings.number("token_retention_days", 0), 7);

    // Taken out of the files: the webhook goes, the setting falls back to the
    // config file's, the active silence ends now; the API's webhook stays.
    std::fs::remove_file(dir_path(&f).join("provisioning/webhooks.yaml")).unwrap();
    let changes = f.reload().unwrap();
    assert_eq!(changes.len(), 4, "{changes:?}");
    let left = f.hooks();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].id, api.id);
    assert_eq!(f.h.settings.number("token_retention_days", 0), 30);
    assert!(f.h.settings.provisioned().is_empty());
    let silences = f.h.silences.list(f.clock.utc());
    assert_eq!(silences[0].ends_at, f.clock.utc());
    assert_eq!(f.reload().unwrap(), Vec::<String>::new());
}

#[test]
fn a_window_already_over_is_stored_as_ended_without_events() {
    let f = fixture();
    f.write(
        "old.yaml",
        "silences:\n  - name: old\n    matcher: {kind: x}\n    startsAt: 2001-01-01T00:00:00Z\n    endsAt: 2001-01-01T01:00:00Z\n    comment: long ago\n",
    );
    assert_eq!(f.reload().unwrap().len(), 1);
    assert!(f.events.0.lock().is_empty());
    let list = f.h.silences.list(f.clock.utc());
    assert_eq!(list[0].status, "expired");
    assert_eq!(list[0].provisioned_from.as_deref(), Some("old.yaml"));
    assert_eq!(list[0].name.as_deref(), Some("old"));
    assert!(f.reload().unwrap().is_empty());
}
