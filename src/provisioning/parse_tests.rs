//! What a provisioning file may say, and the file:line of what it must not.

use super::*;
use serde_json::json;

fn parse(text: &str) -> Result<FileItems, ProvisionError> {
    parse_file("webhooks.yaml", text, &[])
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const GOOD: &str = r#"apiVersion: 1
webhooks:
  - name: chat
    url: https://chat.example/hook
    minLevel: info
    kinds: [vrrp.incident_*]
    headers:
      X-Token: s3cret
    bodyTemplate: |
      {"text": "{{event.message}}"}
  - name: pager
    url: https://pager.example/{{client.hostname}}
    bodyTemplate:
      summary: "{{event.message}}"
      tags: ["{{event.kind}}"]
settings:
  notification_retention_days: 30
  activity_level_overrides:
    client.connected: none
    vrrp.state_changed: error
silences:
  - name: weekly-patching
    matcher: { kind: "keepalived.*" }
    startsAt: 2030-06-01T22:00:00Z
    endsAt: 2030-06-02T02:00:00Z
    comment: Kernel updates
"#;

#[test]
fn a_file_defines_webhooks_settings_and_silences() {
    let items = parse(GOOD).unwrap();
    let hooks: Vec<(usize, &str)> = items
        .webhooks
        .iter()
        .map(|(l, w)| (*l, w.spec.name.as_str()))
        .collect();
    assert_eq!(hooks, [(3, "chat"), (11, "pager")]);
    let chat = &items.webhooks[0].1;
    assert_eq!(chat.file, "webhooks.yaml");
    assert_eq!(
        (chat.spec.min_level.as_str(), chat.spec.method.as_str()),
        ("info", "POST")
    );
    let pager: Value = serde_json::from_str(&items.webhooks[1].1.spec.body_template).unwrap();
    assert_eq!(
        pager,
        json!({ "summary": "{{event.message}}", "tags": ["{{event.kind}}"] }),
        "a body template written as YAML is its JSON"
    );
    let settings: Vec<(usize, &str, &Value)> = items
        .settings
        .iter()
        .map(|(l, k, v)| (*l, k.as_str(), v))
        .collect();
    assert_eq!(
        settings,
        [
            (17, "notification_retention_days", &json!("30")),
            (
                19,
                "activity_level_overrides",
                &json!("client.connected=none,vrrp.state_changed=error")
            ),
        ]
    );
    let (line, s) = &items.silences[0];
    assert_eq!((*line, s.name.as_str()), (22, "weekly-patching"));
    assert_eq!(s.silence.matcher.kind.as_deref(), Some("keepalived.*"));
    assert!(parse("").unwrap().webhooks.is_empty());
    assert!(parse("# only a comment\n").unwrap().settings.is_empty());
}

#[test]
fn a_syntax_error_names_its_line() {
    let e = parse("webhooks:\n  - name: chat\n    url: [unclosed\n").unwrap_err();
    assert_eq!(e.file, "webhooks.yaml");
    assert!(e.line.is_some_and(|l| l >= 3), "{e}");
    let said = format!(" at line {} ", e.line.unwrap_or_default());
    assert!(!e.message.contains(&said), "the line is said once: {e}");
    let e = parse("webhooks:\n  - name: a\n   url: b\n").unwrap_err();
    assert_eq!(e.line, Some(3), "{e}");
}

#[test]
fn a_broken_rule_names_the_field_and_its_line() {
    for (text, expected) in [
        (
            "webhooks:\n  - name: chat\n    bodyTemplate: '{}'\n    url: ftp://x\n",
            "webhooks.yaml:4: webhook \"chat\": url: must start with http:// or https://",
        ),
        (
            "webhooks:\n  - name: chat\n    url: https://h\n",
            "webhooks.yaml:2: webhook \"chat\": bodyTemplate: is required",
        ),
        (
            "webhooks:\n  - url: https://h\n    bodyTemplate: '{}'\n",
            "webhooks.yaml:2: webhooks[0]: name: is required",
        ),
        (
            "webhooks:\n  - name: c\n    url: https://h\n    bodyTemplate: '{}'\n    kinds:\n      - vrrp.*\n      - 3\n",
            "webhooks.yaml:7: webhook \"c\": kinds[1]: must be a kind pattern (text, * as wildcard)",
        ),
        (
            "webhooks:\n  - name: c\n    url: https://h\n    bodyTemplate: '{}'\n    timout: 5\n",
            "webhooks.yaml:5: webhook \"c\": timout: is not a webhook field",
        ),
        (
            "webhooks:\n  - name: c\n    url: https://169.254.169.254/\n    bodyTemplate: '{}'\n",
            "webhooks.yaml:3: webhook \"c\": url: ",
        ),
        (
            "settings:\n  token_retention_days: 7\n  notifcation_retention_days: 3\n",
            "webhooks.yaml:3: settings.notifcation_retention_days: is not a setting",
        ),
        (
            "settings:\n  token_retention_days: -1\n",
            "webhooks.yaml:2: settings.token_retention_days: must be a non-negative whole number",
        ),
        (
            "settings:\n  activity_level_overrides:\n    a: info\n    vrrp.incident_opened: none\n",
            "webhooks.yaml:4: settings.activity_level_overrides: vrrp.incident_opened cannot be set to none",
        ),
        (
            "silences:\n  - name: s\n    matcher: {kind: x}\n    endsAt: 2030-01-01T00:00:00Z\n    comment: c\n",
            "webhooks.yaml:2: silence \"s\": startsAt: is required in a file",
        ),
        (
            "silences:\n  - name: s\n    matcher: {}\n    startsAt: 2030-01-01T00:00:00Z\n    endsAt: 2030-01-01T01:00:00Z\n    comment: c\n",
            "webhooks.yaml:3: silence \"s\": matcher: needs at least one of clusterKey, clientId, kind",
        ),
        (
            "silences:\n  - name: s\n    matcher: {kind: x}\n    startsAt: 2030-01-01T00:00:00Z\n    endsAt: 2030-01-09T00:00:00Z\n    comment: c\n",
            "webhooks.yaml:5: silence \"s\": endsAt: must be at most 7 days after startsAt",
        ),
        (
            "webhook:\n  - name: c\n",
            "webhooks.yaml:2: \"webhook\" is not a section (webhooks, settings, silences)",
        ),
        ("apiVersion: 2\n", "webhooks.yaml:1: apiVersion: must be 1"),
        ("webhooks: {}\n", "webhooks.yaml:1: webhooks: must be a list"),
        ("- a\n", "webhooks.yaml:1: must be a mapping"),
    ] {
        let got = error(text);
        assert!(got.starts_with(expected), "{text}\n  got: {got}\n want: {expected}");
    }
}

#[test]
fn a_silence_in_the_past_still_loads() {
    let items = parse(
        "silences:\n  - name: old\n    matcher: {kind: x}\n    startsAt: 2001-01-01T00:00:00Z\n    endsAt: 2001-01-01T01:00:00Z\n    comment: long ago\n",
    )
    .unwrap();
    assert_eq!(items.silences.len(), 1);
}

#[test]
fn a_name_defined_twice_names_both_places() {
    let a = parse_file(
        "a.yaml",
        "webhooks:\n  - name: chat\n    url: https://a\n    bodyTemplate: '{}'\n",
        &[],
    )
    .unwrap();
    let b = parse_file(
        "b.yaml",
        "settings: {token_retention_days: 3}\nwebhooks:\n  - name: chat\n    url: https://b\n    bodyTemplate: '{}'\n",
        &[],
    )
    .unwrap();
    let e = merge(vec![("a.yaml".into(), a), ("b.yaml".into(), b)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "b.yaml:3: webhook \"chat\" is also defined at a.yaml:2"
    );
    let one = parse_file("x.yaml", "settings: {token_retention_days: 3}\n", &[]).unwrap();
    let two = parse_file("y.yaml", "settings:\n  token_retention_days: 4\n", &[]).unwrap();
    let e = merge(vec![("x.yaml".into(), one), ("y.yaml".into(), two)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "y.yaml:2: setting token_retention_days is also defined at x.yaml:1"
    );
    let set = merge(vec![("webhooks.yaml".into(), parse(GOOD).unwrap())]).unwrap();
    assert_eq!(set.files, ["webhooks.yaml"]);
    assert_eq!(set.webhooks.len(), 2);
    assert_eq!(
        set.settings["notification_retention_days"],
        (json!("30"), "webhooks.yaml".to_owned())
    );
}
