//! `/ws/dashboard`: the live feed of a logged-in operator.
//!
//! Authenticated by the `svc_session` cookie only. On connect it sends the full
//! client list, every stored reading and the activity list; then whatever the
//! [`Hub`](crate::live::Hub) broadcasts.
//!
//! `?activity=<n>` (the dashboard's own choice, not in the spec) limits the
//! activity list sent on connect to the newest `n` records: with 50,000 stored
//! events the full list would hold up the first page load; the dashboard pages
//! the rest over REST. Without it the whole list is sent, as the spec says,
//! however large: the snapshot waits for the socket (in fragments) rather than
//! dropping a reader whose list exceeds the write buffer.

use crate::activity;
use crate::auth::{self, cookies, AuthFailure};
use crate::http::transport::ws::{self, Flow, Session, WsSocket};
use crate::http::App;
use crate::live::{self, envelope_of, hub, ToSocket};
use std::sync::Arc;
use vrrp_protocol::kind;

/// Takes over an upgrade request: the handshake and the session check run on the
/// HTTP worker; an authenticated socket gets its own `ws-dash` thread.
pub fn start(app: Arc<App>, rq: tiny_http::Request) {
    let token = ws::header(&rq, "cookie")
        .and_then(|c| cookies::find(c, cookies::SESSION_COOKIE).map(str::to_owned))
        .filter(|t| !t.is_empty());
    let activity_limit = rq
        .url()
        .split_once('?')
        .and_then(|(_, q)| q.split('&').find_map(|kv| kv.strip_prefix("activity=")))
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0);
    let Some(peer) = rq.remote_addr().copied() else {
        return;
    };
    let Some(socket) = ws::accept(rq) else {
        return;
    };
    let Some(token) = token else {
        return socket.close(4001, "Unauthorized");
    };
    let session = match auth::authenticate(&app.db, &app.sessions, Some(&token), app.clock.utc()) {
        Ok(s) => s,
        Err(AuthFailure::Db(e)) => {
            log::error!("{e}");
            return socket.close(1011, "Internal error");
        }
        Err(_) => return socket.close(4001, "Invalid Token"),
    };
    let queue = match ws::queue(hub::QUEUE) {
        Ok(q) => q,
        Err(e) => {
            log::error!("Cannot create a queue for a dashboard socket: {e}");
            return socket.close(1011, "Internal error");
        }
    };
    // The user's id, never the name: a name is user text (a NUL in it made
    // `Builder::name` panic and ended the process).
    let name = format!("ws-dash:{}", session.user_id);
    let spawned = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .name(name)
        .spawn(move || {
            if crate::lifecycle::contain_panics(|| {
                serve(&app, socket, queue, session.user_id, activity_limit)
            })
            .is_none()
            {
                log::error!("The dashboard connection from {peer} ended in a panic");
            }
        });
    if let Err(e) = spawned {
        log::error!("Cannot start a thread for the dashboard connection from {peer}: {e}");
    }
}

fn serve(
    app: &Arc<App>,
    mut socket: WsSocket,
    (outbox, inbox): (live::Outbox<ToSocket>, live::Inbox<ToSocket>),
    user_id: i64,
    activity_limit: Option<usize>,
) {
    // Subscribe before taking the snapshot: a broadcast in between waits in the
    // queue and goes out after it, so nothing is missed (an event may come twice).
    let subscription = app.hub.subscribe(user_id, outbox);
    if let Err(failed) = send_snapshot(app, &mut socket, user_id, activity_limit) {
        app.hub.unsubscribe(subscription);
        // A snapshot we could not build is said so: the dashboard reconnects.
        if failed == SnapshotFailed::Unreadable {
            socket.close(1011, "Internal error");
        }
        return;
    }
    ws::run(socket, &inbox, &app.clock, &mut DashboardSession);
    app.hub.unsubscribe(subscription);
}

/// Why the connect snapshot did not go out.
#[derive(Debug, PartialEq)]
enum SnapshotFailed {
    /// The socket is gone (closed, or not taking what we send).
    Gone,
    /// The database could not give the lists.
    Unreadable,
}

impl From<ws::Gone> for SnapshotFailed {
    fn from(_: ws::Gone) -> Self {
        SnapshotFailed::Gone
    }
}

/// The connect snapshot: the client list, every stored reading, the activity
/// list. Sent whole however large (the activity list without `?activity=` is
/// every stored event): each message waits for the socket rather than failing
/// on the write buffer, and a list that cannot be read closes the socket (1011)
/// instead of claiming an empty one.
fn send_snapshot(
    app: &App,
    socket: &mut WsSocket,
    user_id: i64,
    activity_limit: Option<usize>,
) -> Result<(), SnapshotFailed> {
    let clients = app.client_list().map_err(|e| {
        log::error!("{e}");
        SnapshotFailed::Unreadable
    })?;
    socket.send_text_waiting(&envelope_of(kind::CLIENTS_UPDATE, &clients), &app.clock)?;
    // The cluster list as the feed last told it; what changes later follows
    // as CLUSTERS_UPDATE, from the queue this socket is subscribed to.
    socket.send_text_waiting(&app.clusters_feed.whole(), &app.clock)?;
    for reading in app.readings.list() {
        socket.send_text_waiting(
            &envelope_of(kind::KEEPALIVED_STATE_UPDATE, &*reading),
            &app.clock,
        )?;
    }
    let page = activity::Page {
        limit: activity_limit,
        ..Default::default()
    };
    let mut list = activity::list_page(&app.db, user_id, &page, |_| true).map_err(|e| {
        log::error!("Cannot read the activity list for a dashboard: {e}");
        SnapshotFailed::Unreadable
    })?;
    activity::with_texts(&app.db, &mut list);
    let text = envelope_of("ACTIVITY_UPDATE", &list);
    Ok(socket.send_text_waiting(&text, &app.clock)?)
}

/// Dashboards only listen; what they send is ignored.
struct DashboardSession;

impl Session for DashboardSession {
    fn on_text(&mut self, _socket: &mut WsSocket, _text: String) -> Flow {
        Flow::Continue
    }
}
