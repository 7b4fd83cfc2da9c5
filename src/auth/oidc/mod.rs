//! OIDC login: the authorization-code flow with PKCE against the provider named
//! by the `oidc` config block.
//!
//! [`Oidc::discover`] runs at start (a failure ends the start). A login is
//! [`Oidc::begin`] (state, nonce and PKCE verifier kept here, the browser sent
//! to the provider) and [`Oidc::finish`] (state taken once, code exchanged,
//! id_token verified, user mapped). `flow` holds the pure rules, `provider`
//! the HTTP to the provider. Tokens from the provider never leave this module,
//! never go into a URL and never into a log line.

pub mod flow;
pub mod provider;

use crate::auth::users::{self, UserRecord};
use crate::config::OidcConfig;
use crate::db::Db;
use chrono::{DateTime, Utc};
use flow::{Expected, Pending, PendingLogins};
use parking_lot::Mutex;
use provider::Provider;

/// The cookie that ties a login to the browser that started it (against login
/// CSRF: someone else's callback URL is useless in another browser).
pub const BROWSER_COOKIE: &str = "svc_oidc";

/// OIDC as configured and discovered.
pub struct Oidc {
    client_id: String,
    client_secret: String,
    redirect_uri: String,
    /// `role_claim`, `role_map`, `default_role`: the role a login gives.
    roles: OidcConfig,
    provider: Provider,
    pending: Mutex<PendingLogins>,
}

/// Where to send the browser, and the binding cookie value it must carry back.
pub struct Begun {
    pub authorization_url: String,
    pub browser: String,
}

/// What the callback brought.
pub struct Callback<'a> {
    pub code: &'a str,
    pub state: &'a str,
    /// RFC 9207's `iss` parameter, when the provider sends one.
    pub iss: Option<&'a str>,
    /// The binding cookie's value.
    pub browser: Option<&'a str>,
}

impl std::fmt::Debug for Oidc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Oidc")
            .field("issuer", &self.provider.meta.issuer)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl Oidc {
    /// Discovers the configured provider; `None` while OIDC is off. The error
    /// names the reason (the caller names the issuer).
    pub fn discover(config: &OidcConfig) -> Result<Option<Oidc>, String> {
        if !config.enabled {
            return Ok(None);
        }
        let provider = Provider::discover(&config.issuer)?;
        if !provider.meta.issuer.starts_with("https://") && !is_loopback(&provider.meta.issuer) {
            log::warn!(
                "The OIDC issuer {} is not https: codes and tokens cross the network unencrypted",
                provider.meta.issuer
            );
        }
        Ok(Some(Oidc {
            client_id: config.client_id.clone(),
            client_secret: config.client_secret.clone(),
            redirect_uri: config.redirect_uri.clone(),
            roles: OidcConfig {
                client_secret: String::new(),
                ..config.clone()
            },
            provider,
            pending: Mutex::new(PendingLogins::default()),
        }))
    }

    pub fn issuer(&self) -> &str {
        &self.provider.meta.issuer
    }

    /// Starts a login: stores its state, nonce and PKCE verifier and answers
    /// the provider URL. `browser` is the binding cookie the request carried, if
    /// it looks like one of ours (kept, so logins in two tabs both work).
    pub fn begin(&self, browser: Option<&str>, now: DateTime<Utc>) -> Begun {
        let browser = browser
            .filter(|b| {
                b.len() == 43
                    && b.bytes()
                        .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
            })
            .map_or_else(|| flow::random_url_safe(32), str::to_owned);
        let state = flow::random_url_safe(32);
        let nonce = flow::random_url_safe(32);
        let verifier = flow::random_url_safe(32);
        let authorization_url = flow::authorization_url(&flow::AuthorizationRequest {
            endpoint: &self.provider.meta.authorization_endpoint,
            client_id: &self.client_id,
            redirect_uri: &self.redirect_uri,
            state: &state,
            nonce: &nonce,
            challenge: &flow::pkce_challenge(&verifier),
        });
        self.pending.lock().insert(
            state,
            Pending {
                verifier,
                nonce,
                browser: flow::binding_hash(&browser),
                started: now,
            },
            now,
        );
        Begun {
            authorization_url,
            browser,
        }
    }

    /// Finishes a login: the user it maps to, or the reason it failed.
    pub fn finish(
        &self,
        db: &Db,
        callback: &Callback<'_>,
        now: DateTime<Utc>,
    ) -> Result<UserRecord, String> {
        let pending = self
            .pending
            .lock()
            .take(callback.state, callback.browser, now)
            .map_err(|e| e.to_string())?;
        if let Some(iss) = callback.iss {
            if iss != self.provider.meta.issuer {
                return Err("the callback names another issuer".into());
            }
        }
        let tokens = self.provider.exchange_code(
            &self.client_id,
            &self.client_secret,
            &self.redirect_uri,
            callback.code,
            &pending.verifier,
        )?;
        let mut claims = self.provider.verify_signature(&tokens.id_token)?;
        flow::check_claims(
            &claims,
            &Expected {
                issuer: &self.provider.meta.issuer,
                client_id: &self.client_id,
                nonce: &pending.nonce,
            },
            now,
        )
        .map_err(|e| e.to_string())?;
        if !flow::has_name_claims(&claims) {
            if let (Some(token), Some(_)) = (
                tokens.access_token.as_deref(),
                self.provider.meta.userinfo_endpoint.as_deref(),
            ) {
                let info = self.provider.userinfo(token)?;
                flow::merge_userinfo(&mut claims, &info)?;
            }
        }
        let name = flow::username(&claims);
        let user = users::find_by_username(db, name).map_err(|e| {
            log::error!("OIDC login: cannot read the users: {e}");
            "the user store cannot be read".to_owned()
        })?;
        match user {
            None => Err(format!("user \"{}\" is not known", name.escape_debug())),
            Some(u) if !u.auth_methods.has_oidc() => Err(format!(
                "user \"{}\" may not log in with OIDC",
                name.escape_debug()
            )),
            Some(u) => Ok(self.apply_role(db, u, &claims.other, now)),
        }
    }

    /// With `oidc.role_claim` set, the provider decides the role at each login;
    /// the last administrator keeps theirs rather than locking everyone out.
    fn apply_role(
        &self,
        db: &Db,
        mut user: UserRecord,
        claims: &serde_json::Map<String, serde_json::Value>,
        now: DateTime<Utc>,
    ) -> UserRecord {
        let Some(role) = self.roles.role_from_claims(claims) else {
            return user;
        };
        match users::set_role_from_provider(db, user.id, role, crate::clock::iso(now)) {
            Ok(Some((from, to))) => {
                log::info!(
                    "User \"{}\" has role {to} (was {from}) from the provider's claims",
                    user.username.escape_debug()
                );
                user.role = to;
            }
            Ok(None) => {}
            Err(e) => log::warn!(
                "User \"{}\" keeps role {}: the provider's claims give {role}, refused: {e:?}",
                user.username.escape_debug(),
                user.role
            ),
        }
        user
    }
}

fn is_loopback(url: &str) -> bool {
    let rest = url.strip_prefix("http://").unwrap_or(url);
    ["127.", "localhost", "[::1]"]
        .iter()
        .any(|p| rest.starts_with(p))
}
