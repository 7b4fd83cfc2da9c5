//! Ready-made webhook templates for common receivers, shipped as files under
//! `static/webhook-templates/` (the dashboard can load them) and offered by
//! `GET /api/v1/webhooks/templates` with what else a webhook for that receiver needs.

/// One ready-made webhook: a starting point the operator completes (URL, keys).
pub struct ReadyMade {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub method: &'static str,
    pub url: &'static str,
    pub headers: &'static [(&'static str, &'static str)],
    pub kinds: &'static [&'static str],
    pub min_level: &'static str,
    pub body_template: &'static str,
}

pub const READY_MADE: &[ReadyMade] = &[
    ReadyMade {
        id: "slack",
        name: "Slack (incoming webhook)",
        description: "A message with the sentence, the supporting detail and, for cluster events, every member's state.",
        method: "POST",
        url: "https://hooks.slack.com/services/REPLACE/WITH/YOURS",
        headers: &[],
        kinds: &[],
        min_level: "warning",
        body_template: include_str!("../../static/webhook-templates/slack.json"),
    },
    ReadyMade {
        id: "teams",
        name: "Microsoft Teams (incoming webhook, MessageCard)",
        description: "A card coloured by level, with the cluster's members as facts.",
        method: "POST",
        url: "https://example.webhook.office.com/webhookb2/REPLACE",
        headers: &[],
        kinds: &[],
        min_level: "warning",
        body_template: include_str!("../../static/webhook-templates/teams.json"),
    },
    ReadyMade {
        id: "discord",
        name: "Discord (channel webhook)",
        description: "A message with an embed coloured by level.",
        method: "POST",
        url: "https://discord.com/api/webhooks/REPLACE/WITH-YOURS",
        headers: &[],
        kinds: &[],
        min_level: "warning",
        body_template: include_str!("../../static/webhook-templates/discord.json"),
    },
    ReadyMade {
        id: "pagerduty",
        name: "PagerDuty (Events API v2)",
        description: "Incidents trigger and resolve a PagerDuty alert; the incident id is the dedup key. Put your integration key in routing_key.",
        method: "POST",
        url: "https://events.pagerduty.com/v2/enqueue",
        headers: &[],
        kinds: &["vrrp.incident_*"],
        min_level: "info",
        body_template: include_str!("../../static/webhook-templates/pagerduty.json"),
    },
    ReadyMade {
        id: "opsgenie-create",
        name: "Opsgenie: create alerts",
        description: "Opened and updated incidents create (or deduplicate) an alert aliased by the incident id. Use with opsgenie-close.",
        method: "POST",
        url: "https://api.opsgenie.com/v2/alerts",
        headers: &[("Authorization", "GenieKey REPLACE-WITH-YOUR-API-KEY")],
        kinds: &["vrrp.incident_opened", "vrrp.incident_updated"],
        min_level: "info",
        body_template: include_str!("../../static/webhook-templates/opsgenie-create.json"),
    },
    ReadyMade {
        id: "opsgenie-close",
        name: "Opsgenie: close alerts",
        description: "A resolved incident closes the alert aliased by its id.",
        method: "POST",
        url: "https://api.opsgenie.com/v2/alerts/{{event.correlationId}}/close?identifierType=alias",
        headers: &[("Authorization", "GenieKey REPLACE-WITH-YOUR-API-KEY")],
        kinds: &["vrrp.incident_resolved"],
        min_level: "info",
        body_template: include_str!("../../static/webhook-templates/opsgenie-close.json"),
    },
    ReadyMade {
        id: "ntfy",
        name: "ntfy (JSON publishing)",
        description: "A push notification; the priority follows the level. Put your topic in the body.",
        method: "POST",
        url: "https://ntfy.sh/",
        headers: &[],
        kinds: &[],
        min_level: "warning",
        body_template: include_str!("../../static/webhook-templates/ntfy.json"),
    },
    ReadyMade {
        id: "generic",
        name: "Generic JSON",
        description: "The whole event (with its message and detail), the client and the webhook's name.",
        method: "POST",
        url: "https://example.org/vrrp-events",
        headers: &[],
        kinds: &[],
        min_level: "info",
        body_template: include_str!("../../static/webhook-templates/generic.json"),
    },
];

impl ReadyMade {
    /// As `GET /api/v1/webhooks/templates` shows it: a webhook body to complete.
    pub fn view(&'static self) -> ReadyMadeView {
        ReadyMadeView {
            id: self.id,
            name: self.name,
            description: self.description,
            webhook: ReadyMadeBody {
                name: self.name,
                url: self.url,
                method: self.method,
                headers: self.headers.iter().copied().collect(),
                kinds: self.kinds,
                min_level: self.min_level,
                body_template: self.body_template,
            },
        }
    }
}

/// A ready-made webhook as the API lists it.
#[derive(Debug, serde::Serialize)]
pub struct ReadyMadeView {
    pub id: &'static str,
    pub name: &'static str,
    pub description: &'static str,
    pub webhook: ReadyMadeBody,
}

/// The webhook body a ready-made one proposes (what `POST /api/v1/webhooks` takes).
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadyMadeBody {
    pub name: &'static str,
    pub url: &'static str,
    pub method: &'static str,
    pub headers: std::collections::BTreeMap<&'static str, &'static str>,
    pub kinds: &'static [&'static str],
    pub min_level: &'static str,
    pub body_template: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhooks::delivery::samples;
    use crate::webhooks::store::validate;
    use crate::webhooks::template::{compile, compile_text};
    use serde_json::{json, Value};

    fn ctx(kind: &str) -> Value {
        let event = samples(chrono::Utc::now())
            .into_iter()
            .find(|e| e["kind"] == kind)
            .unwrap();
        let mut event = event;
        event["message"] =
            json!("Incident opened for VRID 51 on site dc-1 (lb-1, lb-2): split-brain.");
        event["detail"] = json!("lb-1 and lb-2 are both MASTER at once (split brain).");
        json!({ "event": event, "client": null, "webhook": { "name": "ops" } })
    }

    fn render(r: &ReadyMade, kind: &str) -> Value {
        compile(r.body_template)
            .unwrap_or_else(|e| panic!("{}: {e}", r.id))
            .render(&ctx(kind))
    }

    fn nonempty_str(v: &Value) -> bool {
        v.as_str().is_some_and(|s| !s.is_empty())
    }

    #[test]
    fn every_ready_made_webhook_passes_the_api_rules() {
        for r in READY_MADE {
            let body = serde_json::to_value(r.view().webhook).unwrap();
            let spec =
                validate(body.as_object().unwrap()).unwrap_or_else(|e| panic!("{}: {e:?}", r.id));
            assert_eq!(spec.method, r.method);
            compile_text(r.url, "url").unwrap();
        }
    }

    #[test]
    fn each_renders_incidents_into_what_its_receiver_requires() {
        for kind in ["vrrp.incident_opened", "vrrp.incident_resolved"] {
            let get = |id: &str| render(READY_MADE.iter().find(|r| r.id == id).unwrap(), kind);
            // Slack: text, and every block typed; a section's text is a text object.
            let slack = get("slack");
            assert!(nonempty_str(&slack["text"]));
            for block in slack["blocks"].as_array().unwrap() {
                let t = block["type"].as_str().unwrap();
                assert!(["section", "context"].contains(&t));
                if t == "section" {
                    assert!(
                        block["text"]["type"] == "mrkdwn"
                            || block["fields"]
                                .as_array()
                                .is_some_and(|f| f.iter().all(|f| f["type"] == "mrkdwn"))
                    );
                } else {
                    assert!(!block["elements"].as_array().unwrap().is_empty());
                }
            }
            // Teams MessageCard: @type, @context and a summary or text.
            let teams = get("teams");
            assert_eq!(
                (teams["@type"].as_str(), teams["@context"].as_str()),
                (Some("MessageCard"), Some("https://schema.org/extensions"))
            );
            assert!(nonempty_str(&teams["summary"]));
            assert!(teams["themeColor"].as_str().unwrap().len() == 6);
            // Discord: content at most 2000 characters, embed colour an integer.
            let discord = get("discord");
            assert!(
                nonempty_str(&discord["content"])
                    && discord["content"].as_str().unwrap().chars().count() <= 2000
            );
            assert!(discord["embeds"][0]["color"].is_u64());
            // PagerDuty Events v2: routing_key, event_action, dedup_key = incident id;
            // a trigger needs payload.summary, source and a known severity.
            let pd = get("pagerduty");
            let action = if kind == "vrrp.incident_resolved" {
                "resolve"
            } else {
                "trigger"
            };
            assert_eq!(pd["event_action"], action);
            assert_eq!(pd["dedup_key"], "sample-incident");
            assert!(nonempty_str(&pd["routing_key"]));
            assert!(
                nonempty_str(&pd["payload"]["summary"])
                    && pd["payload"]["summary"].as_str().unwrap().chars().count() <= 1024
            );
            assert!(nonempty_str(&pd["payload"]["source"]));
            assert!(["critical", "error", "warning", "info"]
                .contains(&pd["payload"]["severity"].as_str().unwrap()));
            assert!(
                pd["payload"]["custom_details"]["cluster"].is_object(),
                "a whole placeholder keeps the object"
            );
            // Opsgenie: message (at most 130) and alias; close by alias in the URL.
            let og = get("opsgenie-create");
            assert!(
                nonempty_str(&og["message"])
                    && og["message"].as_str().unwrap().chars().count() <= 130
            );
            assert_eq!(og["alias"], "sample-incident");
            assert!(["P1", "P2", "P3", "P4", "P5"].contains(&og["priority"].as_str().unwrap()));
            let close = READY_MADE
                .iter()
                .find(|r| r.id == "opsgenie-close")
                .unwrap();
            let url = compile_text(close.url, "url").unwrap().render(&ctx(kind));
            assert_eq!(
                url,
                "https://api.opsgenie.com/v2/alerts/sample-incident/close?identifierType=alias"
            );
            // ntfy JSON publishing: topic, message, priority 1..5.
            let ntfy = get("ntfy");
            assert!(nonempty_str(&ntfy["topic"]) && nonempty_str(&ntfy["message"]));
            assert!((1..=5).contains(&ntfy["priority"].as_u64().unwrap()));
            // Generic: the whole event as an object.
            let generic = get("generic");
            assert_eq!(generic["event"]["kind"], kind);
            assert!(generic["event"]["data"]["incident"].is_object());
        }
    }

    #[test]
    fn slack_and_teams_show_why_a_member_is_in_fault() {
        let get = |id: &str| {
            render(
                READY_MADE.iter().find(|r| r.id == id).unwrap(),
                "vrrp.incident_updated",
            )
        };
        let slack = get("slack");
        let fields = slack["blocks"][2]["fields"].as_array().unwrap();
        assert_eq!(
            fields[1]["text"],
            "*lb-2*: FAULT: track script chk_haproxy failed (priority 0)"
        );
        assert_eq!(
            fields[0]["text"], "*lb-1*: MASTER (priority 130)",
            "a member not in FAULT reads as before"
        );
        let teams = get("teams");
        assert_eq!(
            teams["sections"][0]["facts"][1]["value"],
            "FAULT: track script chk_haproxy failed"
        );
    }
}
