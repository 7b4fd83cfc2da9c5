//! The webhook definitions in memory, each compiled once when it is saved.
//!
//! [`Webhooks`] is the one way a definition changes (the API, provisioning
//! files): it writes through [`store`] and then replaces its in-memory list, so
//! the dispatcher never reads the database nor compiles a template to deliver
//! an event. What changes with each delivery (`lastStatus`, `lastError`,
//! `lastAttemptAt`) stays in the database only, where the API reads it.

use super::provisioned::{self, Wanted};
use super::store::{self, Webhook, WebhookSpec};
use super::template::{compile, compile_text, Context, Template, TextTemplate};
use crate::db::{Db, DbError};
use chrono::{DateTime, Utc};
use parking_lot::RwLock;
use serde_json::Value;
use std::sync::Arc;

/// What a delivery sends: method, URL, headers, body.
pub struct Rendered {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

/// A webhook's templates, compiled.
pub struct Templates {
    body: Template,
    url: TextTemplate,
    headers: Vec<(String, TextTemplate)>,
}

impl Templates {
    /// Fails with the first template that does not compile (the API's
    /// validation has refused such a definition already).
    pub fn compile(spec: &WebhookSpec) -> Result<Templates, String> {
        let body = compile(&spec.body_template).map_err(|e| e.to_string())?;
        let url = compile_text(&spec.url, "url").map_err(|e| e.to_string())?;
        let headers = spec
            .headers
            .iter()
            .map(|(k, v)| {
                compile_text(v.as_str().unwrap_or_default(), k)
                    .map(|t| (k.clone(), t))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Templates { body, url, headers })
    }

    pub fn render(&self, ctx: Context<'_>) -> Rendered {
        Rendered {
            url: self.url.render(ctx),
            headers: self
                .headers
                .iter()
                .map(|(k, t)| (k.clone(), t.render(ctx)))
                .collect(),
            body: self.body.render(ctx),
        }
    }
}

/// One webhook as deliveries use it.
pub struct LiveHook {
    pub hook: Webhook,
    /// `Err`: why its templates do not compile; each delivery then records it.
    pub templates: Result<Templates, String>,
}

/// The webhook definitions, in memory.
pub struct Webhooks {
    db: Arc<Db>,
    current: RwLock<Arc<[Arc<LiveHook>]>>,
}

impl Webhooks {
    pub fn load(db: Arc<Db>) -> Result<Webhooks, DbError> {
        let hooks = Webhooks {
            db,
            current: RwLock::new(Arc::from(Vec::new())),
        };
        hooks.reload()?;
        Ok(hooks)
    }

    /// Every webhook as saved, compiled (disabled ones included).
    pub fn current(&self) -> Arc<[Arc<LiveHook>]> {
        self.current.read().clone()
    }

    /// The webhook of this id as saved now, if any.
    pub fn get(&self, id: &str) -> Option<Arc<LiveHook>> {
        self.current().iter().find(|h| h.hook.id == id).cloned()
    }

    pub fn create(&self, spec: WebhookSpec, now: DateTime<Utc>) -> Result<Webhook, DbError> {
        let hook = store::create(&self.db, spec, now)?;
        self.reload()?;
        Ok(hook)
    }

    /// `None` when there is no such webhook or a file owns it.
    pub fn update(
        &self,
        id: &str,
        spec: WebhookSpec,
        now: DateTime<Utc>,
    ) -> Result<Option<Webhook>, DbError> {
        let hook = store::update(&self.db, id, spec, now)?;
        if hook.is_some() {
            self.reload()?;
        }
        Ok(hook)
    }

    /// False when there is no such webhook or a file owns it.
    pub fn delete(&self, id: &str) -> Result<bool, DbError> {
        let deleted = store::delete(&self.db, id)?;
        if deleted {
            self.reload()?;
        }
        Ok(deleted)
    }

    /// The provisioned webhooks made exactly `wanted`; one sentence per change.
    pub fn sync_provisioned(
        &self,
        wanted: Vec<Wanted>,
        now: DateTime<Utc>,
    ) -> Result<Vec<String>, DbError> {
        let changes = provisioned::sync(&self.db, wanted, now)?;
        if !changes.is_empty() {
            self.reload()?;
        }
        Ok(changes)
    }

    /// Reads every definition and compiles it: after each change, never per event.
    fn reload(&self) -> Result<(), DbError> {
        let hooks: Vec<Arc<LiveHook>> = store::list(&self.db)?
            .into_iter()
            .map(|hook| {
                let templates = Templates::compile(&hook.spec);
                Arc::new(LiveHook { hook, templates })
            })
            .collect();
        *self.current.write() = Arc::from(hooks);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, body: &str) -> WebhookSpec {
        WebhookSpec {
            name: name.into(),
            enabled: true,
            url: "http://127.0.0.1:9/{{ event.kind }}".into(),
            method: "POST".into(),
            headers: json!({ "x-kind": "{{ event.kind }}" })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            body_template: body.into(),
            min_level: "info".into(),
            kinds: Vec::new(),
            timeout_ms: 1000,
        }
    }

    #[test]
    fn a_saved_webhook_is_held_compiled_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _writer) = Db::open(&dir.path().join("a.db"), "now").unwrap();
        let hooks = Webhooks::load(Arc::new(db)).unwrap();
        assert!(hooks.current().is_empty());
        let now = Utc::now();
        let made = hooks
            .create(spec("a", r#"{"text": "{{ event.message }}"}"#), now)
            .unwrap();
        let held = hooks.get(&made.id).expect("held after create");
        let shared = json!({ "event": { "kind": "k", "message": "m" } });
        let own = json!({ "webhook": { "name": "a" } });
        let rendered = held
            .templates
            .as_ref()
            .expect("compiled")
            .render(Context::layered(&own, &shared));
        assert_eq!(rendered.body, json!({ "text": "m" }));
        assert_eq!(rendered.url, "http://127.0.0.1:9/k");
        assert_eq!(rendered.headers, [("x-kind".to_owned(), "k".to_owned())]);
        // The same compiled hook is handed out until a change replaces it.
        assert!(Arc::ptr_eq(&held, &hooks.get(&made.id).unwrap()));
        hooks
            .update(&made.id, spec("a", r#"{"t": "{{ event.kind }}"}"#), now)
            .unwrap()
            .expect("updated");
        let changed = hooks.get(&made.id).unwrap();
        assert!(!Arc::ptr_eq(&held, &changed));
        assert_eq!(
            changed
                .templates
                .as_ref()
                .unwrap()
                .render(Context::layered(&own, &shared))
                .body,
            json!({ "t": "k" })
        );
        assert!(hooks.delete(&made.id).unwrap());
        assert!(hooks.get(&made.id).is_none());
    }
}
