//! The mapping rules, row by row.

use super::*;
use crate::import::kasm_key;
use chrono::TimeZone;

const SEALED: &str = "00112233445566778899aabb:80a5154cb19c60063f7c113567deade5:35ecd38f6d68f65dacc16916824528a99d5a82b2be9ae98fa0dda1efcb4c6fb8579714345c";
const HASH: &str = "790c5fe3d1e9ab54ea588992dfbb0d9075a9d9131c6c7788cda32145c0d39a0c";

fn row(mode: &str, token: Option<&str>) -> KasmClient {
    KasmClient {
        id: "c1".into(),
        hostname: None,
        connection_mode: Some(mode.into()),
        auth_token: token.map(str::to_owned),
        created_at: Some("2026-01-05 10:00:00".into()),
        ..KasmClient::default()
    }
}

#[test]
fn clients_keep_their_credentials_in_a_form_that_authenticates_here() {
    let key = kasm_key::derive("kasm-original-secret-key-for-tests");
    let c = client(row("inbound", Some(HASH)), None).unwrap().unwrap();
    assert!(c.credential == Credential::Hash(HASH.into()));
    assert_eq!((c.hostname.as_str(), c.outbound), ("", false));
    let c = client(row("outbound", Some(SEALED)), Some(&key))
        .unwrap()
        .unwrap();
    assert!(c.credential == Credential::Plain("outbound-agent-token-0123456789abcdef".into()));
    assert!(
        client(row("inbound", None), None)
            .unwrap()
            .unwrap()
            .credential
            == Credential::None
    );

    assert_eq!(
        client(row("outbound", Some(SEALED)), None).err(),
        Some(KeyProblem::NoKey)
    );
    let wrong = kasm_key::derive("other");
    assert_eq!(
        client(row("outbound", Some(SEALED)), Some(&wrong)).err(),
        Some(KeyProblem::WrongKey)
    );
    for (mode, token, reason) in [
        ("sideways", Some(HASH), "neither inbound nor outbound"),
        ("inbound", Some("plain-token"), "not a SHA-256 hash"),
        ("outbound", Some("zz"), "not iv:tag:ciphertext"),
    ] {
        let skip = client(row(mode, token), Some(&key)).unwrap().err().unwrap();
        assert!(skip.reason.contains(reason), "{}", skip.reason);
        assert!(!skip.reason.contains(HASH));
    }
}

#[test]
fn users_tokens_readings_events() {
    let u = user((
        4,
        Some("carol".into()),
        Some("$2b$x".into()),
        Some("local,oidc".into()),
        0,
        Some("t0".into()),
        None,
    ))
    .unwrap();
    assert_eq!(
        (u.auth_methods, u.updated_at.as_str()),
        ("local,oidc", "t0")
    );
    assert!(user((5, None, None, None, 0, None, None)).is_err());
    assert!(user((
        6,
        Some("x".into()),
        None,
        Some("ldap".into()),
        0,
        None,
        None
    ))
    .is_err());

    let now = Utc.with_ymd_and_hms(2026, 11, 27, 0, 0, 0).unwrap();
    let t = |expires: &str, used: Option<&str>| {
        token(
            (
                HASH.into(),
                Some("2026-11-01 00:00:00".into()),
                Some(expires.into()),
                used.map(str::to_owned),
                None,
                None,
            ),
            now,
        )
    };
    let ok = t("2099-01-01T00:00:00.000Z", None).unwrap();
    assert_eq!(
        (ok.created_at.as_str(), ok.expires_at.as_str()),
        ("2026-11-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z")
    );
    assert_eq!(
        t("2026-11-26 23:59:59", None).unwrap_err().reason,
        "expired"
    );
    assert_eq!(
        t("2099-01-01T00:00:00Z", Some("x")).unwrap_err().reason,
        "already used"
    );
    assert_eq!(
        t("2099-01-01T00:00:00Z", Some("x")).unwrap_err().id,
        &HASH[..8]
    );

    let r = reading(("c1".into(), r#"{"collectedAt":"2026-11-20T10:00:00.000Z","running":true,"instances":[{"name":"VI_1","state":"master","vrid":1,"vips":[]}],"x":1}"#.into(), "t".into(), None)).unwrap();
    let payload: Value = serde_json::from_str(&r.payload).unwrap();
    assert_eq!(
        (
            payload["x"].clone(),
            payload["instances"][0]["state"].clone()
        ),
        (json!(1), json!("MASTER"))
    );
    assert!(reading(("c1".into(), "nope".into(), "t".into(), None)).is_err());
    assert!(reading(("c1".into(), "{}".into(), "t".into(), Some("{}".into()))).is_err());

    let e = Event {
        id: "e1".into(),
        occurred_at: "o".into(),
        received_at: "r".into(),
        source: "agent".into(),
        client_id: None,
        kind: "k".into(),
        level: "info".into(),
        correlation_id: None,
        subject: String::new(),
        data: String::new(),
    };
    let ok = event(e.clone(), None, Some(r#"{"a":1}"#.into())).unwrap();
    assert_eq!(
        (ok.subject.as_str(), ok.data.as_str()),
        ("{}", r#"{"a":1}"#)
    );
    assert!(event(e.clone(), Some("[1]".into()), None).is_err());
    assert!(event(
        Event {
            level: "fatal".into(),
            ..e
        },
        None,
        None
    )
    .is_err());
}

#[test]
fn webhooks_pass_the_api_check_and_settings_the_settings_check() {
    let w = |template: &str| KasmWebhook {
        id: "w1".into(),
        name: "n".into(),
        enabled: 0,
        url: "http://h/{{event.kind}}".into(),
        method: "put".into(),
        headers: r#"{"X-A":"b"}"#.into(),
        body_template: template.into(),
        min_level: "info".into(),
        kinds: r#"["vrrp.*"]"#.into(),
        timeout_ms: 2000,
        last_status: Some(500),
        last_error: Some("e".into()),
        last_attempt_at: None,
        created_at: "c".into(),
        updated_at: None,
    };
    let ok = webhook(w("{\"t\": \"{{event.message}}\"}")).unwrap();
    assert_eq!(
        (
            ok.spec.method.as_str(),
            ok.spec.enabled,
            ok.spec.kinds.clone()
        ),
        ("PUT", false, vec!["vrrp.*".to_owned()])
    );
    assert_eq!(ok.last_status, Some(500));
    assert!(webhook(w("{{#each"))
        .unwrap_err()
        .reason
        .starts_with("bodyTemplate"));

    let block: Map<String, Value> = serde_json::from_value(json!({
        "token_retention_days": "14", "notification_retention_count": "x",
        "activity_level_overrides": "a=error", "retention_invalid_tokens_count": "5"
    }))
    .unwrap();
    let (ok, skipped) = settings(
        &block,
        &[
            "token_retention_days",
            "notification_retention_count",
            "activity_level_overrides",
        ],
    );
    assert_eq!(
        Value::Object(ok),
        json!({ "token_retention_days": "14", "activity_level_overrides": "a=error" })
    );
    let names: Vec<&str> = skipped.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        names,
        [
            "notification_retention_count",
            "retention_invalid_tokens_count"
        ]
    );
}

#[test]
fn times_in_either_form() {
    assert_eq!(
        parse_time("2026-01-02 03:04:05").map(iso).as_deref(),
        Some("2026-01-02T03:04:05.000Z")
    );
    assert_eq!(
        parse_time("2026-01-02T03:04:05.5+01:00")
            .map(iso)
            .as_deref(),
        Some("2026-01-02T02:04:05.500Z")
    );
    assert!(parse_time("yesterday").is_none());
}
