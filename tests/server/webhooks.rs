//! `/api/v1/webhooks` over real HTTP.

use crate::harness::*;
use serde_json::json;

#[test]
fn webhook_definitions_with_defaults_refusals_and_order() {
    let server = Server::start();
    let admin = server.admin();
    let post = |body: serde_json::Value| {
        server.post("/api/v1/webhooks", Auth::Cookie(&admin), &body.to_string())
    };
    assert_eq!(
        server.post("/api/v1/webhooks", Auth::None, "{}").status,
        401
    );
    let a = post(
        json!({ "name": "zulu paging", "url": "https://events.example/v2/enqueue", "bodyTemplate": "{\"summary\": \"{{event.message}}\"}" }),
    );
    assert_eq!(a.status, 201, "{:?}", a.body);
    let zulu = a.body.clone();
    assert_eq!(zulu["method"], "POST");
    assert_eq!(zulu["minLevel"], "warning");
    assert_eq!(zulu["timeoutMs"], 10000);
    assert_eq!(
        (
            zulu["enabled"].as_bool(),
            zulu["kinds"].clone(),
            zulu["headers"].clone()
        ),
        (Some(true), json!([]), json!({}))
    );
    assert!(
        zulu["lastStatus"].is_null()
            && zulu["lastError"].is_null()
            && zulu["lastAttemptAt"].is_null()
    );
    assert_eq!(
        zulu["bodyTemplate"], "{\"summary\": \"{{event.message}}\"}",
        "stored as written"
    );
    let a = post(
        json!({ "name": "alpha chat", "url": "https://chat.example/hook", "method": "PUT", "headers": { "X-Token": "s3cret", "X-Host": "{{client.hostname}}" },
                         "bodyTemplate": "{}", "minLevel": "info", "kinds": ["vrrp.*"], "timeoutMs": 2000, "enabled": false }),
    );
    assert_eq!(a.status, 201);
    assert_eq!(
        a.body["headers"]["X-Token"], "s3cret",
        "headers are returned in the clear"
    );
    let list = server.get("/api/v1/webhooks", Auth::Cookie(&admin)).body;
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha chat", "zulu paging"], "ordered by name");

    for (body, error) in [
        (json!({ "url": "https://h", "bodyTemplate": "{}" }), "name: is required"),
        (json!({ "name": "x", "url": "mailto:ops@example", "bodyTemplate": "{}" }), "url: must start with http:// or https://"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{}", "timeoutMs": 500 }), "timeoutMs: must be a whole number from 1000 to 60000"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{not json" }), "bodyTemplate: $: not valid JSON: key must be a string at line 1 column 2"),
        (json!({ "name": "x", "url": "https://h", "bodyTemplate": "{\"hosts\": {\"$map\": \"event.data.cluster.members\", \"each(m)\": \"{{n.host}}\"}}" }),
         "bodyTemplate: hosts.$map.each(m): \"n\" is not event, client, webhook or a $map variable in scope"),
    ] {
        let a = post(body.clone());
        assert_eq!((a.status, a.error()), (400, error), "{body}");
    }

    let id = zulu["id"].as_str().unwrap();
    let a = server.put(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin), &json!({ "name": "zulu paging", "url": "https://events.example/v2/enqueue", "bodyTemplate": "{}" }).to_string());
    assert_eq!(a.status, 200);
    assert_eq!(
        a.body["bodyTemplate"], "{}",
        "the whole configuration is replaced"
    );
    assert!(a.body["updatedAt"].is_string());
    assert_eq!(
        server
            .put(
                "/api/v1/webhooks/nope",
                Auth::Cookie(&admin),
                &json!({ "name": "n", "url": "https://h", "bodyTemplate": "{}" }).to_string()
            )
            .status,
        404
    );
    let a = server.delete(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin));
    assert_eq!(
        (a.status, a.body.clone()),
        (200, json!({ "success": true }))
    );
    assert_eq!(
        server
            .delete(&format!("/api/v1/webhooks/{id}"), Auth::Cookie(&admin))
            .status,
        404
    );
    assert_eq!(
        server
            .get("/api/v1/webhooks", Auth::Cookie(&admin))
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
}
