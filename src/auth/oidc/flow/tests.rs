//! Tests of the pure OIDC parts: the state store, PKCE, URLs, claim checks, mapping.

use super::*;
use chrono::TimeZone;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 5, 0, 0).unwrap()
}

fn pending(browser: &str, started: DateTime<Utc>) -> Pending {
    Pending {
        verifier: "v".into(),
        nonce: "n".into(),
        browser: binding_hash(browser),
        started,
    }
}

#[test]
fn a_state_is_taken_once_by_its_browser() {
    let mut store = PendingLogins::default();
    store.insert("s1".into(), pending("b1", t0()), t0());
    let got = store.take("s1", Some("b1"), t0() + chrono::Duration::seconds(5));
    assert_eq!(got.map(|p| p.nonce), Ok("n".to_owned()));
    assert_eq!(
        store.take("s1", Some("b1"), t0()).map(|p| p.nonce),
        Err(StateError::Used)
    );
    assert_eq!(
        store.take("nope", Some("b1"), t0()).map(|p| p.nonce),
        Err(StateError::Unknown)
    );
}

#[test]
fn another_browser_uses_the_state_up() {
    let mut store = PendingLogins::default();
    store.insert("s1".into(), pending("b1", t0()), t0());
    assert_eq!(
        store.take("s1", Some("b2"), t0()).err(),
        Some(StateError::OtherBrowser)
    );
    assert_eq!(store.take("s1", None, t0()).err(), Some(StateError::Used));
    store.insert("s2".into(), pending("b1", t0()), t0());
    assert_eq!(
        store.take("s2", None, t0()).err(),
        Some(StateError::OtherBrowser)
    );
}

#[test]
fn a_state_expires_after_ten_minutes_of_the_given_clock() {
    let mut store = PendingLogins::default();
    store.insert("s1".into(), pending("b", t0()), t0());
    store.insert("s2".into(), pending("b", t0()), t0());
    let edge = t0() + LOGIN_LIFETIME;
    assert!(store.take("s1", Some("b"), edge).is_ok());
    assert_eq!(
        store
            .take("s2", Some("b"), edge + chrono::Duration::seconds(1))
            .err(),
        Some(StateError::Expired)
    );
}

#[test]
fn expired_states_are_forgotten_and_the_store_is_bounded() {
    let mut store = PendingLogins::with_capacity(3);
    for i in 0..3 {
        store.insert(format!("s{i}"), pending("b", t0()), t0());
    }
    // Full: the oldest goes.
    store.insert("s3".into(), pending("b", t0()), t0());
    assert_eq!(store.len(), 3);
    assert_eq!(
        store.take("s0", Some("b"), t0()).err(),
        Some(StateError::Unknown)
    );
    assert!(store.take("s3", Some("b"), t0()).is_ok());
    // Eleven minutes on, a new login sweeps every expired one out.
    let later = t0() + chrono::Duration::minutes(11);
    store.insert("s4".into(), pending("b", later), later);
    assert_eq!(store.len(), 1);
    assert_eq!(
        store.take("s1", Some("b"), later).err(),
        Some(StateError::Unknown)
    );
}

#[test]
fn pkce_matches_rfc_7636_appendix_b() {
    assert_eq!(
        pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
        "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    );
    let v = random_url_safe(32);
    assert_eq!(v.len(), 43);
    assert_ne!(v, random_url_safe(32));
    assert!(v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
}

#[test]
fn authorization_url_carries_every_parameter_encoded() {
    let url = authorization_url(&AuthorizationRequest {
        endpoint: "https://idp.example/auth?kc_idp_hint=x",
        client_id: "vrrp monitor",
        redirect_uri: "https://mon.example/api/auth/callback",
        state: "st",
        nonce: "no",
        challenge: "ch",
    });
    assert_eq!(
        url,
        "https://idp.example/auth?kc_idp_hint=x&response_type=code&client_id=vrrp%20monitor\
         &redirect_uri=https%3A%2F%2Fmon.example%2Fapi%2Fauth%2Fcallback\
         &scope=openid%20profile%20email&state=st&nonce=no&code_challenge=ch\
         &code_challenge_method=S256"
    );
}

fn claims() -> IdClaims {
    serde_json::from_value(serde_json::json!({
        "iss": "https://idp.example/realms/ops",
        "sub": "248289761001",
        "aud": "vrrp-monitor",
        "exp": t0().timestamp() + 300,
        "iat": t0().timestamp(),
        "nonce": "n-0S6_WzA2Mj",
        "preferred_username": "alice",
        "email": "alice@example.test",
        "email_verified": true
    }))
    .unwrap()
}

fn expected() -> Expected<'static> {
    Expected {
        issuer: "https://idp.example/realms/ops",
        client_id: "vrrp-monitor",
        nonce: "n-0S6_WzA2Mj",
    }
}

#[test]
fn good_claims_pass() {
    assert_eq!(check_claims(&claims(), &expected(), t0()), Ok(()));
}

#[test]
fn each_claim_is_checked() {
    let check = |f: &dyn Fn(&mut IdClaims), now: DateTime<Utc>| {
        let mut c = claims();
        f(&mut c);
        check_claims(&c, &expected(), now)
    };
    assert_eq!(
        check(&|c| c.iss = "https://idp.example/realms/other".into(), t0()),
        Err(ClaimError::Issuer)
    );
    assert_eq!(
        check(&|c| c.aud = Audience::One("someone-else".into()), t0()),
        Err(ClaimError::Audience)
    );
    assert_eq!(
        check(
            &|c| c.aud = Audience::Many(vec!["vrrp-monitor".into(), "api".into()]),
            t0()
        ),
        Err(ClaimError::AuthorizedParty)
    );
    assert_eq!(
        check(
            &|c| {
                c.aud = Audience::Many(vec!["vrrp-monitor".into(), "api".into()]);
                c.azp = Some("vrrp-monitor".into());
            },
            t0()
        ),
        Ok(())
    );
    assert_eq!(
        check(&|c| c.nonce = Some("other".into()), t0()),
        Err(ClaimError::Nonce)
    );
    assert_eq!(check(&|c| c.nonce = None, t0()), Err(ClaimError::Nonce));
    // exp + 60 s of skew, on the clock we are given.
    let exp = t0() + chrono::Duration::seconds(300);
    assert_eq!(check(&|_| {}, exp + chrono::Duration::seconds(59)), Ok(()));
    assert_eq!(
        check(&|_| {}, exp + chrono::Duration::seconds(60)),
        Err(ClaimError::Expired)
    );
    assert_eq!(
        check(&|c| c.iat = Some(t0().timestamp() + 120), t0()),
        Err(ClaimError::NotYetValid)
    );
    assert_eq!(
        check(&|c| c.sub = " ".into(), t0()),
        Err(ClaimError::Subject)
    );
}

#[test]
fn claims_without_aud_or_exp_are_unreadable() {
    for missing in ["aud", "exp", "iss", "sub"] {
        let mut v = serde_json::to_value(serde_json::json!({
            "iss": "i", "sub": "s", "aud": ["a"], "exp": 1
        }))
        .unwrap();
        v.as_object_mut().unwrap().remove(missing);
        assert!(serde_json::from_value::<IdClaims>(v).is_err(), "{missing}");
    }
}

#[test]
fn the_user_name_is_preferred_username_then_email_then_sub() {
    let mut c = claims();
    assert_eq!(username(&c), "alice");
    c.preferred_username = Some("  ".into());
    assert_eq!(username(&c), "alice@example.test");
    assert!(has_name_claims(&c));
    // An address the provider did not verify maps to no local user.
    c.email_verified = Some(serde_json::json!("true"));
    assert_eq!(username(&c), "alice@example.test");
    for unverified in [
        None,
        Some(serde_json::json!(false)),
        Some(serde_json::json!("no")),
    ] {
        c.email_verified = unverified;
        assert_eq!(username(&c), "248289761001");
    }
    c.email_verified = Some(serde_json::json!(true));
    c.email = None;
    assert!(!has_name_claims(&c));
    assert_eq!(username(&c), "248289761001");
}

#[test]
fn userinfo_fills_missing_names_for_the_same_subject_only() {
    let mut c = claims();
    c.preferred_username = None;
    c.email = None;
    let other = serde_json::json!({ "sub": "someone", "preferred_username": "mallory" });
    assert!(merge_userinfo(&mut c, &other).is_err());
    assert_eq!(username(&c), "248289761001");
    let unverified = serde_json::json!({ "sub": "248289761001", "email": "erin@example.test" });
    merge_userinfo(&mut c, &unverified).unwrap();
    assert_eq!(
        username(&c),
        "248289761001",
        "an unverified e-mail from userinfo"
    );
    c.email = None;
    let verified = serde_json::json!({ "sub": "248289761001", "email": "erin@example.test", "email_verified": true });
    merge_userinfo(&mut c, &verified).unwrap();
    assert_eq!(username(&c), "erin@example.test");
    let same = serde_json::json!({ "sub": "248289761001", "preferred_username": "alice" });
    merge_userinfo(&mut c, &same).unwrap();
    assert_eq!(username(&c), "alice");
}

#[test]
fn client_authentication_method() {
    let list = |m: &[&str]| m.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(client_auth(None), ClientAuth::Basic);
    assert_eq!(
        client_auth(Some(&list(&["client_secret_post", "client_secret_basic"]))),
        ClientAuth::Basic
    );
    assert_eq!(
        client_auth(Some(&list(&["client_secret_post", "private_key_jwt"]))),
        ClientAuth::Post
    );
}

#[test]
fn issuers_and_discovery() {
    assert!(same_issuer(
        "https://kc/realms/ops/",
        "https://kc/realms/ops"
    ));
    assert!(same_issuer("https://t.auth0.com", "https://t.auth0.com/"));
    assert!(!same_issuer(
        "https://kc/realms/ops",
        "https://kc/realms/dev"
    ));
    assert_eq!(
        discovery_url("https://kc/realms/ops/"),
        "https://kc/realms/ops/.well-known/openid-configuration"
    );
    assert_eq!(form_encode(&[("a b", "ä&=")]), "a%20b=%C3%A4%26%3D");
}
