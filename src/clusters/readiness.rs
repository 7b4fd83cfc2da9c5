//! Would a failover work now? The readiness of one cluster, judged from its
//! members as they report now: every check with its outcome (pass, fail, or
//! unknown and why), the findings of the failed ones, and the verdict.
//!
//! Pure: a function of the members ([`judge`]); the evaluator confirms a change
//! of verdict like any other cluster change (`confirm`), and the API, the
//! dashboard, the metrics and the events read what this returns.
//!
//! Rules that hold for every check:
//! - only live members count (agent connected, keepalived read now): what an
//!   offline member last said is not its configuration now;
//! - missing data never makes a finding: a member that cannot feed a check (an
//!   older agent, a password keepalived masks) makes the check unknown, and the
//!   check says why, unless the members that can feed it already disagree;
//! - every sentence names the hosts and the values, so it reads on its own in
//!   an event, a webhook or a page.

use crate::activity::messages::and_list;
use crate::clusters::member::Member;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The checks, in the order the dashboard lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    NoReadyBackup,
    BackupHearsOtherMaster,
    AdvertIntervalMismatch,
    VersionMismatch,
    AuthMismatch,
    VipMismatch,
    UnicastMismatch,
    PriorityTie,
    ConfigFaults,
}

impl Check {
    pub const ALL: [Check; 9] = [
        Check::NoReadyBackup,
        Check::BackupHearsOtherMaster,
        Check::AdvertIntervalMismatch,
        Check::VersionMismatch,
        Check::AuthMismatch,
        Check::VipMismatch,
        Check::UnicastMismatch,
        Check::PriorityTie,
        Check::ConfigFaults,
    ];

    /// The check's name as the API, the metrics and the templates write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Check::NoReadyBackup => "no_ready_backup",
            Check::BackupHearsOtherMaster => "backup_hears_other_master",
            Check::AdvertIntervalMismatch => "advert_interval_mismatch",
            Check::VersionMismatch => "version_mismatch",
            Check::AuthMismatch => "auth_mismatch",
            Check::VipMismatch => "vip_mismatch",
            Check::UnicastMismatch => "unicast_mismatch",
            Check::PriorityTie => "priority_tie",
            Check::ConfigFaults => "config_faults",
        }
    }

    pub fn severity(self) -> Severity {
        match self {
            Check::PriorityTie | Check::ConfigFaults => Severity::Warning,
            _ => Severity::Blocking,
        }
    }

    /// What the check asks, for the dashboard's list.
    pub fn question(self) -> &'static str {
        match self {
            Check::NoReadyBackup => "A backup is ready to take over",
            Check::BackupHearsOtherMaster => "Every backup hears the master",
            Check::AdvertIntervalMismatch => "Every member advertises at the same interval",
            Check::VersionMismatch => "Every member speaks the same VRRP version",
            Check::AuthMismatch => "Every member authenticates the same way",
            Check::VipMismatch => "Every member has the same virtual addresses",
            Check::UnicastMismatch => "Unicast members name each other",
            Check::PriorityTie => "No two members share a priority",
            Check::ConfigFaults => "keepalived counts no configuration faults",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Blocking,
    Warning,
}

/// Worst last, so that `max` of the verdicts of a list is the worst.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Unknown,
    Ready,
    AtRisk,
    NotReady,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ready => "ready",
            Verdict::AtRisk => "at_risk",
            Verdict::NotReady => "not_ready",
            Verdict::Unknown => "unknown",
        }
    }

    /// How good the verdict is, for telling a change for the better from one for
    /// the worse (unknown is neither good nor bad: it ranks with ready).
    pub fn rank(self) -> u8 {
        match self {
            Verdict::Ready | Verdict::Unknown => 0,
            Verdict::AtRisk => 1,
            Verdict::NotReady => 2,
        }
    }

    /// In words, for sentences: "ready for a failover".
    pub fn words(self) -> &'static str {
        match self {
            Verdict::Ready => "ready for a failover",
            Verdict::AtRisk => "at risk",
            Verdict::NotReady => "not ready for a failover",
            Verdict::Unknown => "of unknown readiness",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pass,
    Fail,
    Unknown,
}

/// One check's outcome, with its sentence: what failed, what passed, or why it
/// could not be judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    pub check: Check,
    pub severity: Severity,
    pub status: Status,
    pub message: String,
}

/// A failed check: the API's finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub check: Check,
    pub severity: Severity,
    pub hosts: Vec<String>,
    pub message: String,
}

/// The API's `readiness` of a cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Readiness {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// Every check, in [`Check::ALL`]'s order.
    pub checks: Vec<CheckOutcome>,
    /// The newest reading the judgement rests on (members' `readAt`).
    pub checked_at: Option<String>,
}

/// Bounds on what a reading can make us hold per sentence: a hostile or broken
/// agent with megabyte-long strings or thousands of peers still gives a short,
/// readable finding.
const MAX_VALUE_CHARS: usize = 64;

/// A value for a sentence, cut to a readable length.
fn shown(value: &str) -> String {
    if value.chars().count() <= MAX_VALUE_CHARS {
        value.to_owned()
    } else {
        let cut: String = value.chars().take(MAX_VALUE_CHARS).collect();
        format!("{cut}…")
    }
}

/// `1 s`, `0.5 s`, `2 s`.
fn seconds(value: f64) -> String {
    let rounded = (value * 1000.0).round() / 1000.0;
    format!("{rounded} s")
}

/// Live members with a value, and the hosts of live members without one.
fn values<T: Clone>(
    live: &[&Member],
    get: impl Fn(&Member) -> Option<T>,
) -> (Vec<(String, T)>, Vec<String>) {
    let mut with = Vec::new();
    let mut without = Vec::new();
    for m in live {
        match get(m) {
            Some(v) => with.push((m.host.clone(), v)),
            None => without.push(m.host.clone()),
        }
    }
    (with, without)
}

struct Outcome {
    status: Status,
    hosts: Vec<String>,
    message: String,
}

fn pass(message: impl Into<String>) -> Outcome {
    Outcome {
        status: Status::Pass,
        hosts: Vec::new(),
        message: message.into(),
    }
}

fn unknown(message: impl Into<String>) -> Outcome {
    Outcome {
        status: Status::Unknown,
        hosts: Vec::new(),
        message: message.into(),
    }
}

fn fail(hosts: Vec<String>, message: impl Into<String>) -> Outcome {
    Outcome {
        status: Status::Fail,
        hosts,
        message: message.into(),
    }
}

/// "lb-a's agent does not report it" / "the agents of lb-a and lb-b do not report it".
fn not_reported(hosts: &[String], what: &str) -> String {
    match hosts {
        [one] => format!("{one}'s agent does not report {what} (an older agent)"),
        _ => format!(
            "the agents of {} do not report {what} (older agents)",
            and_list(hosts)
        ),
    }
}

/// Groups hosts by the value they report, the most common value first.
fn by_value<T: Ord + Clone>(with: &[(String, T)]) -> Vec<(T, Vec<String>)> {
    let mut groups: BTreeMap<T, Vec<String>> = BTreeMap::new();
    for (host, v) in with {
        groups.entry(v.clone()).or_default().push(host.clone());
    }
    let mut groups: Vec<(T, Vec<String>)> = groups.into_iter().collect();
    groups.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
    groups
}

/// A comparison of one value across the live members: the minority groups are
/// named against the majority, with `say` making each group's phrase.
fn compare<T: Ord + Clone>(
    live: &[&Member],
    get: impl Fn(&Member) -> Option<T>,
    what: &str,
    say: impl Fn(&[String], &T) -> String,
    why: &str,
    agreed: impl Fn(&T) -> String,
) -> Outcome {
    let (with, without) = values(live, get);
    let groups = by_value(&with);
    if groups.len() > 1 {
        let majority = &groups[0];
        let odd: Vec<String> = groups[1..]
            .iter()
            .flat_map(|(_, hosts)| hosts.clone())
            .collect();
        let mut phrases: Vec<String> = groups[1..].iter().map(|(v, h)| say(h, v)).collect();
        phrases.push(say(&majority.1, &majority.0));
        return fail(odd, format!("{}: {why}", phrases.join(", ")));
    }
    if !without.is_empty() {
        return unknown(not_reported(&without, what));
    }
    match groups.first() {
        Some((v, hosts)) if hosts.len() > 1 => pass(agreed(v)),
        _ => unknown(format!(
            "only one member reports {what}: nothing to compare"
        )),
    }
}

/// The verb for a list of hosts: "lb-a advertises", "lb-a and lb-b advertise".
fn verb(hosts: &[String], one: &str, many: &str) -> String {
    format!(
        "{} {}",
        and_list(hosts),
        if hosts.len() == 1 { one } else { many }
    )
}

/// The live members in MASTER: the checks that follow a master need exactly one.
fn masters<'a>(live: &[&'a Member]) -> Vec<&'a Member> {
    live.iter()
        .copied()
        .filter(|m| m.state() == "MASTER")
        .collect()
}

fn no_ready_backup(members: &[Member], live: &[&Member]) -> Outcome {
    let masters = masters(live);
    let [master] = masters.as_slice() else {
        return unknown(if masters.is_empty() {
            "no member is MASTER now: there is no master to take over from".to_owned()
        } else {
            format!(
                "{} are all MASTER: there is no single master to take over from",
                and_list(&masters.iter().map(|m| m.host.clone()).collect::<Vec<_>>())
            )
        });
    };
    let others: Vec<&Member> = members
        .iter()
        .filter(|m| m.client_id != master.client_id)
        .collect();
    let ready: Vec<String> = others
        .iter()
        .filter(|m| m.live() && m.state() == "BACKUP")
        .map(|m| m.host.clone())
        .collect();
    if !ready.is_empty() {
        return pass(format!(
            "{} ready to take over from {}",
            verb(&ready, "is", "are"),
            master.host
        ));
    }
    if others.is_empty() {
        return fail(
            vec![master.host.clone()],
            format!(
                "{} is the only member: nothing could take over if it fails",
                master.host
            ),
        );
    }
    let why: Vec<String> = others
        .iter()
        .map(|m| {
            let state = if !m.online {
                "offline".to_owned()
            } else if !m.reporting {
                "without a running keepalived".to_owned()
            } else if m.state() == "FAULT" {
                match &m.instance.fault_reason {
                    Some(reason) => format!("in FAULT ({})", shown(reason)),
                    None => "in FAULT".to_owned(),
                }
            } else {
                format!("in {}", m.state())
            };
            format!("{} is {state}", m.host)
        })
        .collect();
    fail(
        others.iter().map(|m| m.host.clone()).collect(),
        format!(
            "{}: no backup could take over from {}",
            and_list(&why),
            master.host
        ),
    )
}

fn backup_hears_other_master(live: &[&Member]) -> Outcome {
    let masters = masters(live);
    let [master] = masters.as_slice() else {
        return unknown("there is no single master to hear");
    };
    let Some(address) = master.instance.source_address.as_deref() else {
        return unknown(not_reported(
            std::slice::from_ref(&master.host),
            "the address it advertises from",
        ));
    };
    let backups: Vec<&&Member> = live.iter().filter(|m| m.state() == "BACKUP").collect();
    if backups.is_empty() {
        return unknown("no member is BACKUP now");
    }
    let mut wrong = Vec::new();
    let mut silent = Vec::new();
    for b in &backups {
        match b.instance.master_router.as_deref() {
            Some(heard) if heard != address => wrong.push((b.host.clone(), heard.to_owned())),
            Some(_) => {}
            None => silent.push(b.host.clone()),
        }
    }
    if !wrong.is_empty() {
        let phrases: Vec<String> = wrong
            .iter()
            .map(|(host, heard)| format!("{host} hears {} as master", shown(heard)))
            .collect();
        return fail(
            wrong.into_iter().map(|(h, _)| h).collect(),
            format!(
                "{}, not {} ({}): a backup that follows another master will not take over from this one",
                and_list(&phrases),
                master.host,
                shown(address)
            ),
        );
    }
    if !silent.is_empty() {
        return unknown(format!(
            "keepalived on {} names no master it hears",
            and_list(&silent)
        ));
    }
    pass(format!(
        "every backup hears {} ({})",
        master.host,
        shown(address)
    ))
}

fn auth_mismatch(live: &[&Member]) -> Outcome {
    let types = compare(
        live,
        |m| m.instance.auth_type.as_deref().map(shown),
        "its authentication type",
        |hosts, t| {
            format!(
                "{} {t}",
                verb(hosts, "uses authentication", "use authentication")
            )
        },
        "members with different authentication discard each other's adverts",
        |t| {
            if t == "none" {
                "no member uses authentication".to_owned()
            } else {
                format!("every member uses authentication {t}")
            }
        },
    );
    if types.status != Status::Pass {
        return types;
    }
    let kind = live
        .iter()
        .find_map(|m| m.instance.auth_type.clone())
        .unwrap_or_default();
    if kind == "none" {
        return types;
    }
    let masked: Vec<String> = live
        .iter()
        .filter(|m| m.instance.auth_password_masked == Some(true))
        .map(|m| m.host.clone())
        .collect();
    let (with, without) = values(live, |m| m.instance.auth_fingerprint.clone());
    let groups = by_value(&with);
    if groups.len() > 1 {
        let odd: Vec<String> = groups[1..].iter().flat_map(|(_, h)| h.clone()).collect();
        return fail(
            odd.clone(),
            format!(
                "{} another password than {}: members with different passwords discard each other's adverts",
                verb(&odd, "has", "have"),
                and_list(&groups[0].1)
            ),
        );
    }
    if !masked.is_empty() {
        return unknown(format!(
            "keepalived on {} masks the password in its dump (2.4 and later), so the passwords cannot be compared",
            and_list(&masked)
        ));
    }
    if !without.is_empty() {
        return unknown(not_reported(&without, "a fingerprint of its password"));
    }
    pass(format!(
        "every member uses authentication {kind} with the same password"
    ))
}

fn vip_mismatch(live: &[&Member]) -> Outcome {
    compare(
        live,
        |m| {
            let mut vips: Vec<String> = m.instance.vips.iter().map(|v| shown(v)).collect();
            vips.sort();
            vips.dedup();
            Some(vips)
        },
        "its virtual addresses",
        |hosts, vips| {
            let list = if vips.len() > 4 {
                format!("{} and {} more", vips[..4].join(", "), vips.len() - 4)
            } else if vips.is_empty() {
                "none".to_owned()
            } else {
                vips.join(", ")
            };
            format!("{} {list}", verb(hosts, "has", "have"))
        },
        "members with different address sets send adverts the others discard",
        |_| "every member has the same virtual addresses".to_owned(),
    )
}

fn unicast_mismatch(live: &[&Member]) -> Outcome {
    let modes = compare(
        live,
        |m| m.instance.uses_unicast,
        "whether it uses unicast",
        |hosts, unicast| {
            format!(
                "{} {}",
                verb(hosts, "uses", "use"),
                if *unicast { "unicast" } else { "multicast" }
            )
        },
        "unicast and multicast members do not hear each other",
        |unicast| {
            if *unicast {
                "every member uses unicast".to_owned()
            } else {
                "every member uses multicast".to_owned()
            }
        },
    );
    if modes.status != Status::Pass || live.iter().all(|m| m.instance.uses_unicast != Some(true)) {
        return modes;
    }
    let mut missing = Vec::new();
    let mut unknown_source = Vec::new();
    for m in live {
        for other in live.iter().filter(|o| o.client_id != m.client_id) {
            match other.instance.source_address.as_deref() {
                Some(src) if !m.instance.unicast_peers.iter().any(|p| p == src) => {
                    missing.push((m.host.clone(), other.host.clone(), shown(src)));
                }
                Some(_) => {}
                None => unknown_source.push(other.host.clone()),
            }
        }
    }
    if !missing.is_empty() {
        let phrases: Vec<String> = missing
            .iter()
            .take(4)
            .map(|(m, o, src)| format!("{m}'s peers lack {o} ({src})"))
            .collect();
        let more = missing.len().saturating_sub(4);
        let tail = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let mut hosts: Vec<String> = missing.into_iter().map(|(m, _, _)| m).collect();
        hosts.dedup();
        return fail(
            hosts,
            format!(
                "{}{tail}: a member sends its adverts only to the peers it lists",
                and_list(&phrases)
            ),
        );
    }
    if !unknown_source.is_empty() {
        unknown_source.sort();
        unknown_source.dedup();
        return unknown(not_reported(
            &unknown_source,
            "the address it advertises from",
        ));
    }
    pass("every unicast member lists every other member as a peer")
}

fn priority_tie(live: &[&Member]) -> Outcome {
    let (with, without) = values(live, |m| m.instance.priority);
    let ties: Vec<(u32, Vec<String>)> = by_value(&with)
        .into_iter()
        .filter(|(_, hosts)| hosts.len() > 1)
        .collect();
    if !ties.is_empty() {
        let phrases: Vec<String> = ties
            .iter()
            .map(|(p, hosts)| format!("{} priority {p}", verb(hosts, "has", "have")))
            .collect();
        return fail(
            ties.into_iter().flat_map(|(_, h)| h).collect(),
            format!(
                "{}: a tie goes to the highest address, rarely what was meant",
                and_list(&phrases)
            ),
        );
    }
    if !without.is_empty() {
        return unknown(not_reported(&without, "its priority"));
    }
    if with.len() < 2 {
        return unknown("only one member reports its priority: nothing to compare");
    }
    pass("every member has a priority of its own")
}

fn config_faults(live: &[&Member]) -> Outcome {
    let (with, without) = values(live, |m| m.instance.config_faults);
    let faulty: Vec<(String, u32)> = with.iter().filter(|(_, n)| *n > 0).cloned().collect();
    if !faulty.is_empty() {
        let phrases: Vec<String> = faulty
            .iter()
            .map(|(h, n)| {
                format!(
                    "keepalived on {h} counts {n} configuration fault{}",
                    if *n == 1 { "" } else { "s" }
                )
            })
            .collect();
        return fail(
            faulty.into_iter().map(|(h, _)| h).collect(),
            format!(
                "{}: part of its configuration was not applied (see its log)",
                and_list(&phrases)
            ),
        );
    }
    if !without.is_empty() {
        return unknown(not_reported(
            &without,
            "keepalived's count of configuration faults",
        ));
    }
    pass("keepalived counts no configuration fault on any member")
}

fn run(check: Check, members: &[Member], live: &[&Member]) -> Outcome {
    match check {
        Check::NoReadyBackup => no_ready_backup(members, live),
        Check::BackupHearsOtherMaster => backup_hears_other_master(live),
        Check::AdvertIntervalMismatch => compare(
            live,
            |m| {
                m.instance
                    .advert_interval
                    .filter(|a| a.is_finite())
                    .map(|a| (a * 1000.0).round() as i64)
            },
            "its advert interval",
            |hosts, ms| {
                format!(
                    "{} every {}",
                    verb(hosts, "advertises", "advertise"),
                    seconds(*ms as f64 / 1000.0)
                )
            },
            "a member with another interval discards the master's adverts",
            |ms| {
                format!(
                    "every member advertises every {}",
                    seconds(*ms as f64 / 1000.0)
                )
            },
        ),
        Check::VersionMismatch => compare(
            live,
            |m| m.instance.vrrp_version,
            "its VRRP version",
            |hosts, v| format!("{} VRRPv{v}", verb(hosts, "speaks", "speak")),
            "VRRPv2 and VRRPv3 members do not understand each other's adverts",
            |v| format!("every member speaks VRRPv{v}"),
        ),
        Check::AuthMismatch => auth_mismatch(live),
        Check::VipMismatch => vip_mismatch(live),
        Check::UnicastMismatch => unicast_mismatch(live),
        Check::PriorityTie => priority_tie(live),
        Check::ConfigFaults => config_faults(live),
    }
}

/// The readiness of a cluster with these members.
pub fn judge(members: &[Member]) -> Readiness {
    let live: Vec<&Member> = members.iter().filter(|m| m.live()).collect();
    let mut checks = Vec::new();
    let mut findings = Vec::new();
    for check in Check::ALL {
        let outcome = if live.is_empty() {
            unknown("no member reports now")
        } else {
            run(check, members, &live)
        };
        if outcome.status == Status::Fail {
            findings.push(Finding {
                check,
                severity: check.severity(),
                hosts: outcome.hosts,
                message: outcome.message.clone(),
            });
        }
        checks.push(CheckOutcome {
            check,
            severity: check.severity(),
            status: outcome.status,
            message: outcome.message,
        });
    }
    let verdict = if findings.iter().any(|f| f.severity == Severity::Blocking) {
        Verdict::NotReady
    } else if !findings.is_empty() {
        Verdict::AtRisk
    } else if checks.iter().any(|c| c.status == Status::Pass) {
        Verdict::Ready
    } else {
        Verdict::Unknown
    };
    Readiness {
        verdict,
        findings,
        checks,
        checked_at: live.iter().filter_map(|m| m.read_at.clone()).max(),
    }
}

#[cfg(test)]
mod tests;
