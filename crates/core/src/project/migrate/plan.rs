//! The migration plan: what is replaced (`templates/`, `charts/`, the Go lock) by what talm's
//! `init --preset P` writes, what is kept byte for byte, how the values keys the Go presets
//! read map to ours, and the keys nobody reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde_yaml_ng::Value;

use super::detect::{Detection, LockSignal};
use crate::project::{lock, presets};

/// Every top-level values key some Go preset read, with the first Go version that read it.
pub const GO_KEYS: &[(&str, &str)] = &[
    ("endpoint", "v0.2.0"),
    ("floatingIP", "v0.2.0"),
    ("image", "v0.2.0"),
    ("podSubnets", "v0.2.0"),
    ("serviceSubnets", "v0.2.0"),
    ("advertisedSubnets", "v0.2.0"),
    ("clusterDomain", "v0.5.4"),
    ("oidcIssuerUrl", "v0.6.6"),
    ("certSANs", "v0.13.0"),
    ("nr_hugepages", "v0.16.0"),
    ("allocateNodeCIDRs", "v0.17.0"),
    ("vipLink", "v0.25.0"),
    ("clusterName", "v0.26.1"),
    ("extraKernelModules", "v0.30.0"),
    ("extraKubeletExtraArgs", "v0.30.0"),
    ("extraSysctls", "v0.30.0"),
    ("extraMachineFiles", "v0.30.0"),
    ("tcpKeepaliveTuning", "v0.31.0"),
    ("etcd", "v0.31.0"),
];

/// Top-level keys of a YAML mapping text, in order (none when it is not a mapping).
fn keys(text: &str) -> Vec<String> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(m)) => m
            .keys()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

/// What talm writes in place of the Go templates: the preset's files except Chart.yaml and
/// values.yaml (those stay the user's), the vendored library, the lock and the merge baseline.
pub fn ours(preset: &str, cluster: &str) -> Result<BTreeMap<String, String>> {
    let version = talm_wire::version::chart_version();
    let stamped = presets::stamped_preset(preset, cluster, &version);
    let mut out: BTreeMap<String, String> = stamped
        .iter()
        .filter(|(k, _)| !lock::MERGED_FILES.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    out.extend(presets::vendored_library(&version));
    out.insert(
        lock::LOCK_FILE.to_string(),
        lock::render(preset, &presets::preset_hash(preset)?),
    );
    out.insert(lock::BASE_FILE.to_string(), lock::render_base(&stamped));
    Ok(out)
}

/// The cluster name: Chart.yaml `name:`.
pub fn cluster_name(root: &Path) -> String {
    let text = std::fs::read_to_string(root.join("Chart.yaml")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("name:").map(|v| v.trim().to_string()))
        .unwrap_or_default()
}

/// `vX.Y.Z` tokens of a version list (`v0.2.0..v0.3.1,v0.5.0`) as numbers.
fn versions_in(list: &str) -> Vec<(u32, u32, u32)> {
    list.replace("..", ",")
        .split(',')
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
        .filter_map(|v| {
            let mut p = v.trim().trim_start_matches('v').split('.');
            Some((
                p.next()?.parse().ok()?,
                p.next()?.parse().ok()?,
                p.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// Whether every version of `list` is older than v0.24.0 (legacy-only templates).
pub fn legacy_only(list: &str) -> bool {
    let v = versions_in(list);
    !v.is_empty() && v.iter().all(|&x| x < (0, 24, 0))
}

/// The talosVersion of Chart.yaml templateOptions ("" when unset).
fn talos_version(root: &Path) -> String {
    crate::project::chart::Chart::load(root)
        .map(|c| c.template.talos_version)
        .unwrap_or_default()
}

fn multidoc(talos: &str) -> bool {
    let v = talos.trim_start_matches('v');
    let mut p = v.split('.');
    let major: u32 = p.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    let minor: u32 = p.next().and_then(|x| x.parse().ok()).unwrap_or(0);
    talos.is_empty() || (major, minor) >= (1, 12)
}

/// The plan as printed.
pub fn report(root: &Path, d: &Detection) -> Result<String> {
    let cluster = cluster_name(root);
    let ours = ours(&d.preset, &cluster)?;
    let mut out =
        String::from("Plan:\n  replaced (backed up first under migrate/backup-<UTC time>/):\n");
    for e in &d.tree {
        out.push_str(&format!("    {}\n", e.rel));
    }
    if matches!(d.lock, LockSignal::Go { .. } | LockSignal::Unknown { .. }) {
        out.push_str(&format!("    {} (the Go lock)\n", lock::LOCK_FILE));
    }
    out.push_str(&format!(
        "  written (what `talm init --preset {}` writes):\n",
        d.preset
    ));
    for k in ours.keys() {
        out.push_str(&format!("    {k}\n"));
    }
    out.push_str("  kept byte for byte (encrypted files are not re-keyed):\n");
    let skip = [
        "templates",
        "charts",
        "migrate",
        ".git",
        lock::LOCK_FILE,
        lock::BASE_FILE,
    ];
    let mut kept: Vec<String> = std::fs::read_dir(root)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", root.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !skip.contains(&n.as_str()) && !n.starts_with(".talm-txn-"))
        .map(|n| {
            if root.join(&n).is_dir() {
                format!("{n}/")
            } else {
                n
            }
        })
        .collect();
    kept.sort();
    for k in kept {
        out.push_str(&format!("    {k}\n"));
    }
    // Chart.yaml: nothing is required; name the optional keys that take defaults.
    let chart = std::fs::read_to_string(root.join("Chart.yaml")).unwrap_or_default();
    let theirs: BTreeSet<String> = keys(&chart).into_iter().collect();
    let preset_files = presets::preset_files(&d.preset);
    let mine = preset_files
        .get("Chart.yaml")
        .map(String::as_str)
        .unwrap_or("");
    let missing: Vec<String> = keys(mine)
        .into_iter()
        .filter(|k| !theirs.contains(k))
        .collect();
    out.push_str(&if missing.is_empty() {
        "  Chart.yaml: kept; it has every key talm reads\n".to_string()
    } else {
        format!(
            "  Chart.yaml: kept; nothing needs adding (optional keys it lacks take talm's defaults: {})\n",
            missing.join(", ")
        )
    });
    let talos = talos_version(root);
    if d.templates.as_deref().is_some_and(legacy_only) && multidoc(&talos) {
        out.push_str(&format!(
            "  note: these Go templates emit one legacy document whatever the talosVersion; talm's preset emits the multi-document format for talosVersion {} — set templateOptions.talosVersion below v1.12 in Chart.yaml to keep the legacy format\n",
            if talos.is_empty() { "\"\" (newest)" } else { &talos }
        ));
    }
    if root.join(".helmignore").exists() {
        out.push_str("  note: .helmignore: the Go talm (Helm's loader) did not render the files it lists; talm does not read it, so review those files\n");
    }
    out.push_str(&values_report(root, &d.preset, &preset_files)?);
    Ok(out)
}

/// How the project's values.yaml keys map to talm's preset. The file is read as `talm template`
/// reads it: one it cannot parse is refused, naming the line, not taken for an empty one.
fn values_report(root: &Path, preset: &str, files: &BTreeMap<String, String>) -> Result<String> {
    let path = root.join("values.yaml");
    let text = if path.exists() {
        crate::project::fsutil::read_text(&path)?
    } else {
        String::new()
    };
    let theirs: Vec<String> = talm_base::yaml::parse_map(&text, "values.yaml")?
        .keys()
        .filter_map(|k| k.as_str().map(str::to_string))
        .collect();
    let ours: Vec<String> = keys(files.get("values.yaml").map(String::as_str).unwrap_or(""));
    let (mut same, mut unknown) = (Vec::new(), Vec::new());
    for k in &theirs {
        if ours.contains(k) {
            same.push(k.clone());
        } else if GO_KEYS.iter().any(|(g, _)| g == k) {
            unknown.push(format!("{k} (read by the Go cozystack preset only)"));
        } else {
            unknown.push(k.clone());
        }
    }
    let defaults: Vec<&String> = ours.iter().filter(|k| !theirs.contains(k)).collect();
    let mut out = String::from(
        "  values.yaml: kept; every key the Go presets read has the same name in talm's\n",
    );
    let join = |v: &[String]| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    out.push_str(&format!(
        "    read the same by talm's {preset} preset: {}\n",
        join(&same)
    ));
    if !defaults.is_empty() {
        let d: Vec<String> = defaults.into_iter().cloned().collect();
        out.push_str(&format!(
            "    absent, talm's defaults apply: {}\n",
            d.join(", ")
        ));
    }
    out.push_str(&format!(
        "    unknown (kept, read by nothing): {}\n",
        join(&unknown)
    ));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_only_reads_version_lists() {
        assert!(legacy_only("v0.23.0..v0.23.1"));
        assert!(legacy_only("v0.9.0,v0.10.0..v0.12.0"));
        assert!(!legacy_only("v0.31.0..v0.32.0,v0.33.1"));
        assert!(!legacy_only(""));
        assert!(multidoc("v1.12") && multidoc("") && !multidoc("v1.11"));
    }

    #[test]
    fn ours_skips_the_users_files_and_adds_lock_and_base() {
        let files = ours("generic", "c").unwrap();
        assert!(!files.contains_key("Chart.yaml") && !files.contains_key("values.yaml"));
        assert!(files.contains_key("templates/config.tera"));
        assert!(files.contains_key("charts/talm/Chart.yaml"));
        assert!(files[lock::LOCK_FILE].contains("preset: generic"));
        assert!(files[lock::BASE_FILE].contains("values.yaml"));
    }
}
