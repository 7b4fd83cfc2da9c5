//! `vrrp-agent register`: one registration with the configured server, then exit, for
//! configuration management (the Ansible role in deploy/ansible) that cannot type a
//! setup PIN into the register page.
//!
//! Owns nothing the running agent uses: it reads the same config and data directory
//! (`SVC_CLIENT_CONFIG`, `SVC_CLIENT_DATA_DIR`), calls the same `POST
//! {serverUrl}/api/v1/register` as the register page ([`crate::registration`]) and
//! stores the answer in identity.json as the page does. No PIN: whoever can run this
//! as the agent's user can write identity.json anyway. An agent already registered
//! (identity.json, or the old clientId/authToken in config) is left alone and exits 0,
//! so a playbook may run it every time. `serverUrl` must already be in the config:
//! then nothing rewrites the config file, which configuration management owns.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::config::{self, Config};
use crate::registration::{read_answer, serverapi};
use crate::store::datadir::{DataDir, IdentityLoad};

/// Where the registration token comes from when `--token-file` is not given.
pub const TOKEN_ENV: &str = "SVC_REGISTRATION_TOKEN";

/// A failed step: the message for stderr and the exit code (1: it did not register).
#[derive(Debug, PartialEq)]
pub struct Failed(pub String);

/// Runs the subcommand; `token_file` is `--token-file` (`-`: standard input).
/// Prints what it did; returns the exit code.
pub fn main(token_file: Option<&Path>) -> i32 {
    let env: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    match run(&env, token_file) {
        Ok(line) => {
            println!("{line}");
            0
        }
        Err(Failed(e)) => {
            eprintln!("vrrp-agent register: {e}");
            1
        }
    }
}

fn run(env: &HashMap<String, String>, token_file: Option<&Path>) -> Result<String, Failed> {
    let config = load_config(env)?;
    let dir = DataDir::open(&config.data_dir).map_err(|e| {
        Failed(format!(
            "data directory {} cannot be used: {e}",
            config.data_dir.display()
        ))
    })?;
    if let Some(id) = registered_as(&dir, &config)? {
        return Ok(format!("already registered as {id}"));
    }
    let url = config.server_url.clone().ok_or_else(|| {
        Failed(format!(
            "serverUrl is not set in {}: put the server's URL there first",
            config.config_path.display()
        ))
    })?;
    let token = read_token(env, token_file)?;
    let hostname = crate::lifecycle::hostname();
    let identity = read_answer(serverapi::register(
        &url,
        &token,
        &hostname,
        config.allow_self_signed,
    ))
    .map_err(|e| Failed(e.message))?;
    dir.save_identity(&identity).map_err(|e| {
        Failed(format!(
            "registered as {} but {} could not be written: {e}; delete the client on the server and run this again",
            identity.client_id,
            dir.path().join(crate::store::datadir::IDENTITY).display()
        ))
    })?;
    Ok(format!(
        "registered with {url} as {} (hostname {hostname}); restart the agent to connect",
        identity.client_id
    ))
}

fn load_config(env: &HashMap<String, String>) -> Result<Config, Failed> {
    let path = config::config_path(env);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Failed(format!("{}: cannot read: {e}", path.display()))),
    };
    // The same resolution of relative paths and the default data directory as the
    // agent itself (beside the binary).
    let agent_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    config::load(env, text.as_deref(), &agent_dir)
        .map(|l| l.config)
        .map_err(|e| Failed(format!("invalid configuration: {}", e.message)))
}

/// The client id this agent is registered as, if it is. A damaged identity.json is
/// moved aside as at the agent's start, and the agent registers again.
fn registered_as(dir: &DataDir, config: &Config) -> Result<Option<String>, Failed> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ").to_string();
    match dir.load_identity(&stamp) {
        Ok(IdentityLoad::Found(i)) => Ok(Some(i.client_id)),
        Ok(IdentityLoad::Missing) => Ok(config.legacy_identity.as_ref().map(|l| l.0.clone())),
        Ok(IdentityLoad::Corrupt { moved_to, reason }) => {
            eprintln!(
                "vrrp-agent register: identity.json was damaged ({reason}); moved to {}",
                moved_to.display()
            );
            Ok(None)
        }
        Err(e) => Err(Failed(format!("identity.json cannot be read: {e}"))),
    }
}

/// The registration token: the file (`-`: standard input) or `SVC_REGISTRATION_TOKEN`.
/// A token never goes on the command line, where every user's `ps` would see it.
fn read_token(env: &HashMap<String, String>, token_file: Option<&Path>) -> Result<String, Failed> {
    let text = match token_file {
        Some(p) if p == Path::new("-") => {
            let mut s = String::new();
            std::io::stdin()
                .take(64 * 1024)
                .read_to_string(&mut s)
                .map_err(|e| Failed(format!("cannot read the token from standard input: {e}")))?;
            s
        }
        Some(p) => std::fs::read_to_string(p)
            .map_err(|e| Failed(format!("cannot read the token file {}: {e}", p.display())))?,
        None => env.get(TOKEN_ENV).cloned().ok_or_else(|| {
            Failed(format!(
                "no registration token: give --token-file FILE (- for standard input) or set {TOKEN_ENV}"
            ))
        })?,
    };
    let token = text.trim();
    if token.is_empty() {
        return Err(Failed("the registration token is empty".into()));
    }
    Ok(token.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_agent_with_an_identity_is_left_alone_and_one_without_server_url_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let cfg = d.path().join("config.yaml");
        let data = d.path().join("data");
        let e = env(&[
            ("SVC_CLIENT_CONFIG", cfg.to_str().unwrap()),
            ("SVC_CLIENT_DATA_DIR", data.to_str().unwrap()),
            (TOKEN_ENV, "t"),
        ]);
        std::fs::write(&cfg, "keepalived:\n  pollInterval: 5\n").unwrap();
        let Failed(why) = run(&e, None).unwrap_err();
        assert!(why.contains("serverUrl is not set"), "{why}");
        DataDir::open(&data)
            .unwrap()
            .save_identity(&crate::store::datadir::Identity {
                client_id: "c-1".into(),
                auth_token: "tok".into(),
            })
            .unwrap();
        assert_eq!(run(&e, None).unwrap(), "already registered as c-1");
    }

    #[test]
    fn the_token_comes_from_the_file_or_the_environment_never_empty() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("token");
        std::fs::write(&f, "abc\n").unwrap();
        assert_eq!(read_token(&env(&[]), Some(&f)).unwrap(), "abc");
        assert_eq!(read_token(&env(&[(TOKEN_ENV, " x ")]), None).unwrap(), "x");
        assert!(read_token(&env(&[]), None)
            .unwrap_err()
            .0
            .contains(TOKEN_ENV));
        std::fs::write(&f, "\n").unwrap();
        assert!(read_token(&env(&[]), Some(&f)).is_err());
    }
}
