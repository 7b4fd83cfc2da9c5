//! Routes about agents: registration tokens, registration, clients and their
//! readings.

use super::validate::{invalid, no_control, Body};
use crate::activity::Event;
use crate::agents::clients::{self, ClientError, ClientUpdate, SITE_MAX};
use crate::agents::outbound;
use crate::agents::registration::{self, ipv4_text, RegistrationError, DISPLAY_NAME_MAX};
use crate::auth::Session;
use crate::config::values::parse_ipv4_net;
use crate::http::request::Req;
use crate::http::response::{ApiError, ApiResult, Resp};
use crate::http::sessions::outbound::RegisterError;
use crate::http::App;
use crate::live::{envelope, ToSocket};
use serde_json::json;
use vrrp_protocol::ActivityLevel;

impl From<RegistrationError> for ApiError {
    fn from(e: RegistrationError) -> Self {
        match e {
            RegistrationError::Forbidden => {
                ApiError::new(403, "Invalid, used or expired registration token")
            }
            RegistrationError::NotFound => ApiError::not_found("Token not found"),
            RegistrationError::Db(e) => e.into(),
        }
    }
}

impl From<ClientError> for ApiError {
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::NotFound => ApiError::not_found("Client not found"),
            ClientError::Rule(text) => ApiError::bad_request(text),
            ClientError::Db(e) => e.into(),
        }
    }
}

const IPV4_RULE: &str = "must be an IPv4 address or CIDR network";

fn last<'a>(path: &[&'a str], from_end: usize) -> &'a str {
    path.get(path.len().saturating_sub(1 + from_end))
        .copied()
        .unwrap_or_default()
}

// --- registration tokens ---

pub fn list_tokens(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&registration::list_tokens(&app.db)?))
}

pub fn create_token(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let display_name = body
        .optional_string("displayName")?
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    if display_name
        .as_ref()
        .is_some_and(|n| n.chars().count() > DISPLAY_NAME_MAX)
    {
        return Err(invalid("displayName", "must be at most 100 characters"));
    }
    let allowed = match body
        .optional_string("inboundAllowedIp")?
        .filter(|s| !s.trim().is_empty())
    {
        None => None,
        Some(s) => Some(parse_ipv4_net(&s).map_err(|_| invalid("inboundAllowedIp", IPV4_RULE))?),
    };
    let issued = registration::create_token(&app.db, display_name, allowed, app.clock.utc())?;
    log::info!(
        "Registration token created by \"{}\", valid until {}",
        session.username,
        issued.expires_at
    );
    // Named by the first characters of its hash, as the list shows it: the
    // token itself never reaches the audit log.
    let hash = crate::secrets::sha256_hex(&issued.token);
    let summary = format!(
        "Registration token {}… made{}, valid until {}",
        &hash[..8],
        issued
            .display_name
            .as_deref()
            .map(|n| format!(" for \"{}\"", n.escape_debug()))
            .unwrap_or_default(),
        issued.expires_at
    );
    Ok(Resp::ok(&json!({
        "token": issued.token,
        "expiresAt": issued.expires_at,
        "displayName": issued.display_name,
        "inboundAllowedIp": issued.inbound_allowed_ip,
    }))
    .audited(
        "registration_token.created",
        format!("registration token {}", &hash[..8]),
        summary,
    ))
}

pub fn delete_token(app: &App, _req: &Req, _s: &Session, path: &[&str]) -> ApiResult {
    let hash = last(path, 0).to_owned();
    registration::delete_token(&app.db, hash.clone())?;
    let short: String = hash.chars().take(8).collect();
    Ok(Resp::ok(&json!({ "status": "deleted" })).audited(
        "registration_token.deleted",
        format!("registration token {short}"),
        format!("Registration token {short}… deleted"),
    ))
}

/// `POST /api/v1/register` (public): a token buys a new client's identity.
pub fn register(app: &App, req: &Req) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let token = body.required_text("token")?;
    let hostname = body.optional_string("hostname")?;
    let now = app.clock.utc();
    let done = registration::register(&app.db, &token, hostname, req.client_ip, now)?;
    log::info!(
        "Client {} ({}) registered from {}",
        done.client_name,
        done.client_id,
        req.client_ip
    );
    app.broadcast_clients();
    // The actor is the registration token that bought the identity (named by
    // its hash, as the token list shows it); neither token reaches the entry.
    let hash = crate::secrets::sha256_hex(&token);
    let actor = crate::audit::Actor {
        name: format!("registration token {}", &hash[..8]),
        via: crate::audit::Via::Token,
        source_ip: Some(req.client_ip.to_string()),
    };
    let note = crate::audit::Note::new(
        "client.registered",
        format!("client {}", done.client_id),
        format!(
            "Client \"{}\" registered from {}",
            done.client_name.escape_debug(),
            req.client_ip
        ),
    );
    let _ = crate::audit::record(&app.db, &actor, note, now);
    let data = json!({ "hostname": done.hostname, "clientName": done.client_name });
    app.record_activity(vec![Event::server(
        "client.registered",
        ActivityLevel::Info,
        Some(done.client_id.clone()),
        data,
        now,
    )]);
    Ok(Resp::ok(
        &json!({ "token": done.auth_token, "clientId": done.client_id }),
    ))
}

// --- clients ---

pub fn list_clients(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&app.client_list()?))
}

/// `null` clears, a string sets, absence keeps.
fn nullable(body: &Body, key: &str) -> Result<Option<Option<String>>, ApiError> {
    if !body.has(key) {
        return Ok(None);
    }
    Ok(Some(
        body.optional_string(key)?
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty()),
    ))
}

/// `POST /api/v1/clients/outbound`: the server registers an agent that waits
/// for it (setup PIN or registration secret), then keeps dialling it.
pub fn create_outbound(app: &App, req: &Req, session: &Session, _path: &[&str]) -> ApiResult {
    let body = Body::parse(&req.body)?;
    let address = body.required_text("outboundTargetAddress")?;
    if address.trim().is_empty() {
        return Err(invalid("outboundTargetAddress", "must not be empty"));
    }
    let secret = body.required_text("registrationSecret")?;
    if secret.trim().is_empty() {
        return Err(invalid("registrationSecret", "must not be empty"));
    }
    let target =
        outbound::parse_target(&address).map_err(|e| invalid("outboundTargetAddress", e))?;
    let hostname = body
        .optional_string("hostname")?
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| address.trim().to_owned());
    match app.outbound.register(&target, &secret, &hostname) {
        Ok(client) => {
            log::info!(
                "Outbound client {} ({}) created by \"{}\"",
                client.name(),
                client.id,
                session.username
            );
            let summary = format!(
                "Outbound client \"{}\" added at {}",
                client.name().escape_debug(),
                target.stored()
            );
            Ok(
                Resp::ok(&json!({ "id": client.id, "hostname": client.hostname })).audited(
                    "client.created",
                    format!("client {}", client.id),
                    summary,
                ),
            )
        }
        Err(RegisterError::NoSealKey) => Err(ApiError::new(
            500,
            "secretKey could not be written to the config file, so outbound auth tokens cannot be stored; make the config file writable and restart",
        )),
        Err(RegisterError::Agent(reason)) => {
            log::info!(
                "Outbound registration at {} failed: {reason}",
                target.stored()
            );
            Err(ApiError::new(
                503,
                format!("Could not establish connection to client. {reason}"),
            ))
        }
        Err(RegisterError::Db(e)) => Err(e.into()),
    }
}

/// `POST /api/v1/clients/:id/reconnect`: close, drop the pending step, dial now.
pub fn reconnect(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = last(path, 1);
    let client =
        clients::get(&app.db, id)?.ok_or_else(|| ApiError::not_found("Client not found"))?;
    if client.mode != clients::Mode::Outbound {
        return Err(ApiError::bad_request("Client is not an outbound client"));
    }
    if !app.outbound.redial(id) {
        log::warn!("Outbound client {id} had no dial thread; it is not dialled");
    }
    log::info!("Reconnect of {id} asked by \"{}\"", session.username);
    Ok(Resp::ok(&json!({ "status": "reconnecting" })).audited(
        "client.reconnected",
        format!("client {id}"),
        format!("Reconnect of \"{}\" asked", client.name().escape_debug()),
    ))
}

pub fn update_client(app: &App, req: &Req, _s: &Session, path: &[&str]) -> ApiResult {
    let id = last(path, 0).to_owned();
    let body = Body::parse(&req.body)?;
    let display_name = body
        .optional_string("displayName")?
        .map(|s| s.trim().to_owned());
    if let Some(name) = &display_name {
        no_control("displayName", name)?;
    }
    let site = nullable(&body, "site")?;
    if let Some(Some(s)) = &site {
        no_control("site", s)?;
    }
    if site
        .as_ref()
        .and_then(|s| s.as_ref())
        .is_some_and(|s| s.chars().count() > SITE_MAX)
    {
        return Err(invalid("site", "must be at most 100 characters"));
    }
    let allowed = match nullable(&body, "inboundAllowedIp")? {
        None => None,
        Some(None) => Some(None),
        Some(Some(s)) => Some(Some(ipv4_text(
            &parse_ipv4_net(&s).map_err(|_| invalid("inboundAllowedIp", IPV4_RULE))?,
        ))),
    };
    let target = match body.optional_string("outboundTargetAddress")? {
        None => None,
        Some(a) => Some(
            outbound::parse_target(&a)
                .map_err(|e| invalid("outboundTargetAddress", e))?
                .stored(),
        ),
    };
    if display_name.is_none() && site.is_none() && allowed.is_none() && target.is_none() {
        return Err(invalid("body", "at least one of displayName, site, inboundAllowedIp, outboundTargetAddress is required"));
    }
    let mut changed = Vec::new();
    if let Some(n) = &display_name {
        changed.push(format!("display name \"{}\"", n.escape_debug()));
    }
    if let Some(s) = &site {
        changed.push(match s {
            Some(s) => format!("site \"{}\"", s.escape_debug()),
            None => "site cleared".to_owned(),
        });
    }
    if let Some(a) = &allowed {
        changed.push(format!(
            "allowed address {}",
            a.as_deref().unwrap_or("cleared")
        ));
    }
    if let Some(t) = &target {
        changed.push(format!("address {t}"));
    }
    let change = ClientUpdate {
        display_name,
        site,
        inbound_allowed_ip: allowed,
        outbound_target_address: target,
    };
    let before = clients::get(&app.db, &id)?;
    let after = clients::update(&app.db, id.clone(), change, app.clock.utc())?;
    if after.mode == clients::Mode::Outbound
        && before.and_then(|b| b.outbound_target_address) != after.outbound_target_address
    {
        app.outbound.redial(&id);
    }
    app.broadcast_clients();
    let summary = format!(
        "Client \"{}\": {}",
        after.name().escape_debug(),
        changed.join(", ")
    );
    app.tell_evaluator(crate::clusters::thread::EvalMsg::ClientChanged(id.clone()));
    Ok(Resp::ok(&json!({ "success": true })).audited(
        "client.updated",
        format!("client {id}"),
        summary,
    ))
}

pub fn delete_client(app: &App, _req: &Req, session: &Session, path: &[&str]) -> ApiResult {
    let id = last(path, 0).to_owned();
    let name = clients::get(&app.db, &id)?.map(|c| c.name().to_owned());
    clients::delete(&app.db, id.clone())?;
    app.outbound.remove(&id);
    app.agents.close(&id, crate::agents::registry::DELETED);
    log::info!("Client {id} deleted by \"{}\"", session.username);
    app.broadcast_clients();
    app.readings.forget(&id);
    app.tell_evaluator(crate::clusters::thread::EvalMsg::ClientDeleted(id.clone()));
    Ok(Resp::ok(&json!({ "status": "deleted" })).audited(
        "client.deleted",
        format!("client {id}"),
        format!(
            "Client \"{}\" deleted",
            name.unwrap_or_default().escape_debug()
        ),
    ))
}

// --- readings ---

pub fn list_states(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    let list = app.readings.list();
    let list: Vec<&vrrp_protocol::Reading> = list.iter().map(|r| &**r).collect();
    Ok(Resp::ok(&list))
}

pub fn client_state(app: &App, _req: &Req, _s: &Session, path: &[&str]) -> ApiResult {
    let id = last(path, 1);
    if clients::get(&app.db, id)?.is_none() {
        return Err(ApiError::not_found("Client not found"));
    }
    match app.readings.get(id) {
        Some(reading) => Ok(Resp::ok(&*reading)),
        None => Err(ApiError::not_found("No reading from this client yet")),
    }
}

pub fn refresh_state(app: &App, _req: &Req, _s: &Session, path: &[&str]) -> ApiResult {
    let id = last(path, 2);
    let Some(client) = clients::get(&app.db, id)? else {
        return Err(ApiError::not_found("Client not found"));
    };
    if !app.agents.send(
        id,
        ToSocket::Text(envelope(
            vrrp_protocol::kind::REQUEST_STATE_UPDATE,
            json!({}),
        )),
    ) {
        return Err(ApiError::new(409, "Client is offline"));
    }
    Ok(Resp::ok(&json!({ "status": "requested" })).audited(
        "client.refreshed",
        format!("client {id}"),
        format!(
            "A fresh reading asked of \"{}\"",
            client.name().escape_debug()
        ),
    ))
}

pub fn list_clusters(app: &App, _req: &Req, _s: &Session, _path: &[&str]) -> ApiResult {
    Ok(Resp::ok(&*app.cluster_snapshot()))
}
