//! A small WebDriver (W3C) client over ureq: starts `chromedriver` on a free port
//! and headless Chromium with a fresh profile, and gives the tests what they use
//! (navigate, find, click, type, run a script, screenshot). Waits poll the page
//! with a bounded deadline; nothing sleeps for a fixed time.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// W3C's element key in JSON answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// How long a wait for the page lasts before the test fails.
pub const WAIT: Duration = Duration::from_secs(15);

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: ureq::Agent,
    _profile: tempfile::TempDir,
}

use vrrp_test_support::{free_port, which};

impl Browser {
    /// Headless Chromium of `width` x `height` CSS pixels.
    pub fn start(width: u32, height: u32) -> Browser {
        vrrp_test_support::tier::require(vrrp_test_support::tier::Tier::Browser);
        let driver_bin = which("chromedriver")
            .expect("chromedriver is not installed (apt-get install chromium chromium-driver; scripts/test.sh does it)");
        let chromium = which("chromium").expect("chromium is not installed");
        let port = free_port();
        let driver = Command::new(driver_bin)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let http: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + WAIT;
        loop {
            let ready = http
                .get(format!("{base}/status"))
                .call()
                .ok()
                .and_then(|mut r| r.body_mut().read_json::<Value>().ok())
                .is_some_and(|v| v["value"]["ready"] == true);
            if ready {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": { "browser": "ALL" },
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", profile.path().display()),
                    format!("--window-size={width},{height}"),
                ],
            },
        }}});
        let mut answer = http
            .post(format!("{base}/session"))
            .send_json(&caps)
            .expect("new WebDriver session");
        let v: Value = answer.body_mut().read_json().unwrap();
        let session = v["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {v}"))
            .to_owned();
        let b = Browser {
            driver,
            base,
            session,
            http,
            _profile: profile,
        };
        // The window size flag sets the outer size; make the page itself this wide.
        b.cmd(
            "POST",
            "/window/rect",
            json!({ "width": width, "height": height }),
        );
        b
    }

    /// One WebDriver command; the answer's `value`. Panics on a WebDriver error.
    pub fn cmd(&self, method: &str, path: &str, body: Value) -> Value {
        self.try_cmd(method, path, body)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"))
    }

    pub fn try_cmd(&self, method: &str, path: &str, body: Value) -> Result<Value, String> {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let answer = match method {
            "GET" => self.http.get(&url).call(),
            "DELETE" => self.http.delete(&url).call(),
            _ => self.http.post(&url).send_json(&body),
        };
        let mut answer = answer.map_err(|e| e.to_string())?;
        let ok = answer.status().is_success();
        let v: Value = answer.body_mut().read_json().map_err(|e| e.to_string())?;
        if ok {
            Ok(v["value"].clone())
        } else {
            Err(format!(
                "{}: {}",
                v["value"]["error"],
                v["value"]["message"].as_str().unwrap_or_default()
            ))
        }
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", json!({ "url": url }));
    }

    pub fn url(&self) -> String {
        self.cmd("GET", "/url", json!({}))
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            json!({ "script": script, "args": args }),
        )
    }

    /// Waits until `script` returns something truthy; returns it.
    pub fn wait_js(&self, what: &str, script: &str, args: Value) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(v) = self.try_cmd(
                "POST",
                "/execute/sync",
                json!({ "script": script, "args": args }),
            ) {
                let truthy = match &v {
                    Value::Null => false,
                    Value::Bool(b) => *b,
                    Value::Number(n) => n.as_f64() != Some(0.0),
                    Value::String(s) => !s.is_empty(),
                    _ => true,
                };
                if truthy {
                    return v;
                }
            }
            if Instant::now() > deadline {
                self.screenshot(&format!("failed-{}", what.replace(' ', "-")));
                panic!(
                    "timed out waiting for {what}; page text:\n{}\nconsole:\n{}",
                    self.body_text(),
                    self.console().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn find(&self, css: &str) -> Option<String> {
        match self.try_cmd(
            "POST",
            "/element",
            json!({ "using": "css selector", "value": css }),
        ) {
            Ok(v) => v[ELEMENT].as_str().map(str::to_owned),
            Err(e) => {
                eprintln!("find {css}: {e}");
                None
            }
        }
    }

    /// Waits for an element matching `css`.
    pub fn wait(&self, css: &str) -> String {
        self.wait_js(
            &format!("element {css}"),
            "return !!document.querySelector(arguments[0])",
            json!([css]),
        );
        self.find(css).expect("element found")
    }

    /// Waits until an element matching `css` contains `text`.
    pub fn wait_text(&self, css: &str, text: &str) {
        self.wait_js(
            &format!("{css} to say {text}"),
            "return [...document.querySelectorAll(arguments[0])].some(e => e.textContent.includes(arguments[1]))",
            json!([css, text]),
        );
    }

    pub fn click(&self, css: &str) {
        let el = self.wait(css);
        self.cmd("POST", &format!("/element/{el}/click"), json!({}));
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let el = self.wait(css);
        self.cmd("POST", &format!("/element/{el}/clear"), json!({}));
        self.cmd(
            "POST",
            &format!("/element/{el}/value"),
            json!({ "text": text }),
        );
    }

    /// Sets a field's value as typing would end (an `input` event), e.g. to empty it.
    pub fn set_field(&self, css: &str, value: &str) {
        self.wait(css);
        self.js(
            "const e = document.querySelector(arguments[0]); e.value = arguments[1];
             e.dispatchEvent(new Event('input', { bubbles: true }));
             e.dispatchEvent(new Event('change', { bubbles: true }));",
            json!([css, value]),
        );
    }

    /// Presses keys on whatever has focus.
    pub fn keys(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                [
                    json!({ "type": "keyDown", "value": c.to_string() }),
                    json!({ "type": "keyUp", "value": c.to_string() }),
                ]
            })
            .collect();
        self.cmd(
            "POST",
            "/actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": actions }] }),
        );
    }

    pub fn body_text(&self) -> String {
        self.try_cmd(
            "POST",
            "/execute/sync",
            json!({ "script": "return document.body ? document.body.innerText : ''", "args": [] }),
        )
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
    }

    /// The text of an open alert, if one is open.
    pub fn alert_text(&self) -> Option<String> {
        self.try_cmd("GET", "/alert/text", json!({}))
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
    }

    /// The browser console since the last call (Chromium's log endpoint).
    pub fn console(&self) -> Vec<String> {
        self.try_cmd("POST", "/se/log", json!({ "type": "browser" }))
            .ok()
            .and_then(|v| v.as_array().cloned())
            .unwrap_or_default()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["level"],
                    e["message"].as_str().unwrap_or_default()
                )
            })
            .collect()
    }

    /// Saves a PNG of the viewport under `target/screenshots/`.
    pub fn screenshot(&self, name: &str) -> PathBuf {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        self.screenshot_to(&dir.join(format!("{name}.png")))
    }

    pub fn screenshot_to(&self, path: &Path) -> PathBuf {
        let Ok(v) = self.try_cmd("GET", "/screenshot", json!({})) else {
            return path.to_owned();
        };
        if let Some(png) = v.as_str().and_then(decode_base64) {
            if let Some(dir) = path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let _ = std::fs::write(path, png);
        }
        path.to_owned()
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.try_cmd("DELETE", "", json!({}));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        let mut valid = 0;
        for (i, &c) in chunk.iter().enumerate() {
            if c == b'=' {
                break;
            }
            n |= value(c)? << (18 - 6 * i);
            valid += 1;
        }
        out.push((n >> 16) as u8);
        if valid > 2 {
            out.push((n >> 8) as u8);
        }
        if valid > 3 {
            out.push(n as u8);
        }
    }
    Some(out)
}
