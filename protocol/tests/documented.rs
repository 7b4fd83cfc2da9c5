//! `doc/protocol.md` documents every message kind and every close code this crate
//! defines, and its JSON examples are what the wire types make of them.
//!
//! The constants are read from the source of `src/messages.rs` (every `pub const`
//! inside `mod kind` and `mod close`), not from a hand-kept list, so a constant added
//! there fails here until the document names it:
//! - a kind needs a heading of its own (`### AUTH_SUCCESS ...`, under "Messages") and
//!   at least one ```json example whose `type` is that kind;
//! - a close code needs a row of the close-code table whose first cell is its number.

use std::path::PathBuf;

use serde_json::Value;
use vrrp_protocol::{ActivityAck, ActivityBatch, HostAction, HostActionResult, Reading};

fn path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn read(relative: &str) -> String {
    let p = path(relative);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn doc() -> String {
    read("../doc/protocol.md")
}

fn messages_source() -> String {
    read("src/messages.rs")
}

/// One `pub const` of a module of `messages.rs`.
#[derive(Debug, Clone, PartialEq)]
struct Constant {
    name: String,
    /// The string of a kind, the number of a close code.
    value: String,
    /// 1-based line of `messages.rs` where it starts.
    line: usize,
}

/// The code of a line without its comment, and the brace depth change, reading string
/// literals as such (a `//` or a brace inside one counts for nothing).
fn code_of(line: &str) -> (String, i32) {
    let mut out = String::new();
    let mut depth = 0;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        out.push(c);
    }
    (out, depth)
}

/// Every `pub const` directly inside `pub mod <module> { .. }` of `source`. A constant
/// this reader cannot understand stops the test rather than being skipped; `&[..]`
/// lists (an `ALL` of the module) are not constants of the vocabulary and are left out.
fn constants(source: &str, module: &str) -> Vec<Constant> {
    let opening = format!("pub mod {module} {{");
    let mut lines = source.lines().enumerate();
    if !lines.any(|(_, l)| l.trim() == opening) {
        panic!("src/messages.rs has no `{opening}`: this test reads the constants from there");
    }
    let mut out = Vec::new();
    let mut depth = 1;
    let mut statement: Option<(usize, String)> = None;
    for (i, line) in lines {
        let (code, change) = code_of(line);
        let starts_const = depth == 1 && code.trim_start().starts_with("pub const ");
        depth += change;
        if depth <= 0 {
            break;
        }
        if statement.is_none() && starts_const {
            statement = Some((i + 1, String::new()));
        }
        let Some((start, text)) = statement.as_mut() else {
            continue;
        };
        text.push_str(&code);
        text.push(' ');
        if code.contains(';') {
            let (start, text) = (*start, std::mem::take(text));
            statement = None;
            if let Some(c) = parse_const(module, start, &text) {
                out.push(c);
            }
        }
    }
    if depth > 0 && statement.is_some() {
        panic!("src/messages.rs, mod {module}: a `pub const` does not end with `;`");
    }
    out
}

/// `pub const NAME: TYPE = VALUE;` of `mod kind` (`&str`) or `mod close` (`u16`).
fn parse_const(module: &str, line: usize, text: &str) -> Option<Constant> {
    let unreadable = |why: &str| -> ! {
        panic!(
            "src/messages.rs line {line}, mod {module}: cannot read `{}` ({why}); \
             protocol/tests/documented.rs reads `pub const NAME: &str = \"..\";` in mod kind \
             and `pub const NAME: u16 = N;` in mod close",
            text.trim()
        )
    };
    let rest = text.trim().strip_prefix("pub const ").unwrap_or_default();
    let (name, rest) = rest
        .split_once(':')
        .unwrap_or_else(|| unreadable("no type"));
    let (ty, value) = rest
        .split_once('=')
        .unwrap_or_else(|| unreadable("no value"));
    let ty: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let value = value.trim().trim_end_matches(';').trim();
    if ty.starts_with("&[") {
        return None;
    }
    let value = match (module, ty.as_str()) {
        ("kind", "&str" | "&'staticstr") => value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .filter(|v| !v.contains(['"', '\\']))
            .unwrap_or_else(|| unreadable("not a plain string literal"))
            .to_string(),
        ("close", "u16") => {
            let digits: String = value.chars().filter(|c| *c != '_').collect();
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                unreadable("not a number literal");
            }
            digits
        }
        _ => unreadable("unexpected type"),
    };
    Some(Constant {
        name: name.trim().to_string(),
        value,
        line,
    })
}

/// Whether `token` occurs in `text` with no letter, digit or `_` on either side.
fn has_token(text: &str, token: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(token).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + token.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The doc's headings (lines starting with `#`).
fn headings(doc: &str) -> Vec<&str> {
    doc.lines().filter(|l| l.starts_with('#')).collect()
}

/// The first cells of the doc's table rows, without backticks.
fn first_cells(doc: &str) -> Vec<String> {
    doc.lines()
        .filter(|l| l.trim_start().starts_with('|'))
        .filter_map(|l| l.trim_start()[1..].split('|').next())
        .map(|c| c.trim().trim_matches('`').trim().to_string())
        .collect()
}

/// Every fenced ```json block of the doc, with the line it starts on.
fn json_blocks(doc: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in doc.lines().enumerate() {
        match current.as_mut() {
            None if line.trim() == "```json" => current = Some((i + 1, String::new())),
            None => {}
            Some(_) if line.trim() == "```" => out.extend(current.take()),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    assert!(
        current.is_none(),
        "doc/protocol.md: a ```json block is not closed"
    );
    out
}

/// The parsed ```json examples; every one must be JSON.
fn examples(doc: &str) -> Vec<(usize, Value)> {
    json_blocks(doc)
        .into_iter()
        .map(|(line, text)| {
            let v = serde_json::from_str(&text).unwrap_or_else(|e| {
                panic!("doc/protocol.md line {line}: the ```json block is not JSON: {e}")
            });
            (line, v)
        })
        .collect()
}

/// The `type` of an example that is a message envelope.
fn message_type(v: &Value) -> Option<&str> {
    v.get("payload")?;
    v.get("type")?.as_str()
}

#[test]
fn every_message_kind_is_documented() {
    let doc = doc();
    let kinds = constants(&messages_source(), "kind");
    assert!(!kinds.is_empty(), "no kinds read from src/messages.rs");
    let headings = headings(&doc);
    let examples = examples(&doc);
    let mut missing = Vec::new();
    for k in &kinds {
        if !headings.iter().any(|h| has_token(h, &k.value)) {
            missing.push(format!(
                "message kind \"{}\" (kind::{}, protocol/src/messages.rs line {}) has no heading \
                 in doc/protocol.md: add a `### {}` section under \"## Messages\" saying who sends \
                 it, when, its payload fields (type, optional or not) and a JSON example",
                k.value, k.name, k.line, k.value
            ));
        }
        if !examples
            .iter()
            .any(|(_, v)| message_type(v) == Some(k.value.as_str()))
        {
            missing.push(format!(
                "message kind \"{}\" (kind::{}, protocol/src/messages.rs line {}) has no JSON \
                 example in doc/protocol.md: add a ```json block \
                 `{{\"type\": \"{}\", \"payload\": ...}}` to its section under \"## Messages\"",
                k.value, k.name, k.line, k.value
            ));
        }
    }
    assert!(missing.is_empty(), "\n{}\n", missing.join("\n"));
}

#[test]
fn every_close_code_is_documented() {
    let doc = doc();
    let codes = constants(&messages_source(), "close");
    assert!(
        !codes.is_empty(),
        "no close codes read from src/messages.rs"
    );
    let cells = first_cells(&doc);
    let missing: Vec<String> = codes
        .iter()
        .filter(|c| !cells.contains(&c.value))
        .map(|c| {
            format!(
                "close code {} (close::{}, protocol/src/messages.rs line {}) is not in \
                 doc/protocol.md: add a row `| {} | ... |` to the table under \"## Close codes\" \
                 with its reason texts, who sends it, when, and what the other side does",
                c.value, c.name, c.line, c.value
            )
        })
        .collect();
    assert!(missing.is_empty(), "\n{}\n", missing.join("\n"));
}

/// Examples of a kind whose payload has a type in this crate are that type's own
/// serialisation: every field name is one the type knows (nothing lands in an `extra`
/// map) and reading then writing the payload gives it back unchanged.
#[test]
fn json_examples_are_what_the_wire_types_make_of_them() {
    let doc = doc();
    let kinds: Vec<String> = constants(&messages_source(), "kind")
        .into_iter()
        .map(|k| k.value)
        .collect();
    let mut problems = Vec::new();
    for (line, example) in examples(&doc) {
        let Some(kind) = message_type(&example) else {
            continue;
        };
        if !kinds.iter().any(|k| k == kind) {
            problems.push(format!(
                "line {line}: an example of \"{kind}\", which is no kind of protocol/src/messages.rs"
            ));
            continue;
        }
        let payload = &example["payload"];
        let again = match kind {
            "KEEPALIVED_UPDATE" | "KEEPALIVED_STATE_UPDATE" => {
                match serde_json::from_value::<Reading>(payload.clone()) {
                    Ok(r) => {
                        let mut unknown = unknown_fields(&r);
                        if kind == "KEEPALIVED_UPDATE" {
                            // Server fields: an agent leaves them out.
                            for f in ["clientId", "receivedAt", "lastKnownInstances"] {
                                if payload.get(f).is_some() {
                                    unknown.push(format!("{f} (set by the server only)"));
                                }
                            }
                        }
                        if !unknown.is_empty() {
                            problems.push(format!(
                                "line {line}: {kind} example has fields vrrp_protocol::Reading \
                                 does not know: {}",
                                unknown.join(", ")
                            ));
                        }
                        serde_json::to_value(&r).ok()
                    }
                    Err(e) => Some(Value::String(e.to_string())),
                }
            }
            "ACTIVITY" => serde_json::from_value::<ActivityBatch>(payload.clone())
                .ok()
                .and_then(|b| serde_json::to_value(b).ok()),
            "ACTIVITY_ACK" => serde_json::from_value::<ActivityAck>(payload.clone())
                .ok()
                .and_then(|a| serde_json::to_value(a).ok()),
            "HOST_ACTION" => serde_json::from_value::<HostAction>(payload.clone())
                .ok()
                .and_then(|a| serde_json::to_value(a).ok()),
            "HOST_ACTION_RESULT" => {
                match serde_json::from_value::<HostActionResult>(payload.clone()) {
                    Ok(r) if !r.drain.extra.is_empty() => {
                        problems.push(format!(
                            "line {line}: HOST_ACTION_RESULT example's drain has fields \
                             vrrp_protocol::DrainState does not know: {:?}",
                            r.drain.extra.keys().collect::<Vec<_>>()
                        ));
                        serde_json::to_value(r).ok()
                    }
                    r => r.ok().and_then(|r| serde_json::to_value(r).ok()),
                }
            }
            _ => continue,
        };
        if again.as_ref() != Some(payload) {
            problems.push(format!(
                "line {line}: the {kind} example is not what the protocol type writes for it; \
                 the type writes:\n{}",
                again
                    .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
                    .unwrap_or_else(|| "(it does not read the example)".into())
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "doc/protocol.md:\n{}\n",
        problems.join("\n")
    );
}

/// Field names of a reading this crate does not know, at every level.
fn unknown_fields(r: &Reading) -> Vec<String> {
    let mut out: Vec<String> = r.extra.keys().cloned().collect();
    let instances = r
        .instances
        .iter()
        .chain(r.last_known_instances.iter().flatten());
    for i in instances {
        out.extend(i.extra.keys().map(|k| format!("instances[].{k}")));
        for t in &i.tracked {
            out.extend(t.extra.keys().map(|k| format!("instances[].tracked[].{k}")));
        }
    }
    for g in &r.sync_groups {
        out.extend(g.extra.keys().map(|k| format!("syncGroups[].{k}")));
    }
    if let Some(d) = &r.drain {
        out.extend(d.extra.keys().map(|k| format!("drain.{k}")));
    }
    out
}

#[test]
fn the_document_stands_alone() {
    let doc = doc();
    for outside in [
        concat!("..", "/shared"),
        "/work/shared",
        "shared/spec",
        "design.md",
    ] {
        assert!(
            !doc.contains(outside),
            "doc/protocol.md refers to {outside:?}, which is not part of this repository"
        );
    }
}

/// The reader finds what the crate really defines (a check on the reader itself).
#[test]
fn the_reader_finds_the_crates_constants() {
    let source = messages_source();
    let kinds = constants(&source, "kind");
    let close = constants(&source, "close");
    let kind = |name: &str| {
        kinds
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.clone())
    };
    let code = |name: &str| {
        close
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.value.clone())
    };
    assert_eq!(kind("AUTH").as_deref(), Some(vrrp_protocol::kind::AUTH));
    assert_eq!(
        kind("CLIENTS_UPDATE").as_deref(),
        Some(vrrp_protocol::kind::CLIENTS_UPDATE)
    );
    assert_eq!(
        code("FORBIDDEN"),
        Some(vrrp_protocol::close::FORBIDDEN.to_string())
    );
    assert_eq!(
        code("NORMAL"),
        Some(vrrp_protocol::close::NORMAL.to_string())
    );
    let mut names: Vec<&str> = kinds
        .iter()
        .chain(&close)
        .map(|c| c.name.as_str())
        .collect();
    let all = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all, "a constant was read twice");
}

#[test]
fn the_reader_sees_through_comments_wrapped_lines_and_lists() {
    let source = r#"
pub mod kind {
    /// Not `pub const FAKE: &str = "FAKE";` but a comment { with a brace.
    pub const ONE: &str = "ONE"; // trailing } comment
    pub const WRAPPED_AROUND_A_LONG_NAME: &str =
        "WRAPPED";
    pub const ALL: &[&str] = &[ONE, WRAPPED_AROUND_A_LONG_NAME];
    pub mod inner {
        pub const NESTED: &str = "NESTED";
    }
    pub const AFTER: &'static str = "AFTER";
}
pub mod close {
    pub const BIG: u16 = 4_000;
}
pub const OUTSIDE: &str = "OUTSIDE";
"#;
    let kinds: Vec<(String, String)> = constants(source, "kind")
        .into_iter()
        .map(|c| (c.name, c.value))
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    assert_eq!(
        kinds,
        [
            pair("ONE", "ONE"),
            pair("WRAPPED_AROUND_A_LONG_NAME", "WRAPPED"),
            pair("AFTER", "AFTER"),
        ]
    );
    let close = constants(source, "close");
    assert_eq!(close.len(), 1);
    assert_eq!((close[0].value.as_str(), close[0].line), ("4000", 14));
    assert!(has_token("### AUTH (agent → server)", "AUTH"));
    assert!(!has_token("### AUTH_SUCCESS", "AUTH"));
    assert_eq!(
        first_cells("| `4001` | x |\n|---|\ntext | 5"),
        ["4001", "---"]
    );
}

#[test]
#[should_panic(expected = "cannot read")]
fn the_reader_refuses_a_constant_it_does_not_understand() {
    constants(
        "pub mod close {\n    pub const ODD: u32 = 4000;\n}\n",
        "close",
    );
}
