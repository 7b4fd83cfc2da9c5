//! Configuration as files in the dashboard: what `provisioning/*.yaml` defines
//! is shown read-only, naming its file, on the webhooks list, in the webhook
//! editor, on the settings page and in the silences list; a file that does not
//! parse after a SIGHUP is named with its line on the settings page.

use crate::harness::{Auth, Launch, ADMIN_PASSWORD};
use crate::login;
use crate::webdriver::Browser;
use serde_json::{json, Value};

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "browser tier: headless Chromium; --features test-browser (scripts/test.sh)"
)]
fn provisioned_webhooks_settings_and_silences_are_read_only_and_name_their_file() {
    let launch = Launch::new();
    let dir = launch.data_dir().join("provisioning");
    std::fs::create_dir_all(&dir).unwrap();
    let iso =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let now = chrono::Utc::now();
    std::fs::write(
        dir.join("webhooks.yaml"),
        "webhooks:\n  - name: team chat\n    url: http://127.0.0.1:9/hook\n    bodyTemplate: { text: \"{{event.message}}\" }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("settings.yaml"),
        format!(
            "settings:\n  notification_retention_days: 45\n  activity_level_overrides:\n    client.connected: none\n\
             silences:\n  - name: patching\n    matcher: {{ kind: \"keepalived.*\" }}\n    startsAt: {}\n    endsAt: {}\n    comment: Kernel updates\n",
            iso(now - chrono::Duration::hours(1)),
            iso(now + chrono::Duration::hours(2)),
        ),
    )
    .unwrap();
    let server = launch.start();
    let admin = server.admin();
    let b = Browser::start(1280, 1000);

    // The list: a badge, no switch to flip.
    login(&b, &server, "admin", ADMIN_PASSWORD, "/webhooks");
    b.wait_text("#webhook-list", "provisioned from webhooks.yaml");
    assert_eq!(
        b.js(
            "return document.querySelector('#webhook-list input[type=checkbox]').disabled",
            json!([])
        ),
        json!(true)
    );
    b.screenshot("provisioning-webhooks");

    // The editor: the note, every field disabled, no save or delete; a test still sends.
    b.click("#webhook-list td[data-label=Name] a");
    b.wait_text("#provisioned-note", "webhooks.yaml");
    b.wait("#send-test");
    let state = b.js(
        "return [!!document.querySelector('#save-webhook'), !!document.querySelector('#delete-webhook'),
                 document.querySelector('#webhook-form fieldset').disabled]",
        json!([]),
    );
    assert_eq!(state, json!([false, false, true]));
    b.screenshot("provisioning-webhook-editor");

    // Settings: the provisioned key and the overrides table are read-only; the
    // card says what the files define.
    b.goto(&server.url("/settings"));
    b.wait_text("#provisioning", "applied");
    b.wait_text("#provisioning", "settings.yaml");
    b.wait_text("#scheduler-activity", "provisioned from settings.yaml");
    let disabled = b.js(
        "return [document.querySelector('#scheduler-activity #f-notification_retention_days').disabled,
                 document.querySelector('#scheduler-activity #f-notification_cleanup_interval_hours').disabled,
                 [...document.querySelectorAll('#overrides select')].every(s => s.disabled),
                 !!document.querySelector('#overrides button[type=submit]')]",
        json!([]),
    );
    assert_eq!(disabled, json!([true, false, true, false]));
    b.wait_text("#overrides", "provisioned from settings.yaml");
    b.screenshot("provisioning-settings");
    b.js(
        "document.getElementById('overrides').scrollIntoView()",
        json!([]),
    );
    b.screenshot("provisioning-settings-files");

    // Silences: named, badged, no "End now".
    b.goto(&server.url("/silences"));
    b.wait_text(".silence-list", "provisioned from settings.yaml");
    b.wait_text(".silence-list", "patching");
    assert_eq!(
        b.js(
            "return document.querySelectorAll('.silence-list .end-silence').length",
            json!([])
        ),
        json!(0)
    );

    // A broken file and SIGHUP: the settings page names it with its line.
    std::fs::write(
        dir.join("webhooks.yaml"),
        "webhooks:\n  - name: team chat\n   url: http://127.0.0.1:9/\n",
    )
    .unwrap();
    server.signal(libc::SIGHUP);
    crate::admin::wait_for("the failed reading", || {
        let s: Value = server
            .get("/api/v1/settings/provisioning", Auth::Cookie(&admin))
            .body;
        (s["ok"] == false).then_some(())
    });
    b.goto(&server.url("/settings"));
    b.wait_text("#provisioning-banner", "webhooks.yaml:3:");
    b.screenshot("provisioning-error");
    b.wait_text("#provisioning-error", "webhooks.yaml:3:");
    b.wait_text("#provisioning-outcome", "not applied");
    let errors: Vec<String> = b
        .console()
        .into_iter()
        .filter(|l| l.contains("SEVERE") && !l.contains("Failed to load resource"))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}
