//! A drill's report: where it is, its steps, what it measured and found.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// Where a drill is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Running,
    /// The takeover happened, the host was undrained and the cluster settled.
    Passed,
    /// Something went wrong after the drain (the findings say what).
    Failed,
    /// The preflight said no (readiness, no single master, no actions).
    Refused,
    /// No new master in time: the host was undrained at once.
    RolledBack,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Refused => "refused",
            Status::RolledBack => "rolled_back",
        }
    }
}

/// One step, as it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub at: String,
    pub what: String,
}

/// A drill and its report: what `GET /api/v1/drills/:id` answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drill {
    pub id: String,
    pub cluster: String,
    pub status: Status,
    pub steps: Vec<Step>,
    pub old_master: Option<String>,
    pub new_master: Option<String>,
    /// The old master leaving MASTER to the new one entering it, by keepalived's
    /// own transition times on the two hosts.
    pub takeover_ms: Option<i64>,
    /// From the undrain (the agent's answer, on the server's clock) to the old
    /// master entering MASTER again by keepalived's time (preempt, its delay
    /// included); `None` when the master stayed.
    pub return_ms: Option<i64>,
    pub findings: Vec<String>,
    pub by: String,
    pub reason: String,
    pub forced: bool,
    pub started_at: String,
    pub finished_at: Option<String>,
}

impl Drill {
    /// A drill asked for now, before its preflight: running, nothing measured.
    pub fn new(
        id: String,
        cluster: String,
        by: String,
        reason: String,
        forced: bool,
        now: DateTime<Utc>,
    ) -> Drill {
        Drill {
            id,
            cluster,
            status: Status::Running,
            steps: Vec::new(),
            old_master: None,
            new_master: None,
            takeover_ms: None,
            return_ms: None,
            findings: Vec::new(),
            by,
            reason,
            forced,
            started_at: crate::clock::iso(now),
            finished_at: None,
        }
    }

    pub fn step(&mut self, at: DateTime<Utc>, what: impl Into<String>) {
        self.steps.push(Step {
            at: crate::clock::iso(at),
            what: what.into(),
        });
    }

    pub fn finish(&mut self, status: Status, at: DateTime<Utc>) {
        self.status = status;
        self.finished_at = Some(crate::clock::iso(at));
    }
}
