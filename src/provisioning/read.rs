//! Reading the provisioning directory: its YAML files in name order, each
//! parsed and checked ([`super::parse`]), merged into one set. The only files
//! the server reads after start, and only at start and on SIGHUP.

use super::parse::{merge, parse_file};
use super::{ProvisionError, Provisioned, FILE_MAX};
use std::path::Path;

/// The `*.yaml` and `*.yml` files of `dir` (not hidden ones, not
/// subdirectories), in name order, with their text. No directory is no file.
pub fn read_dir(dir: &Path) -> Result<Vec<(String, String)>, ProvisionError> {
    let shown = dir.display().to_string();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err(ProvisionError::new(
                &shown,
                None,
                format!("cannot read: {e}"),
            ))
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry =
            entry.map_err(|e| ProvisionError::new(&shown, None, format!("cannot read: {e}")))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !(name.ends_with(".yaml") || name.ends_with(".yml")) {
            continue;
        }
        // Followed: a mounted ConfigMap's files are links.
        if std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            names.push(name);
        }
    }
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let path = dir.join(&name);
        let too_big = std::fs::metadata(&path).is_ok_and(|m| m.len() > FILE_MAX);
        if too_big {
            return Err(ProvisionError::new(
                &name,
                None,
                "is larger than 1 MiB".into(),
            ));
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| ProvisionError::new(&name, None, format!("cannot read: {e}")))?;
        out.push((name, text));
    }
    Ok(out)
}

/// Reads and checks every file of `dir` into one set.
pub fn load(dir: &Path, allowed: &[ipnet::IpNet]) -> Result<Provisioned, ProvisionError> {
    let mut files = Vec::new();
    for (name, text) in read_dir(dir)? {
        let items = parse_file(&name, &text, allowed)?;
        files.push((name, items));
    }
    merge(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lists_yaml_files_in_order() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_dir(&dir.path().join("none")).unwrap().is_empty());
        for (name, text) in [
            ("b.yml", "settings: {}\n"),
            ("a.yaml", "webhooks: []\n"),
            (".a.yaml.swp", "x"),
            ("notes.txt", "x"),
        ] {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.yaml")).unwrap();
        let names: Vec<String> = read_dir(dir.path())
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names, ["a.yaml", "b.yml"]);
        assert_eq!(load(dir.path(), &[]).unwrap().files, ["a.yaml", "b.yml"]);
    }
}
