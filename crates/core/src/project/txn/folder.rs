//! A process's staging folder in one directory: made (0700, locked, git-ignored) by the first
//! transaction there, shared by every transaction of the process in that directory at the same
//! time, and removed when the last of them ends. A fleet's per-node writes so make one new file
//! each rather than four (folder, lock, `.gitignore`, staged file).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use anyhow::{Context, Result};

use super::{sequence, set_mode, write_new, OWNER, STAGING_PREFIX};
use crate::project::fsutil::Mode;

/// Every staging folder holds this `.gitignore`, so nothing staged can be committed to git.
const IGNORE_ALL: &str =
    "# talm's staging folder for an all-or-nothing write; never commit it\n*\n";

/// One staging folder of this process, held (its lock file locked) while any transaction uses
/// it.
pub(super) struct Folder {
    path: PathBuf,
    /// Set when a committed journal could not be carried out: the folder then stays for the
    /// next run's recovery, and later transactions start a folder of their own.
    kept: AtomicBool,
    _owner: fs::File,
}

/// This process's live staging folders, by the directory they stage for.
static LIVE: Mutex<Vec<(PathBuf, Weak<Folder>)>> = Mutex::new(Vec::new());

impl Folder {
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the folder in place when its last transaction ends.
    pub(super) fn keep(&self) {
        self.kept.store(true, Ordering::SeqCst);
    }

    fn kept(&self) -> bool {
        self.kept.load(Ordering::SeqCst)
    }

    fn create(dir: &Path) -> Result<Folder> {
        let path = dir.join(format!(
            "{STAGING_PREFIX}{}-{:012x}",
            std::process::id(),
            sequence()
        ));
        fs::create_dir(&path).with_context(|| format!("creating {}", path.display()))?;
        set_mode(&path, 0o700)?;
        let owner = fs::File::create(path.join(OWNER))
            .with_context(|| format!("creating {}", path.display()))?;
        // Blocking: another run's recovery may hold the fresh lock file for a moment while it
        // looks (and leaves a young folder of a live run alone).
        owner
            .lock()
            .map_err(|e| anyhow::anyhow!("locking {}: {e}", path.display()))?;
        write_new(
            &path.join(".gitignore"),
            IGNORE_ALL.as_bytes(),
            Mode::Public,
        )
        .with_context(|| format!("creating {}", path.display()))?;
        Ok(Folder {
            path,
            kept: AtomicBool::new(false),
            _owner: owner,
        })
    }
}

impl Drop for Folder {
    fn drop(&mut self) {
        if !self.kept() {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// The staging folder this process uses in `dir`, made when none is live.
pub(super) fn join(dir: &Path) -> Result<Arc<Folder>> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.retain(|(_, f)| f.strong_count() > 0);
    let found = live
        .iter()
        .filter(|(d, _)| d == dir)
        .find_map(|(_, f)| f.upgrade().filter(|f| !f.kept()));
    if let Some(f) = found {
        return Ok(f);
    }
    let f = Arc::new(Folder::create(dir)?);
    live.push((dir.to_path_buf(), Arc::downgrade(&f)));
    Ok(f)
}

/// Whether `staging` is a folder this process holds right now.
pub(super) fn is_live(staging: &Path) -> bool {
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.iter()
        .any(|(_, f)| f.upgrade().is_some_and(|f| f.path == staging))
}
