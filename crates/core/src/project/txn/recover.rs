//! Recovery of what killed runs left: a dead process's staging folder is found by its unlocked
//! lock file, its committed journals are carried out, and the folder removed.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{apply, folder, rel_ok, sync_dir, Journal, Op, JOURNAL, OWNER, STAGING_PREFIX};

/// How old a staging folder without its lock file must be to count as a killed run's: a run
/// still going makes the lock file microseconds after the folder.
const UNLOCKED_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// What `recover` found in a folder.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Labels of interrupted transactions that were completed.
    pub completed: Vec<String>,
    /// How many uncommitted staging folders were removed.
    pub discarded: usize,
}

/// Whether a staging folder belongs to a transaction still going (in this process or another):
/// its owner holds `owner.lock` locked. A dead owner's lock is released by the kernel, so a
/// process id that was reused (a container's pid 1) does not keep leftovers alive. Returns the
/// lock, held while the caller recovers the folder.
fn claim(staging: &Path) -> Option<fs::File> {
    let young = || {
        fs::metadata(staging)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .unwrap_or_default()
            < UNLOCKED_GRACE
    };
    match fs::File::open(staging.join(OWNER)) {
        // Unlocked, but a young folder of a process still running may be between creating its
        // lock file and locking it (another talm run in the same folder, or another thread of
        // this one): it is left to its owner.
        Ok(f) => {
            f.try_lock().ok()?;
            (!(owner_alive(staging) && young())).then_some(f)
        }
        // No lock file: a run killed between making the folder and its lock — unless its
        // process is alive and the folder young: a run in its first microseconds.
        Err(_) => (!owner_alive(staging) || !young())
            .then(|| fs::File::open(staging).ok())
            .flatten(),
    }
}

/// The process a staging folder is named after (`.talm-txn-<pid>-<nonce>`).
fn owner_pid(staging: &Path) -> Option<u32> {
    let name = staging.file_name()?.to_string_lossy().into_owned();
    name.strip_prefix(STAGING_PREFIX)?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Whether the process a staging folder is named after still runs.
fn owner_alive(staging: &Path) -> bool {
    match owner_pid(staging) {
        Some(pid) => Path::new(&format!("/proc/{pid}")).exists(),
        // Not one of ours by name: treat as alive, so only its age decides.
        None => true,
    }
}

/// Whether `dir` holds a committed write that has not been carried out yet (the next
/// `recover` completes it).
pub fn pending(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            e.file_name().to_string_lossy().starts_with(STAGING_PREFIX)
                && !journals(&e.path()).is_empty()
        })
    })
}

/// The committed journals in a staging folder, in name order.
pub(super) fn journals(staging: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(staging) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name == JOURNAL
                || name
                    .strip_prefix(JOURNAL)
                    .is_some_and(|rest| rest.starts_with('-'))
        })
        .map(|e| e.path())
        .collect();
    found.sort();
    found
}

/// Finishes or discards what killed runs left in `dir`: committed journals are carried out, and
/// a dead run's staging folder removed. Folders of runs still going are left alone.
pub fn recover(dir: &Path) -> Result<Recovered> {
    let mut out = Recovered::default();
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(out);
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(STAGING_PREFIX))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    found.sort();
    for staging in found {
        if folder::is_live(&staging) {
            continue;
        }
        let Some(_claimed) = claim(&staging) else {
            continue;
        };
        // Its owner may have finished and removed it between the listing and the claim.
        if !staging.exists() {
            continue;
        }
        let journals = journals(&staging);
        for journal in &journals {
            out.completed.push(complete(dir, &staging, journal)?);
        }
        match fs::remove_dir_all(&staging) {
            Ok(()) if journals.is_empty() => out.discarded += 1,
            Ok(()) => sync_dir(dir),
            // Gone already: another run recovered it at the same time.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("removing leftovers {}", staging.display())))
            }
        }
    }
    for label in &out.completed {
        talm_base::output::err(&format!(
            "talm: completed the interrupted write of an earlier `{label}` in {}",
            dir.display()
        ));
    }
    Ok(out)
}

/// Carries out one committed journal of a dead run's staging folder; returns its label.
fn complete(dir: &Path, staging: &Path, journal: &Path) -> Result<String> {
    let text = fs::read(journal)
        .with_context(|| format!("reading the interrupted write {}", journal.display()))?;
    let j: Journal = serde_json::from_slice(&text).map_err(|e| {
        talm_base::error::hinted(
            format!("{} is damaged: {e}", journal.display()),
            format!(
                "an earlier talm run was killed while writing; inspect {} and move its files into place by hand, then remove it",
                staging.display()
            ),
        )
    })?;
    let bad = j.ops.iter().find(|op| {
        let (Op::Write { target, .. } | Op::Mkdir { target } | Op::Remove { target }) = op;
        !rel_ok(target)
    });
    if let Some(op) = bad {
        anyhow::bail!(
            "{} names a path outside its folder: {op:?}",
            journal.display()
        );
    }
    apply(dir, staging, &j.ops)?;
    Ok(j.label)
}
