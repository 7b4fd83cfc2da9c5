//! OIDC login end to end: the real server against a real certified provider
//! (npm's `oidc-provider`, `tests/oidc/provider.mjs`) on loopback, driven the
//! way a browser would: redirects followed with a cookie jar, the provider's own
//! login and consent forms submitted.

use crate::harness::{fatal_lines, free_port, http_agent, Auth, Launch, Server};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::OnceLock;
use std::time::Duration;

const CLIENT_ID: &str = "vrrp-monitor-test";
const CLIENT_SECRET: &str = "client-secret-for-tests-7f3a";

fn provider_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/oidc")
}

/// Installs the provider from the npm registry once per test run when missing
/// (scripts/test.sh does the same before the run).
fn install_provider() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Node);
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let dir = provider_dir();
        if dir.join("node_modules/oidc-provider/package.json").exists() {
            return;
        }
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&dir)
            .status()
            .expect("npm is needed for the OIDC tests (apt-get install nodejs npm)");
        assert!(status.success(), "npm ci in {} failed", dir.display());
    });
}

/// A running `oidc-provider`, driven through its stdin.
struct Provider {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    issuer: String,
}

impl Provider {
    fn start(redirect_uri: &str, id_token_ttl_secs: u64) -> Provider {
        Provider::start_with(redirect_uri, id_token_ttl_secs, &[])
    }

    fn start_with(redirect_uri: &str, id_token_ttl_secs: u64, env: &[(&str, String)]) -> Provider {
        install_provider();
        let port = free_port();
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(provider_dir())
            .env("PROVIDER_PORT", port.to_string())
            .env("CLIENT_ID", CLIENT_ID)
            .env("CLIENT_SECRET", CLIENT_SECRET)
            .env("REDIRECT_URI", redirect_uri)
            .env("ID_TOKEN_TTL", id_token_ttl_secs.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node is needed for the OIDC tests");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Some(answer) = line.strip_prefix("@ ") else {
                    continue;
                };
                if tx.send(answer.to_owned()).is_err() {
                    break;
                }
            }
        });
        let ready = lines
            .recv_timeout(Duration::from_secs(30))
            .expect("the OIDC provider did not start");
        let issuer = ready
            .strip_prefix("ready ")
            .and_then(|r| r.split(' ').next())
            .unwrap_or_else(|| panic!("unexpected first line {ready:?}"))
            .to_owned();
        Provider {
            child,
            stdin,
            lines,
            issuer,
        }
    }

    fn command(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no answer to {line:?}"))
    }

    fn mutate(&mut self, claims: Value) {
        assert_eq!(self.command(&format!("mutate {claims}")), "mutated");
    }

    fn jwks_requests(&mut self) -> u64 {
        let answer = self.command("jwks-requests");
        answer
            .strip_prefix("jwks-requests ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected answer {answer:?}"))
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn oidc_config(issuer: &str, port: u16) -> String {
    format!(
        "oidc:\n  enabled: true\n  issuer: {issuer}\n  client_id: {CLIENT_ID}\n  client_secret: {CLIENT_SECRET}\n  redirect_uri: http://127.0.0.1:{port}/api/auth/callback\n"
    )
}

/// A provider and a server configured for it.
fn start_pair(id_token_ttl_secs: u64) -> (Provider, Launch) {
    let launch = Launch::new();
    let redirect = format!("http://127.0.0.1:{}/api/auth/callback", launch.port);
    let provider = Provider::start(&redirect, id_token_ttl_secs);
    let config = oidc_config(&provider.issuer, launch.port);
    (provider, launch.config(&config))
}

/// An answer as the browser saw it.
struct Page {
    status: u16,
    location: Option<String>,
    set_cookies: Vec<String>,
    body: String,
}

impl Page {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

struct Cookie {
    name: String,
    value: String,
    path: String,
}

/// A browser: no automatic redirects, a cookie jar for 127.0.0.1 (cookies do
/// not tell ports apart), forms submitted as `application/x-www-form-urlencoded`.
struct Browser {
    http: ureq::Agent,
    jar: Vec<Cookie>,
}

impl Browser {
    fn new() -> Browser {
        Browser {
            http: http_agent(),
            jar: Vec::new(),
        }
    }

    fn cookie(&self, name: &str) -> Option<&str> {
        self.jar
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.as_str())
    }

    fn cookie_header(&self, url: &str) -> String {
        let path = path_of(url);
        self.jar
            .iter()
            .filter(|c| path.starts_with(&c.path))
            .map(|c| format!("{}={}", c.name, c.value))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn take_cookies(&mut self, set_cookies: &[String]) {
        for line in set_cookies {
            let mut parts = line.split(';');
            let Some((name, value)) = parts.next().and_then(|p| p.trim().split_once('=')) else {
                continue;
            };
            let mut path = "/".to_owned();
            let mut gone = value.is_empty();
            for attr in parts {
                let attr = attr.trim();
                let lower = attr.to_ascii_lowercase();
                if let Some(p) = lower.strip_prefix("path=") {
                    path = attr[5..5 + p.len()].to_owned();
                }
                if lower == "max-age=0" || lower.contains("1970") {
                    gone = true;
                }
            }
            self.jar.retain(|c| !(c.name == name && c.path == path));
            if !gone {
                self.jar.push(Cookie {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    path,
                });
            }
        }
    }

    fn send(&mut self, method: &str, url: &str, form: Option<String>) -> Page {
        let mut builder = ureq::http::Request::builder().method(method).uri(url);
        let cookies = self.cookie_header(url);
        if !cookies.is_empty() {
            builder = builder.header("cookie", cookies);
        }
        let resp = match form {
            Some(body) => self.http.run(
                builder
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body)
                    .unwrap(),
            ),
            None => self.http.run(builder.body(()).unwrap()),
        };
        let mut resp = resp.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let header_values = |name: &str| -> Vec<String> {
            resp.headers()
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok().map(str::to_owned))
                .collect()
        };
        let set_cookies = header_values("set-cookie");
        let location = header_values("location")
            .into_iter()
            .next()
            .map(|l| resolve(url, &l));
        let status = resp.status().as_u16();
        let body = resp.body_mut().read_to_string().unwrap_or_default();
        self.take_cookies(&set_cookies);
        Page {
            status,
            location,
            set_cookies,
            body,
        }
    }

    fn get(&mut self, url: &str) -> Page {
        self.send("GET", url, None)
    }

    /// Starts a login at the server: the provider URL it redirects to.
    fn start_login(&mut self, server: &Server) -> String {
        let page = self.get(&server.url("/api/auth/login"));
        assert_eq!(page.status, 302, "{}", page.body);
        page.location.expect("a redirect to the provider")
    }

    /// Walks the provider from the authorization URL as `login`: follows its
    /// redirects, fills in its login form and submits its consent form, until
    /// the provider sends the browser back to the server's callback. Returns
    /// that callback URL (not yet visited).
    fn through_provider(
        &mut self,
        authorization_url: &str,
        login: &str,
        server: &Server,
    ) -> String {
        let callback = server.url("/api/auth/callback");
        let mut url = authorization_url.to_owned();
        for _ in 0..20 {
            if url.starts_with(&callback) {
                return url;
            }
            let page = self.get(&url);
            if let Some(next) = page.location {
                url = next;
                continue;
            }
            assert_eq!(page.status, 200, "provider page {url}: {}", page.body);
            let (action, fields) = form_of(&page.body)
                .unwrap_or_else(|| panic!("no form on the provider page {url}: {}", page.body));
            let filled: Vec<(String, String)> = fields
                .into_iter()
                .map(|(name, value)| match name.as_str() {
                    "login" => (name, login.to_owned()),
                    "password" => (name, "any-password".to_owned()),
                    _ => (name, value),
                })
                .collect();
            let body = filled
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        vrrp_test_support::percent_encode(k),
                        vrrp_test_support::percent_encode(v)
                    )
                })
                .collect::<Vec<_>>()
                .join("&");
            let posted = self.send("POST", &resolve(&url, &action), Some(body));
            url = posted
                .location
                .unwrap_or_else(|| panic!("the form at {url} did not redirect: {}", posted.body));
        }
        panic!("the provider never sent the browser back to {callback}");
    }

    /// A whole login as `login`: the callback's answer.
    fn login(&mut self, server: &Server, login: &str) -> Page {
        let authorization = self.start_login(server);
        let callback = self.through_provider(&authorization, login, server);
        self.get(&callback)
    }

    fn me(&mut self, server: &Server) -> Page {
        self.get(&server.url("/api/v1/me"))
    }
}

fn path_of(url: &str) -> String {
    let after_scheme = url.split_once("://").map_or(url, |(_, r)| r);
    let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    path.split('?').next().unwrap_or("/").to_owned()
}

fn resolve(base: &str, location: &str) -> String {
    let location = location.replace("&amp;", "&");
    if location.starts_with("http://") || location.starts_with("https://") {
        return location;
    }
    let (scheme, rest) = base.split_once("://").unwrap();
    let host = rest.split('/').next().unwrap();
    format!("{scheme}://{host}{location}")
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(tag[start..start + len].replace("&amp;", "&"))
}

/// The first form of an HTML page: its action and its named inputs.
fn form_of(html: &str) -> Option<(String, Vec<(String, String)>)> {
    let start = html.find("<form")?;
    let form = &html[start..start + html[start..].find("</form>")?];
    let action = attr(&form[..form.find('>')?], "action")?;
    let mut fields = Vec::new();
    let mut rest = form;
    while let Some(i) = rest.find("<input") {
        rest = &rest[i..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(name) = attr(tag, "name") {
            fields.push((name, attr(tag, "value").unwrap_or_default()));
        }
        rest = &rest[6..];
    }
    Some((action, fields))
}

fn query_param(url: &str, key: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == key).then(|| v.to_owned())
    })
}

fn with_query_param(url: &str, key: &str, value: &str) -> String {
    let (base, query) = url.split_once('?').unwrap();
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, _)) if k == key => format!("{k}={value}"),
            _ => pair.to_owned(),
        })
        .collect();
    format!("{base}?{}", pairs.join("&"))
}

fn create_user(server: &Server, admin: &str, body: Value) {
    let a = server.post("/api/v1/users", Auth::Cookie(admin), &body.to_string());
    assert_eq!(a.status, 201, "create {body}: {:?}", a.body);
}

fn assert_failed(page: &Page, reason: &str) {
    assert_eq!(page.status, 500, "{}", page.body);
    assert_eq!(
        page.json(),
        json!({ "error": format!("Authentication failed: {reason}") })
    );
    assert!(
        !page
            .set_cookies
            .iter()
            .any(|c| c.starts_with("svc_session=")),
        "no session on a failed login"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn login_through_the_provider_and_back() {
    let (_provider, launch) = start_pair(3600);
    let server = launch.start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "alice", "auth_methods": "oidc" }),
    );
    create_user(
        &server,
        &admin,
        json!({ "username": "bob", "auth_methods": "local,oidc", "password": "bob-local-pw" }),
    );
    let config = server.get("/api/auth/config", Auth::None);
    assert_eq!(config.body, json!({ "type": "oidc" }));

    let mut browser = Browser::new();
    let authorization = browser.start_login(&server);
    assert!(authorization.starts_with(&format!("{}/auth?", _provider.issuer)));
    for (key, value) in [
        ("response_type", "code"),
        ("client_id", CLIENT_ID),
        ("scope", "openid%20profile%20email"),
        ("code_challenge_method", "S256"),
    ] {
        assert_eq!(
            query_param(&authorization, key).as_deref(),
            Some(value),
            "{key}"
        );
    }
    for key in ["state", "nonce", "code_challenge"] {
        assert_eq!(
            query_param(&authorization, key).map(|v| v.len()),
            Some(43),
            "{key}"
        );
    }
    assert!(
        browser.cookie("svc_oidc").is_some(),
        "the login is tied to this browser"
    );

    let callback = browser.through_provider(&authorization, "alice", &server);
    let code = query_param(&callback, "code").expect("a code");
    let done = browser.get(&callback);
    assert_eq!(done.status, 302, "{}", done.body);
    assert_eq!(done.location.as_deref(), Some(server.url("/").as_str()));
    let token = browser
        .cookie("svc_session")
        .expect("session cookie")
        .to_owned();
    assert_eq!(browser.cookie("svc_auth"), Some("1"));
    assert!(
        browser.cookie("svc_oidc").is_none(),
        "the binding is cleared once used"
    );
    let session_cookie = done
        .set_cookies
        .iter()
        .find(|c| c.starts_with("svc_session="))
        .unwrap();
    assert!(session_cookie.contains("HttpOnly") && session_cookie.contains("SameSite=Strict"));
    let me = browser.me(&server);
    assert_eq!(me.status, 200);
    assert_eq!(me.json()["username"], "alice");

    // An OIDC-only user has no password to log in with.
    assert_eq!(server.login_answer("alice", "any-password").status, 401);
    // A local,oidc user can do both.
    let mut other = Browser::new();
    let done = other.login(&server, "bob");
    assert_eq!(done.status, 302, "{}", done.body);
    assert_eq!(other.me(&server).json()["username"], "bob");
    server.login("bob", "bob-local-pw");

    // Neither the provider's code nor our session token reaches a log line.
    server.wait_log("logged in through OIDC");
    let log = server.log_text();
    assert!(
        log.contains("User \\\"alice\\\" logged in through OIDC"),
        "{log}"
    );
    assert!(!log.contains(&code), "the code was logged");
    assert!(!log.contains(CLIENT_SECRET), "the client secret was logged");
    assert!(!log.contains(&token), "the session token was logged");
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn users_are_mapped_by_name_then_email_and_must_have_oidc() {
    let (_provider, launch) = start_pair(3600);
    let server = launch.start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "dave", "auth_methods": "local", "password": "dave-local-pw" }),
    );
    create_user(
        &server,
        &admin,
        json!({ "username": "erin@example.test", "auth_methods": "oidc" }),
    );
    create_user(
        &server,
        &admin,
        json!({ "username": "frank", "auth_methods": "oidc" }),
    );

    assert_failed(
        &Browser::new().login(&server, "carol"),
        "user \"carol\" is not known",
    );
    assert_failed(
        &Browser::new().login(&server, "dave"),
        "user \"dave\" may not log in with OIDC",
    );
    // erin's address, unverified: mapped by sub, not to erin.
    assert_failed(
        &Browser::new().login(&server, "grace"),
        "user \"grace\" is not known",
    );
    for (login, user) in [("erin", "erin@example.test"), ("frank", "frank")] {
        let mut browser = Browser::new();
        let done = browser.login(&server, login);
        assert_eq!(done.status, 302, "{login}: {}", done.body);
        assert_eq!(browser.me(&server).json()["username"], user);
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn tampered_replayed_and_foreign_states_are_refused() {
    let (_provider, launch) = start_pair(3600);
    let server = launch.start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "alice", "auth_methods": "oidc" }),
    );

    let mut browser = Browser::new();
    let authorization = browser.start_login(&server);
    let callback = browser.through_provider(&authorization, "alice", &server);
    let state = query_param(&callback, "state").unwrap();
    let tampered = with_query_param(&callback, "state", &format!("{}A", &state[..42]));
    assert_failed(&browser.get(&tampered), "state is unknown");
    // The real one still works once, then never again.
    assert_eq!(browser.get(&callback).status, 302);
    assert_failed(&browser.get(&callback), "state was already used");

    // A callback URL carried to another browser (login CSRF) is refused.
    let mut victim = Browser::new();
    let authorization = browser.start_login(&server);
    let callback = browser.through_provider(&authorization, "alice", &server);
    assert_failed(
        &victim.get(&callback),
        "state was issued to another browser",
    );
    assert!(victim.cookie("svc_session").is_none());

    // The provider's own refusal.
    let page = browser.get(&server.url("/api/auth/callback?error=access_denied&state=x"));
    assert_failed(&page, "the provider answered access_denied");
    // Without code or state the query is refused before anything else.
    assert_eq!(
        browser
            .get(&server.url("/api/auth/callback?state=x"))
            .status,
        400
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn bad_id_tokens_are_refused() {
    let (mut provider, launch) = start_pair(3600);
    let server = launch.start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "alice", "auth_methods": "oidc" }),
    );

    provider.mutate(json!({ "aud": "another-client" }));
    assert_failed(
        &Browser::new().login(&server, "alice"),
        "id_token audience does not include this client",
    );
    provider.mutate(json!({ "expIn": -600 }));
    assert_failed(
        &Browser::new().login(&server, "alice"),
        "id_token has expired",
    );
    provider.mutate(json!({ "iss": "http://127.0.0.1:1" }));
    assert_failed(
        &Browser::new().login(&server, "alice"),
        "id_token was issued by another issuer",
    );
    // Signed by a key the provider does not publish: the key set is fetched
    // again exactly once, then the token is refused.
    let before = provider.jwks_requests();
    provider.mutate(json!({ "unknownKey": true }));
    assert_failed(
        &Browser::new().login(&server, "alice"),
        "id_token is signed by a key the provider does not publish",
    );
    assert_eq!(provider.jwks_requests(), before + 1);

    // A browser that changes the nonce on its way to the provider.
    provider.mutate(json!({}));
    let mut browser = Browser::new();
    let authorization = browser.start_login(&server);
    let forged = with_query_param(&authorization, "nonce", "forged-nonce");
    let callback = browser.through_provider(&forged, "alice", &server);
    assert_failed(
        &browser.get(&callback),
        "id_token nonce does not match the login",
    );

    // Untouched tokens still work.
    let mut browser = Browser::new();
    assert_eq!(browser.login(&server, "alice").status, 302);
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn a_new_signing_key_at_the_provider_is_fetched_once() {
    let (mut provider, launch) = start_pair(3600);
    let server = launch.start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "alice", "auth_methods": "oidc" }),
    );

    assert_eq!(Browser::new().login(&server, "alice").status, 302);
    assert_eq!(provider.jwks_requests(), 1);
    assert_eq!(Browser::new().login(&server, "alice").status, 302);
    assert_eq!(provider.jwks_requests(), 1, "the key set is cached");

    let rotated = provider.command("rotate");
    assert!(rotated.starts_with("rotated "), "{rotated}");
    let mut browser = Browser::new();
    let done = browser.login(&server, "alice");
    assert_eq!(done.status, 302, "{}", done.body);
    assert_eq!(browser.me(&server).json()["username"], "alice");
    assert_eq!(provider.jwks_requests(), 2, "one fetch for the new kid");
    assert_eq!(Browser::new().login(&server, "alice").status, 302);
    assert_eq!(provider.jwks_requests(), 2);
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn logins_and_id_tokens_expire_on_the_servers_clock() {
    // id_tokens live two minutes at this provider.
    let (_provider, launch) = start_pair(120);
    let (server, clock) = launch.start_in_process();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "alice", "auth_methods": "oidc" }),
    );

    // A login finished eleven minutes (of the server's clock) after it started.
    let mut browser = Browser::new();
    let authorization = browser.start_login(&server);
    let callback = browser.through_provider(&authorization, "alice", &server);
    clock.advance(chrono::Duration::minutes(11));
    assert_failed(&browser.get(&callback), "state has expired");

    // Five minutes: the login is still young, its id_token is not.
    let mut browser = Browser::new();
    let authorization = browser.start_login(&server);
    let callback = browser.through_provider(&authorization, "alice", &server);
    clock.advance(chrono::Duration::minutes(5));
    assert_failed(&browser.get(&callback), "id_token has expired");

    server.stop_in_process();
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn a_provider_that_cannot_be_discovered_ends_the_start() {
    let launch = Launch::new();
    let issuer = format!("http://127.0.0.1:{}", free_port());
    let config = oidc_config(&issuer, launch.port);
    let launch = launch.config(&config);
    let (status, lines) = launch.run_to_exit();
    assert_eq!(status.code(), Some(1));
    let fatal = fatal_lines(&lines);
    assert_eq!(fatal.len(), 1, "{lines:?}");
    assert!(
        fatal[0].starts_with(&format!("OIDC discovery at {issuer} failed: ")),
        "{}",
        fatal[0]
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn a_provider_certificate_that_is_not_trusted_ends_the_start() {
    // TLS is verified: a self-signed certificate (valid for localhost) is refused.
    let tls = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("agent/tests/fixtures/tls");
    let launch = Launch::new();
    let redirect = format!("http://127.0.0.1:{}/api/auth/callback", launch.port);
    let provider = Provider::start_with(
        &redirect,
        3600,
        &[
            (
                "TLS_CERT",
                tls.join("localhost.cert.pem").display().to_string(),
            ),
            (
                "TLS_KEY",
                tls.join("localhost.key.pem").display().to_string(),
            ),
        ],
    );
    assert!(provider.issuer.starts_with("https://localhost:"));
    let config = oidc_config(&provider.issuer, launch.port);
    let (status, lines) = launch.config(&config).run_to_exit();
    assert_eq!(status.code(), Some(1));
    let fatal = fatal_lines(&lines);
    assert_eq!(fatal.len(), 1, "{lines:?}");
    assert!(
        fatal[0].starts_with(&format!("OIDC discovery at {} failed: ", provider.issuer)),
        "{}",
        fatal[0]
    );
    assert!(
        fatal[0].to_lowercase().contains("certificate"),
        "{}",
        fatal[0]
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-node"),
    ignore = "node tier: Node.js runs the OIDC provider; --features test-node (scripts/test.sh)"
)]
fn the_providers_groups_give_the_role_at_each_login() {
    vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Node);
    let launch = Launch::new();
    let redirect = format!("http://127.0.0.1:{}/api/auth/callback", launch.port);
    let mut provider = Provider::start(&redirect, 3600);
    let config = format!(
        "{}  role_claim: groups\n  role_map:\n    admin: [noc-admins]\n    operator: [netops, oncall]\n",
        oidc_config(&provider.issuer, launch.port)
    );
    let server = launch.config(&config).start();
    let admin = server.admin();
    create_user(
        &server,
        &admin,
        json!({ "username": "frank", "auth_methods": "oidc", "role": "admin" }),
    );
    for (groups, role) in [
        (json!(["staff", "netops"]), "operator"),
        (json!("noc-admins"), "admin"),
        // No group that the map names: the default role, viewer.
        (json!(["staff"]), "viewer"),
    ] {
        provider.mutate(json!({ "groups": groups }));
        let mut browser = Browser::new();
        let done = browser.login(&server, "frank");
        assert_eq!(done.status, 302, "{}", done.body);
        let me = browser.me(&server).json();
        assert_eq!(
            (me["role"].as_str(), me["via"].as_str()),
            (Some(role), Some("oidc")),
            "{groups}"
        );
    }
    let audit = server
        .get("/api/v1/audit?actor=frank", Auth::Cookie(&admin))
        .body;
    let entries = audit["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{audit}");
    assert!(entries
        .iter()
        .all(|e| e["action"] == "login.succeeded" && e["via"] == "oidc"));
}
