//! Registration through the web UI (`POST /api/register`) and the setup PIN it checks.
//!
//! Owns: the PIN guard, whether the register page is open, the identity and server URL
//! learned at run time. Flow: shape of the form → PIN (constant time; 5 wrong attempts
//! replace it) → `POST {url}/api/v1/register` → identity.json (atomic) → `serverUrl` in
//! config if it differs → page closed, PIN dropped → connection told to dial at once.
//! Every error names its `stage`: `input` (nothing was sent), `server` (nothing answered),
//! `register` (a server answered and refused). Secrets never reach the log.

pub mod pin;
pub mod serverapi;

use std::path::Path;

use parking_lot::Mutex;
use serde_json::{json, Value};

use crate::config::Secret;
use crate::connection::outbound::{self, Refusal, RegistrationRequest};
use crate::store::datadir::{DataDir, Identity};
use pin::{Check, PinGuard};
use serverapi::Answer;

/// A failed registration: HTTP status, stage, text, and the field for 400s.
#[derive(Debug, Clone, PartialEq)]
pub struct RegError {
    pub status: u16,
    pub stage: &'static str,
    pub message: String,
    pub field: Option<&'static str>,
}

impl RegError {
    fn input(field: &'static str, message: &str) -> RegError {
        RegError {
            status: 400,
            stage: "input",
            message: format!("{field}: {message}"),
            field: Some(field),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({ "error": self.message, "stage": self.stage });
        if let Some(f) = self.field {
            v["field"] = json!(f);
        }
        v
    }
}

/// The parsed form.
#[derive(Debug, PartialEq)]
pub struct Form {
    pub url: String,
    pub token: String,
    pub pin: String,
}

/// Shape first, first offending field named: url (http or https with a host), token, pin.
pub fn parse_form(body: &[u8]) -> Result<Form, RegError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|_| RegError::input("body", "must be a JSON object"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| RegError::input("body", "must be a JSON object"))?;
    let field = |name: &'static str| -> Result<String, RegError> {
        match obj.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                Err(RegError::input(name, "is required"))
            }
            Some(_) => Err(RegError::input(name, "must be a string")),
        }
    };
    let url = field("url")?;
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| RegError::input("url", "must be an http or https URL"))?;
    if rest.is_empty()
        || rest.starts_with('/')
        || rest.contains(char::is_whitespace)
        || rest.contains(['?', '#'])
    {
        return Err(RegError::input("url", "must be an http or https URL"));
    }
    let token = field("token")?;
    let pin = field("pin")?;
    Ok(Form {
        url: url.trim_end_matches('/').to_string(),
        token,
        pin,
    })
}

/// Reads the server's answer to the register call.
pub fn read_answer(answer: Answer) -> Result<Identity, RegError> {
    match answer {
        Answer::Nothing(e) => Err(RegError {
            status: 502,
            stage: "server",
            message: format!("No server answered at this URL: {e}"),
            field: None,
        }),
        Answer::Status(s, body) if (200..300).contains(&s) => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            match (v["clientId"].as_str(), v["token"].as_str()) {
                (Some(id), Some(tok)) if !id.is_empty() && !tok.is_empty() => Ok(Identity {
                    client_id: id.to_string(),
                    auth_token: tok.to_string(),
                }),
                _ => Err(RegError {
                    status: 502,
                    stage: "register",
                    message: format!(
                        "The server answered {s} without a clientId and token; is this a vrrp-monitor server?"
                    ),
                    field: None,
                }),
            }
        }
        Answer::Status(s, body) => {
            let why = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_string))
                .unwrap_or_else(|| format!("HTTP {s}"));
            Err(RegError {
                // The refusal keeps a client-error status; a server failure is a 502.
                status: if (400..500).contains(&s) { 400 } else { 502 },
                stage: "register",
                message: format!("The server refused the registration: {why}"),
                field: None,
            })
        }
    }
}

/// Writes `serverUrl` into the config file when it differs (creating the file if there
/// is none). Returns whether it wrote.
pub fn write_server_url(config_path: &Path, url: &str) -> Result<bool, String> {
    let text = match std::fs::read_to_string(config_path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", config_path.display())),
    };
    let mut v: serde_yaml_ng::Value = if text.trim().is_empty() {
        serde_yaml_ng::Value::Mapping(Default::default())
    } else {
        serde_yaml_ng::from_str(&text).map_err(|e| format!("config does not parse: {e}"))?
    };
    let m = v
        .as_mapping_mut()
        .ok_or("the config file is not a mapping")?;
    if m.get("serverUrl").and_then(|u| u.as_str()) == Some(url) {
        return Ok(false);
    }
    m.insert("serverUrl".into(), url.into());
    let out = serde_yaml_ng::to_string(&v).map_err(|e| e.to_string())?;
    // Written through a temporary file beside it: the agent's user needs the config's
    // directory (the packages make /etc/vrrp-agent the vrrp-agent user's; systemd's
    // ConfigurationDirectory= does not hand it over).
    vrrp_fs::write_private_atomic(config_path, out.as_bytes()).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            " — the config file's directory must belong to the agent's user (chown vrrp-agent: /etc/vrrp-agent)"
        } else {
            ""
        };
        format!("cannot write {}: {e}{hint}", config_path.display())
    })?;
    Ok(true)
}

struct Inner {
    pins: PinGuard,
    /// The register page as configured (`enableRegisterPage`, routes), before `full`.
    open: bool,
    /// The registered servers in slot order: slot 0 is identity.json (with the config's
    /// `serverUrl`), the others servers.json.
    servers: Vec<ServerEntry>,
    /// `maxServers`: registrations are taken until this many servers are known.
    max: usize,
    /// `SVC_REGISTRATION_SECRET(_FILE)`: held here only, dropped once used.
    secret: Option<Secret>,
}

impl Inner {
    fn full(&self) -> bool {
        self.servers.len() >= self.max
    }
}

/// One registered server: the identity it issued and, when the agent dials it
/// (inbound), its URL.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEntry {
    pub identity: Identity,
    pub url: Option<String>,
}

/// Why `/ws/register` did not register.
#[derive(Debug, Clone, PartialEq)]
pub enum OutboundRefused {
    /// Closed with this code before anything else (already registered, nothing to check).
    Closed(Refusal),
    /// Wrong PIN or secret: REGISTRATION_FAILURE, then 4003 `Invalid secret`.
    InvalidSecret,
    /// The identity could not be stored; the agent stays unregistered.
    Store(String),
}

impl OutboundRefused {
    /// The REGISTRATION_FAILURE text.
    pub fn text(&self) -> String {
        match self {
            OutboundRefused::Closed(r) => r.reason.to_string(),
            OutboundRefused::InvalidSecret => outbound::INVALID_SECRET.reason.to_string(),
            OutboundRefused::Store(e) => e.clone(),
        }
    }

    /// The close that ends the socket.
    pub fn refusal(&self) -> Refusal {
        match self {
            OutboundRefused::Closed(r) => *r,
            OutboundRefused::InvalidSecret => outbound::INVALID_SECRET,
            OutboundRefused::Store(_) => {
                Refusal::new(vrrp_protocol::close::INTERNAL_ERROR, "Identity not stored")
            }
        }
    }
}

/// Shared between the web handlers and start-up. The flow lock serialises registrations
/// so two correct forms cannot create two clients.
pub struct RegShared {
    inner: Mutex<Inner>,
    flow: Mutex<()>,
    block: PinBlock,
}

/// What the PIN log block says besides the PIN (it is printed again after a
/// replacement): the scheme the web server speaks, its port, the outbound hint.
#[derive(Debug, Clone, Copy)]
pub struct PinBlock {
    pub scheme: &'static str,
    pub port: u16,
    pub outbound_hint: bool,
}

/// What a successful registration produced.
pub struct Registered {
    /// The server's slot (0 for the first); the connection of that slot dials it.
    pub slot: usize,
    pub identity: Identity,
    pub url: String,
    pub warning: Option<String>,
}

impl RegShared {
    pub fn new(
        pin: Option<pin::Pin>,
        open: bool,
        identity: Option<Identity>,
        server_url: Option<String>,
        secret: Option<Secret>,
        block: PinBlock,
    ) -> RegShared {
        RegShared {
            inner: Mutex::new(Inner {
                pins: PinGuard::new(pin),
                open,
                servers: identity
                    .map(|identity| ServerEntry {
                        identity,
                        url: server_url,
                    })
                    .into_iter()
                    .collect(),
                max: 1,
                secret,
            }),
            flow: Mutex::new(()),
            block,
        }
    }

    /// An agent registered with more than one server: the servers after the
    /// first (servers.json) and how many may register it (`maxServers`). The register
    /// page stays open while there is room; `open` of `new` still says whether it exists.
    pub fn with_servers(self, extra: Vec<crate::store::datadir::ExtraServer>, max: usize) -> Self {
        {
            let mut inner = self.inner.lock();
            inner.max = max.max(1);
            if !inner.servers.is_empty() {
                inner.servers.extend(extra.into_iter().map(|s| ServerEntry {
                    identity: s.identity,
                    url: s.server_url,
                }));
            }
        }
        self
    }

    pub fn page_open(&self) -> bool {
        let inner = self.inner.lock();
        inner.open && !inner.full()
    }

    /// Whether some server registered this agent.
    pub fn has_identity(&self) -> bool {
        !self.inner.lock().servers.is_empty()
    }

    /// Whether as many servers as `maxServers` allows are registered.
    pub fn is_full(&self) -> bool {
        self.inner.lock().full()
    }

    /// The first server's URL (the config's `serverUrl`).
    pub fn server_url(&self) -> Option<String> {
        self.inner
            .lock()
            .servers
            .first()
            .and_then(|s| s.url.clone())
    }

    /// The first server's identity.
    pub fn identity(&self) -> Option<Identity> {
        self.inner
            .lock()
            .servers
            .first()
            .map(|s| s.identity.clone())
    }

    /// Every registered server, in slot order.
    pub fn servers(&self) -> Vec<ServerEntry> {
        self.inner.lock().servers.clone()
    }

    /// `/ws/agent`'s check across the servers: the slot of the outbound server whose
    /// client id the query names, if its token matches too. A client id of a server
    /// the agent dials itself (inbound) is refused as for a one-server agent.
    pub fn outbound_slot(&self, query: &str) -> Result<usize, Refusal> {
        let servers = self.servers();
        let asked = outbound::query_param(query, "clientId").unwrap_or_default();
        match servers
            .iter()
            .enumerate()
            .find(|(_, s)| s.identity.client_id == asked)
        {
            Some((slot, s)) => {
                outbound::check_agent_query(query, Some(&s.identity), s.url.is_some())
                    .map(|()| slot)
            }
            // No such client: the first server's check gives the same refusal (and the
            // same work, so timing tells nothing).
            None => {
                let first = servers.first();
                outbound::check_agent_query(
                    query,
                    first.map(|s| &s.identity),
                    first.is_some_and(|s| s.url.is_some()),
                )
                .and(Err(outbound::UNAUTHORIZED))
            }
        }
    }

    /// Stores a newly registered server in its slot's file: the first in identity.json,
    /// the others in servers.json (rewritten whole, atomically).
    fn store_server(&self, dir: &DataDir, entry: &ServerEntry) -> std::io::Result<usize> {
        let extra: Vec<crate::store::datadir::ExtraServer> = {
            let inner = self.inner.lock();
            if inner.servers.is_empty() {
                drop(inner);
                dir.save_identity(&entry.identity)?;
                return Ok(0);
            }
            inner.servers[1..]
                .iter()
                .chain(std::iter::once(entry))
                .map(|s| crate::store::datadir::ExtraServer {
                    identity: s.identity.clone(),
                    server_url: s.url.clone(),
                })
                .collect()
        };
        dir.save_servers(&extra)?;
        Ok(extra.len())
    }

    /// Adds a stored server; when that fills the agent, the PIN goes and the page closes.
    /// Returns whether the agent is now full.
    fn add_server(&self, entry: ServerEntry) -> bool {
        let mut inner = self.inner.lock();
        inner.servers.push(entry);
        if inner.full() {
            inner.pins.drop_pin();
            inner.open = false;
        }
        inner.full()
    }

    /// Whether a registration secret is held (it is dropped once used).
    pub fn has_secret(&self) -> bool {
        self.inner.lock().secret.is_some()
    }

    /// `/ws/register`'s REGISTRATION_REQUEST: refused once an identity exists; checks
    /// the registration secret if one is set, else the setup PIN (whose wrong attempts
    /// count with the register page's); on success stores the identity, drops the PIN
    /// and the secret, and closes the register page. Serialised with the web flow.
    pub fn register_outbound(
        &self,
        req: RegistrationRequest,
        dir: &DataDir,
    ) -> Result<Identity, OutboundRefused> {
        let _flow = self.flow.lock();
        let known = self
            .servers()
            .iter()
            .any(|s| s.identity.client_id == req.client_id);
        if self.is_full() || known {
            return Err(OutboundRefused::Closed(outbound::ALREADY_REGISTERED));
        }
        let secret = self.inner.lock().secret.clone();
        match secret {
            Some(s) => {
                if !outbound::secret_matches(req.secret.expose(), s.expose()) {
                    log::warn!("Outbound registration refused: wrong registration secret");
                    return Err(OutboundRefused::InvalidSecret);
                }
            }
            None => {
                if self.inner.lock().pins.current().is_none() {
                    return Err(OutboundRefused::Closed(outbound::NO_SECRET));
                }
                if self.check_pin(req.secret.expose()).is_err() {
                    return Err(OutboundRefused::InvalidSecret);
                }
            }
        }
        let identity = Identity {
            client_id: req.client_id,
            auth_token: req.auth_token.expose().to_string(),
        };
        let entry = ServerEntry {
            identity: identity.clone(),
            url: None,
        };
        let slot = match self.store_server(dir, &entry) {
            Ok(slot) => slot,
            Err(e) => {
                log::error!("Outbound registration refused: the identity cannot be written: {e}");
                return Err(OutboundRefused::Store(format!(
                    "the agent cannot store its identity: {e}"
                )));
            }
        };
        let full = self.add_server(entry);
        let had_secret = full && self.inner.lock().secret.take().is_some();
        if full {
            log::info!(
                "Registered by the server (outbound) as client {}; the register page is closed",
                identity.client_id
            );
        } else {
            log::info!(
                "Registered by the server (outbound) as client {} (server {}); another server may still register this agent",
                identity.client_id,
                slot + 1
            );
        }
        if had_secret {
            log::warn!(
                "The registration secret has been used and is dropped from memory; remove SVC_REGISTRATION_SECRET / SVC_REGISTRATION_SECRET_FILE from the agent's environment"
            );
        }
        Ok(identity)
    }

    /// The PIN log block (once the web server listens, and after a replacement).
    pub fn log_pin(&self) {
        let inner = self.inner.lock();
        if let Some(p) = inner.pins.current() {
            for l in pin::log_lines(
                p,
                self.block.scheme,
                self.block.port,
                inner.open,
                self.block.outbound_hint,
            ) {
                log::info!("{l}");
            }
        }
    }

    /// One PIN attempt (either route).
    pub fn check_pin(&self, input: &str) -> Result<(), RegError> {
        let check = self.inner.lock().pins.check(input, &mut rand::thread_rng());
        match check {
            Check::Ok => Ok(()),
            Check::Wrong { left } => {
                log::warn!("Wrong setup PIN ({left} attempts left before it is replaced)");
                Err(wrong_pin())
            }
            Check::Replaced(_) => {
                log::warn!("5 wrong setup PIN attempts: the PIN is replaced");
                self.log_pin();
                Err(wrong_pin())
            }
            Check::NoPin => Err(wrong_pin()),
        }
    }

    /// The whole web registration. `None`: the page is closed (404).
    pub fn register(
        &self,
        body: &[u8],
        hostname: &str,
        insecure: bool,
        dir: &DataDir,
        config_path: &Path,
    ) -> Option<Result<Registered, RegError>> {
        let _flow = self.flow.lock();
        if !self.page_open() {
            return None;
        }
        Some(self.register_open(body, hostname, insecure, dir, config_path))
    }

    fn register_open(
        &self,
        body: &[u8],
        hostname: &str,
        insecure: bool,
        dir: &DataDir,
        config_path: &Path,
    ) -> Result<Registered, RegError> {
        let form = parse_form(body)?;
        if self
            .servers()
            .iter()
            .any(|s| s.url.as_deref() == Some(form.url.as_str()))
        {
            return Err(RegError {
                status: 409,
                stage: "input",
                message: format!("url: this agent is already registered with {}", form.url),
                field: Some("url"),
            });
        }
        self.check_pin(&form.pin)?;
        log::info!("Registering with {} as {hostname}", form.url);
        let identity = read_answer(serverapi::register(
            &form.url,
            &form.token,
            hostname,
            insecure,
        ))
        .inspect_err(|e| log::warn!("Registration with {} failed: {}", form.url, e.message))?;
        let mut warnings = Vec::new();
        let entry = ServerEntry {
            identity: identity.clone(),
            url: Some(form.url.clone()),
        };
        let first = !self.has_identity();
        let file = if first {
            "identity.json"
        } else {
            "servers.json"
        };
        if let Err(e) = self.store_server(dir, &entry) {
            log::error!("Registered, but {file} could not be written: {e}");
            warnings.push(format!(
                "{file} could not be written ({e}): the agent is connected now but will not know this server after a restart"
            ));
        }
        // The first server's URL goes to the config, as for a one-server agent; later
        // ones live in servers.json with their identity.
        if first {
            match write_server_url(config_path, &form.url) {
                Ok(true) => log::info!("serverUrl written to {}", config_path.display()),
                Ok(false) => {}
                Err(e) => {
                    log::error!("Registered, but serverUrl could not be written: {e}");
                    warnings.push(format!(
                        "serverUrl could not be written to the config file ({e}): after a restart the agent will not know its server"
                    ));
                }
            }
        }
        let slot = self.servers().len();
        let full = self.add_server(entry);
        log::info!(
            "Registered with {} as client {}; {}",
            form.url,
            identity.client_id,
            if full {
                "the register page is closed"
            } else {
                "the register page stays open for another server"
            }
        );
        Ok(Registered {
            slot,
            identity,
            url: form.url,
            warning: (!warnings.is_empty()).then(|| warnings.join("; ")),
        })
    }
}

fn wrong_pin() -> RegError {
    RegError {
        status: 403,
        stage: "input",
        message: "Wrong setup PIN".into(),
        field: Some("pin"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_shape_names_the_first_offending_field() {
        let e = |b: &str| parse_form(b.as_bytes()).unwrap_err();
        assert_eq!(e("nope").field, Some("body"));
        assert_eq!(e("[]").field, Some("body"));
        assert_eq!(e(r#"{"token":"t","pin":"p"}"#).field, Some("url"));
        assert_eq!(
            e(r#"{"url":"ftp://x","token":"t","pin":"p"}"#).field,
            Some("url")
        );
        assert_eq!(
            e(r#"{"url":"http://","token":"t","pin":"p"}"#).field,
            Some("url")
        );
        assert_eq!(
            e(r#"{"url":"http://h","token":5,"pin":"p"}"#).field,
            Some("token")
        );
        assert_eq!(e(r#"{"url":"http://h","token":"t"}"#).field, Some("pin"));
        for err in [e("nope"), e(r#"{"url":"ftp://x"}"#)] {
            assert_eq!((err.status, err.stage), (400, "input"));
        }
        let f = parse_form(br#"{"url":" https://mon:3010/ ","token":"t","pin":"ab-cd"}"#).unwrap();
        assert_eq!(f.url, "https://mon:3010");
    }

    #[test]
    fn answers_map_to_stages() {
        let e = read_answer(Answer::Nothing("refused".into())).unwrap_err();
        assert_eq!((e.status, e.stage), (502, "server"));
        let e =
            read_answer(Answer::Status(400, r#"{"error":"Invalid token"}"#.into())).unwrap_err();
        assert_eq!((e.status, e.stage), (400, "register"));
        assert!(e.message.contains("Invalid token"));
        let e = read_answer(Answer::Status(500, "oops".into())).unwrap_err();
        assert_eq!((e.status, e.stage), (502, "register"));
        let e = read_answer(Answer::Status(200, "<html>".into())).unwrap_err();
        assert_eq!(e.stage, "register");
        let id = read_answer(Answer::Status(
            200,
            r#"{"clientId":"c","token":"t","x":1}"#.into(),
        ))
        .unwrap();
        assert_eq!((id.client_id.as_str(), id.auth_token.as_str()), ("c", "t"));
    }

    #[test]
    fn server_url_written_only_when_it_differs() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("config.yaml");
        assert!(write_server_url(&p, "http://a").unwrap(), "created");
        assert!(!write_server_url(&p, "http://a").unwrap());
        std::fs::write(
            &p,
            "logLevel: debug\nserverUrl: http://a\nkeepalived:\n  pollInterval: 2\n",
        )
        .unwrap();
        assert!(write_server_url(&p, "http://b").unwrap());
        let t = std::fs::read_to_string(&p).unwrap();
        assert!(
            t.starts_with("logLevel: debug\nserverUrl: http://b\n"),
            "{t}"
        );
        assert!(t.contains("pollInterval: 2"));
        std::fs::write(&p, "- a list\n").unwrap();
        assert!(write_server_url(&p, "http://b").is_err());
    }

    #[test]
    fn ws_agent_finds_the_outbound_server_of_the_client_id_and_only_it() {
        let id = |c: &str, t: &str| Identity {
            client_id: c.into(),
            auth_token: t.into(),
        };
        let reg = RegShared::new(
            None,
            false,
            Some(id("first", "token-first")),
            Some("http://a:3010".into()),
            None,
            PinBlock {
                scheme: "http",
                port: 3011,
                outbound_hint: false,
            },
        )
        .with_servers(
            vec![crate::store::datadir::ExtraServer {
                identity: id("second", "token-second"),
                server_url: None,
            }],
            2,
        );
        assert!(reg.is_full() && !reg.page_open());
        assert_eq!(
            reg.outbound_slot("clientId=second&token=token-second"),
            Ok(1)
        );
        // The first server is dialled by the agent (inbound): never by a socket.
        assert_eq!(
            reg.outbound_slot("clientId=first&token=token-first"),
            Err(outbound::UNAUTHORIZED)
        );
        assert_eq!(
            reg.outbound_slot("clientId=second&token=token-first"),
            Err(outbound::UNAUTHORIZED)
        );
        assert_eq!(
            reg.outbound_slot("clientId=third&token=token-second"),
            Err(outbound::UNAUTHORIZED)
        );
    }
}
