//! Same-origin checks for browser requests.
//!
//! The session cookie is `SameSite=Strict`, but "site" is not "origin": a page
//! on the same host under another port is same-site and its requests carry the
//! operator's cookie. So every state-changing request and every dashboard
//! socket that says where it comes from (`Origin`, or `Sec-Fetch-Site` where a
//! browser sent no `Origin`) must come from the server's own origin: the
//! request's `Host`, or the host a trusted proxy forwarded. Agents and scripts
//! send neither header and are not affected; they authenticate by token.

/// Whether a request that says where it comes from came from our own origin.
/// `host`: the authority the request was sent to (`Host`, or a trusted proxy's
/// `X-Forwarded-Host`). A request without `Origin` and `Sec-Fetch-Site` passes.
pub fn same_origin(origin: Option<&str>, sec_fetch_site: Option<&str>, host: Option<&str>) -> bool {
    match origin.map(str::trim) {
        Some(origin) => {
            let Some((scheme, authority)) = origin.split_once("://") else {
                // `null` (sandboxed frames, some redirects) and garbage.
                return false;
            };
            let Some(host) = host else {
                return false;
            };
            let scheme = scheme.to_ascii_lowercase();
            let default_port = match scheme.as_str() {
                "http" => "80",
                "https" => "443",
                _ => return false,
            };
            normalise(authority, default_port).is_some_and(|o| {
                // The Host header carries no scheme: its default port is the
                // origin's (a proxy terminating TLS forwards the plain host).
                normalise(host.trim(), default_port).is_some_and(|h| h == o)
            })
        }
        // No Origin: a browser's own navigation ("none") or a same-origin
        // fetch; anything else ("same-site", "cross-site") is another origin.
        None => sec_fetch_site
            .map(|s| s.trim().to_ascii_lowercase())
            .is_none_or(|s| s == "same-origin" || s == "none"),
    }
}

/// `host[:port]` in lower case with the default port dropped; `None` for an
/// authority with a path, user info or an empty host.
fn normalise(authority: &str, default_port: &str) -> Option<String> {
    if authority.is_empty() || authority.contains(['/', '@', '?', '#', ' ']) {
        return None;
    }
    let lower = authority.to_ascii_lowercase();
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    let (host, port) = match lower.rfind(':') {
        Some(i) if !lower[i..].contains(']') => (&lower[..i], Some(&lower[i + 1..])),
        _ => (lower.as_str(), None),
    };
    if host.is_empty() {
        return None;
    }
    Some(match port {
        Some(p) if p != default_port => format!("{host}:{p}"),
        _ => host.to_owned(),
    })
}

/// Whether a `Content-Type` value names JSON (`application/json`, any parameters).
pub fn is_json(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins() {
        let h = Some("monitor.example:8080");
        assert!(same_origin(Some("http://monitor.example:8080"), None, h));
        assert!(same_origin(Some("HTTP://Monitor.Example:8080"), None, h));
        assert!(!same_origin(Some("http://monitor.example:9090"), None, h));
        assert!(!same_origin(Some("http://evil.example:8080"), None, h));
        assert!(!same_origin(Some("null"), None, h));
        assert!(same_origin(
            Some("https://m.example"),
            None,
            Some("m.example")
        ));
        assert!(same_origin(
            Some("https://m.example:443"),
            None,
            Some("m.example")
        ));
        assert!(!same_origin(
            Some("https://m.example:8443"),
            None,
            Some("m.example")
        ));
        assert!(same_origin(Some("http://[::1]:80"), None, Some("[::1]")));
        assert!(!same_origin(Some("http://m.example"), None, None));
        assert!(!same_origin(
            Some("ftp://m.example"),
            None,
            Some("m.example")
        ));
        // No Origin: Sec-Fetch-Site decides, and nothing at all passes (scripts).
        assert!(same_origin(None, None, h));
        assert!(same_origin(None, Some("same-origin"), h));
        assert!(same_origin(None, Some("none"), h));
        assert!(!same_origin(None, Some("same-site"), h));
        assert!(!same_origin(None, Some("cross-site"), h));
    }

    #[test]
    fn json_content_types() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("Application/JSON; charset=utf-8")));
        assert!(!is_json(Some("text/plain")));
        assert!(!is_json(Some("application/jsonx")));
        assert!(!is_json(None));
    }
}
