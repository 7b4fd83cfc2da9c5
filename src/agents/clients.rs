//! Agents as the server knows them: the stored client records and their rules.
//!
//! Live status (online, capabilities) is not stored: it comes from the
//! [`AgentRegistry`](crate::agents::AgentRegistry) when a record is shown.

use crate::clock::sql_timestamp;
use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension, Row};

pub const SITE_MAX: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    Inbound,
    Outbound,
}

/// A stored client record (without its token).
#[derive(Debug, Clone)]
pub struct ClientRecord {
    pub id: String,
    pub hostname: String,
    pub display_name: Option<String>,
    pub site: Option<String>,
    pub mode: Mode,
    pub inbound_allowed_ip: Option<String>,
    pub inbound_last_ip: Option<String>,
    pub outbound_target_address: Option<String>,
    pub last_seen: Option<String>,
    pub version: Option<String>,
    pub created_at: String,
    pub updated_at: Option<String>,
}

impl ClientRecord {
    /// Display name, else hostname: how events name the host.
    pub fn name(&self) -> &str {
        name_of(self.display_name.as_deref(), &self.hostname)
    }

    /// The API's Client, with live status from the agent registry: its
    /// capabilities while connected, `None` while not.
    pub fn view(self, capabilities: Option<Vec<String>>) -> ClientView {
        ClientView {
            status: if capabilities.is_some() {
                "online"
            } else {
                "offline"
            },
            connection_mode: match self.mode {
                Mode::Inbound => "inbound",
                Mode::Outbound => "outbound",
            },
            id: self.id,
            hostname: self.hostname,
            display_name: self.display_name,
            site: self.site,
            last_seen: self.last_seen,
            version: self.version,
            inbound_allowed_ip: self.inbound_allowed_ip,
            inbound_last_ip: self.inbound_last_ip,
            outbound_target_address: self.outbound_target_address,
            capabilities,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }
}

/// A client as the API and the dashboards show it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientView {
    pub id: String,
    pub hostname: String,
    pub display_name: Option<String>,
    pub site: Option<String>,
    /// `online` or `offline`.
    pub status: &'static str,
    pub last_seen: Option<String>,
    pub version: Option<String>,
    pub connection_mode: &'static str,
    pub inbound_allowed_ip: Option<String>,
    pub inbound_last_ip: Option<String>,
    pub outbound_target_address: Option<String>,
    pub capabilities: Option<Vec<String>>,
    pub created_at: String,
    pub updated_at: Option<String>,
}

impl ClientView {
    /// Display name, else hostname (as [`ClientRecord::name`]).
    pub fn name(&self) -> &str {
        name_of(self.display_name.as_deref(), &self.hostname)
    }
}

/// The one name rule of a client: its display name unless empty, else its hostname.
fn name_of<'a>(display_name: Option<&'a str>, hostname: &'a str) -> &'a str {
    display_name.filter(|n| !n.is_empty()).unwrap_or(hostname)
}

fn from_row(r: &Row<'_>) -> rusqlite::Result<ClientRecord> {
    Ok(ClientRecord {
        id: r.get("id")?,
        hostname: r.get::<_, Option<String>>("hostname")?.unwrap_or_default(),
        display_name: r.get("display_name")?,
        site: r.get("site")?,
        mode: if r.get::<_, String>("connection_mode")? == "outbound" {
            Mode::Outbound
        } else {
            Mode::Inbound
        },
        inbound_allowed_ip: r.get("inbound_allowed_ip")?,
        inbound_last_ip: r.get("inbound_last_ip")?,
        outbound_target_address: r.get("outbound_target_address")?,
        last_seen: r.get("last_seen")?,
        version: r.get("version")?,
        created_at: r.get("created_at")?,
        updated_at: r.get("updated_at")?,
    })
}

pub fn list(db: &Db) -> Result<Vec<ClientRecord>, DbError> {
    db.read(|c| {
        let mut stmt = c.prepare("SELECT * FROM clients ORDER BY created_at, id")?;
        let rows = stmt
            .query_map([], from_row)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows)
    })
}

pub fn get(db: &Db, id: &str) -> Result<Option<ClientRecord>, DbError> {
    db.read(|c| {
        Ok(
            c.query_row("SELECT * FROM clients WHERE id = ?1", [id], from_row)
                .optional()?,
        )
    })
}

/// The client whose id and token hash both match, if any.
pub fn find_by_credentials(
    db: &Db,
    id: &str,
    token_hash: &str,
) -> Result<Option<ClientRecord>, DbError> {
    db.read(|c| {
        Ok(c.query_row(
            "SELECT * FROM clients WHERE id = ?1 AND auth_token_hash = ?2",
            [id, token_hash],
            from_row,
        )
        .optional()?)
    })
}

/// An outbound client about to be stored: its first session authenticated.
#[derive(Debug)]
pub struct NewOutbound {
    pub id: String,
    pub hostname: String,
    /// The address in its stored form (`agents::outbound::Target::stored`).
    pub target: String,
    /// The auth token sealed with `auth::sealed` (never the token itself).
    pub sealed_token: String,
}

pub fn create_outbound(
    db: &Db,
    new: NewOutbound,
    now: DateTime<Utc>,
) -> Result<ClientRecord, DbError> {
    let now = sql_timestamp(now);
    db.write(move |c| {
        c.execute(
            "INSERT INTO clients (id, hostname, connection_mode, auth_token_encrypted, outbound_target_address, created_at, updated_at)
             VALUES (?1, ?2, 'outbound', ?3, ?4, ?5, ?5)",
            params![new.id, new.hostname, new.sealed_token, new.target, now],
        )?;
        Ok::<_, DbError>(c.query_row("SELECT * FROM clients WHERE id = ?1", [&new.id], from_row)?)
    })
}

/// An outbound client's sealed auth token, if the client exists and has one.
pub fn sealed_token(db: &Db, id: &str) -> Result<Option<String>, DbError> {
    db.read(|c| {
        Ok(c.query_row(
            "SELECT auth_token_encrypted FROM clients WHERE id = ?1 AND connection_mode = 'outbound'",
            [id],
            |r| r.get::<_, Option<String>>(0),
        )
        .optional()?
        .flatten())
    })
}

/// Records a completed AUTH: when, which agent version, and (inbound) from where;
/// `last_ip` is `None` for an outbound client, whose address is the one dialled.
pub fn record_connected(
    db: &Db,
    id: String,
    version: Option<String>,
    last_ip: Option<String>,
    now: DateTime<Utc>,
) -> Result<(), DbError> {
    let last_seen = crate::clock::iso(now);
    db.write(move |c| {
        c.execute(
            "UPDATE clients SET last_seen = ?2, version = ?3, inbound_last_ip = COALESCE(?4, inbound_last_ip) WHERE id = ?1",
            params![id, last_seen, version, last_ip],
        )?;
        Ok(())
    })
}

/// A change of a client's settings; `None` keeps a field, `Some(None)` clears it.
#[derive(Debug, Default)]
pub struct ClientUpdate {
    pub display_name: Option<String>,
    pub site: Option<Option<String>>,
    pub inbound_allowed_ip: Option<Option<String>>,
    pub outbound_target_address: Option<String>,
}

#[derive(Debug)]
pub enum ClientError {
    NotFound,
    Rule(&'static str),
    Db(DbError),
}

impl From<DbError> for ClientError {
    fn from(e: DbError) -> Self {
        ClientError::Db(e)
    }
}

impl From<rusqlite::Error> for ClientError {
    fn from(e: rusqlite::Error) -> Self {
        ClientError::Db(e.into())
    }
}

pub const ALLOWED_IP_FOR_OUTBOUND: &str = "inboundAllowedIp: not used by an outbound client";
pub const TARGET_FOR_INBOUND: &str = "outboundTargetAddress: not used by an inbound client";

/// Applies an update; returns the record as stored afterwards.
pub fn update(
    db: &Db,
    id: String,
    change: ClientUpdate,
    now: DateTime<Utc>,
) -> Result<ClientRecord, ClientError> {
    let now = sql_timestamp(now);
    db.write(move |c| {
        let current = c.query_row("SELECT * FROM clients WHERE id = ?1", [&id], from_row).optional()?.ok_or(ClientError::NotFound)?;
        if change.inbound_allowed_ip.is_some() && current.mode == Mode::Outbound {
            return Err(ClientError::Rule(ALLOWED_IP_FOR_OUTBOUND));
        }
        if change.outbound_target_address.is_some() && current.mode == Mode::Inbound {
            return Err(ClientError::Rule(TARGET_FOR_INBOUND));
        }
        let display_name = change.display_name.or(current.display_name);
        let site = change.site.unwrap_or(current.site);
        let allowed = change.inbound_allowed_ip.unwrap_or(current.inbound_allowed_ip);
        let target = change.outbound_target_address.or(current.outbound_target_address);
        c.execute(
            "UPDATE clients SET display_name = ?2, site = ?3, inbound_allowed_ip = ?4, outbound_target_address = ?5, updated_at = ?6 WHERE id = ?1",
            params![id, display_name, site, allowed, target, now],
        )?;
        Ok(c.query_row("SELECT * FROM clients WHERE id = ?1", [&id], from_row)?)
    })
}

/// Deletes a client and (by cascade) its reading.
pub fn delete(db: &Db, id: String) -> Result<(), ClientError> {
    db.write(
        move |c| match c.execute("DELETE FROM clients WHERE id = ?1", [id])? {
            0 => Err(ClientError::NotFound),
            _ => Ok(()),
        },
    )
}
