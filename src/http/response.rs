//! Answers: JSON bodies, the spec's `{error}` shape, extra headers.

use serde::Serialize;

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub content_type: &'static str,
    /// Done by the HTTP layer once the answer has been written.
    pub after_sent: Option<AfterSent>,
    /// What the change was, for the audit log (written by the route table).
    pub audit: Option<crate::audit::Note>,
}

/// Work that must not overtake the answer.
#[derive(Debug, PartialEq)]
pub enum AfterSent {
    /// Close the user's dashboard sockets. With 4002 the tab reconnects at once with
    /// the fresh cookie this very answer carries, so the close may only go out after it.
    CloseUserSockets {
        user_id: i64,
        code: u16,
        reason: &'static str,
    },
}

impl Resp {
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Resp {
        Resp::json_bytes(
            status,
            serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec()),
        )
    }

    /// A body already serialised as JSON.
    pub fn json_bytes(status: u16, body: Vec<u8>) -> Resp {
        Resp {
            status,
            headers: Vec::new(),
            body,
            content_type: "application/json; charset=utf-8",
            after_sent: None,
            audit: None,
        }
    }

    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Resp {
        Resp::json(200, value)
    }

    /// A `302 Found` to `location`, without a body.
    pub fn redirect(location: &str) -> Resp {
        Resp {
            status: 302,
            headers: vec![("location".to_owned(), location.to_owned())],
            body: Vec::new(),
            content_type: "text/plain; charset=utf-8",
            after_sent: None,
            audit: None,
        }
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> Resp {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Says what the change was, for the audit log.
    pub fn audited(
        mut self,
        action: &'static str,
        target: impl Into<String>,
        summary: impl Into<String>,
    ) -> Resp {
        self.audit = Some(crate::audit::Note::new(action, target, summary));
        self
    }

    pub fn after_sent(mut self, work: AfterSent) -> Resp {
        self.after_sent = Some(work);
        self
    }
}

/// An error answer: `{"error": message}` with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub headers: Vec<(String, String)>,
    /// More fields beside `error` (an object), e.g. a refused drill's findings.
    pub extra: Option<Box<serde_json::Value>>,
}

impl ApiError {
    pub fn new(status: u16, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
            headers: Vec::new(),
            extra: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError::new(404, message)
    }

    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized")
    }

    pub fn internal() -> ApiError {
        ApiError::new(500, "Internal server error")
    }

    pub fn header(mut self, name: &str, value: impl Into<String>) -> ApiError {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    pub fn into_resp(self) -> Resp {
        let mut body = serde_json::json!({ "error": self.message });
        if let (Some(serde_json::Value::Object(extra)), Some(obj)) =
            (self.extra.map(|e| *e), body.as_object_mut())
        {
            for (k, v) in extra {
                obj.entry(k).or_insert(v);
            }
        }
        let mut resp = Resp::json(self.status, &body);
        resp.headers = self.headers;
        resp
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        if let crate::db::DbError::StorageFull = e {
            // The writer logs the streak once; each refused request is not news.
            return ApiError::new(
                503,
                "Storage full: the server cannot save changes until space is freed on the disk holding its data directory",
            );
        }
        log::error!("{e}");
        ApiError::internal()
    }
}

pub type ApiResult = Result<Resp, ApiError>;
