//! Tests of the template language: rendering, filters, directives, and the
//! errors `compile` names at save.

use super::*;
use serde_json::json;

fn ctx() -> Value {
    json!({
        "event": {
            "id": "e1", "kind": "vrrp.incident_opened", "level": "warning", "message": "Split brain on VRID 51",
            "occurredAt": "2026-11-21T08:46:00.000Z", "detail": null, "correlationId": "inc-1",
            "data": { "cluster": { "vrid": 51, "site": null, "vips": ["192.0.2.100/24", "192.0.2.101/24"],
                "members": [ { "host": "lb-1", "state": "MASTER", "priority": 130 }, { "host": "lb-2", "state": "MASTER", "priority": 120 } ] },
                "incident": { "reasons": [], "durationSeconds": 0 } }
        },
        "client": { "id": "c1", "name": "edge", "hostname": "lb-1", "site": null },
        "webhook": { "name": "ops chat" }
    })
}

fn render(t: &str) -> Value {
    compile(t)
        .unwrap_or_else(|e| panic!("{t}: {e}"))
        .render(&ctx())
}

fn refuse(t: &str) -> TemplateError {
    compile(t).expect_err(t)
}

#[test]
fn whole_placeholders_keep_their_type_and_text_ones_become_text() {
    assert_eq!(
        render(r#"{"v": "{{event.data.cluster.vrid}}"}"#),
        json!({ "v": 51 })
    );
    assert_eq!(
        render(r#"{"v": "{{ event.data.cluster.members }}"}"#)["v"][1]["host"],
        "lb-2"
    );
    assert_eq!(
        render(r#"{"v": "{{event.detail}}", "m": "{{event.nothing.here}}"}"#),
        json!({ "v": null, "m": null })
    );
    assert_eq!(
        render(
            r#"{"t": "VRID {{event.data.cluster.vrid}} on {{client.site}}: {{event.message}}"}"#
        )["t"],
        "VRID 51 on : Split brain on VRID 51"
    );
    assert_eq!(
        render(r#"{"t": "vips={{event.data.cluster.vips}} ok={{event.data.incident.reasons}}"}"#)
            ["t"],
        r#"vips=["192.0.2.100/24","192.0.2.101/24"] ok=[]"#
    );
    assert_eq!(
        render(r#"{"t": "first: {{event.data.cluster.members.0.host}}"}"#)["t"],
        "first: lb-1"
    );
    assert_eq!(
        render(r#"["{{webhook.name}}", 5, true, null]"#),
        json!(["ops chat", 5, true, null])
    );
}

#[test]
fn keys_are_templated_and_dollar_dollar_escapes() {
    assert_eq!(
        render(r#"{"{{client.hostname}}": 1, "$$schema": "x"}"#),
        json!({ "lb-1": 1, "$schema": "x" })
    );
}

#[test]
fn filters() {
    let r = |f: &str| render(&json!({ "v": format!("{{{{{f}}}}}") }).to_string())["v"].clone();
    assert_eq!(r("event.detail | default('none')"), "none");
    assert_eq!(r("client.site | default(\"dc-0\")"), "dc-0");
    assert_eq!(r("event.nothing | default(0)"), 0);
    assert_eq!(
        r("event.data.incident.reasons | default('no reasons')"),
        "no reasons",
        "empty counts as missing"
    );
    assert_eq!(r("event.kind | default('x')"), "vrrp.incident_opened");
    assert_eq!(
        r("event.data.cluster.vips | join"),
        "192.0.2.100/24, 192.0.2.101/24"
    );
    assert_eq!(
        r("event.data.cluster.vips | join(' | ')"),
        "192.0.2.100/24 | 192.0.2.101/24"
    );
    assert_eq!(
        r("event.data.cluster.members | map('host')"),
        json!(["lb-1", "lb-2"])
    );
    assert_eq!(
        r("event.data.cluster.members | map('host') | join(\" and \") | upper"),
        "LB-1 AND LB-2"
    );
    assert_eq!(r("event.level | upper"), "WARNING");
    assert_eq!(r("webhook.name | lower"), "ops chat");
    assert_eq!(r("event.message | truncate(5)"), "Split");
    assert_eq!(
        r("event.occurredAt | date('%d.%m.%Y %H:%M')"),
        "21.11.2026 08:46"
    );
    // A filter given the wrong type passes the value on.
    assert_eq!(r("event.data.cluster.vrid | upper"), 51);
    assert_eq!(r("event.message | join"), "Split brain on VRID 51");
    assert_eq!(r("event.kind | date('%Y')"), "vrrp.incident_opened");
}

#[test]
fn truncate_counts_code_points() {
    let t = compile(r#"{"v": "{{event.message | truncate(3)}}"}"#).unwrap();
    assert_eq!(
        t.render(&json!({ "event": { "message": "ÄÖÜß" } }))["v"],
        "ÄÖÜ"
    );
}

#[test]
fn if_directive() {
    let t = r#"{"color": {"$if": "event.level == 'warning'", "then": "orange", "else": "grey"},
                "site": {"$if": "client.site", "then": "{{client.site}}"},
                "nosite": {"$if": "!client.site", "then": true},
                "notinfo": {"$if": "event.level != \"info\"", "then": "yes"},
                "list": [1, {"$if": "event.detail", "then": 2}, 3]}"#;
    assert_eq!(
        render(t),
        json!({ "color": "orange", "nosite": true, "notinfo": "yes", "list": [1, 3] }),
        "an absent branch drops the key or item"
    );
    // Strict comparison: 51 is not '51'.
    assert_eq!(
        render(
            r#"{"a": {"$if": "event.data.cluster.vrid == 51", "then": 1, "else": 0}, "b": {"$if": "event.data.cluster.vrid == '51'", "then": 1, "else": 0}}"#
        ),
        json!({ "a": 1, "b": 0 })
    );
}

#[test]
fn map_and_join_directives() {
    let t = r#"{"fields": {"$map": "event.data.cluster.members", "each(m, i)": {"title": "{{i}}: {{m.host}}", "value": "{{m.priority}}"}},
                "text": {"$join": {"$map": "event.data.cluster.members", "each(m)": "{{m.host}} is {{m.state}}"}, "with": "; "},
                "plain": {"$join": "{{event.data.cluster.vips}}"}}"#;
    let out = render(t);
    assert_eq!(
        out["fields"],
        json!([{ "title": "0: lb-1", "value": 130 }, { "title": "1: lb-2", "value": 120 }])
    );
    assert_eq!(out["text"], "lb-1 is MASTER; lb-2 is MASTER");
    assert_eq!(out["plain"], "192.0.2.100/24, 192.0.2.101/24");
    assert_eq!(
        render(r#"{"none": {"$map": "event.nothing", "each(m)": "{{m}}"}}"#),
        json!({ "none": [] })
    );
}

#[test]
fn refusals_name_the_location_and_what_was_expected() {
    assert!(refuse("{").message.starts_with("not valid JSON"));
    let e = refuse(r#"{"text": "{{event.kind"}"#);
    assert_eq!(e.location, "text");
    assert!(e.message.contains("not closed"));
    let e = refuse(r#"{"tags": ["a", "b", "{{event.kind | shout}}"]}"#);
    assert_eq!(
        (e.location.as_str(), e.message.as_str()),
        (
            "tags[2]",
            "unknown filter \"shout\" (default, join, map, upper, lower, truncate, date)"
        )
    );
    let e = refuse(r#"{"x": "{{secrets.key}}"}"#);
    assert!(e.message.contains("not event, client, webhook"), "{e}");
    let e = refuse(r#"{"hosts": {"$map": "event.data.cluster.members", "each(m)": "{{n.host}}"}}"#);
    assert_eq!(e.location, "hosts.$map.each(m)");
    let e = refuse(r#"{"content": {"$join": "{{event.kind}}", "with": 5}}"#);
    assert_eq!(e.location, "content.with");
    let e = refuse(r#"{"content": {"$join": "x", "color": "red"}}"#);
    assert_eq!(e.location, "content.$join");
    assert!(e.message.contains("holds only $join, with"), "{e}");
    let e = refuse(r#"{"a": {"$if": "event.level == ", "then": 1}}"#);
    assert_eq!(e.location, "a.$if");
    let e = refuse(r#"{"a": {"$map": "event.x", "each": 1}}"#);
    assert_eq!(e.location, "a.$map");
    assert!(refuse(r#"{"v": "{{event.kind | truncate(many)}}"}"#)
        .message
        .contains("truncate takes a whole number"));
    assert!(refuse(r#"{"v": "{{event.kind | default}}"}"#)
        .message
        .contains("default takes a literal"));
    // A loop variable is out of scope after its $map.
    let e = refuse(r#"{"a": {"$map": "event.x", "each(m)": 1}, "b": "{{m.host}}"}"#);
    assert_eq!(e.location, "b");
}

#[test]
fn nesting_limits() {
    let mut t = String::from("1");
    for _ in 0..MAX_DIRECTIVE_DEPTH {
        t = format!(r#"{{"$if": "event.kind", "then": {t}}}"#);
    }
    assert_eq!(
        compile(&t).unwrap().render(&ctx()),
        json!(1),
        "8 directives deep is allowed"
    );
    let nine = format!(r#"{{"$if": "event.kind", "then": {t}}}"#);
    assert!(refuse(&nine)
        .message
        .contains("directives nest deeper than 8"));
    let deep = format!(
        "{}1{}",
        "[".repeat(MAX_DEPTH + 1),
        "]".repeat(MAX_DEPTH + 1)
    );
    assert!(refuse(&deep).message.contains("nests deeper than 64"));
    let ok = format!("{}1{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
    assert!(compile(&ok).is_ok());
}

#[test]
fn text_templates_for_urls_and_headers() {
    let t = compile_text(
        "https://hooks.example/{{client.hostname}}?level={{event.level | upper}}",
        "url",
    )
    .unwrap();
    assert_eq!(t.render(&ctx()), "https://hooks.example/lb-1?level=WARNING");
    assert_eq!(
        compile_text("{{nope}}", "headers.X-Token")
            .unwrap_err()
            .location,
        "headers.X-Token"
    );
}

#[test]
fn a_readiness_change_gives_templates_its_verdict_and_findings() {
    let now = chrono::Utc::now();
    let sample = crate::webhooks::delivery::samples(now)
        .into_iter()
        .find(|e| e["kind"] == "cluster.readiness_changed")
        .expect("a sample of the kind");
    let ctx = crate::webhooks::delivery::shared_context_of(sample, None);
    let t = compile_text(
        "{{readiness.previousVerdict}} -> {{readiness.verdict}}: {{readiness.summary}} [{{readiness.checks | join(\",\")}}] {{event.message}}",
        "body",
    )
    .unwrap();
    let text = t.render(&ctx);
    assert!(
        text.starts_with("ready -> not_ready: lb-2 is in FAULT (track script chk_haproxy failed): no backup could take over from lb-1 [no_ready_backup] VRID 51"),
        "{text}"
    );
    assert!(text.contains("is not ready for a failover"), "{text}");
    // Other kinds have no readiness.
    let other = crate::webhooks::delivery::samples(now).remove(0);
    assert!(crate::webhooks::delivery::shared_context_of(other, None)["readiness"].is_null());
}
