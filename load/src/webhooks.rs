//! `vrrp-load webhooks`: what a webhook costs. In-process, the render time of the
//! largest ready-made template for an incident event; over real sockets, how many
//! events a running server delivers per second to a receiver on loopback.

use super::agents::{one_agent, post};
use super::{flag, number};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tungstenite::Message;
use vrrp_monitor::webhooks::delivery::{own_context, samples, shared_context_of, ClientView};
use vrrp_monitor::webhooks::live::Templates;
use vrrp_monitor::webhooks::ready::READY_MADE;
use vrrp_monitor::webhooks::store;
use vrrp_monitor::webhooks::template::Context;
use vrrp_protocol::messages::{envelope, kind};

pub fn run(args: &[String]) -> Result<(), String> {
    render_time(number(args, "--renders", 20_000)?)?;
    match args.first().filter(|a| !a.starts_with("--")) {
        Some(addr) => {
            let cookie = flag(args, "--token").ok_or("webhooks ADDR needs --token")?;
            deliveries(
                addr,
                &cookie,
                number(args, "--events", 2_000)?,
                number(args, "--burst", 50)?.clamp(1, 100),
            )
        }
        None => Ok(()),
    }
}

/// The largest ready-made template, as a webhook would be saved from it.
fn largest_ready_made() -> Result<(store::WebhookSpec, &'static str), String> {
    let ready = READY_MADE
        .iter()
        .max_by_key(|r| r.body_template.len())
        .ok_or("no ready-made templates")?;
    let body = serde_json::to_value(ready.view().webhook).map_err(|e| e.to_string())?;
    let spec = store::validate(
        body.as_object()
            .ok_or("ready-made webhook is not an object")?,
    )
    .map_err(|(path, why)| format!("ready-made {} does not validate: {path} {why}", ready.id))?;
    Ok((spec, ready.id))
}

fn render_time(renders: usize) -> Result<(), String> {
    let (spec, id) = largest_ready_made()?;
    let now = chrono::Utc::now();
    let event = samples(now)
        .into_iter()
        .find(|e| e["kind"] == "vrrp.incident_opened")
        .ok_or("no vrrp.incident_opened sample")?;
    let client = ClientView {
        id: "c-1".into(),
        name: "lb-1".into(),
        hostname: "lb-1.dc-1.example".into(),
        site: Some("dc-1".into()),
    };
    // Compiled once, as the server does when the webhook is saved.
    let templates = Templates::compile(&spec)?;
    let own = own_context(&spec.name);
    let mut times = Vec::with_capacity(renders);
    let mut bytes = 0;
    for _ in 0..renders.max(1) {
        let started = Instant::now();
        // What delivery does per event and webhook: the event's shared context
        // (built once per event, whatever the number of webhooks) and the render.
        let shared = shared_context_of(event.clone(), Some(&client));
        let rendered = templates.render(Context::layered(&own, &shared));
        bytes = rendered.body.to_string().len();
        times.push(started.elapsed());
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "render, largest ready-made ({id}, {} template bytes, {bytes} body bytes), {} events",
        spec.body_template.len(),
        times.len()
    );
    println!("  p50 {:.1} µs", pct(0.5).as_secs_f64() * 1e6);
    println!("  p99 {:.1} µs", pct(0.99).as_secs_f64() * 1e6);
    Ok(())
}

/// The JSON bodies a receiver got, in arrival order.
pub(crate) type Bodies = Arc<Mutex<Vec<Value>>>;

/// A receiver that answers every request 200 and keeps the JSON bodies it got.
pub(crate) fn receiver() -> Result<(String, Bodies), String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let addr = listener
        .local_addr()
        .map_err(|e| e.to_string())?
        .to_string();
    let received = Arc::new(Mutex::new(Vec::new()));
    let count = received.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let count = count.clone();
            std::thread::spawn(move || answer(stream, &count));
        }
    });
    Ok((addr, received))
}

fn answer(stream: TcpStream, received: &Mutex<Vec<Value>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&body) {
            if let Ok(mut r) = received.lock() {
                r.push(v);
            }
        }
        let reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// Sends `events` agent events in bursts of `burst` (within the 100 a webhook may
/// have waiting, so none is dropped) and waits for each burst at the receiver.
fn deliveries(addr: &str, cookie: &str, events: usize, burst: usize) -> Result<(), String> {
    let (spec, _) = largest_ready_made()?;
    let (receiver_addr, received) = receiver()?;
    post(
        addr,
        "/api/v1/webhooks",
        cookie,
        &json!({ "name": "bench receiver", "url": format!("http://{receiver_addr}/hook"),
                 "bodyTemplate": spec.body_template, "kinds": ["bench.*"], "minLevel": "info", "timeoutMs": 5000 }),
    )?;
    let mut ws = one_agent(addr, cookie, "webhook-bench")?;
    let started = Instant::now();
    let mut sent = 0;
    let mut waits = Vec::new();
    while sent < events {
        let n = burst.min(events - sent);
        let batch: Vec<Value> = (sent..sent + n)
            .map(|i| json!({ "id": format!("bench-{}-{i}", std::process::id()), "occurredAt": chrono::Utc::now().to_rfc3339(), "kind": "bench.event", "level": "warning" }))
            .collect();
        let burst_started = Instant::now();
        ws.send(Message::text(envelope::encode(
            kind::ACTIVITY,
            &json!({ "events": batch }),
        )))
        .map_err(|e| e.to_string())?;
        sent += n;
        loop {
            match ws.read() {
                Ok(Message::Text(t)) if t.as_str().contains("ACTIVITY_ACK") => break,
                Ok(_) => {}
                Err(e) => return Err(format!("agent socket: {e}")),
            }
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while received.lock().map_or(0, |r| r.len()) < sent {
            if Instant::now() > deadline {
                return Err(format!(
                    "receiver has {} of {sent} events after 30 s",
                    received.lock().map_or(0, |r| r.len())
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        waits.push(burst_started.elapsed());
    }
    let elapsed = started.elapsed();
    waits.sort();
    println!("delivery, {events} events in bursts of {burst} to a receiver on loopback");
    println!(
        "  delivered {} events in {:.2} s: {:.0} events/s",
        received.lock().map_or(0, |r| r.len()),
        elapsed.as_secs_f64(),
        received.lock().map_or(0, |r| r.len()) as f64 / elapsed.as_secs_f64()
    );
    println!(
        "  burst sent -> last event received: p50 {:.1} ms, max {:.1} ms",
        waits[waits.len() / 2].as_secs_f64() * 1e3,
        waits.last().map_or(0.0, |w| w.as_secs_f64() * 1e3)
    );
    Ok(())
}
