//! The dashboard's files, embedded at build time (see `build.rs`), and how they
//! are cached.
//!
//! `index.html` is answered for every path that is not a file (deep links such as
//! `/clusters/x` are the dashboard's own routes) and is never stored by a cache, so a
//! new server build reaches the browser at the next load. Vendored modules carry
//! their version in the file name and are cached for a year; our own modules keep
//! their names, so they are revalidated (ETag from the content) on each load.

use crate::http::request::Req;
use crate::http::response::Resp;
use sha2::Digest;

include!(concat!(env!("OUT_DIR"), "/static_files.rs"));

const IMMUTABLE: &str = "public, max-age=31536000, immutable";

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "json" => "application/json; charset=utf-8",
        _ => "text/plain; charset=utf-8",
    }
}

fn find(path: &str) -> Option<(&'static [u8], &'static str)> {
    FILES
        .iter()
        .find(|(p, _, _)| *p == path)
        .map(|(_, body, hash)| (*body, *hash))
}

/// The page's Content-Security-Policy: scripts only from us, plus the one inline
/// script the page has, its import map, allowed by its hash.
static CSP: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let page = find("/index.html").map_or(&b""[..], |(body, _)| body);
    let page = String::from_utf8_lossy(page);
    let map = page
        .split_once("<script type=\"importmap\">")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(map, _)| map);
    format!(
        "default-src 'self'; script-src 'self' 'sha256-{}'; style-src 'self'; \
         img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'",
        base64(&sha2::Sha256::digest(map.as_bytes()))
    )
});

/// Standard base64 with padding (what CSP hashes are written in).
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Answers a GET for a path outside `/api`, `/ws` and `/docs`.
pub fn serve(req: &Req) -> Resp {
    let path = req.path.as_str();
    let (path, body, hash) = match find(path).filter(|_| path != "/") {
        Some((body, hash)) => (path, body, hash),
        None => {
            let (body, hash) = find("/index.html").unwrap_or((b"", ""));
            ("/index.html", body, hash)
        }
    };
    let cache = if path.starts_with("/vendor/") {
        IMMUTABLE
    } else if path == "/index.html" {
        "no-store"
    } else {
        "no-cache"
    };
    let etag = format!("\"{hash}\"");
    let not_modified = path != "/index.html"
        && req
            .header("if-none-match")
            .is_some_and(|h| h.split(',').any(|t| t.trim() == etag));
    Resp {
        status: if not_modified { 304 } else { 200 },
        headers: vec![
            ("Cache-Control".into(), cache.into()),
            ("ETag".into(), etag),
            // The dashboard loads nothing from elsewhere and runs no inline script
            // but the import map, so a script injected into a page cannot run.
            ("Content-Security-Policy".into(), CSP.clone()),
        ],
        body: if not_modified {
            Vec::new()
        } else {
            body.to_vec()
        },
        content_type: content_type(path),
        after_sent: None,
        audit: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_pads_like_the_standard() {
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn the_dashboard_is_embedded_with_its_vendored_modules() {
        assert!(find("/index.html").is_some());
        assert!(find("/app.js").is_some());
        assert!(FILES
            .iter()
            .any(|(p, _, _)| p.starts_with("/vendor/preact-")));
        // Files other modules include are not served as dashboard files.
        assert!(FILES.iter().all(|(p, _, _)| !p.starts_with("/docs/")));
    }
}
