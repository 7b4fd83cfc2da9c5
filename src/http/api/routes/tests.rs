//! The routes' own rules: the table against the OpenAPI description, and which
//! changes stay open below administrator.

use super::*;
use std::collections::BTreeSet;

/// `/api/v1/users/{userId}` and `/api/v1/users/{id}` are the same route.
fn shape(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn patterns_match_whole_paths_segment_by_segment() {
    assert!(matches(
        "/api/v1/users/{userId}",
        &["api", "v1", "users", "7"]
    ));
    assert!(!matches("/api/v1/users/{userId}", &["api", "v1", "users"]));
    assert!(!matches("/api/v1/users", &["api", "v1", "users", "7"]));
    assert!(matches("/metrics", &["metrics"]));
    // The literal route listed first wins over the pattern.
    let outbound = find("POST", &["api", "v1", "clients", "outbound"]).unwrap();
    assert_eq!(outbound.path, "/api/v1/clients/outbound");
    assert!(find("GET", &["api", "v1", "nothing"]).is_none());
}

#[test]
fn the_description_lists_exactly_the_routes_of_the_table_with_their_roles() {
    let doc: serde_json::Value = serde_json::from_slice(OPENAPI).expect("openapi.json is JSON");
    assert_eq!(doc["openapi"].as_str().map(|v| &v[..3]), Some("3.1"));
    let mut described = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let method = method.to_ascii_uppercase();
            if !["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&method.as_str()) {
                continue;
            }
            described.insert((method.clone(), shape(path)));
            let route = ROUTES
                .iter()
                .find(|r| r.method == method && shape(r.path) == shape(path))
                .unwrap_or_else(|| panic!("{method} {path} is described but not routed"));
            let role = op["x-role"].as_str();
            match route.access {
                // `security` is `[]`, or lists `{}` (anonymous) among its
                // options (`/metrics` takes a token when one is configured).
                Access::Public => assert!(
                    role == Some("public")
                        && op["security"].as_array().is_some_and(|s| {
                            s.is_empty() || s.contains(&serde_json::json!({}))
                        }),
                    "{method} {path}: public, so `x-role: public` and anonymous `security`"
                ),
                Access::Least(r) => assert_eq!(
                    role,
                    Some(r.as_str()),
                    "{method} {path}: x-role must say the table's role"
                ),
            }
        }
    }
    for r in ROUTES.iter().filter(|r| !r.test_hook) {
        assert!(
            described.contains(&(r.method.to_owned(), shape(r.path))),
            "{} {} is routed but missing from src/http/api/openapi.json",
            r.method,
            r.path
        );
    }
}

#[test]
fn only_the_listed_changes_are_open_below_administrator() {
    let below_admin: BTreeSet<(&str, &str, Role)> = ROUTES
        .iter()
        .filter(|r| !matches!(r.method, "GET" | "HEAD"))
        .filter_map(|r| match r.access {
            Access::Least(role) if role < Role::Admin => Some((r.method, r.path, role)),
            _ => None,
        })
        .collect();
    let expected: BTreeSet<(&str, &str, Role)> = [
        // Its own password only: the handler refuses anything else.
        ("PUT", "/api/v1/users/{userId}", Role::Viewer),
        ("PATCH", "/api/v1/users/{userId}", Role::Viewer),
        ("POST", "/api/v1/activity/seen", Role::Viewer),
        ("POST", "/api/v1/silences", Role::Operator),
        ("POST", "/api/v1/clients/{clientId}/drain", Role::Operator),
        ("DELETE", "/api/v1/clients/{clientId}/drain", Role::Operator),
        (
            "POST",
            "/api/v1/clusters/{clusterKey}/drills",
            Role::Operator,
        ),
        ("DELETE", "/api/v1/silences/{silenceId}", Role::Operator),
    ]
    .into_iter()
    .collect();
    assert_eq!(below_admin, expected);
}
