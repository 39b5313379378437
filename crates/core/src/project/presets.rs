//! The presets compiled into the binary: which exist, the files each writes into a project
//! (Chart.yaml stamped with name and version, values.yaml overrides), the library chart vendored
//! as `charts/talm/`, and the content hash behind the drift checks.

use std::collections::BTreeMap;

use anyhow::Result;
use sha2::{Digest, Sha256};

use crate::embedded::presets as embedded_presets;
use talm_base::error::hinted;

/// The library chart's folder; every project vendors it as `charts/talm/`.
pub const LIBRARY: &str = "talm";
/// Inside the library's folder, the project skeleton used by `--preset talm`.
const LIBRARY_SKELETON: &str = "project/";

/// Preset names in the order users see them: generic first, then the others, the bare library
/// last.
pub fn names() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (path, _) in embedded_presets() {
        if let Some((dir, _)) = path.split_once('/') {
            if !names.iter().any(|n| n == dir) {
                names.push(dir.to_string());
            }
        }
    }
    names.sort_by_key(|n| match n.as_str() {
        "generic" => (0, n.clone()),
        LIBRARY => (2, n.clone()),
        _ => (1, n.clone()),
    });
    names
}

/// Refuses a preset this binary does not carry.
pub fn check(preset: &str) -> Result<()> {
    if names().iter().any(|n| n == preset) {
        Ok(())
    } else {
        Err(hinted(
            format!(
                "invalid preset: {preset}. Valid presets are: [{}]",
                names().join(" ")
            ),
            "pass one of the listed presets with --preset",
        ))
    }
}

/// Replaces the top-level `name:` and `version:` values of a Chart.yaml.
pub fn stamp_chart(content: &str, name: &str, version: &str) -> String {
    let mut out = String::with_capacity(content.len());
    for line in content.split_inclusive('\n') {
        let (body, nl) = match line.strip_suffix('\n') {
            Some(b) => (b, "\n"),
            None => (line, ""),
        };
        let replaced =
            [("name: ", name), ("version: ", version)]
                .iter()
                .find_map(|(key, value)| {
                    let rest = body.strip_prefix(key)?;
                    let token_len = rest.find(char::is_whitespace).unwrap_or(rest.len());
                    (token_len > 0).then(|| format!("{key}{value}{}", &rest[token_len..]))
                });
        out.push_str(replaced.as_deref().unwrap_or(body));
        out.push_str(nl);
    }
    out
}

/// Chart.yaml with its name and version normalised, so stamps never change a hash.
pub fn normalize_chart(content: &str) -> String {
    stamp_chart(content, "%s", "%s")
}

/// The preset's own files (relative to the project root), unstamped.
pub fn preset_files(preset: &str) -> BTreeMap<String, String> {
    let prefix = if preset == LIBRARY {
        format!("{LIBRARY}/{LIBRARY_SKELETON}")
    } else {
        format!("{preset}/")
    };
    embedded_presets()
        .iter()
        .filter_map(|(p, c)| {
            p.strip_prefix(&prefix)
                .map(|r| (r.to_string(), c.to_string()))
        })
        .collect()
}

/// The library chart's files, relative to `charts/talm/`, unstamped.
pub fn library_files() -> BTreeMap<String, String> {
    let prefix = format!("{LIBRARY}/");
    embedded_presets()
        .iter()
        .filter_map(|(p, c)| {
            p.strip_prefix(&prefix)
                .map(|r| (r.to_string(), c.to_string()))
        })
        .filter(|(r, _)| !r.starts_with(LIBRARY_SKELETON))
        .collect()
}

/// The library as written into a project: `charts/talm/...` with a stamped Chart.yaml.
pub fn vendored_library(version: &str) -> BTreeMap<String, String> {
    library_files()
        .into_iter()
        .map(|(rel, c)| {
            let c = if rel == "Chart.yaml" {
                stamp_chart(&c, LIBRARY, version)
            } else {
                c
            };
            (format!("charts/talm/{rel}"), c)
        })
        .collect()
}

/// The preset's files as written into a project, before values.yaml overrides: Chart.yaml
/// stamped with the cluster name and version.
pub fn stamped_preset(preset: &str, cluster: &str, version: &str) -> BTreeMap<String, String> {
    preset_files(preset)
        .into_iter()
        .map(|(rel, c)| {
            let c = if rel == "Chart.yaml" {
                stamp_chart(&c, cluster, version)
            } else {
                c
            };
            (rel, c)
        })
        .collect()
}

/// Whether values.yaml has a top-level `image:` line.
pub fn declares_image(values: &str) -> bool {
    values.lines().any(|l| {
        l == "image:" || l.starts_with("image:") && l[6..].starts_with(char::is_whitespace)
    })
}

/// Rewrites every top-level `key:` line of values.yaml to `key: "<value>"`, keeping all else.
pub fn override_value(values: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key}:");
    // Cannot fail: serialising a string to JSON cannot fail.
    let quoted = serde_json::to_string(value).expect("string serialises");
    let mut out = String::with_capacity(values.len());
    for line in values.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let matches = body == prefix
            || body
                .strip_prefix(&prefix)
                .is_some_and(|r| r.starts_with(char::is_whitespace));
        if matches {
            out.push_str(&format!("{prefix} {quoted}"));
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// SHA-256 over `<len(path)>:<path><len(content)>:<content>` for each path in byte order.
pub fn hash_files(files: &BTreeMap<String, String>) -> String {
    let mut h = Sha256::new();
    for (p, c) in files {
        h.update(format!("{}:{}{}:", p.len(), p, c.len()).as_bytes());
        h.update(c.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The hash recorded in `.talm-preset.lock`: all embedded files of the preset (keys keep the
/// `<preset>/` prefix), Chart.yaml files normalised.
pub fn preset_hash(preset: &str) -> Result<String> {
    // Embedded files never change in a process, and every project command checks the hash.
    /// Listed in [`talm_base::caches::KEPT`].
    static HASHES: talm_base::caches::memo::Memo<String, String> =
        talm_base::caches::memo::Memo::new(8);
    HASHES.get_or_try(preset.to_string(), |preset| embedded_preset_hash(preset))
}

fn embedded_preset_hash(preset: &str) -> Result<String> {
    let prefix = format!("{preset}/");
    let files: BTreeMap<String, String> = embedded_presets()
        .iter()
        .filter(|(p, _)| p.starts_with(&prefix))
        .map(|(p, c)| {
            let c = if p.ends_with("Chart.yaml") {
                normalize_chart(c)
            } else {
                c.to_string()
            };
            (p.to_string(), c)
        })
        .collect();
    if files.is_empty() {
        return Err(talm_base::error::plain(format!(
            "unknown preset {preset:?}: no embedded files carry that prefix"
        )));
    }
    Ok(hash_files(&files))
}

/// The library hash: library files keyed relative to the library folder, Chart.yaml normalised.
pub fn library_hash() -> String {
    /// Listed in [`talm_base::caches::KEPT`].
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| hash_files(&normalized_library(library_files())))
        .clone()
}

/// Normalises library files for hashing (CRLF → LF, Chart.yaml name/version).
pub fn normalized_library(files: BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .into_iter()
        .map(|(rel, c)| {
            let c = c.replace("\r\n", "\n");
            let c = if rel == "Chart.yaml" {
                normalize_chart(&c)
            } else {
                c
            };
            (rel, c)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_presets_are_listed() {
        assert_eq!(names(), vec!["generic", "cozystack", "talm"]);
        assert!(check("nope")
            .unwrap_err()
            .to_string()
            .contains("Valid presets are: [generic cozystack talm]"));
        assert!(preset_files("cozystack").contains_key("values.yaml"));
        assert!(preset_files("talm").contains_key("Chart.yaml"));
        assert!(library_files().keys().all(|k| !k.starts_with("project/")));
    }

    #[test]
    fn stamping_touches_only_top_level_name_and_version() {
        let c = "apiVersion: v2\nname: cozystack\nversion: 0.1.0\ndependencies:\n  name: x\n";
        assert_eq!(
            stamp_chart(c, "prod", "1.2.3"),
            "apiVersion: v2\nname: prod\nversion: 1.2.3\ndependencies:\n  name: x\n"
        );
        assert_eq!(
            normalize_chart(c),
            normalize_chart(&stamp_chart(c, "a", "9"))
        );
    }

    #[test]
    fn overrides_are_textual() {
        let v = "# c\nendpoint: \"\"\nimage: old # pinned\nimages: x\n";
        let out = override_value(
            &override_value(v, "image", "r/i:v1"),
            "endpoint",
            "https://e:6443",
        );
        assert_eq!(
            out,
            "# c\nendpoint: \"https://e:6443\"\nimage: \"r/i:v1\"\nimages: x\n"
        );
        assert!(declares_image(v));
        assert!(!declares_image("images: x\n"));
    }

    #[test]
    fn hash_is_order_independent_and_unambiguous() {
        let mut a = BTreeMap::new();
        a.insert("ab".to_string(), "c".to_string());
        let mut b = BTreeMap::new();
        b.insert("a".to_string(), "bc".to_string());
        assert_ne!(hash_files(&a), hash_files(&b));
        assert_eq!(preset_hash("cozystack").unwrap().len(), 64);
        assert!(preset_hash("nope").is_err());
    }
}
