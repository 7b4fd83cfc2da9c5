//! Talking to the identity provider over HTTP (ureq, TLS verified against the
//! system's trust store, timeouts):
//! discovery, the JWKS, the token endpoint and userinfo, plus the id_token
//! signature check against the cached JWKS.
//!
//! Error texts name what failed and the provider's `error` code, never a
//! token, a code or the client secret.

use super::flow::{self, ClientAuth, IdClaims};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;
use std::time::Duration;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};

/// Whole-call limit for one request to the provider.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest answer read from the provider.
const MAX_ANSWER: u64 = 1024 * 1024;
/// Longest provider error text passed on.
const MAX_ERROR_TEXT: usize = 200;

/// The parts of the discovery document we use.
#[derive(Debug, Clone, Deserialize)]
pub struct Metadata {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub jwks_uri: String,
    #[serde(default)]
    pub userinfo_endpoint: Option<String>,
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub id_token_signing_alg_values_supported: Option<Vec<String>>,
}

/// HTTP to one provider, with its JWKS cache.
pub struct Provider {
    http: ureq::Agent,
    pub meta: Metadata,
    keys: Mutex<Option<JwkSet>>,
}

/// What the token endpoint answered.
pub struct Tokens {
    pub id_token: String,
    pub access_token: Option<String>,
}

/// The system's trust store (Debian's bundle, with any CA the operator added by
/// `update-ca-certificates`): identity providers often sit behind an internal CA.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

/// The system's roots when it has a bundle, else Mozilla's (built in).
fn root_certs() -> RootCerts {
    let Ok(pem) = std::fs::read(SYSTEM_ROOTS) else {
        return RootCerts::WebPki;
    };
    let certs: Vec<Certificate<'static>> = ureq::tls::parse_pem(&pem)
        .filter_map(|item| match item {
            Ok(PemItem::Certificate(c)) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        RootCerts::WebPki
    } else {
        RootCerts::new_with_certs(&certs)
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .tls_config(TlsConfig::builder().root_certs(root_certs()).build())
        .timeout_global(Some(CALL_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .http_status_as_error(false)
        .max_redirects(0)
        // Logins are rare and providers close idle connections after a few
        // seconds: a fresh connection each time never meets a stale one.
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .user_agent(concat!("vrrp-monitor/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// The provider's `error` and `error_description` of an error answer, short.
fn provider_error(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let text = match parsed {
        Some(v) => {
            let code = v.get("error").and_then(Value::as_str).unwrap_or("");
            match v.get("error_description").and_then(Value::as_str) {
                Some(d) if !code.is_empty() => format!("{code} ({d})"),
                _ => code.to_owned(),
            }
        }
        None => String::new(),
    };
    text.chars().take(MAX_ERROR_TEXT).collect()
}

fn read_json(what: &str, resp: ureq::http::Response<ureq::Body>) -> Result<Value, String> {
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let text = body
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_string()
        .map_err(|e| format!("{what}: could not read the answer: {e}"))?;
    if !(200..300).contains(&status) {
        let detail = provider_error(&text);
        return Err(if detail.is_empty() {
            format!("{what} answered {status}")
        } else {
            format!("{what} answered {status}: {detail}")
        });
    }
    serde_json::from_str(&text).map_err(|_| format!("{what} did not answer JSON"))
}

impl Provider {
    /// Reads the issuer's discovery document; the issuer it names must be the
    /// one configured.
    pub fn discover(issuer: &str) -> Result<Provider, String> {
        let http = agent();
        let url = flow::discovery_url(issuer);
        let resp = http
            .get(&url)
            .call()
            .map_err(|e| format!("cannot fetch {url}: {e}"))?;
        let doc = read_json("the discovery document", resp)?;
        let meta: Metadata = serde_json::from_value(doc)
            .map_err(|e| format!("the discovery document at {url} is not usable: {e}"))?;
        if !flow::same_issuer(issuer, &meta.issuer) {
            return Err(format!(
                "the discovery document names the issuer \"{}\"",
                meta.issuer
            ));
        }
        Ok(Provider {
            http,
            meta,
            keys: Mutex::new(None),
        })
    }

    fn fetch_keys(&self) -> Result<JwkSet, String> {
        let resp = self
            .http
            .get(&self.meta.jwks_uri)
            .call()
            .map_err(|e| format!("cannot fetch the provider's keys: {e}"))?;
        let doc = read_json("the provider's key set", resp)?;
        serde_json::from_value(doc)
            .map_err(|e| format!("the provider's key set is not usable: {e}"))
    }

    /// Checks an id_token's signature against the provider's keys and returns
    /// its claims (not yet checked: see [`flow::check_claims`]). The key set is
    /// cached; a key id not in the cache fetches it once more (key rotation).
    pub fn verify_signature(&self, id_token: &str) -> Result<IdClaims, String> {
        let header = jsonwebtoken::decode_header(id_token)
            .map_err(|_| "id_token is not a signed JWT".to_owned())?;
        let alg = header.alg;
        if !matches!(
            alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
                | Algorithm::EdDSA
        ) {
            return Err(format!(
                "id_token is signed with {alg:?}, which is not accepted"
            ));
        }
        if let Some(allowed) = &self.meta.id_token_signing_alg_values_supported {
            if !allowed.iter().any(|a| *a == format!("{alg:?}")) {
                return Err(format!(
                    "id_token is signed with {alg:?}, which the provider does not announce"
                ));
            }
        }
        let key = self.key_for(header.kid.as_deref())?;
        let mut validation = Validation::new(alg);
        // Time, audience, issuer and nonce are checked by `flow::check_claims`
        // against the server's own clock.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        validation.leeway = 0;
        jsonwebtoken::decode::<IdClaims>(id_token, &key, &validation)
            .map(|data| data.claims)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    "id_token signature is invalid".to_owned()
                }
                jsonwebtoken::errors::ErrorKind::Json(_) => {
                    "id_token claims are incomplete (iss, sub, aud, exp)".to_owned()
                }
                _ => format!("id_token cannot be verified: {e}"),
            })
    }

    fn key_for(&self, kid: Option<&str>) -> Result<DecodingKey, String> {
        let mut cache = self.keys.lock();
        let mut fetched = false;
        if cache.is_none() {
            *cache = Some(self.fetch_keys()?);
            fetched = true;
        }
        loop {
            let set = cache.as_ref().expect("the key set was just fetched");
            let found = match kid {
                Some(kid) => set.find(kid),
                // Without a key id only a provider with a single key is unambiguous.
                None if set.keys.len() == 1 => set.keys.first(),
                None => None,
            };
            if let Some(jwk) = found {
                return DecodingKey::from_jwk(jwk)
                    .map_err(|e| format!("the provider's key cannot be used: {e}"));
            }
            if fetched {
                return Err(match kid {
                    Some(_) => "id_token is signed by a key the provider does not publish".into(),
                    None => "id_token names no key and the provider publishes several".into(),
                });
            }
            log::info!(
                "The OIDC provider signs with a key not in the cache; fetching its key set again"
            );
            *cache = Some(self.fetch_keys()?);
            fetched = true;
        }
    }

    /// Exchanges an authorization code (with the PKCE verifier) for tokens.
    pub fn exchange_code(
        &self,
        client_id: &str,
        client_secret: &str,
        redirect_uri: &str,
        code: &str,
        verifier: &str,
    ) -> Result<Tokens, String> {
        let method = flow::client_auth(self.meta.token_endpoint_auth_methods_supported.as_deref());
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let mut request = ureq::http::Request::builder()
            .method("POST")
            .uri(&self.meta.token_endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json");
        match method {
            ClientAuth::Basic => {
                // RFC 6749 §2.3.1: both halves form-encoded before Basic.
                let pair = format!(
                    "{}:{}",
                    flow::percent_encode(client_id),
                    flow::percent_encode(client_secret)
                );
                request =
                    request.header("authorization", format!("Basic {}", STANDARD.encode(pair)));
            }
            ClientAuth::Post => {
                form.push(("client_id", client_id));
                form.push(("client_secret", client_secret));
            }
        }
        let request = request
            .body(flow::form_encode(&form))
            .map_err(|_| "the token request could not be built".to_owned())?;
        let resp = self
            .http
            .run(request)
            .map_err(|e| format!("code exchange failed: {e}"))?;
        let answer = read_json("code exchange: the token endpoint", resp)?;
        let text = |key: &str| answer.get(key).and_then(Value::as_str).map(str::to_owned);
        Ok(Tokens {
            id_token: text("id_token")
                .ok_or_else(|| "code exchange: the provider sent no id_token".to_owned())?,
            access_token: text("access_token"),
        })
    }

    /// The userinfo answer for an access token (sent as a header, never in a URL).
    pub fn userinfo(&self, access_token: &str) -> Result<Value, String> {
        let endpoint = self
            .meta
            .userinfo_endpoint
            .as_deref()
            .ok_or_else(|| "the provider has no userinfo endpoint".to_owned())?;
        let resp = self
            .http
            .get(endpoint)
            .header("authorization", format!("Bearer {access_token}"))
            .header("accept", "application/json")
            .call()
            .map_err(|e| format!("cannot reach the userinfo endpoint: {e}"))?;
        read_json("the userinfo endpoint", resp)
    }
}
