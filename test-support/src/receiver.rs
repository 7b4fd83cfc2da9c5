//! A real HTTP receiver for webhook deliveries: it records every request and
//! answers with scripted statuses.

use std::sync::mpsc;
use std::time::Duration;

/// One request as the receiver saw it: method, URL, headers (lower-case), JSON body.
pub type Received = (String, String, Vec<(String, String)>, serde_json::Value);

/// A real HTTP receiver: records every request and answers with the next scripted
/// status (the last one repeats); `None` means never answering (the caller times out).
pub struct Receiver {
    port: u16,
    got: mpsc::Receiver<Received>,
    _stop: mpsc::Sender<()>,
}

impl Receiver {
    pub fn start(script: Vec<Option<u16>>) -> Receiver {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let (tx, got) = mpsc::channel();
        let (stop_tx, stop_rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let mut n = 0;
            let mut hanging = Vec::new();
            loop {
                if matches!(stop_rx.try_recv(), Err(mpsc::TryRecvError::Disconnected)) {
                    return;
                }
                let Ok(Some(mut rq)) = server.recv_timeout(Duration::from_millis(50)) else {
                    continue;
                };
                let mut body = String::new();
                let _ = std::io::Read::read_to_string(rq.as_reader(), &mut body);
                let headers = rq
                    .headers()
                    .iter()
                    .map(|h| {
                        (
                            h.field.as_str().as_str().to_ascii_lowercase(),
                            h.value.as_str().to_owned(),
                        )
                    })
                    .collect();
                let _ = tx.send((
                    rq.method().as_str().to_owned(),
                    rq.url().to_owned(),
                    headers,
                    serde_json::from_str(&body).unwrap_or(serde_json::Value::Null),
                ));
                let step = script.get(n).or(script.last()).copied().flatten();
                n += 1;
                match step {
                    Some(status) => {
                        let _ = rq.respond(
                            tiny_http::Response::from_string(format!(
                                "answer {n}: {}",
                                "x".repeat(600)
                            ))
                            .with_status_code(status),
                        );
                    }
                    None => hanging.push(rq),
                }
            }
        });
        Receiver {
            port,
            got,
            _stop: stop_tx,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn next(&self, within: Duration) -> Option<Received> {
        self.got.recv_timeout(within).ok()
    }
}
