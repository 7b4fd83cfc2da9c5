//! The pure parts of an OIDC login: PKCE, the store of logins under way, the
//! authorization URL, the id_token claim checks and which claim names the user.
//!
//! Nothing here does I/O or reads a clock: the time is an argument, so the
//! 10-minute expiry runs on whatever clock the server was handed.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use rand::RngCore;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::fmt;

/// How long a login may take between `/api/auth/login` and the callback.
pub const LOGIN_LIFETIME: chrono::Duration = chrono::Duration::minutes(10);
/// Logins under way kept at most; past it the oldest is dropped, so the store's
/// memory stays bounded however often the (unauthenticated) login route is hit.
pub const MAX_PENDING: usize = 10_000;
/// Clock difference allowed between the provider and us for `exp`, `iat`, `nbf`.
pub const CLOCK_SKEW_SECS: i64 = 60;
/// The scopes asked for: the id_token plus the claims a user name is taken from.
pub const SCOPES: &str = "openid profile email";

/// `bytes` random bytes, base64url without padding (state, nonce, PKCE verifier).
pub fn random_url_safe(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::thread_rng().fill_bytes(&mut buf);
    URL_SAFE_NO_PAD.encode(buf)
}

/// The PKCE S256 challenge of a verifier (RFC 7636 §4.2).
pub fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A browser binding as stored: its SHA-256 (the raw value lives only in the
/// browser's cookie).
pub fn binding_hash(binding: &str) -> String {
    hex::encode(Sha256::digest(binding.as_bytes()))
}

/// What the server keeps of a login under way, keyed by its `state`.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// The PKCE verifier: never leaves the server except to the token endpoint.
    pub verifier: String,
    pub nonce: String,
    /// SHA-256 of the browser binding cookie the login was started with.
    pub browser: String,
    pub started: DateTime<Utc>,
}

/// Why a callback's `state` is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateError {
    Unknown,
    Used,
    Expired,
    OtherBrowser,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StateError::Unknown => "state is unknown",
            StateError::Used => "state was already used",
            StateError::Expired => "state has expired",
            StateError::OtherBrowser => "state was issued to another browser",
        })
    }
}

enum Slot {
    Waiting(Pending),
    /// Taken once; kept until it would have expired, so a replay reads as such.
    Used,
}

/// Logins under way: bounded, single use, expiring [`LOGIN_LIFETIME`] after
/// their start.
pub struct PendingLogins {
    slots: HashMap<String, (DateTime<Utc>, Slot)>,
    /// States in the order they were stored (oldest first), for expiry and the bound.
    order: VecDeque<String>,
    capacity: usize,
}

impl Default for PendingLogins {
    fn default() -> Self {
        PendingLogins::with_capacity(MAX_PENDING)
    }
}

impl PendingLogins {
    pub fn with_capacity(capacity: usize) -> PendingLogins {
        PendingLogins {
            slots: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn insert(&mut self, state: String, pending: Pending, now: DateTime<Utc>) {
        self.forget_expired(now);
        while self.order.len() >= self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.slots.remove(&oldest);
            }
        }
        self.order.push_back(state.clone());
        self.slots
            .insert(state, (pending.started, Slot::Waiting(pending)));
    }

    /// Takes a login by its state: once, within its lifetime, from the browser
    /// that started it. Any attempt uses the state up.
    pub fn take(
        &mut self,
        state: &str,
        browser: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<Pending, StateError> {
        let Some((_, slot)) = self.slots.get_mut(state) else {
            return Err(StateError::Unknown);
        };
        let Slot::Waiting(pending) = std::mem::replace(slot, Slot::Used) else {
            return Err(StateError::Used);
        };
        if now - pending.started > LOGIN_LIFETIME {
            return Err(StateError::Expired);
        }
        if browser.map(binding_hash).as_deref() != Some(pending.browser.as_str()) {
            return Err(StateError::OtherBrowser);
        }
        Ok(pending)
    }

    fn forget_expired(&mut self, now: DateTime<Utc>) {
        while let Some(oldest) = self.order.front() {
            match self.slots.get(oldest) {
                Some((started, _)) if now - *started <= LOGIN_LIFETIME => break,
                _ => {
                    if let Some(s) = self.order.pop_front() {
                        self.slots.remove(&s);
                    }
                }
            }
        }
    }
}

/// `application/x-www-form-urlencoded` of name/value pairs (also a URL query).
pub fn form_encode(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// What goes into the authorization request.
pub struct AuthorizationRequest<'a> {
    pub endpoint: &'a str,
    pub client_id: &'a str,
    pub redirect_uri: &'a str,
    pub state: &'a str,
    pub nonce: &'a str,
    pub challenge: &'a str,
}

/// The provider's authorization URL for a login (authorization code, PKCE S256).
/// An endpoint that already carries a query keeps it.
pub fn authorization_url(r: &AuthorizationRequest<'_>) -> String {
    let query = form_encode(&[
        ("response_type", "code"),
        ("client_id", r.client_id),
        ("redirect_uri", r.redirect_uri),
        ("scope", SCOPES),
        ("state", r.state),
        ("nonce", r.nonce),
        ("code_challenge", r.challenge),
        ("code_challenge_method", "S256"),
    ]);
    let joiner = if r.endpoint.contains('?') { '&' } else { '?' };
    format!("{}{joiner}{query}", r.endpoint)
}

/// `aud`: one string or an array of them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, id: &str) -> bool {
        match self {
            Audience::One(a) => a == id,
            Audience::Many(all) => all.iter().any(|a| a == id),
        }
    }

    fn len(&self) -> usize {
        match self {
            Audience::One(_) => 1,
            Audience::Many(all) => all.len(),
        }
    }
}

/// The id_token claims we check and map users by.
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct IdClaims {
    pub iss: String,
    pub sub: String,
    pub aud: Audience,
    pub exp: i64,
    #[serde(default)]
    pub iat: Option<i64>,
    #[serde(default)]
    pub nbf: Option<i64>,
    #[serde(default)]
    pub nonce: Option<String>,
    #[serde(default)]
    pub azp: Option<String>,
    #[serde(default)]
    pub preferred_username: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
    /// Whether the provider checked `email` belongs to the user: a boolean, or
    /// (some providers) the string "true".
    #[serde(default)]
    pub email_verified: Option<serde_json::Value>,
    /// Every other claim (the role claim of `oidc.role_claim` is among them).
    #[serde(flatten)]
    pub other: serde_json::Map<String, serde_json::Value>,
}

/// `email_verified` says yes (`true`, or the string "true").
fn verified(v: &Option<serde_json::Value>) -> bool {
    match v {
        Some(serde_json::Value::Bool(b)) => *b,
        Some(serde_json::Value::String(s)) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

/// Why an id_token's claims are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimError {
    Issuer,
    Audience,
    AuthorizedParty,
    Expired,
    NotYetValid,
    Nonce,
    Subject,
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClaimError::Issuer => "id_token was issued by another issuer",
            ClaimError::Audience => "id_token audience does not include this client",
            ClaimError::AuthorizedParty => "id_token was issued to another party (azp)",
            ClaimError::Expired => "id_token has expired",
            ClaimError::NotYetValid => "id_token is not valid yet",
            ClaimError::Nonce => "id_token nonce does not match the login",
            ClaimError::Subject => "id_token has no subject",
        })
    }
}

/// What an id_token must say (OIDC Core §3.1.3.7).
pub struct Expected<'a> {
    /// The issuer as discovered (compared exactly).
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: &'a str,
}

/// Checks an id_token's claims (its signature was checked before) at `now`.
pub fn check_claims(
    c: &IdClaims,
    expected: &Expected<'_>,
    now: DateTime<Utc>,
) -> Result<(), ClaimError> {
    let now = now.timestamp();
    if c.iss != expected.issuer {
        return Err(ClaimError::Issuer);
    }
    if !c.aud.contains(expected.client_id) {
        return Err(ClaimError::Audience);
    }
    // With several audiences, or an azp at all, the token must name us as its party.
    if (c.aud.len() > 1 || c.azp.is_some()) && c.azp.as_deref() != Some(expected.client_id) {
        return Err(ClaimError::AuthorizedParty);
    }
    if c.exp + CLOCK_SKEW_SECS <= now {
        return Err(ClaimError::Expired);
    }
    if c.nbf.is_some_and(|nbf| nbf - CLOCK_SKEW_SECS > now)
        || c.iat.is_some_and(|iat| iat - CLOCK_SKEW_SECS > now)
    {
        return Err(ClaimError::NotYetValid);
    }
    if c.nonce.as_deref() != Some(expected.nonce) {
        return Err(ClaimError::Nonce);
    }
    if c.sub.trim().is_empty() {
        return Err(ClaimError::Subject);
    }
    Ok(())
}

fn non_empty(v: &Option<String>) -> Option<&str> {
    v.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Whether the id_token names the user by more than its `sub`; when not, the
/// userinfo endpoint is asked (providers such as `oidc-provider` put profile
/// claims only there in the code flow).
pub fn has_name_claims(c: &IdClaims) -> bool {
    non_empty(&c.preferred_username).is_some() || non_empty(&c.email).is_some()
}

/// Takes `preferred_username` and `email` from a userinfo answer, which must be
/// about the same subject (OIDC Core §5.3.2).
pub fn merge_userinfo(c: &mut IdClaims, userinfo: &serde_json::Value) -> Result<(), String> {
    if userinfo.get("sub").and_then(|s| s.as_str()) != Some(c.sub.as_str()) {
        return Err("userinfo is about another subject".into());
    }
    let text = |key: &str| {
        userinfo
            .get(key)
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    if non_empty(&c.preferred_username).is_none() {
        c.preferred_username = text("preferred_username");
    }
    if non_empty(&c.email).is_none() {
        c.email = text("email");
        c.email_verified = userinfo.get("email_verified").cloned();
    }
    Ok(())
}

/// The user name a login maps to: `preferred_username`, else `email` when the
/// provider verified it (`email_verified: true`; an unverified address is
/// anyone's to type, and would log them in as the local user of that name),
/// else `sub`.
pub fn username(c: &IdClaims) -> &str {
    non_empty(&c.preferred_username)
        .or_else(|| non_empty(&c.email).filter(|_| verified(&c.email_verified)))
        .unwrap_or(c.sub.trim())
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic with the url-encoded id and secret (RFC 6749 §2.3.1).
    Basic,
    /// `client_id` and `client_secret` in the form body.
    Post,
}

/// `client_secret_basic` unless the provider lists methods without it but with
/// `client_secret_post` (an absent list means basic, OIDC Discovery §3).
pub fn client_auth(supported: Option<&[String]>) -> ClientAuth {
    match supported {
        Some(methods)
            if !methods.iter().any(|m| m == "client_secret_basic")
                && methods.iter().any(|m| m == "client_secret_post") =>
        {
            ClientAuth::Post
        }
        _ => ClientAuth::Basic,
    }
}

/// Whether the issuer the provider names in its discovery document is the one
/// configured, forgiving a trailing slash either way (operators copy issuers
/// with and without one). id_tokens are then held to the discovered spelling.
pub fn same_issuer(configured: &str, discovered: &str) -> bool {
    configured.trim_end_matches('/') == discovered.trim_end_matches('/')
}

/// Where the discovery document of an issuer is (OIDC Discovery §4).
pub fn discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests;
