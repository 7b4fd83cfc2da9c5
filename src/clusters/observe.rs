//! What can be said about a cluster at one moment: its roles, its incident
//! health and the findings behind it. Pure; the evaluator that confirms changes
//! over time and turns them into events builds on [`observe`].
//!
//! Incident health differs from the dashboard's: it looks only at members whose
//! agent is connected, and it can decline to say anything (an offline member
//! last reported MASTER: it may still be master).

use crate::activity::messages::{and_list, in_fault};
use crate::clusters::{vips_of, Cluster, Member};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// Who is master among the live members. Persisted (in the confirmed state) as
/// `{"kind": "one", "ids": [id]}`: [`RolesRow`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "RolesRow", try_from = "RolesRow")]
pub enum Roles {
    /// No member is live: nothing can be said about the roles.
    Unknown,
    /// Live members exist, none is MASTER.
    None,
    /// Exactly one live MASTER (its client id).
    One(String),
    /// More than one live MASTER (their client ids, sorted).
    Several(Vec<String>),
}

/// The stored shape of [`Roles`]: a kind and the master ids it names.
#[derive(Serialize, Deserialize)]
struct RolesRow {
    kind: RolesKind,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ids: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RolesKind {
    Unknown,
    None,
    One,
    Several,
}

impl From<Roles> for RolesRow {
    fn from(r: Roles) -> RolesRow {
        let (kind, ids) = match r {
            Roles::Unknown => (RolesKind::Unknown, Vec::new()),
            Roles::None => (RolesKind::None, Vec::new()),
            Roles::One(id) => (RolesKind::One, vec![id]),
            Roles::Several(ids) => (RolesKind::Several, ids),
        };
        RolesRow { kind, ids }
    }
}

impl TryFrom<RolesRow> for Roles {
    type Error = &'static str;
    fn try_from(r: RolesRow) -> Result<Roles, Self::Error> {
        Ok(match r.kind {
            RolesKind::Unknown => Roles::Unknown,
            RolesKind::None => Roles::None,
            RolesKind::One => Roles::One(r.ids.into_iter().next().ok_or("one master, no id")?),
            RolesKind::Several => Roles::Several(r.ids),
        })
    }
}

/// Incident health, first matching row of the spec's table wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IncidentHealth {
    Unreachable,
    SplitBrain,
    /// No live MASTER while an offline member last reported MASTER: no statement.
    NoStatement,
    NoMaster,
    VipMismatch,
    Degraded,
    Ok,
}

impl IncidentHealth {
    pub fn as_str(self) -> Option<&'static str> {
        Some(match self {
            IncidentHealth::Unreachable => "unreachable",
            IncidentHealth::SplitBrain => "split-brain",
            IncidentHealth::NoStatement => return None,
            IncidentHealth::NoMaster => "no-master",
            IncidentHealth::VipMismatch => "vip-mismatch",
            IncidentHealth::Degraded => "degraded",
            IncidentHealth::Ok => "ok",
        })
    }
}

/// One reason behind an incident (`data.incident.reasons[]`, with its sentence:
/// [`Reason`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Finding {
    Unreachable {
        hosts: Vec<String>,
    },
    SplitBrain {
        hosts: Vec<String>,
    },
    NoMaster,
    NotReporting {
        host: String,
        last_state: String,
    },
    /// `causes`: the member's `faultCauses` as its reading carries them (a list,
    /// possibly empty); the text names them, so a cause that changes while the
    /// host stays in FAULT is a new finding.
    Fault {
        host: String,
        // A reason persisted before causes were known reads as none reported.
        #[serde(default = "no_causes", deserialize_with = "causes_list")]
        causes: Value,
    },
    VipMismatch {
        host: String,
        missing: Vec<String>,
    },
    SingleMember,
}

impl Finding {
    /// What makes two findings the same finding: a host's last state changing
    /// while keepalived does not report there is not a new finding.
    pub fn identity(&self) -> String {
        match self {
            Finding::NotReporting { host, .. } => format!("not-reporting:{host}"),
            other => other.text(),
        }
    }

    pub fn text(&self) -> String {
        match self {
            Finding::Unreachable { hosts } => format!(
                "No agent of the cluster is connected ({}).",
                hosts.join(", ")
            ),
            Finding::SplitBrain { hosts } => format!(
                "{} are {} MASTER at once (split brain).",
                and_list(hosts),
                if hosts.len() == 2 { "both" } else { "all" }
            ),
            Finding::NoMaster => "No host is MASTER.".to_owned(),
            Finding::NotReporting { host, last_state } => {
                format!("keepalived on {host} is not reporting; its last state was {last_state}.")
            }
            Finding::Fault { host, causes } => in_fault(host, causes),
            Finding::VipMismatch { host, missing } => {
                format!("{host} lacks the virtual addresses {}.", missing.join(", "))
            }
            Finding::SingleMember => {
                "The cluster has a single host: there is no backup.".to_owned()
            }
        }
    }

    /// The reason as `data.incident.reasons[]` carries it.
    pub fn reason(&self) -> Reason<'_> {
        Reason {
            finding: self,
            text: self.text(),
        }
    }
}

/// A finding as `data.incident.reasons[]` carries it: its fields and `text`.
#[derive(Debug, Serialize)]
pub struct Reason<'a> {
    #[serde(flatten)]
    pub finding: &'a Finding,
    pub text: String,
}

fn no_causes() -> Value {
    Value::Array(Vec::new())
}

/// `causes` as stored; anything but a list reads as none reported.
fn causes_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(if v.is_array() { v } else { no_causes() })
}

impl IncidentHealth {
    pub fn parse(s: &str) -> Option<IncidentHealth> {
        Some(match s {
            "unreachable" => IncidentHealth::Unreachable,
            "split-brain" => IncidentHealth::SplitBrain,
            "no-master" => IncidentHealth::NoMaster,
            "vip-mismatch" => IncidentHealth::VipMismatch,
            "degraded" => IncidentHealth::Degraded,
            "ok" => IncidentHealth::Ok,
            _ => return None,
        })
    }
}

/// What can be said about a cluster now.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub roles: Roles,
    pub health: IncidentHealth,
    pub findings: Vec<Finding>,
}

fn hosts(members: &[&Member]) -> Vec<String> {
    let set: BTreeSet<String> = members.iter().map(|m| m.host.clone()).collect();
    set.into_iter().collect()
}

/// Roles, incident health and findings of a cluster at this moment.
pub fn observe(cluster: &Cluster) -> Observed {
    let members = &cluster.members;
    let connected: Vec<&Member> = members.iter().filter(|m| m.online).collect();
    let live: Vec<&Member> = connected.iter().copied().filter(|m| m.reporting).collect();
    let masters: Vec<&Member> = live
        .iter()
        .copied()
        .filter(|m| m.state() == "MASTER")
        .collect();
    let roles = match (live.is_empty(), masters.len()) {
        (true, _) => Roles::Unknown,
        (false, 0) => Roles::None,
        (false, 1) => Roles::One(masters[0].client_id.clone()),
        _ => {
            let mut ids: Vec<String> = masters.iter().map(|m| m.client_id.clone()).collect();
            ids.sort();
            Roles::Several(ids)
        }
    };

    if connected.is_empty() {
        let findings = vec![Finding::Unreachable {
            hosts: hosts(&members.iter().collect::<Vec<_>>()),
        }];
        return Observed {
            roles,
            health: IncidentHealth::Unreachable,
            findings,
        };
    }

    // Every finding that holds among the connected members (counted over every
    // member for a cluster of one host), in the order of the reasons table.
    let mut findings = Vec::new();
    if masters.len() > 1 {
        findings.push(Finding::SplitBrain {
            hosts: hosts(&masters),
        });
    }
    let offline_master = members.iter().any(|m| !m.online && m.state() == "MASTER");
    // Connected members are there (else unreachable above); the health is
    // no-master whether or not keepalived reports anywhere, and so is the reason.
    if masters.is_empty() && !offline_master {
        findings.push(Finding::NoMaster);
    }
    for m in &connected {
        if !m.reporting {
            findings.push(Finding::NotReporting {
                host: m.host.clone(),
                last_state: m.state().to_owned(),
            });
        }
    }
    for m in &live {
        if m.state() == "FAULT" {
            findings.push(Finding::Fault {
                host: m.host.clone(),
                causes: m
                    .instance
                    .fault_causes
                    .as_ref()
                    .and_then(|c| serde_json::to_value(c).ok())
                    .unwrap_or_else(no_causes),
            });
        }
    }
    let union: BTreeSet<String> = connected
        .iter()
        .flat_map(|m| vips_of(&m.instance))
        .collect();
    for m in &connected {
        let own: BTreeSet<String> = vips_of(&m.instance).into_iter().collect();
        let missing: Vec<String> = union.difference(&own).cloned().collect();
        if !missing.is_empty() {
            findings.push(Finding::VipMismatch {
                host: m.host.clone(),
                missing,
            });
        }
    }
    if members.len() == 1 {
        findings.push(Finding::SingleMember);
    }

    let has = |f: fn(&Finding) -> bool| findings.iter().any(f);
    let health = if masters.len() > 1 {
        IncidentHealth::SplitBrain
    } else if masters.is_empty() && offline_master {
        IncidentHealth::NoStatement
    } else if masters.is_empty() {
        IncidentHealth::NoMaster
    } else if has(|f| matches!(f, Finding::VipMismatch { .. })) {
        IncidentHealth::VipMismatch
    } else if has(|f| {
        matches!(
            f,
            Finding::NotReporting { .. } | Finding::Fault { .. } | Finding::SingleMember
        )
    }) {
        IncidentHealth::Degraded
    } else {
        IncidentHealth::Ok
    };
    Observed {
        roles,
        health,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reason(f: &Finding) -> Value {
        serde_json::to_value(f.reason()).expect("a reason serialises")
    }

    fn read_back(v: &Value) -> Option<Finding> {
        serde_json::from_value(v.clone()).ok()
    }
    use crate::clusters::{group, HostView};

    const V: &[&str] = &["192.0.2.100/24"];

    /// (host, online, reporting, state, vips)
    fn cluster(members: &[(&str, bool, bool, &str, &[&str])]) -> Cluster {
        let hosts: Vec<HostView> = members
            .iter()
            .map(|(h, online, reporting, state, vips)| HostView {
                client_id: format!("id-{h}"),
                site: None,
                host: (*h).to_owned(),
                online: *online,
                readable: *reporting,
                instances: vec![serde_json::from_value(json!({ "name": "VI_1", "vrid": 51, "state": state, "vips": if vips.is_empty() { json!(["192.0.2.100"]) } else { json!(vips) } })).expect("an instance")],
                read_at: None,
                drain: None,
            })
            .collect();
        // Same network throughout, so these form one cluster whatever the addresses.
        let mut clusters = group(&hosts);
        assert_eq!(clusters.len(), 1, "test members must form one cluster");
        clusters.remove(0)
    }

    fn health(members: &[(&str, bool, bool, &str, &[&str])]) -> IncidentHealth {
        observe(&cluster(members)).health
    }

    #[test]
    fn every_row_of_the_incident_health_table() {
        use IncidentHealth::*;
        assert_eq!(
            health(&[
                ("a", false, true, "MASTER", V),
                ("b", false, true, "BACKUP", V)
            ]),
            Unreachable
        );
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "MASTER", V)
            ]),
            SplitBrain
        );
        assert_eq!(
            health(&[
                ("a", false, true, "MASTER", V),
                ("b", true, true, "BACKUP", V)
            ]),
            NoStatement,
            "the offline host may still be master"
        );
        assert_eq!(
            health(&[
                ("a", false, true, "BACKUP", V),
                ("b", true, true, "BACKUP", V)
            ]),
            NoMaster
        );
        // keepalived stopped on every connected host: no live MASTER either, and the
        // reasons say so besides naming the silent hosts.
        let stopped = observe(&cluster(&[
            ("a", true, false, "MASTER", V),
            ("b", true, false, "BACKUP", V),
        ]));
        assert_eq!(stopped.health, NoMaster);
        assert!(stopped.findings.contains(&Finding::NoMaster));
        assert_eq!(stopped.findings.len(), 3, "{:?}", stopped.findings);
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "BACKUP", &["192.0.2.101/24"])
            ]),
            VipMismatch
        );
        // An offline agent does not count, unlike on the dashboard.
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "BACKUP", V),
                ("c", false, true, "BACKUP", &["192.0.2.102/24"])
            ]),
            Ok
        );
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, false, "BACKUP", V)
            ]),
            Degraded,
            "keepalived not reporting"
        );
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "FAULT", V)
            ]),
            Degraded,
            "a member in FAULT"
        );
        assert_eq!(
            health(&[("a", true, true, "MASTER", V)]),
            Degraded,
            "a cluster of one host"
        );
        assert_eq!(
            health(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "BACKUP", V)
            ]),
            Ok
        );
    }

    #[test]
    fn roles() {
        let o = |m: &[(&str, bool, bool, &str, &[&str])]| observe(&cluster(m)).roles;
        assert_eq!(
            o(&[
                ("a", false, true, "MASTER", V),
                ("b", true, false, "BACKUP", V)
            ]),
            Roles::Unknown
        );
        assert_eq!(
            o(&[
                ("a", true, true, "BACKUP", V),
                ("b", true, true, "FAULT", V)
            ]),
            Roles::None
        );
        assert_eq!(
            o(&[
                ("a", true, true, "MASTER", V),
                ("b", true, true, "BACKUP", V)
            ]),
            Roles::One("id-a".into())
        );
        assert_eq!(
            o(&[
                ("b", true, true, "MASTER", V),
                ("a", true, true, "MASTER", V)
            ]),
            Roles::Several(vec!["id-a".into(), "id-b".into()])
        );
    }

    #[test]
    fn findings_and_their_reasons() {
        let seen = observe(&cluster(&[
            ("a", true, true, "MASTER", V),
            ("b", true, true, "FAULT", V),
            ("c", true, true, "FAULT", V),
            ("d", true, false, "BACKUP", V),
        ]));
        assert_eq!(seen.health, IncidentHealth::Degraded);
        let types: Vec<String> = seen
            .findings
            .iter()
            .map(|f| reason(f)["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            types,
            ["not-reporting", "fault", "fault"],
            "a second host in FAULT is its own finding"
        );
        let nr = reason(&seen.findings[0]);
        assert_eq!(
            (nr["host"].as_str(), nr["lastState"].as_str()),
            (Some("d"), Some("BACKUP"))
        );
        assert!(nr["text"].as_str().unwrap().contains("not reporting"));

        let split = observe(&cluster(&[
            ("a", true, true, "MASTER", V),
            ("b", true, true, "MASTER", V),
        ]));
        assert_eq!(
            reason(&split.findings[0]),
            json!({ "type": "split-brain", "text": "a and b are both MASTER at once (split brain).", "hosts": ["a", "b"] })
        );

        let mismatch = observe(&cluster(&[
            (
                "a",
                true,
                true,
                "MASTER",
                &["192.0.2.100/24", "192.0.2.101/24"],
            ),
            ("b", true, true, "BACKUP", V),
        ]));
        assert_eq!(
            reason(&mismatch.findings[0])["missing"],
            json!(["192.0.2.101/24"])
        );
        assert_eq!(reason(&mismatch.findings[0])["host"], "b");

        let gone = observe(&cluster(&[
            ("a", false, true, "MASTER", V),
            ("b", false, true, "BACKUP", V),
        ]));
        assert_eq!(
            gone.findings,
            vec![Finding::Unreachable {
                hosts: vec!["a".into(), "b".into()]
            }]
        );

        let alone = observe(&cluster(&[("a", true, true, "MASTER", V)]));
        assert_eq!(alone.findings, vec![Finding::SingleMember]);

        let lost = observe(&cluster(&[
            ("a", true, true, "BACKUP", V),
            ("b", true, true, "BACKUP", V),
        ]));
        assert_eq!(lost.findings, vec![Finding::NoMaster]);
    }

    #[test]
    fn a_last_state_changing_where_keepalived_is_silent_is_the_same_finding() {
        let a = Finding::NotReporting {
            host: "h".into(),
            last_state: "MASTER".into(),
        };
        let b = Finding::NotReporting {
            host: "h".into(),
            last_state: "BACKUP".into(),
        };
        assert_eq!(a.identity(), b.identity());
        assert_ne!(a.text(), b.text());
        assert_ne!(
            Finding::Fault {
                host: "h".into(),
                causes: json!([])
            }
            .identity(),
            Finding::Fault {
                host: "i".into(),
                causes: json!([])
            }
            .identity()
        );
        let script = Finding::Fault {
            host: "h2".into(),
            causes: json!([{ "kind": "script", "name": "chk_lab", "status": "BAD" }]),
        };
        assert_eq!(
            script.text(),
            "h2 is in FAULT: track script chk_lab failed."
        );
        assert_ne!(
            script.identity(),
            Finding::Fault {
                host: "h2".into(),
                causes: json!([])
            }
            .identity(),
            "another cause is another finding"
        );
        assert_eq!(read_back(&reason(&script)), Some(script));
        assert_eq!(
            read_back(&json!({ "type": "fault", "host": "h", "text": "h is in FAULT." }))
                .map(|f| f.text()),
            Some("h is in FAULT; keepalived reports no cause.".to_owned())
        );
    }
}
