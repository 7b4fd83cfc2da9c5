//! The cluster list lives on the dashboard's socket: the whole list comes with
//! the connect snapshot and every change after it as a CLUSTERS_UPDATE, so the
//! page never asks for the list over REST — a failover and a new cluster show
//! on the clusters list with no request to `/api/v1/keepalived/clusters`.

use crate::harness::{Server, ADMIN_PASSWORD};
use crate::webdriver::Browser;
use crate::{instance, login, reading_of, FakeAgent};
use serde_json::json;

/// Requests the page made for the cluster list (resource timing sees every fetch).
fn list_requests(b: &Browser) -> u64 {
    b.js(
        "return performance.getEntriesByType('resource')
           .filter(e => new URL(e.name).pathname === '/api/v1/keepalived/clusters').length",
        json!([]),
    )
    .as_u64()
    .expect("a count")
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn a_failover_reaches_the_clusters_list_without_a_rest_request() {
    let server = Server::start();
    let admin = server.admin();
    let vip = "192.0.2.100/24";
    let a = FakeAgent::connect(
        &server,
        &admin,
        "lb-a",
        reading_of(vec![instance("VI_1", "MASTER", 150, 51, vip)]),
    );
    let b_agent = FakeAgent::connect(
        &server,
        &admin,
        "lb-b",
        reading_of(vec![instance("VI_1", "BACKUP", 100, 51, vip)]),
    );
    let b = Browser::start(1280, 900);
    login(&b, &server, "admin", ADMIN_PASSWORD, "/clusters");
    // Room for every request of the test in the resource timing buffer.
    b.js("performance.setResourceTimingBufferSize(100000)", json!([]));
    b.wait_text("article.cluster .explain", "lb-a is MASTER.");
    assert_eq!(
        list_requests(&b),
        0,
        "the first load takes the list from the socket"
    );

    // A failover: lb-b takes over.
    a.report(reading_of(vec![instance("VI_1", "BACKUP", 100, 51, vip)]));
    b_agent.report(reading_of(vec![instance("VI_1", "MASTER", 150, 51, vip)]));
    b.wait_text("article.cluster .explain", "lb-b is MASTER.");

    // A cluster that appears: a third host with VRID 52.
    let _c = FakeAgent::connect(
        &server,
        &admin,
        "lb-c",
        reading_of(vec![instance(
            "VI_2",
            "MASTER",
            100,
            52,
            "198.51.100.100/24",
        )]),
    );
    b.wait_text("#cluster-count", "2 of 2");
    assert_eq!(
        list_requests(&b),
        0,
        "changes came as messages, not as a fetched list"
    );
    // The page's list is the server's, in its order.
    let shown = b.js(
        "return [...document.querySelectorAll('article.cluster .cluster-name')].map(a => a.textContent)",
        json!([]),
    );
    let listed = server
        .get(
            "/api/v1/keepalived/clusters",
            crate::harness::Auth::Cookie(&admin),
        )
        .body;
    let order: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("VRID {}", c["vrid"]))
        .collect();
    assert_eq!(shown, json!(order));
}
