//! All-or-nothing writes of several files: every new content is staged in a hidden, git-ignored
//! folder next to the targets, a journal is committed with one rename, then the staged files are
//! renamed into place. A run killed before the journal leaves the old files (and a staging folder
//! the next run removes); a run killed after it leaves a journal the next run completes.

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::fsutil::Mode;

/// Names of staging folders start with this; the process id and a sequence number follow.
pub const STAGING_PREFIX: &str = ".talm-txn-";
const JOURNAL: &str = "journal";
/// The file a live transaction holds locked.
const OWNER: &str = "owner.lock";
/// How old a staging folder without its lock file must be to count as a killed run's: a run
/// still going makes the lock file microseconds after the folder.
const UNLOCKED_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// Every staging folder holds this `.gitignore`, so nothing staged can be committed to git.
const IGNORE_ALL: &str =
    "# talm's staging folder for an all-or-nothing write; never commit it\n*\n";

/// One change of a transaction, with paths relative to the transaction's folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub enum Op {
    /// Move the staged file `staged` over `target`.
    Write { target: String, staged: String },
    /// Create the folder `target` (and its parents).
    Mkdir { target: String },
    /// Remove the file `target` and the folders it leaves empty.
    Remove { target: String },
}

/// What a committed journal records: the changes and the command that made them.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Journal {
    label: String,
    ops: Vec<Op>,
}

/// A transaction being prepared in `dir`.
pub struct Txn {
    dir: PathBuf,
    staging: PathBuf,
    label: String,
    ops: Vec<Op>,
    /// Held (locked) while this transaction lives: how `recover` tells a live one from a dead one.
    _owner: fs::File,
}

/// What `recover` found in a folder.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Labels of interrupted transactions that were completed.
    pub completed: Vec<String>,
    /// How many uncommitted staging folders were removed.
    pub discarded: usize,
}

fn rel_ok(rel: &str) -> bool {
    let p = Path::new(rel);
    !rel.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The next number of this process's staging folders (48 bits), starting at a random one: a
/// folder name is never reused by this process, and unlike another process's. Drawing random
/// bytes from aws-lc for every write cost a fleet's template step 2% of its CPU (per-thread
/// entropy setup on 32 threads).
fn sequence() -> u64 {
    use std::hash::{BuildHasher, RandomState};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::OnceLock;
    static START: OnceLock<u64> = OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let start = *START.get_or_init(|| RandomState::new().hash_one(std::process::id()));
    start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)) & 0xffff_ffff_ffff
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = fs::File::open(dir) {
        // Durability of the rename; a file system that cannot sync folders still renamed.
        let _ = d.sync_all();
    }
}

/// Writes `content` to a new file with `mode`, synced to disk.
fn write_new(path: &Path, content: &[u8], mode: Mode) -> std::io::Result<()> {
    let mut f = open_new(path, mode)?;
    f.write_all(content)?;
    f.sync_all()
}

#[cfg(unix)]
fn open_new(path: &Path, mode: Mode) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode.bits())
        .open(path)
}

#[cfg(not(unix))]
fn open_new(path: &Path, _mode: Mode) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

impl Txn {
    /// Starts a transaction whose targets are given relative to `dir`; leftovers of killed runs
    /// in `dir` are recovered first.
    pub fn begin(dir: &Path, label: &str) -> Result<Txn> {
        fs::create_dir_all(dir).with_context(|| format!("creating directory {}", dir.display()))?;
        recover(dir)?;
        let staging = dir.join(format!(
            "{STAGING_PREFIX}{}-{:012x}",
            std::process::id(),
            sequence()
        ));
        fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
        set_mode(&staging, 0o700)?;
        let owner = fs::File::create(staging.join(OWNER))
            .with_context(|| format!("creating {}", staging.display()))?;
        // Blocking: another run's recovery may hold the fresh lock file for a moment while it
        // looks (and leaves a young folder of a live run alone).
        owner
            .lock()
            .map_err(|e| anyhow::anyhow!("locking {}: {e}", staging.display()))?;
        write_new(
            &staging.join(".gitignore"),
            IGNORE_ALL.as_bytes(),
            Mode::Public,
        )?;
        Ok(Txn {
            dir: dir.to_path_buf(),
            staging,
            label: label.to_string(),
            ops: Vec::new(),
            _owner: owner,
        })
    }

    /// The transaction's own folder inside `dir` (0700, git-ignored, removed by the next
    /// run's `recover` once this process is gone): scratch space for what must not outlive it.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    fn rel(&self, path: &Path) -> Result<String> {
        let rel = path.strip_prefix(&self.dir).unwrap_or(path);
        let rel = rel.to_string_lossy().into_owned();
        if !rel_ok(&rel) {
            anyhow::bail!(
                "{} is not inside {}: a write plan only writes below its folder",
                path.display(),
                self.dir.display()
            );
        }
        Ok(rel)
    }

    /// Stages `content` for `path` (absolute, or relative to the transaction's folder).
    pub fn write(&mut self, path: &Path, content: &[u8], mode: Mode) -> Result<()> {
        let target = self.rel(path)?;
        let full = self.dir.join(&target);
        if full.is_dir() {
            anyhow::bail!("cannot write {}: it is a directory", full.display());
        }
        let staged = format!("{}", self.ops.len());
        let spath = self.staging.join(&staged);
        write_new(&spath, content, mode)
            .and_then(|_| set_mode(&spath, mode.bits()))
            .with_context(|| format!("staging {}", full.display()))?;
        self.ops.push(Op::Write { target, staged });
        Ok(())
    }

    /// Plans creating a folder.
    pub fn mkdir(&mut self, path: &Path) -> Result<()> {
        let target = self.rel(path)?;
        self.ops.push(Op::Mkdir { target });
        Ok(())
    }

    /// Plans removing a file.
    pub fn remove(&mut self, path: &Path) -> Result<()> {
        let target = self.rel(path)?;
        self.ops.push(Op::Remove { target });
        Ok(())
    }

    /// Commits: the journal lands with one rename, then every change is carried out and the
    /// staging folder removed. Until the journal lands nothing outside the staging folder changed.
    /// A transaction of one file write needs no journal: the rename of its staged file is the
    /// commit (killed before it, the old file stands and the next run removes the staging folder;
    /// after it, the new one does), which spares a fleet's per-node writes a file and a sync.
    pub fn commit(self) -> Result<()> {
        if let [Op::Write { .. }] = self.ops.as_slice() {
            return apply(&self.dir, &self.staging, &self.ops);
        }
        let journal = Journal {
            label: self.label.clone(),
            ops: self.ops.clone(),
        };
        let text = serde_json::to_vec_pretty(&journal)?;
        let tmp = self.staging.join("journal.tmp");
        write_new(&tmp, &text, Mode::Secret)
            .and_then(|_| fs::rename(&tmp, self.staging.join(JOURNAL)))
            .with_context(|| format!("committing the writes in {}", self.staging.display()))?;
        sync_dir(&self.staging);
        apply(&self.dir, &self.staging, &journal.ops)
    }

    /// Drops the transaction: nothing is changed and the staging folder goes.
    pub fn abort(self) {
        let _ = fs::remove_dir_all(&self.staging);
    }
}

/// A pause between the steps of a commit, from `TALM_TXN_STEP_DELAY_MS`: a fault-injection
/// hook for the tests that kill talm mid-write (it widens the window they aim at).
fn step_delay() -> Option<std::time::Duration> {
    let ms = std::env::var("TALM_TXN_STEP_DELAY_MS")
        .ok()?
        .parse::<u64>()
        .ok()?;
    Some(std::time::Duration::from_millis(ms.min(1000)))
}

/// Carries out a committed journal; safe to run again after an interruption.
fn apply(dir: &Path, staging: &Path, ops: &[Op]) -> Result<()> {
    let mut synced = Vec::new();
    let delay = step_delay();
    for op in ops {
        if let Some(d) = delay {
            std::thread::sleep(d);
        }
        let (Op::Write { target, .. } | Op::Mkdir { target } | Op::Remove { target }) = op;
        super::confine::check(dir, &dir.join(target))?;
        match op {
            Op::Write { target, staged } => {
                let to = dir.join(target);
                let from = staging.join(staged);
                if !from.exists() {
                    continue; // moved before an interruption
                }
                if let Some(parent) = to.parent() {
                    fs::create_dir_all(parent)
                        .with_context(|| format!("creating directory {}", parent.display()))?;
                    if !synced.contains(&parent.to_path_buf()) {
                        synced.push(parent.to_path_buf());
                    }
                }
                fs::rename(&from, &to).with_context(|| format!("writing {}", to.display()))?;
            }
            Op::Mkdir { target } => {
                let to = dir.join(target);
                fs::create_dir_all(&to)
                    .with_context(|| format!("creating directory {}", to.display()))?;
            }
            Op::Remove { target } => {
                let to = dir.join(target);
                match fs::remove_file(&to) {
                    Ok(()) => remove_empty_parents(dir, &to),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e).with_context(|| format!("removing {}", to.display())),
                }
            }
        }
    }
    for d in synced {
        sync_dir(&d);
    }
    fs::remove_dir_all(staging).with_context(|| format!("removing {}", staging.display()))?;
    sync_dir(dir);
    Ok(())
}

fn remove_empty_parents(stop: &Path, path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if d == stop || fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
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
        // Unlocked, but when it is this process's own its run may be another thread between
        // creating the lock file and locking it (a playbook's items writing in one folder): a
        // young folder of ours is left to it.
        Ok(f) => {
            f.try_lock().ok()?;
            (!(owner_pid(staging) == Some(std::process::id()) && young())).then_some(f)
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

/// Finishes or discards what killed runs left in `dir`: a committed journal is carried out, an
/// uncommitted staging folder removed. Folders of runs still going are left alone.
/// Whether `dir` holds a committed write that has not been carried out yet (the next
/// `recover` completes it).
pub fn pending(dir: &Path) -> bool {
    fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(|e| e.ok()).any(|e| {
            e.file_name().to_string_lossy().starts_with(STAGING_PREFIX)
                && e.path().join(JOURNAL).is_file()
        })
    })
}

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
        let Some(_claimed) = claim(&staging) else {
            continue;
        };
        // Its owner may have finished and removed it between the listing and the claim.
        if !staging.exists() {
            continue;
        }
        let journal = staging.join(JOURNAL);
        if journal.is_file() {
            let text = fs::read(&journal)
                .with_context(|| format!("reading the interrupted write {}", journal.display()))?;
            let j: Journal = serde_json::from_slice(&text).map_err(|e| {
                crate::error::hinted(
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
            apply(dir, &staging, &j.ops)?;
            out.completed.push(j.label);
        } else {
            match fs::remove_dir_all(&staging) {
                Ok(()) => out.discarded += 1,
                // Gone already: another run recovered it at the same time.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(anyhow::Error::new(e)
                        .context(format!("removing leftovers {}", staging.display())))
                }
            }
        }
    }
    for label in &out.completed {
        crate::output::err(&format!(
            "talm: completed the interrupted write of an earlier `{label}` in {}",
            dir.display()
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn concurrent_transactions_in_one_folder_never_undo_each_other() {
        // Threads of one process (a playbook's parallel() items) writing their own files in the
        // same folder: one run's recovery must not take another's young staging folder.
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().to_path_buf();
        std::thread::scope(|s| {
            for t in 0..16 {
                let dir = dir.clone();
                s.spawn(move || {
                    for i in 0..40 {
                        let mut txn = Txn::begin(&dir, "write").unwrap();
                        let f = dir.join(format!("node{t}.yaml"));
                        txn.write(&f, format!("{t}-{i}").as_bytes(), Mode::Public)
                            .unwrap();
                        txn.commit().unwrap();
                        assert_eq!(fs::read_to_string(&f).unwrap(), format!("{t}-{i}"));
                    }
                });
            }
        });
        assert_eq!(listing(&dir).len(), 16);
    }

    #[test]
    fn staging_folders_are_named_by_process_and_a_number_never_reused() {
        let d = tempfile::tempdir().unwrap();
        let a = Txn::begin(d.path(), "a").unwrap();
        let b = Txn::begin(d.path(), "b").unwrap();
        let name = |t: &Txn| {
            t.staging()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        };
        let (na, nb) = (name(&a), name(&b));
        assert_ne!(na, nb);
        for n in [&na, &nb] {
            let rest = n.strip_prefix(STAGING_PREFIX).unwrap();
            let (pid, number) = rest.split_once('-').unwrap();
            assert_eq!(pid, std::process::id().to_string());
            assert_eq!(number.len(), 12);
            assert!(u64::from_str_radix(number, 16).is_ok(), "{n}");
        }
        let seen: std::collections::HashSet<u64> = (0..1000).map(|_| sequence()).collect();
        assert_eq!(seen.len(), 1000);
    }

    #[test]
    fn commit_moves_everything_and_cleans_up() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("old"), "x").unwrap();
        let mut t = Txn::begin(d.path(), "test").unwrap();
        t.write(&d.path().join("a/b.yaml"), b"b", Mode::Secret)
            .unwrap();
        t.write(Path::new("c"), b"c", Mode::Public).unwrap();
        t.mkdir(Path::new("nodes")).unwrap();
        t.remove(Path::new("old")).unwrap();
        // Nothing visible before the commit but the staging folder.
        assert_eq!(listing(d.path()).len(), 2);
        t.commit().unwrap();
        assert_eq!(listing(d.path()), ["a", "c", "nodes"]);
        assert_eq!(fs::read_to_string(d.path().join("a/b.yaml")).unwrap(), "b");
    }

    #[test]
    fn one_file_commits_by_its_rename_without_a_journal() {
        let d = tempfile::tempdir().unwrap();
        let mut t = Txn::begin(d.path(), "one").unwrap();
        t.write(Path::new("n.yaml"), b"new", Mode::Secret).unwrap();
        let staging = t.staging().to_path_buf();
        // The rename fails (a folder took the name): what is left holds no journal, so the next
        // run discards it rather than completing a write that never happened.
        fs::create_dir_all(d.path().join("n.yaml/x")).unwrap();
        assert!(t.commit().is_err());
        assert!(staging.join("0").is_file() && !staging.join(JOURNAL).exists());
    }

    #[test]
    fn uncommitted_staging_is_discarded_and_journal_completed() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("keep"), "old").unwrap();
        // A run that died before its journal: a staging folder nobody holds.
        let dead = d.path().join(format!("{STAGING_PREFIX}1-dead"));
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join(OWNER), "").unwrap();
        fs::write(dead.join("0"), "new").unwrap();
        let r = recover(d.path()).unwrap();
        assert_eq!(r.discarded, 1);
        assert_eq!(listing(d.path()), ["keep"]);
        // A run that died after its journal, with one file already moved.
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join(OWNER), "").unwrap();
        fs::write(dead.join("1"), "second").unwrap();
        fs::write(d.path().join("first"), "first").unwrap();
        let j = Journal {
            label: "init".into(),
            ops: vec![
                Op::Write {
                    target: "first".into(),
                    staged: "0".into(),
                },
                Op::Write {
                    target: "keep".into(),
                    staged: "1".into(),
                },
            ],
        };
        fs::write(dead.join(JOURNAL), serde_json::to_vec(&j).unwrap()).unwrap();
        let r = recover(d.path()).unwrap();
        assert_eq!(r.completed, ["init"]);
        assert_eq!(listing(d.path()), ["first", "keep"]);
        assert_eq!(fs::read_to_string(d.path().join("keep")).unwrap(), "second");
    }

    #[test]
    fn a_folder_without_its_lock_is_only_taken_from_a_dead_process() {
        let d = tempfile::tempdir().unwrap();
        // A live process (this one) that has made its folder but not yet its lock file.
        let young = d
            .path()
            .join(format!("{STAGING_PREFIX}{}-young", std::process::id()));
        fs::create_dir(&young).unwrap();
        assert_eq!(recover(d.path()).unwrap().discarded, 0);
        assert!(young.exists());
        // A dead process's: no pid runs as high as u32::MAX.
        let dead = d.path().join(format!("{STAGING_PREFIX}{}-dead", u32::MAX));
        fs::create_dir(&dead).unwrap();
        assert_eq!(recover(d.path()).unwrap().discarded, 1);
        assert!(!dead.exists() && young.exists());
    }

    #[test]
    fn live_transactions_are_left_alone_and_links_are_not_followed_out() {
        let d = tempfile::tempdir().unwrap();
        let live = Txn::begin(d.path(), "live").unwrap();
        let r = recover(d.path()).unwrap();
        assert_eq!(r, Recovered::default());
        assert!(live.staging.is_dir(), "a live transaction's folder stays");
        live.abort();
        // A journal that writes through a link out of the folder is refused.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let dead = d.path().join(format!("{STAGING_PREFIX}1-evil"));
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join(OWNER), "").unwrap();
        fs::write(dead.join("0"), "x").unwrap();
        let j = Journal {
            label: "evil".into(),
            ops: vec![Op::Write {
                target: "out/pwned".into(),
                staged: "0".into(),
            }],
        };
        fs::write(dead.join(JOURNAL), serde_json::to_vec(&j).unwrap()).unwrap();
        assert!(recover(d.path()).is_err());
        assert!(!outside.path().join("pwned").exists());
    }

    #[test]
    fn journals_cannot_escape_their_folder() {
        assert!(!rel_ok("../x"));
        assert!(!rel_ok("/etc/passwd"));
        assert!(rel_ok("charts/talm/Chart.yaml"));
        let d = tempfile::tempdir().unwrap();
        let mut t = Txn::begin(d.path(), "t").unwrap();
        assert!(t.write(Path::new("../x"), b"", Mode::Public).is_err());
        t.abort();
        assert!(listing(d.path()).is_empty());
    }
}
