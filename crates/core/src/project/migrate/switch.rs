//! Carrying a migration out: a staging copy of the project with talm's templates (what the node
//! proof renders through, before anything changes), the per-node comparison, and the switch
//! itself — backup first, then one transaction (`txn`) that writes talm's files and removes the
//! Go ones, so a failure midway leaves the old project usable.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_yaml_ng::Value;

use super::backup::{self, Kind as EntryKind};
use super::detect::{Detection, LockSignal};
use super::plan;
use crate::project::fsutil::{Mode, Plan};
use crate::project::lock;
use crate::project::txn::Txn;
use talm_base::error::hinted;

/// The files of a project a render reads besides its templates: chart, values, secrets and
/// the key that opens them. Nothing else of the project is copied for the proof.
const INPUTS: &[&str] = &[
    "Chart.yaml",
    "values.yaml",
    "values-secret.yaml",
    "values-secret.encrypted.yaml",
    "secrets.yaml",
    "secrets.encrypted.yaml",
    "talm.key",
    "talosconfig",
    "talosconfig.encrypted",
];

/// A copy of the project's render inputs with talm's templates for the preset in place of the
/// Go ones: what the node proof renders through before anything changes. It holds copies of
/// the secrets, so it lives in a transaction's staging folder inside the project (0700,
/// git-ignored): removed when dropped, and if the process is killed first, by the next talm
/// run in the project (`txn::recover` discards a dead run's folder).
pub struct Staged {
    /// Holds the staging folder while the copy lives.
    _txn: Txn,
    project: PathBuf,
}

impl Staged {
    /// The staged project's root.
    pub fn path(&self) -> &Path {
        &self.project
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.project);
    }
}

/// Stages the project at `root` for `preset` (see [`Staged`]).
pub fn stage(root: &Path, preset: &str) -> Result<Staged> {
    let txn = Txn::begin(root, "talm migrate (proof)")?;
    let project = txn.scratch("project");
    let staged = Staged { _txn: txn, project };
    let fail = |what: String, e: std::io::Error| {
        hinted(
            format!("preparing the proof's copy of the project: {what}: {e}"),
            "nothing of the project was changed; check the file's permissions and free space",
        )
    };
    fs::create_dir(&staged.project).map_err(|e| fail(staged.project.display().to_string(), e))?;
    for name in INPUTS {
        let from = root.join(name);
        // Links are never followed out of the project; a missing input is the render's to name.
        match fs::symlink_metadata(&from) {
            Ok(m) if m.is_file() => {
                fs::copy(&from, staged.project.join(name))
                    .map_err(|e| fail(format!("copying {name}"), e))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(fail(format!("reading {name}"), e)),
        }
    }
    for (rel, text) in plan::ours(preset, &plan::cluster_name(root))? {
        let to = staged.project.join(&rel);
        if let Some(p) = to.parent() {
            fs::create_dir_all(p).map_err(|e| fail(format!("creating {rel}"), e))?;
        }
        fs::write(&to, text).map_err(|e| fail(format!("writing {rel}"), e))?;
    }
    Ok(staged)
}

/// The node files of the project (`nodes/*.yaml`, `nodes/*.yml`), absolute, sorted; links
/// too, so that one the proof cannot read (it never follows a link out of the project) is
/// reported as not proven rather than left out.
pub fn node_files(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for e in backup::entries(root, "nodes")? {
        if e.rel.ends_with(".yaml") || e.rel.ends_with(".yml") {
            out.push(root.join(&e.rel).display().to_string());
        }
    }
    Ok(out)
}

fn documents(text: &str, what: &str) -> Result<Vec<Value>> {
    talm_base::yaml::documents(text).map_err(|e| anyhow::anyhow!("{what} is not YAML: {e}"))
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
    // The transaction writes these two: as links they would lead it elsewhere.
    for name in [lock::LOCK_FILE, lock::BASE_FILE] {
        if fs::symlink_metadata(root.join(name)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(hinted(
                format!("{} is a link", root.join(name).display()),
                format!("talm writes {name} itself: remove the link (keep a copy of what it points to if you need it) and rerun; nothing was changed"),
            ));
        }
    }
    let saved = backup::backup(root, &replaced)?;
    // Links go before the transaction: it refuses paths that lead outside the project, and a
    // link is not content to stage. The backup holds them; should the switch fail, they are
    // put back, so the old project stays whole.
    let mut removed: Vec<(PathBuf, PathBuf)> = Vec::new();
    let put_back = |removed: &[(PathBuf, PathBuf)]| {
        for (at, target) in removed {
            #[cfg(unix)]
            let _ = std::os::unix::fs::symlink(target, at);
        }
    };
    for e in d.tree.iter().filter(|e| e.kind == EntryKind::Link) {
        let at = root.join(&e.rel);
        let gone = fs::read_link(&at).and_then(|target| {
            fs::remove_file(&at)?;
            Ok(target)
        });
        match gone {
            Ok(target) => removed.push((at, target)),
            Err(err) => {
                put_back(&removed);
                return Err(hinted(
                    format!("removing the link {}: {err}", e.rel),
                    format!("nothing else was changed; the backup is in {saved}"),
                ));
            }
        }
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
        // A committed write is completed by the next run (links back would be in its way);
        // else nothing changed and the links go back.
        if !crate::project::txn::pending(root) {
            put_back(&removed);
        }
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
