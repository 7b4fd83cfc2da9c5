//! The webhook template language (interface of the original implementation, see
//! design.md): a JSON document rendered on its parsed tree, never as text.
//!
//! [`compile`] checks a template once (at save) and refuses it with the location
//! and what was expected; [`Template::render`] fills it from the context
//! `{event, client, webhook}`. Strings hold placeholders `{{path | filter}}`: a
//! string that is one placeholder keeps the type of what it names, inside text it
//! becomes text. Objects may be directives: `$if`, `$map`, `$join`.

use serde_json::{Map, Value};
use std::fmt;

/// Directives nest at most this deep.
pub const MAX_DIRECTIVE_DEPTH: usize = 8;
/// The template's JSON nests at most this deep.
pub const MAX_DEPTH: usize = 64;

#[derive(Debug, Clone, PartialEq)]
pub struct TemplateError {
    /// Where: `content.$join`, `hosts.$map.each(m)`, `tags[2]` (`$` for the root).
    pub location: String,
    pub message: String,
}

impl fmt::Display for TemplateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

#[derive(Debug, Clone, PartialEq)]
struct Path {
    root: String,
    segs: Vec<Seg>,
}

#[derive(Debug, Clone, PartialEq)]
enum Filter {
    Default(Value),
    Join(String),
    Map(Vec<Seg>),
    Upper,
    Lower,
    Truncate(usize),
    Date(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Expr {
    path: Path,
    filters: Vec<Filter>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
enum Cond {
    Truthy(Path),
    Not(Path),
    Eq(Path, Value),
    Ne(Path, Value),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    /// A string that is exactly one placeholder: keeps the type.
    Whole(Expr),
    /// Text with placeholders.
    Text(Vec<Part>),
    Array(Vec<Node>),
    Object(Vec<(Vec<Part>, Node)>),
    If {
        cond: Cond,
        then: Option<Box<Node>>,
        otherwise: Option<Box<Node>>,
    },
    Map {
        path: Path,
        var: String,
        index: Option<String>,
        each: Box<Node>,
    },
    Join {
        inner: Box<Node>,
        with: String,
    },
}

/// A compiled template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    root: Node,
}

/// What a template may name: the event, its client, the webhook, and for a
/// `cluster.readiness_changed` its verdict and findings (null for other kinds).
const ROOTS: [&str; 4] = ["event", "client", "webhook", "readiness"];

struct Compiler {
    /// Loop variables in scope.
    vars: Vec<String>,
}

fn err(location: &str, message: impl Into<String>) -> TemplateError {
    TemplateError {
        location: if location.is_empty() {
            "$".into()
        } else {
            location.into()
        },
        message: message.into(),
    }
}

fn child(location: &str, key: &str) -> String {
    if location.is_empty() {
        key.to_owned()
    } else {
        format!("{location}.{key}")
    }
}

/// Compiles a JSON template.
pub fn compile(text: &str) -> Result<Template, TemplateError> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| err("", format!("not valid JSON: {e}")))?;
    Ok(Template {
        root: Compiler { vars: Vec::new() }.node(&value, "", 0, 0)?,
    })
}

/// Compiles text with placeholders (a URL or a header value).
pub fn compile_text(text: &str, location: &str) -> Result<TextTemplate, TemplateError> {
    Ok(TextTemplate(
        Compiler { vars: Vec::new() }.parts(text, location)?,
    ))
}

#[derive(Debug, Clone, PartialEq)]
pub struct TextTemplate(Vec<Part>);

impl TextTemplate {
    pub fn render<'a>(&self, ctx: impl Into<Context<'a>>) -> String {
        render_parts(&self.0, &ctx.into(), &mut Vec::new())
    }
}

impl Compiler {
    fn node(
        &mut self,
        v: &Value,
        at: &str,
        depth: usize,
        directives: usize,
    ) -> Result<Node, TemplateError> {
        if depth > MAX_DEPTH {
            return Err(err(
                at,
                format!("the template nests deeper than {MAX_DEPTH}"),
            ));
        }
        match v {
            Value::String(s) => self.string(s, at),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| self.node(item, &format!("{at}[{i}]"), depth + 1, directives))
                .collect::<Result<_, _>>()
                .map(Node::Array),
            Value::Object(map) => self.object(map, at, depth, directives),
            other => Ok(Node::Literal(other.clone())),
        }
    }

    fn string(&mut self, s: &str, at: &str) -> Result<Node, TemplateError> {
        let parts = self.parts(s, at)?;
        Ok(match parts.as_slice() {
            [] => Node::Literal(Value::String(String::new())),
            [Part::Text(t)] => Node::Literal(Value::String(t.clone())),
            [Part::Expr(e)] if s.trim().starts_with("{{") && s.trim().ends_with("}}") => {
                Node::Whole(e.clone())
            }
            _ => Node::Text(parts),
        })
    }

    fn object(
        &mut self,
        map: &Map<String, Value>,
        at: &str,
        depth: usize,
        directives: usize,
    ) -> Result<Node, TemplateError> {
        let directive = ["$if", "$map", "$join"]
            .into_iter()
            .find(|d| map.contains_key(*d));
        let Some(directive) = directive else {
            let mut fields = Vec::new();
            for (key, value) in map {
                // `$$` escapes a key that would otherwise start with `$`.
                let key = key
                    .strip_prefix("$$")
                    .map(|k| format!("${k}"))
                    .unwrap_or_else(|| key.clone());
                let loc = child(at, &key);
                fields.push((
                    self.parts(&key, &loc)?,
                    self.node(value, &loc, depth + 1, directives)?,
                ));
            }
            return Ok(Node::Object(fields));
        };
        let here = child(at, directive);
        if directives + 1 > MAX_DIRECTIVE_DEPTH {
            return Err(err(
                &here,
                format!("directives nest deeper than {MAX_DIRECTIVE_DEPTH}"),
            ));
        }
        let only = |allowed: &[&str]| -> Result<(), TemplateError> {
            let permitted = |k: &str| {
                allowed.contains(&k) || (k.starts_with("each(") && allowed.contains(&"each"))
            };
            match map.keys().find(|k| !permitted(k)) {
                Some(k) => Err(err(
                    &here,
                    format!(
                        "a {directive} object holds only {}; found \"{k}\"",
                        allowed.join(", ")
                    ),
                )),
                None => Ok(()),
            }
        };
        match directive {
            "$if" => {
                only(&["$if", "then", "else"])?;
                let cond = map["$if"]
                    .as_str()
                    .ok_or_else(|| err(&here, "expected a condition string"))?;
                let cond = self.condition(cond, &here)?;
                let branch =
                    |c: &mut Compiler, key: &str| -> Result<Option<Box<Node>>, TemplateError> {
                        map.get(key)
                            .map(|v| {
                                c.node(v, &child(at, key), depth + 1, directives + 1)
                                    .map(Box::new)
                            })
                            .transpose()
                    };
                let then = branch(self, "then")?;
                let otherwise = branch(self, "else")?;
                Ok(Node::If {
                    cond,
                    then,
                    otherwise,
                })
            }
            "$map" => {
                only(&["$map", "each"])?;
                let path_text = map["$map"]
                    .as_str()
                    .ok_or_else(|| err(&here, "expected a path"))?;
                let path = self.path(path_text.trim(), &here)?;
                let each: Vec<(&String, &Value)> =
                    map.iter().filter(|(k, _)| k.starts_with("each(")).collect();
                let [(each_key, each_value)] = each.as_slice() else {
                    return Err(err(&here, "expected one each(m) or each(m, i) beside $map"));
                };
                let vars = each_key
                    .strip_prefix("each(")
                    .and_then(|r| r.strip_suffix(')'))
                    .ok_or_else(|| {
                        err(&child(&here, each_key), "expected each(m) or each(m, i)")
                    })?;
                let names: Vec<&str> = vars.split(',').map(str::trim).collect();
                let valid = |n: &str| {
                    !n.is_empty()
                        && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                        && !ROOTS.contains(&n)
                };
                let (var, index) = match names.as_slice() {
                    [m] if valid(m) => (m.to_string(), None),
                    [m, i] if valid(m) && valid(i) && m != i => {
                        (m.to_string(), Some(i.to_string()))
                    }
                    _ => {
                        return Err(err(
                            &child(&here, each_key),
                            "expected each(m) or each(m, i) with plain names",
                        ))
                    }
                };
                self.vars.push(var.clone());
                if let Some(i) = &index {
                    self.vars.push(i.clone());
                }
                let each = self.node(
                    each_value,
                    &child(&here, each_key),
                    depth + 1,
                    directives + 1,
                );
                self.vars.pop();
                if index.is_some() {
                    self.vars.pop();
                }
                Ok(Node::Map {
                    path,
                    var,
                    index,
                    each: Box::new(each?),
                })
            }
            _ => {
                only(&["$join", "with"])?;
                let with = match map.get("with") {
                    None => ", ".to_owned(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return Err(err(&child(at, "with"), "expected a string")),
                };
                let inner = self.node(&map["$join"], &here, depth + 1, directives + 1)?;
                Ok(Node::Join {
                    inner: Box::new(inner),
                    with,
                })
            }
        }
    }

    /// Splits text into literal parts and placeholders.
    fn parts(&mut self, s: &str, at: &str) -> Result<Vec<Part>, TemplateError> {
        let mut parts = Vec::new();
        let mut rest = s;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| err(at, "a placeholder {{ is not closed with }}"))?;
            parts.push(Part::Expr(self.expr(&after[..close], at)?));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(parts)
    }

    fn expr(&mut self, text: &str, at: &str) -> Result<Expr, TemplateError> {
        let pieces = split_top(text, '|');
        let path = self.path(pieces[0].trim(), at)?;
        let filters = pieces[1..]
            .iter()
            .map(|f| filter(f.trim(), at))
            .collect::<Result<_, _>>()?;
        Ok(Expr { path, filters })
    }

    fn path(&self, text: &str, at: &str) -> Result<Path, TemplateError> {
        let mut segs = segments(text).ok_or_else(|| {
            err(
                at,
                format!("\"{text}\" is not a path (names and indexes joined by dots)"),
            )
        })?;
        let Some(Seg::Key(root)) = (!segs.is_empty()).then(|| segs.remove(0)) else {
            return Err(err(at, format!("\"{text}\" does not start with a name")));
        };
        if !ROOTS.contains(&root.as_str()) && !self.vars.contains(&root) {
            return Err(err(
                at,
                format!("\"{root}\" is not event, client, webhook, readiness or a $map variable in scope"),
            ));
        }
        Ok(Path { root, segs })
    }

    fn condition(&self, text: &str, at: &str) -> Result<Cond, TemplateError> {
        let text = text.trim();
        for (op, ne) in [("!=", true), ("==", false)] {
            if let Some((l, r)) = text.split_once(op) {
                let path = self.path(l.trim(), at)?;
                let lit = literal(r.trim())
                    .ok_or_else(|| err(at, format!("\"{}\" is not a literal", r.trim())))?;
                return Ok(if ne {
                    Cond::Ne(path, lit)
                } else {
                    Cond::Eq(path, lit)
                });
            }
        }
        match text.strip_prefix('!') {
            Some(p) => Ok(Cond::Not(self.path(p.trim(), at)?)),
            None => Ok(Cond::Truthy(self.path(text, at)?)),
        }
    }
}

/// Splits on `sep` outside quotes and parentheses.
fn split_top(text: &str, sep: char) -> Vec<&str> {
    let (mut out, mut start, mut depth, mut quote) = (Vec::new(), 0, 0i32, None::<char>);
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, c) if c == sep && depth == 0 => {
                out.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn segments(text: &str) -> Option<Vec<Seg>> {
    if text.is_empty() {
        return None;
    }
    text.split('.')
        .map(|s| {
            if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
                s.parse().ok().map(Seg::Index)
            } else if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            {
                Some(Seg::Key(s.to_owned()))
            } else {
                None
            }
        })
        .collect()
}

/// A literal: a JSON value, or 'single-quoted text'.
fn literal(text: &str) -> Option<Value> {
    if let Some(inner) = text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')) {
        return Some(Value::String(inner.to_owned()));
    }
    serde_json::from_str(text).ok()
}

fn filter(text: &str, at: &str) -> Result<Filter, TemplateError> {
    let (name, args) = match text.split_once('(') {
        Some((n, rest)) => {
            let inner = rest.strip_suffix(')').ok_or_else(|| {
                err(
                    at,
                    format!("filter \"{text}\" misses its closing parenthesis"),
                )
            })?;
            (n.trim(), Some(inner.trim()))
        }
        None => (text, None),
    };
    let text_arg = |what: &str| -> Result<String, TemplateError> {
        match args.map(literal) {
            Some(Some(Value::String(s))) => Ok(s),
            _ => Err(err(at, format!("{name} takes {what}"))),
        }
    };
    Ok(match name {
        "default" => Filter::Default(
            args.and_then(literal)
                .ok_or_else(|| err(at, "default takes a literal, e.g. default('n/a')"))?,
        ),
        "join" => Filter::Join(match args {
            None | Some("") => ", ".to_owned(),
            Some(_) => text_arg("a separator, e.g. join(\", \")")?,
        }),
        "map" => Filter::Map(
            segments(&text_arg("a field name, e.g. map(\"host\")")?)
                .ok_or_else(|| err(at, "map takes a field name"))?,
        ),
        "upper" if args.is_none() => Filter::Upper,
        "lower" if args.is_none() => Filter::Lower,
        "truncate" => Filter::Truncate(
            args.and_then(|a| a.parse().ok())
                .ok_or_else(|| err(at, "truncate takes a whole number, e.g. truncate(80)"))?,
        ),
        "date" => Filter::Date(text_arg("a format, e.g. date(\"%Y-%m-%d %H:%M\")")?),
        other => {
            return Err(err(
                at,
                format!(
                    "unknown filter \"{other}\" (default, join, map, upper, lower, truncate, date)"
                ),
            ))
        }
    })
}

// --- rendering ---

/// What a template reads at its top level: each name is looked up in the
/// layers in turn. A webhook's own fields (`webhook`) sit over what every
/// webhook reads of one event (`event`, `client`, `readiness`), which is built
/// once per event and shared, not copied per webhook.
#[derive(Clone, Copy)]
pub struct Context<'a> {
    layers: [&'a Value; 2],
}

static NOTHING: Value = Value::Null;

impl<'a> Context<'a> {
    /// `own` first, then `shared`.
    pub fn layered(own: &'a Value, shared: &'a Value) -> Context<'a> {
        Context {
            layers: [own, shared],
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.layers.iter().find_map(|l| l.get(key))
    }
}

impl<'a> From<&'a Value> for Context<'a> {
    fn from(v: &'a Value) -> Context<'a> {
        Context::layered(v, &NOTHING)
    }
}

type Scope = Vec<(String, Value)>;

fn lookup(path: &Path, ctx: &Context, scope: &Scope) -> Option<Value> {
    let base = scope
        .iter()
        .rev()
        .find(|(n, _)| *n == path.root)
        .map(|(_, v)| v)
        .or_else(|| ctx.get(&path.root))?;
    let mut v = base;
    for s in &path.segs {
        v = match s {
            Seg::Key(k) => v.get(k)?,
            Seg::Index(i) => v.get(*i)?,
        };
    }
    Some(v.clone())
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

fn as_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn apply(filter: &Filter, v: Option<Value>) -> Option<Value> {
    match (filter, v) {
        (Filter::Default(d), v) if v.as_ref().is_none_or(is_empty) => Some(d.clone()),
        (Filter::Join(sep), Some(Value::Array(a))) => Some(Value::String(
            a.iter().map(as_text).collect::<Vec<_>>().join(sep),
        )),
        (Filter::Map(field), Some(Value::Array(a))) => Some(Value::Array(
            a.iter()
                .map(|item| {
                    let mut v = item;
                    for s in field {
                        match s {
                            Seg::Key(k) => v = v.get(k).unwrap_or(&Value::Null),
                            Seg::Index(i) => v = v.get(*i).unwrap_or(&Value::Null),
                        }
                    }
                    v.clone()
                })
                .collect(),
        )),
        (Filter::Upper, Some(Value::String(s))) => Some(Value::String(s.to_uppercase())),
        (Filter::Lower, Some(Value::String(s))) => Some(Value::String(s.to_lowercase())),
        (Filter::Truncate(n), Some(Value::String(s))) => {
            Some(Value::String(s.chars().take(*n).collect()))
        }
        (Filter::Date(fmt), Some(Value::String(s))) => {
            match chrono::DateTime::parse_from_rfc3339(&s) {
                Ok(t) => {
                    let mut out = String::new();
                    use std::fmt::Write;
                    // A format chrono cannot render leaves the timestamp as it was.
                    match write!(out, "{}", t.with_timezone(&chrono::Utc).format(fmt)) {
                        Ok(()) => Some(Value::String(out)),
                        Err(_) => Some(Value::String(s)),
                    }
                }
                Err(_) => Some(Value::String(s)),
            }
        }
        // A filter given the wrong type passes the value on.
        (_, v) => v,
    }
}

fn eval(e: &Expr, ctx: &Context, scope: &Scope) -> Option<Value> {
    e.filters
        .iter()
        .fold(lookup(&e.path, ctx, scope), |v, f| apply(f, v))
}

fn render_parts(parts: &[Part], ctx: &Context, scope: &mut Scope) -> String {
    parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => t.clone(),
            Part::Expr(e) => eval(e, ctx, scope).map(|v| as_text(&v)).unwrap_or_default(),
        })
        .collect()
}

fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

/// `None`: the node drops out (an `$if` whose branch is absent).
fn render_node(node: &Node, ctx: &Context, scope: &mut Scope) -> Option<Value> {
    match node {
        Node::Literal(v) => Some(v.clone()),
        Node::Whole(e) => Some(eval(e, ctx, scope).unwrap_or(Value::Null)),
        Node::Text(parts) => Some(Value::String(render_parts(parts, ctx, scope))),
        Node::Array(items) => Some(Value::Array(
            items
                .iter()
                .filter_map(|n| render_node(n, ctx, scope))
                .collect(),
        )),
        Node::Object(fields) => {
            let mut out = Map::new();
            for (key, value) in fields {
                if let Some(v) = render_node(value, ctx, scope) {
                    out.insert(render_parts(key, ctx, scope), v);
                }
            }
            Some(Value::Object(out))
        }
        Node::If {
            cond,
            then,
            otherwise,
        } => {
            let holds = match cond {
                Cond::Truthy(p) => truthy(lookup(p, ctx, scope).as_ref()),
                Cond::Not(p) => !truthy(lookup(p, ctx, scope).as_ref()),
                Cond::Eq(p, lit) => lookup(p, ctx, scope).as_ref() == Some(lit),
                Cond::Ne(p, lit) => lookup(p, ctx, scope).as_ref() != Some(lit),
            };
            let branch = if holds { then } else { otherwise };
            branch.as_ref().and_then(|n| render_node(n, ctx, scope))
        }
        Node::Map {
            path,
            var,
            index,
            each,
        } => {
            let items = match lookup(path, ctx, scope) {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            };
            let mut out = Vec::new();
            for (i, item) in items.into_iter().enumerate() {
                scope.push((var.clone(), item));
                if let Some(name) = index {
                    scope.push((name.clone(), Value::from(i)));
                }
                if let Some(v) = render_node(each, ctx, scope) {
                    out.push(v);
                }
                scope.pop();
                if index.is_some() {
                    scope.pop();
                }
            }
            Some(Value::Array(out))
        }
        Node::Join { inner, with } => {
            let v = render_node(inner, ctx, scope)?;
            Some(match v {
                Value::Array(a) => {
                    Value::String(a.iter().map(as_text).collect::<Vec<_>>().join(with))
                }
                other => Value::String(as_text(&other)),
            })
        }
    }
}

impl Template {
    /// Renders the template from the context `{event, client, webhook}`.
    pub fn render<'a>(&self, ctx: impl Into<Context<'a>>) -> Value {
        render_node(&self.root, &ctx.into(), &mut Vec::new()).unwrap_or(Value::Null)
    }
}

#[cfg(test)]
mod tests;
