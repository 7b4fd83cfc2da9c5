//! The pure part: facts in, exposition text out (format 0.0.4: `# HELP`, `# TYPE`,
//! then the samples of one family together).

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::fmt::Write;
use vrrp_protocol::{Reading, TrackedKind, VrrpInstance};

/// Everything one scrape shows.
#[derive(Debug, Default, Clone)]
pub struct Snapshot {
    pub clusters: Vec<ClusterFacts>,
    pub clients: Vec<ClientFacts>,
    pub incidents_open: u64,
    /// `((kind, level), stored since start)`.
    pub activity: Vec<((String, String), u64)>,
    /// `((webhook name, outcome), deliveries since start)`.
    pub webhooks: Vec<((String, String), u64)>,
    pub process: Option<ProcessFacts>,
    /// `(queue name, items waiting)`: the server's internal queues, where a
    /// backlog shows before latency does.
    pub queues: Vec<(&'static str, usize)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClusterFacts {
    pub site: String,
    pub vrid: u64,
    /// The cluster's networks, comma-separated (most clusters have one).
    pub network: String,
    pub health: String,
    /// Live members (online and reporting) in MASTER.
    pub masters: u64,
    /// Members by their instance's state; members that are not live count as `OFFLINE`.
    pub members: BTreeMap<String, u64>,
    /// The readiness verdict is `ready`.
    pub ready: bool,
    /// Every readiness check by name: 1 when it failed (a finding), else 0.
    pub readiness_findings: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ClientFacts {
    pub client_id: String,
    pub host: String,
    pub site: String,
    pub online: bool,
    /// Seconds since the last reading was received; `None` without a reading.
    pub reading_age_seconds: Option<f64>,
    pub keepalived_running: bool,
    /// The last reading's instances, only while the agent is online and its
    /// reading readable: a stale state must not count as a master.
    pub instances: Vec<InstanceFacts>,
    /// The track scripts of those instances, once per script name (keepalived
    /// runs a `vrrp_script` once however many instances track it), under the
    /// same rule as `instances`.
    pub scripts: BTreeMap<String, ScriptFacts>,
}

/// One track script as the reading's `tracked` items tell it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScriptFacts {
    /// keepalived's `Status` word (`GOOD`, `BAD`, ...).
    pub status: Option<String>,
    /// keepalived's `State` of the script's run (`idle`, `running`, ...), when
    /// the reading carries it.
    pub state: Option<String>,
}

/// keepalived-exporter's values for `keepalived_script_status`: the index in
/// its list `BAD`, `GOOD`; another word has no sample (the exporter logs it).
pub fn script_status_number(status: &str) -> Option<f64> {
    match status {
        "BAD" => Some(0.0),
        "GOOD" => Some(1.0),
        _ => None,
    }
}

/// keepalived-exporter's values for `keepalived_script_state`: the index in its
/// list `idle`, `running`, `requested termination`, `forcing termination`.
pub fn script_state_number(state: &str) -> Option<f64> {
    match state {
        "idle" => Some(0.0),
        "running" => Some(1.0),
        "requested termination" => Some(2.0),
        "forcing termination" => Some(3.0),
        _ => None,
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct InstanceFacts {
    pub name: String,
    pub interface: String,
    pub vrid: Option<u64>,
    pub state: String,
    pub priority: Option<u64>,
    pub effective_priority: Option<u64>,
    pub vips: Vec<String>,
    /// keepalived's `virtual_ipaddress_excluded` (the reading's optional `excludedVips`).
    pub excluded_vips: Vec<String>,
    pub stats: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProcessFacts {
    pub resident_memory_bytes: u64,
    pub threads: u64,
    pub open_fds: u64,
    pub max_fds: Option<u64>,
}

/// The dashboard's health words, in the order the one-hot series are written.
pub const HEALTHS: [&str; 6] = [
    "ok",
    "degraded",
    "vip-mismatch",
    "no-master",
    "split-brain",
    "unknown",
];

/// Our counter keys (the agent's, from either dump) → keepalived-exporter's names.
pub const INSTANCE_COUNTERS: [(&str, &str, &str); 14] = [
    (
        "advertisements_received",
        "keepalived_advertisements_received_total",
        "Advertisements received.",
    ),
    (
        "advertisements_sent",
        "keepalived_advertisements_sent_total",
        "Advertisements sent.",
    ),
    (
        "became_master",
        "keepalived_become_master_total",
        "Times the instance became master.",
    ),
    (
        "released_master",
        "keepalived_release_master_total",
        "Times the instance released master.",
    ),
    (
        "packet_errors_length",
        "keepalived_packet_length_errors_total",
        "Packet length errors.",
    ),
    (
        "packet_errors_advertisement_interval",
        "keepalived_advertisements_interval_errors_total",
        "Advertisement interval errors.",
    ),
    (
        "packet_errors_ttl",
        "keepalived_ip_ttl_errors_total",
        "TTL errors.",
    ),
    (
        "packet_errors_invalid_type",
        "keepalived_invalid_type_received_total",
        "Invalid type errors.",
    ),
    (
        "packet_errors_address_list",
        "keepalived_address_list_errors_total",
        "Address list errors.",
    ),
    (
        "authentication_errors_invalid_type",
        "keepalived_authentication_invalid_total",
        "Invalid authentication type.",
    ),
    (
        "authentication_errors_type_mismatch",
        "keepalived_authentication_mismatch_total",
        "Authentication type mismatch.",
    ),
    (
        "authentication_errors_failure",
        "keepalived_authentication_failure_total",
        "Authentication failures.",
    ),
    (
        "priority_zero_received",
        "keepalived_priority_zero_received_total",
        "Priority zero advertisements received.",
    ),
    (
        "priority_zero_sent",
        "keepalived_priority_zero_sent_total",
        "Priority zero advertisements sent.",
    ),
];

/// keepalived's own numbers for its states (`vrrp.h`), as keepalived-exporter
/// reports them; -1 for a state word we do not know.
pub fn state_number(state: &str) -> f64 {
    match state {
        "INIT" => 0.0,
        "BACKUP" => 1.0,
        "MASTER" => 2.0,
        "FAULT" => 3.0,
        "DELETED" => 97.0,
        "STOP" => 98.0,
        _ => -1.0,
    }
}

impl ClusterFacts {
    /// From a cluster's parts: its members as (live, state), and its readiness
    /// checks as (check, failed).
    pub fn new<'a>(
        site: &str,
        vrid: u64,
        networks: &[String],
        health: &str,
        members: impl IntoIterator<Item = (bool, &'a str)>,
        ready: bool,
        checks: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> ClusterFacts {
        let mut counted = BTreeMap::new();
        let mut masters = 0;
        for (live, state) in members {
            if live && state == "MASTER" {
                masters += 1;
            }
            let label = if live { state } else { "OFFLINE" };
            *counted.entry(label.to_owned()).or_insert(0) += 1;
        }
        ClusterFacts {
            site: site.to_owned(),
            vrid,
            network: networks.join(","),
            health: health.to_owned(),
            masters,
            members: counted,
            ready,
            // Every check the cluster lists, so that a series exists (at 0)
            // before its first finding.
            readiness_findings: checks
                .into_iter()
                .map(|(check, failed)| (check.to_owned(), u64::from(failed)))
                .collect(),
        }
    }
}

/// A client as a scrape names it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ClientLine {
    pub id: String,
    /// Display name, else hostname.
    pub name: String,
    pub site: String,
    pub online: bool,
}

impl ClientFacts {
    /// From a client and its stored reading.
    pub fn new(client: ClientLine, reading: Option<&Reading>, now: DateTime<Utc>) -> ClientFacts {
        let received = reading
            .and_then(|r| r.received_at.as_deref())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok());
        let running = reading.is_some_and(|r| r.running);
        // Only while the agent is online and its reading readable: a stale
        // state must not count as a master.
        let shown = reading.filter(|r| client.online && r.running && r.error.is_none());
        let instances = shown
            .map(|r| r.instances.iter().map(InstanceFacts::new).collect())
            .unwrap_or_default();
        let mut scripts = BTreeMap::new();
        let tracked = shown
            .into_iter()
            .flat_map(|r| &r.instances)
            .flat_map(|i| &i.tracked);
        for t in tracked.filter(|t| t.kind == TrackedKind::Script) {
            scripts.insert(
                t.name.clone(),
                ScriptFacts {
                    status: t.status.clone(),
                    state: t.state.clone(),
                },
            );
        }
        ClientFacts {
            client_id: client.id,
            host: client.name,
            site: client.site,
            online: client.online,
            reading_age_seconds: received.map(|t| {
                ((now - t.with_timezone(&Utc)).num_milliseconds() as f64 / 1000.0).max(0.0)
            }),
            keepalived_running: running,
            instances,
            scripts,
        }
    }
}

impl InstanceFacts {
    pub fn new(i: &VrrpInstance) -> InstanceFacts {
        InstanceFacts {
            name: i.name.clone(),
            interface: i.interface.clone().unwrap_or_default(),
            vrid: i.vrid.map(u64::from),
            state: i.state.as_str().to_owned(),
            priority: i.priority.map(u64::from),
            effective_priority: i.effective_priority.map(u64::from),
            vips: i.vips.clone(),
            excluded_vips: i.excluded_vips.clone(),
            stats: i.stats.clone().unwrap_or_default(),
        }
    }
}

/// One metric family: written as HELP, TYPE and its samples, or not at all when
/// it has no samples.
struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    samples: Vec<(String, f64)>,
}

impl Family {
    fn new(name: &'static str, kind: &'static str, help: &'static str) -> Family {
        Family {
            name,
            help,
            kind,
            samples: Vec::new(),
        }
    }

    fn add(&mut self, labels: &[(&str, &str)], value: f64) {
        self.samples.push((label_set(labels), value));
    }

    fn write(&self, out: &mut String) {
        if self.samples.is_empty() {
            return;
        }
        let _ = writeln!(out, "# HELP {} {}", self.name, self.help);
        let _ = writeln!(out, "# TYPE {} {}", self.name, self.kind);
        for (labels, value) in &self.samples {
            let _ = writeln!(out, "{}{} {}", self.name, labels, number(*value));
        }
    }
}

fn label_set(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// Label values escape backslash, double quote and line feed (format 0.0.4).
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A VIP as the reading gives it (`192.0.2.100/24`, or keepalived's JSON form
/// `192.0.2.100/24 dev eth0 scope global`): (address without prefix, interface).
fn split_vip<'a>(vip: &'a str, default_intf: &'a str) -> (&'a str, &'a str) {
    let mut words = vip.split_whitespace();
    let address = words.next().unwrap_or("");
    let address = address.split('/').next().unwrap_or(address);
    let mut intf = default_intf;
    while let Some(w) = words.next() {
        if w == "dev" {
            intf = words.next().unwrap_or(default_intf);
        }
    }
    (address, intf)
}

#[cfg(test)]
pub(super) fn split_vip_for_tests<'a>(vip: &'a str, intf: &'a str) -> (&'a str, &'a str) {
    split_vip(vip, intf)
}

/// The exposition text for one scrape.
/// The heartbeat's family: when the heartbeat URL last took a beat,
/// in Unix seconds; left out while none succeeded (switched off, or failing
/// since start), so an alert on its age also fires on its absence.
pub fn render_heartbeat(last_success: Option<f64>) -> String {
    let mut family = Family::new(
        "vrrp_monitor_heartbeat_last_success_timestamp_seconds",
        "gauge",
        "When the heartbeat URL last answered a beat with 2xx (Unix seconds).",
    );
    if let Some(t) = last_success {
        family.add(&[], t);
    }
    let mut out = String::new();
    family.write(&mut out);
    out
}

pub fn render(s: &Snapshot) -> String {
    let mut health = Family::new("vrrp_cluster_health", "gauge", "1 for the cluster's current health, 0 for the others (ok, degraded, vip-mismatch, no-master, split-brain, unknown).");
    let mut masters = Family::new(
        "vrrp_cluster_masters",
        "gauge",
        "Live members of the cluster in MASTER.",
    );
    let mut members = Family::new("vrrp_cluster_members", "gauge", "Members of the cluster by state; members whose agent is offline or not reporting count as OFFLINE.");
    let mut ready = Family::new(
        "vrrp_monitor_cluster_ready",
        "gauge",
        "1 when the cluster's readiness verdict is ready (a failover would work now), else 0.",
    );
    let mut readiness_findings = Family::new(
        "vrrp_monitor_cluster_readiness_findings",
        "gauge",
        "Findings of the cluster's readiness check `check` (1 when it failed, else 0).",
    );
    for c in &s.clusters {
        let vrid = c.vrid.to_string();
        let base = [
            ("site", c.site.as_str()),
            ("vrid", &vrid),
            ("network", &c.network),
        ];
        for h in HEALTHS {
            let mut l = base.to_vec();
            l.push(("health", h));
            health.add(&l, if c.health == h { 1.0 } else { 0.0 });
        }
        masters.add(&base, c.masters as f64);
        ready.add(&base, if c.ready { 1.0 } else { 0.0 });
        for (check, n) in &c.readiness_findings {
            let mut l = base.to_vec();
            l.push(("check", check));
            readiness_findings.add(&l, *n as f64);
        }
        for (state, n) in &c.members {
            let mut l = base.to_vec();
            l.push(("state", state));
            members.add(&l, *n as f64);
        }
    }

    let mut up = Family::new(
        "vrrp_agent_up",
        "gauge",
        "1 while the host's agent is connected.",
    );
    let mut age = Family::new(
        "vrrp_agent_reading_age_seconds",
        "gauge",
        "Seconds since the host's last reading was received.",
    );
    let mut running = Family::new(
        "vrrp_keepalived_running",
        "gauge",
        "1 when the host's last reading found keepalived running.",
    );
    let mut ka_up = Family::new("keepalived_up", "gauge", "keepalived-exporter's keepalived_up: 1 when the host's agent is connected and its last reading found keepalived readable.");
    let mut state = Family::new("keepalived_vrrp_state", "gauge", "State of the VRRP instance (0 INIT, 1 BACKUP, 2 MASTER, 3 FAULT, 97 DELETED, 98 STOP, -1 unknown), one series per VIP.");
    let mut excluded = Family::new("keepalived_vrrp_excluded_state", "gauge", "State of the VRRP instance (as keepalived_vrrp_state), one series per excluded VIP (virtual_ipaddress_excluded).");
    let mut priority = Family::new(
        "vrrp_instance_priority",
        "gauge",
        "Configured priority of the VRRP instance.",
    );
    let mut effective = Family::new(
        "vrrp_instance_effective_priority",
        "gauge",
        "Effective priority of the VRRP instance (after track scripts and interfaces).",
    );
    let mut script_status = Family::new(
        "keepalived_script_status",
        "gauge",
        "keepalived-exporter's keepalived_script_status: a track script's status (0 BAD, 1 GOOD).",
    );
    let mut script_state = Family::new("keepalived_script_state", "gauge", "keepalived-exporter's keepalived_script_state: a track script's run state (0 idle, 1 running, 2 requested termination, 3 forcing termination).");
    let mut counters: Vec<Family> = INSTANCE_COUNTERS
        .iter()
        .map(|(_, name, help)| Family::new(name, "counter", help))
        .collect();
    for c in &s.clients {
        let base = [
            ("client_id", c.client_id.as_str()),
            ("host", &c.host),
            ("site", &c.site),
        ];
        up.add(&base, if c.online { 1.0 } else { 0.0 });
        if let Some(a) = c.reading_age_seconds {
            age.add(&base, a);
        }
        running.add(&base, if c.keepalived_running { 1.0 } else { 0.0 });
        let readable = c.online && c.keepalived_running;
        ka_up.add(&[("host", &c.host)], if readable { 1.0 } else { 0.0 });
        for (name, script) in &c.scripts {
            let labels = [("host", c.host.as_str()), ("name", name)];
            if let Some(v) = script.status.as_deref().and_then(script_status_number) {
                script_status.add(&labels, v);
            }
            if let Some(v) = script.state.as_deref().and_then(script_state_number) {
                script_state.add(&labels, v);
            }
        }
        for i in &c.instances {
            let vrid = i.vrid.map(|v| v.to_string()).unwrap_or_default();
            let common = [
                ("host", c.host.as_str()),
                ("iname", &i.name),
                ("intf", &i.interface),
                ("vrid", &vrid),
            ];
            let value = state_number(&i.state);
            if i.vips.is_empty() {
                let mut l = common.to_vec();
                l.push(("ip_address", ""));
                state.add(&l, value);
            }
            for (family, list) in [(&mut state, &i.vips), (&mut excluded, &i.excluded_vips)] {
                for vip in list {
                    let (address, intf) = split_vip(vip, &i.interface);
                    family.add(
                        &[
                            ("host", &c.host),
                            ("iname", &i.name),
                            ("intf", intf),
                            ("vrid", &vrid),
                            ("ip_address", address),
                        ],
                        value,
                    );
                }
            }
            if let Some(p) = i.priority {
                priority.add(&common, p as f64);
            }
            if let Some(p) = i.effective_priority {
                effective.add(&common, p as f64);
            }
            for (family, (key, _, _)) in counters.iter_mut().zip(INSTANCE_COUNTERS.iter()) {
                if let Some(n) = i.stats.get(*key) {
                    family.add(&common, *n as f64);
                }
            }
        }
    }

    let mut incidents = Family::new(
        "vrrp_incidents_open",
        "gauge",
        "Clusters with an open incident.",
    );
    incidents.add(&[], s.incidents_open as f64);
    let mut activity = Family::new(
        "vrrp_activity_events_total",
        "counter",
        "Activity events stored since the server started.",
    );
    for ((kind, level), n) in &s.activity {
        activity.add(&[("kind", kind), ("level", level)], *n as f64);
    }
    let mut webhooks = Family::new(
        "vrrp_webhook_deliveries_total",
        "counter",
        "Webhook deliveries since the server started, by outcome (delivered, failed, dropped).",
    );
    for ((hook, outcome), n) in &s.webhooks {
        webhooks.add(&[("webhook", hook), ("outcome", outcome)], *n as f64);
    }
    let mut rss = Family::new(
        "process_resident_memory_bytes",
        "gauge",
        "Resident memory size in bytes.",
    );
    let mut threads = Family::new("process_threads", "gauge", "Threads of the server process.");
    let mut fds = Family::new("process_open_fds", "gauge", "Open file descriptors.");
    let mut max_fds = Family::new(
        "process_max_fds",
        "gauge",
        "Limit on open file descriptors.",
    );
    let mut queues = Family::new(
        "vrrp_monitor_queue_length",
        "gauge",
        "Items waiting in an internal queue (sqlite-writer: write jobs; cluster-eval: readings and requests).",
    );
    for (queue, n) in &s.queues {
        queues.add(&[("queue", queue)], *n as f64);
    }
    if let Some(p) = &s.process {
        rss.add(&[], p.resident_memory_bytes as f64);
        threads.add(&[], p.threads as f64);
        fds.add(&[], p.open_fds as f64);
        if let Some(m) = p.max_fds {
            max_fds.add(&[], m as f64);
        }
    }

    let mut out = String::new();
    let families = [
        health,
        masters,
        members,
        ready,
        readiness_findings,
        up,
        age,
        running,
        ka_up,
        state,
        excluded,
        priority,
        effective,
        script_status,
        script_state,
    ]
    .into_iter()
    .chain(counters)
    .chain([
        incidents, activity, webhooks, queues, rss, threads, fds, max_fds,
    ]);
    for f in families {
        f.write(&mut out);
    }
    out
}
