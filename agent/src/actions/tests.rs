//! Tests of host actions on real files in a temporary directory: the refusal without
//! a drain file, drain and undrain with their story kept across a restart, drains made
//! by hand, refused requests that touch nothing, and the config block.

use super::*;
use serde_json::json;
use std::fs;
use vrrp_protocol::actions::OUTSIDE_REASON;

struct Host {
    _tmp: tempfile::TempDir,
    file: PathBuf,
    data: PathBuf,
}

impl Host {
    fn new() -> Host {
        let tmp = tempfile::tempdir().unwrap();
        let keepalived = tmp.path().join("keepalived");
        let data = tmp.path().join("data");
        fs::create_dir(&keepalived).unwrap();
        fs::create_dir(&data).unwrap();
        Host {
            file: keepalived.join("drain"),
            data,
            _tmp: tmp,
        }
    }

    fn drainer(&self) -> Drainer {
        Drainer::open(self.file.clone(), &self.data)
    }

    fn content(&self) -> String {
        fs::read_to_string(&self.file).unwrap()
    }
}

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp(1_795_000_000 + secs, 0).unwrap()
}

fn ask(action: &str, reason: &str) -> Value {
    json!({"id": "req-1", "action": action, "reason": reason, "by": "alice"})
}

#[test]
fn without_a_drain_file_every_action_is_refused_with_the_one_text() {
    for payload in [ask("drain", "x"), ask("undrain", ""), ask("reboot", "x")] {
        let r = answer(None, &payload, at(0));
        assert_eq!(r.id, "req-1");
        assert!(!r.ok);
        assert_eq!(
            r.error.as_deref(),
            Some("actions are disabled on this host; set actions.drainFile (see the host guide)")
        );
        assert_eq!(r.drain, DrainState::default());
    }
}

#[test]
fn drain_and_undrain_write_the_file_and_keep_the_story_across_a_restart() {
    let h = Host::new();
    let mut d = h.drainer();
    assert_eq!(d.state(), DrainState::default(), "no file: not drained");

    let r = answer(Some(&mut d), &ask("drain", "kernel update"), at(0));
    assert!(r.ok && r.error.is_none(), "{r:?}");
    assert_eq!(h.content(), "1\n");
    assert!(r.drain.drained);
    assert_eq!(r.drain.reason.as_deref(), Some("kernel update"));
    assert_eq!(r.drain.by.as_deref(), Some("alice"));
    assert_eq!(r.drain.since.as_deref(), Some("2026-11-18T11:06:40.000Z"));
    assert!(h.data.join(files::STATE_FILE).exists());

    // Drained again: the story is the new one, the time the first.
    let again = ask("drain", "still the kernel");
    let r = answer(Some(&mut d), &again, at(60));
    assert_eq!(r.drain.reason.as_deref(), Some("still the kernel"));
    assert_eq!(r.drain.since.as_deref(), Some("2026-11-18T11:06:40.000Z"));

    // A restart of the agent reports the same drain.
    let mut restarted = h.drainer();
    assert_eq!(restarted.state(), r.drain);

    let r = answer(Some(&mut restarted), &ask("undrain", "done"), at(120));
    assert!(r.ok && r.error.is_none(), "{r:?}");
    assert_eq!(h.content(), "0\n");
    assert_eq!(r.drain, DrainState::default());
    assert!(!h.data.join(files::STATE_FILE).exists());
    // Undraining an undrained host is fine too.
    assert!(answer(Some(&mut restarted), &ask("undrain", ""), at(130)).ok);
    // Nothing but the drain file was ever made beside it.
    let names: Vec<_> = fs::read_dir(h.file.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from("drain")]);
}

#[test]
fn the_file_wins_over_the_story_and_a_drain_by_hand_is_named_so() {
    let h = Host::new();
    let mut d = h.drainer();
    assert!(answer(Some(&mut d), &ask("drain", "drill"), at(0)).ok);
    // Undrained by hand: not drained, whatever drain.json says.
    fs::write(&h.file, "0\n").unwrap();
    assert_eq!(d.state(), DrainState::default());
    assert_eq!(h.drainer().state(), DrainState::default());
    // Drained by hand again: not the file the agent wrote, so not its story.
    // (Its time set apart: a write within the file system's clock tick of the
    // agent's own would carry the same modification time.)
    fs::write(&h.file, "1\n").unwrap();
    let by_hand = fs::File::options().write(true).open(&h.file).unwrap();
    by_hand.set_modified(at(-3600).into()).unwrap();
    let s = d.state();
    assert!(s.drained);
    assert_eq!(s.reason.as_deref(), Some(OUTSIDE_REASON));
    assert_eq!(s.by, None);
    assert_eq!(s.since.as_deref(), Some("2026-11-18T10:06:40.000Z"));
    // A file that is no regular file reads as keepalived reads it: not drained.
    fs::remove_file(&h.file).unwrap();
    fs::create_dir(&h.file).unwrap();
    assert_eq!(d.state(), DrainState::default());
}

#[test]
fn a_refused_request_touches_nothing() {
    let h = Host::new();
    let mut d = h.drainer();
    for (payload, error) in [
        (ask("drain", &"x".repeat(201)), "reason: longer than 200"),
        (ask("drain", "two\nlines"), "reason: holds a control"),
        (ask("shutdown", "x"), "unknown action \"shutdown\""),
        (json!({"id": "req-1", "action": "drain"}), "does not parse"),
        (
            json!({"id": "req-1", "action": "drain", "reason": "x", "by": ""}),
            "by:",
        ),
    ] {
        let r = answer(Some(&mut d), &payload, at(0));
        assert!(!r.ok, "{payload}");
        assert!(r.error.as_deref().unwrap().contains(error), "{r:?}");
        assert_eq!(r.drain, DrainState::default());
    }
    assert!(!h.file.exists());
    assert!(fs::read_dir(&h.data).unwrap().next().is_none());
}

#[test]
fn a_link_at_the_path_is_refused_and_its_target_kept() {
    let h = Host::new();
    let target = h.data.parent().unwrap().join("precious");
    fs::write(&target, "keep\n").unwrap();
    std::os::unix::fs::symlink(&target, &h.file).unwrap();
    let r = answer(Some(&mut h.drainer()), &ask("drain", "x"), at(0));
    assert!(!r.ok);
    assert!(r.error.unwrap().contains("symbolic link"));
    assert_eq!(fs::read_to_string(&target).unwrap(), "keep\n");
    assert!(fs::symlink_metadata(&h.file)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[test]
fn a_missing_directory_or_state_that_cannot_be_kept_are_said() {
    let h = Host::new();
    let mut d = Drainer::open(h.file.parent().unwrap().join("gone/drain"), &h.data);
    let r = answer(Some(&mut d), &ask("drain", "x"), at(0));
    assert!(!r.ok && r.error.unwrap().starts_with("cannot write"));
    // The data directory is no directory: drained all the same, with a remark.
    let not_a_dir = h.data.join("plain");
    fs::write(&not_a_dir, "").unwrap();
    let mut d = Drainer::open(h.file.clone(), &not_a_dir);
    let r = answer(Some(&mut d), &ask("drain", "x"), at(0));
    assert!(r.ok, "{r:?}");
    assert!(r.error.unwrap().contains("could not be stored"));
    assert_eq!(r.drain.reason.as_deref(), Some("x"), "kept in memory");
}

#[test]
fn the_config_block() {
    let data = Path::new("/var/lib/vrrp-agent");
    let yaml = |t: &str| serde_yaml_ng::from_str::<Yaml>(t).unwrap();
    assert_eq!(config_block(None, data), Ok(ActionsConfig::default()));
    assert_eq!(
        config_block(
            Some(&yaml("drainFile: /var/lib/keepalived-drain/drain")),
            data
        )
        .unwrap()
        .drain_file,
        Some(PathBuf::from("/var/lib/keepalived-drain/drain"))
    );
    assert_eq!(
        config_block(Some(&yaml("{}")), data),
        Ok(ActionsConfig::default())
    );
    for bad in [
        "drainFile: drain",
        "drainFile: /var/lib/../etc/passwd",
        "drainFile: /var/lib/./drain",
        "drainFile: /var/lib/drain/",
        "drainFile: /",
        "drainFile: 5",
        "drainFile: /var/lib/vrrp-agent/drain",
    ] {
        let e = config_block(Some(&yaml(bad)), data).unwrap_err();
        assert!(e.starts_with("actions.drainFile:"), "{bad}: {e}");
    }
    assert!(config_block(Some(&yaml("[1]")), data)
        .unwrap_err()
        .starts_with("actions:"));
}
