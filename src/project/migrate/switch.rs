//! Carrying a migration out: a staging copy of the project with talm's templates (what the node
//! proof renders through, before anything changes), the per-node comparison, and the switch
//! itself — backup first, then one transaction (`txn`) that writes talm's files and removes the
//! Go ones, so a failure midway leaves the old project usable.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_yaml_ng::Value;

use super::backup::{self, Kind as EntryKind};
use super::detect::{Detection, LockSignal};
use super::plan;
use crate::error::hinted;
use crate::project::fsutil::{Mode, Plan};
use crate::project::lock;

/// Top-level names never copied into the staging project.
const NOT_STAGED: &[&str] = &["templates", "charts", "migrate", "nodes", ".git"];

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type()?;
        if kind.is_symlink() || name.starts_with(".talm-txn-") {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if kind.is_dir() {
            fs::create_dir_all(&dst)?;
            copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}

/// A private temporary copy of the project's inputs (Chart.yaml, values, secrets, key) with
/// talm's templates for `preset` in place of the Go ones. The caller removes it (`unstage`).
pub fn stage(root: &Path, preset: &str) -> Result<PathBuf> {
    let nonce: String = crate::secrets::pki::random_bytes::<6>()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let dir = std::env::temp_dir().join(format!("talm-migrate-{}-{nonce}", std::process::id()));
    fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    }
    let staged = (|| -> Result<()> {
        for entry in fs::read_dir(root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type()?;
            if NOT_STAGED.contains(&name.as_str())
                || kind.is_symlink()
                || name.starts_with(".talm-txn-")
            {
                continue;
            }
            if kind.is_dir() {
                fs::create_dir_all(dir.join(&name))?;
                copy_tree(&entry.path(), &dir.join(&name))?;
            } else {
                fs::copy(entry.path(), dir.join(&name))?;
            }
        }
        for (rel, text) in plan::ours(preset, &plan::cluster_name(root))? {
            let to = dir.join(&rel);
            if let Some(p) = to.parent() {
                fs::create_dir_all(p)?;
            }
            fs::write(&to, text)?;
        }
        Ok(())
    })();
    if let Err(e) = staged {
        let _ = fs::remove_dir_all(&dir);
        return Err(e.context("preparing the staging copy of the project"));
    }
    Ok(dir)
}

/// Removes a staging copy made by `stage` (only a folder of that name).
pub fn unstage(dir: &Path) {
    let ours = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("talm-migrate-"));
    if ours {
        let _ = fs::remove_dir_all(dir);
    }
}

/// The node files of the project (`nodes/*.yaml`, `nodes/*.yml`), absolute, sorted.
pub fn node_files(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for e in backup::entries(root, "nodes")? {
        if e.kind == EntryKind::File && (e.rel.ends_with(".yaml") || e.rel.ends_with(".yml")) {
            out.push(root.join(&e.rel).display().to_string());
        }
    }
    Ok(out)
}

fn documents(text: &str, what: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for d in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = serde::Deserialize::deserialize(d)
            .map_err(|e| anyhow::anyhow!("{what} is not YAML: {e}"))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

/// `before` (what the node has: a node file's body, or its running config) against `after`
/// (talm's render): `None` when the documents are the same, else the drift preview.
pub fn compare(before: &str, after: &str, node: &str) -> Result<Option<String>> {
    if documents(before, node)? == documents(after, "talm's render")? {
        return Ok(None);
    }
    let none = BTreeSet::new();
    let p = crate::config::drift::preview(before, after, node, false, &none)?;
    Ok(Some(p.trim_end().to_string()))
}

/// Backs up and switches: the Go templates, charts and lock are copied under
/// `migrate/backup-<ts>/`, then one transaction writes talm's files (`plan::ours`) and removes
/// every other file below `templates/` and `charts/`. Returns the backup's path.
pub fn switch(root: &Path, d: &Detection) -> Result<String> {
    let ours = plan::ours(&d.preset, &plan::cluster_name(root))?;
    let mut replaced = d.tree.clone();
    if root.join(lock::LOCK_FILE).exists() && !matches!(d.lock, LockSignal::Ours { .. }) {
        replaced.push(backup::Entry {
            rel: lock::LOCK_FILE.to_string(),
            kind: EntryKind::File,
        });
    }
    let saved = backup::backup(root, &replaced)?;
    // Links go before the transaction: it refuses paths that lead outside the project, and a
    // link is not content to stage. The backup holds them.
    for e in d.tree.iter().filter(|e| e.kind == EntryKind::Link) {
        fs::remove_file(root.join(&e.rel)).map_err(|err| {
            hinted(
                format!("removing the link {}: {err}", e.rel),
                format!("nothing else was changed; the backup is in {saved}"),
            )
        })?;
    }
    let mut p = Plan::new(root, "talm migrate");
    for e in d.tree.iter().filter(|e| e.kind == EntryKind::File) {
        if !ours.contains_key(&e.rel) {
            p.remove(root.join(&e.rel), format!("Removed {}", e.rel));
        }
    }
    for (rel, text) in &ours {
        let note = if rel == lock::BASE_FILE {
            String::new()
        } else {
            format!("Wrote {rel}")
        };
        p.write(root.join(rel), text.as_bytes(), Mode::Public, note);
    }
    p.commit().map_err(|e| {
        hinted(
            format!("switching to talm's templates failed: {e}"),
            format!("the Go templates are backed up in {saved}; rerun `talm migrate` (an interrupted switch is completed first)"),
        )
    })?;
    Ok(saved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_ignores_layout_and_shows_changes() {
        assert_eq!(
            compare("a: 1\nb: [x]\n", "b:\n- x\na: 1\n", "n").unwrap(),
            None
        );
        let d = compare("machine:\n  a: 1\n", "machine:\n  a: 2\n", "nodes/n.yaml")
            .unwrap()
            .unwrap();
        assert!(d.contains("~ MachineConfig"), "{d}");
        assert!(d.contains("machine.a"), "{d}");
    }
}
