//! Who may do what: the three roles, ordered so that a higher role may do all a
//! lower one may.
//!
//! `viewer` reads everything and changes only its own password and seen-marks;
//! `operator` also creates and ends silences (and acts on hosts: drains, drills);
//! `admin` does everything. The route table names the least role of each route.

use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The default of anything unset: the least that can be given.
    #[default]
    Viewer,
    Operator,
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The API's spellings: `viewer`, `operator`, `admin`.
    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// A stored value; an unreadable one is the least role, never more.
    pub fn from_stored(s: &str) -> Role {
        Role::parse(s).unwrap_or(Role::Viewer)
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_ordered_and_spelled_as_the_api_says() {
        assert!(Role::Viewer < Role::Operator && Role::Operator < Role::Admin);
        for r in Role::ALL {
            assert_eq!(Role::parse(r.as_str()), Some(r));
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
        }
        assert_eq!(Role::parse("Admin"), None);
        assert_eq!(Role::from_stored("root"), Role::Viewer);
    }
}
