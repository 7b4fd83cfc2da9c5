//! Truth for the fault tests: the state changes keepalived made on a lab host (the
//! lab's own FIFO log) and the `vrrp.state_changed` events the server stored.

use std::collections::{BTreeMap, HashMap};
use std::fs;

use super::lab::Lab;
use super::Server;

/// (instance, from, to)
pub type Change = (String, String, String);

/// The transitions keepalived reported on `host` after line `skip` of the lab's
/// FIFO log (lines like `<time> INSTANCE "VI_1" MASTER 110`), per instance.
/// Transitions into and out of `STOP` are left out: a stopping keepalived is
/// reported as `keepalived.stopped`, and the state it starts in is the baseline of
/// `keepalived.started`, not a `vrrp.state_changed` (see `keepalived_stops`).
pub fn keepalived_changes(lab: &Lab, host: &str, skip: usize) -> (BTreeMap<Change, usize>, usize) {
    let text = fs::read_to_string(lab.state.join(host).join("run/lab/notify_fifo.log"))
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut last: HashMap<String, String> = HashMap::new();
    let mut changes = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 4 || words[1] != "INSTANCE" {
            continue;
        }
        let (name, state) = (words[2].trim_matches('"').to_owned(), words[3].to_owned());
        if let Some(prev) = last.insert(name.clone(), state.clone()) {
            if i >= skip && prev != state && prev != "STOP" && state != "STOP" {
                *changes.entry((name, prev, state)).or_insert(0) += 1;
            }
        }
    }
    (changes, lines.len())
}

pub fn server_changes(
    server: &Server,
    admin: &str,
    client: &str,
) -> (BTreeMap<Change, usize>, usize) {
    let mut changes = BTreeMap::new();
    let mut ids = Vec::new();
    for a in server.get(admin, "/api/v1/activity").as_array().unwrap() {
        if a["kind"] == "vrrp.state_changed" && a["clientId"] == client {
            let key = (
                a["subject"]["instanceName"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                a["data"]["from"].as_str().unwrap_or("").to_owned(),
                a["data"]["to"].as_str().unwrap_or("").to_owned(),
            );
            *changes.entry(key).or_insert(0) += 1;
            ids.push(a["id"].as_str().unwrap_or("").to_owned());
        }
    }
    let n = ids.len();
    ids.sort();
    ids.dedup();
    (changes, n - ids.len())
}

/// How many times keepalived on `host` stopped after line `skip` of the FIFO log
/// (every instance going to `STOP` at once counts as one stop).
pub fn keepalived_stops(lab: &Lab, host: &str, skip: usize) -> usize {
    let text = fs::read_to_string(lab.state.join(host).join("run/lab/notify_fifo.log"))
        .unwrap_or_default();
    let mut stops = 0;
    let mut stopped = false;
    for line in text.lines().skip(skip) {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.len() < 4 || words[1] != "INSTANCE" {
            continue;
        }
        let now_stopped = words[3] == "STOP";
        if now_stopped && !stopped {
            stops += 1;
        }
        stopped = now_stopped;
    }
    stops
}

/// How many events of `kind` the server stored for `client`.
pub fn server_count(server: &Server, admin: &str, client: &str, kind: &str) -> usize {
    server
        .get(admin, "/api/v1/activity")
        .as_array()
        .map_or(0, |a| {
            a.iter()
                .filter(|e| e["kind"] == kind && e["clientId"] == client)
                .count()
        })
}
