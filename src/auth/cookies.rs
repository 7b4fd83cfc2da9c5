//! The two session cookies: `svc_session` (the token, HttpOnly) and `svc_auth`
//! (`1`, readable by the dashboard script, no secret).

pub const SESSION_COOKIE: &str = "svc_session";
pub const AUTH_COOKIE: &str = "svc_auth";

/// `Set-Cookie` values for a new session.
pub fn session_cookies(token: &str, max_age_secs: u64, secure: bool) -> [String; 2] {
    let secure = if secure { "; Secure" } else { "" };
    [
        format!("{SESSION_COOKIE}={token}; Path=/; Max-Age={max_age_secs}; HttpOnly; SameSite=Strict{secure}"),
        format!("{AUTH_COOKIE}=1; Path=/; Max-Age={max_age_secs}; SameSite=Strict{secure}"),
    ]
}

/// `Set-Cookie` values that clear both cookies.
pub fn cleared_cookies(secure: bool) -> [String; 2] {
    let secure = if secure { "; Secure" } else { "" };
    [
        format!("{SESSION_COOKIE}=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict{secure}"),
        format!("{AUTH_COOKIE}=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; SameSite=Strict{secure}"),
    ]
}

/// The OIDC browser binding (see `auth::oidc::BROWSER_COOKIE`): only the auth
/// routes see it; `Lax`, because the provider's redirect back to the callback is
/// a cross-site navigation; it lives as long as a login may take.
pub fn oidc_browser_cookie(value: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{}={value}; Path=/api/auth; Max-Age=600; HttpOnly; SameSite=Lax{secure}",
        crate::auth::oidc::BROWSER_COOKIE
    )
}

/// Clears the OIDC browser binding once a login used it.
pub fn cleared_oidc_browser_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!(
        "{}=; Path=/api/auth; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax{secure}",
        crate::auth::oidc::BROWSER_COOKIE
    )
}

/// The value of cookie `name` in a `Cookie` request header.
pub fn find<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k.trim() == name).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_attributes() {
        let [session, auth] = session_cookies("tok", 43200, true);
        assert_eq!(
            session,
            "svc_session=tok; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict; Secure"
        );
        assert_eq!(
            auth,
            "svc_auth=1; Path=/; Max-Age=43200; SameSite=Strict; Secure"
        );
        let [session, _] = session_cookies("tok", 60, false);
        assert!(!session.contains("Secure"));
    }

    #[test]
    fn oidc_binding_cookie() {
        assert_eq!(
            oidc_browser_cookie("b1", true),
            "svc_oidc=b1; Path=/api/auth; Max-Age=600; HttpOnly; SameSite=Lax; Secure"
        );
        assert!(
            cleared_oidc_browser_cookie(false).starts_with("svc_oidc=; Path=/api/auth; Max-Age=0;")
        );
    }

    #[test]
    fn find_cookie() {
        assert_eq!(
            find("a=1; svc_session=abc.def; svc_auth=1", "svc_session"),
            Some("abc.def")
        );
        assert_eq!(find("svc_session_old=x", "svc_session"), None);
        assert_eq!(find("", "svc_session"), None);
    }
}
