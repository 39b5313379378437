//! All-or-nothing writes of several files: every new content is staged in a hidden, git-ignored
//! folder next to the targets, a journal is committed with one rename, then the staged files are
//! renamed into place. A run killed before the journal leaves the old files (and a staging folder
//! the next run removes); a run killed after it leaves a journal the next run completes. The
//! transactions of one process in one directory share its staging folder (`folder`).

mod folder;
mod pause;
mod recover;

use std::fs;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::fsutil::Mode;
pub use pause::point as pause_point;
pub use recover::{pending, recover, Recovered};

/// Names of staging folders start with this; the process id and a sequence number follow.
pub const STAGING_PREFIX: &str = ".talm-txn-";
/// Committed journals are named this, followed by `-` and their transaction's number (a folder
/// of an earlier talm holds one named just `journal`).
const JOURNAL: &str = "journal";
/// The file a live staging folder's process holds locked.
const OWNER: &str = "owner.lock";

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
    /// The staging folder, shared with the process's other transactions in `dir`.
    folder: Arc<folder::Folder>,
    /// This transaction's number: its staged files and journal are named after it.
    id: u64,
    label: String,
    ops: Vec<Op>,
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
        Ok(Txn {
            dir: dir.to_path_buf(),
            folder: folder::join(dir)?,
            id: sequence(),
            label: label.to_string(),
            ops: Vec::new(),
        })
    }

    /// The staging folder inside `dir` (0700, git-ignored, removed by the next run's `recover`
    /// once this process is gone), shared with this process's other transactions there.
    pub fn staging(&self) -> &Path {
        self.folder.path()
    }

    /// A path in the staging folder that is this transaction's alone: scratch space for what
    /// must not outlive the process. Nothing is made there.
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.staging().join(self.name(name))
    }

    /// `what` prefixed with this transaction's number.
    fn name(&self, what: &str) -> String {
        format!("{:012x}-{what}", self.id)
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
        let staged = self.name(&self.ops.len().to_string());
        let spath = self.staging().join(&staged);
        // Recorded first, so that discarding the transaction removes a half-written file too.
        self.ops.push(Op::Write { target, staged });
        write_new(&spath, content, mode)
            .and_then(|_| set_mode(&spath, mode.bits()))
            .with_context(|| format!("staging {}", full.display()))
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
    /// journal removed. Until the journal lands nothing outside the staging folder changed; if a
    /// change then fails, the folder stays with the journal for the next run to complete.
    /// A transaction of one file write needs no journal: the rename of its staged file is the
    /// commit (killed before it, the old file stands and the next run removes the staging folder;
    /// after it, the new one does), which spares a fleet's per-node writes a file and a sync.
    pub fn commit(self) -> Result<()> {
        if let [Op::Write { .. }] = self.ops.as_slice() {
            let done = apply(&self.dir, self.staging(), &self.ops);
            if done.is_err() {
                self.discard();
            }
            return done;
        }
        let journal = Journal {
            label: self.label.clone(),
            ops: self.ops.clone(),
        };
        let text = serde_json::to_vec_pretty(&journal)?;
        let tmp = self.staging().join(self.name("journal.tmp"));
        let landed = self.staging().join(format!("{JOURNAL}-{:012x}", self.id));
        let written = write_new(&tmp, &text, Mode::Secret).and_then(|_| fs::rename(&tmp, &landed));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            self.discard();
            return Err(e)
                .with_context(|| format!("committing the writes in {}", self.staging().display()));
        }
        sync_dir(self.staging());
        match apply(&self.dir, self.staging(), &journal.ops) {
            Ok(()) => {
                let _ = fs::remove_file(&landed);
                Ok(())
            }
            Err(e) => {
                self.folder.keep();
                Err(e)
            }
        }
    }

    /// Drops the transaction: nothing is changed and what it staged goes.
    pub fn abort(self) {
        self.discard();
    }

    /// Removes this transaction's staged files from the shared folder.
    fn discard(&self) {
        for op in &self.ops {
            if let Op::Write { staged, .. } = op {
                let _ = fs::remove_file(self.staging().join(staged));
            }
        }
    }
}

/// Carries out a committed journal's changes; safe to run again after an interruption.
fn apply(dir: &Path, staging: &Path, ops: &[Op]) -> Result<()> {
    let mut synced = Vec::new();
    for op in ops {
        pause::step();
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

#[cfg(test)]
mod tests {
    use super::recover::journals;
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
    fn transactions_at_the_same_time_share_one_staging_folder_named_never_again() {
        let d = tempfile::tempdir().unwrap();
        let name = |t: &Txn| {
            t.staging()
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        };
        let mut a = Txn::begin(d.path(), "a").unwrap();
        let mut b = Txn::begin(d.path(), "b").unwrap();
        assert_eq!(name(&a), name(&b));
        let rest = name(&a).strip_prefix(STAGING_PREFIX).unwrap().to_string();
        let (pid, number) = rest.split_once('-').unwrap();
        assert_eq!(pid, std::process::id().to_string());
        assert_eq!(number.len(), 12);
        assert!(u64::from_str_radix(number, 16).is_ok(), "{rest}");
        // Each stages under its own number; the folder goes with the last of them.
        a.write(Path::new("a"), b"a", Mode::Public).unwrap();
        b.write(Path::new("b"), b"b", Mode::Public).unwrap();
        let first = name(&a);
        a.commit().unwrap();
        assert_eq!(listing(d.path()), [first.as_str(), "a"]);
        b.commit().unwrap();
        assert_eq!(listing(d.path()), ["a", "b"]);
        let c = Txn::begin(d.path(), "c").unwrap();
        assert_ne!(name(&c), first);
        c.abort();
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
        assert_eq!(journals(&staging), Vec::<PathBuf>::new());
        // The rename fails (a folder took the name): nothing changed, nothing is left.
        fs::create_dir_all(d.path().join("n.yaml/x")).unwrap();
        assert!(t.commit().is_err());
        assert_eq!(listing(d.path()), ["n.yaml"]);
    }

    #[test]
    fn a_commit_that_fails_after_its_journal_leaves_it_for_the_next_run() {
        let d = tempfile::tempdir().unwrap();
        let mut t = Txn::begin(d.path(), "two").unwrap();
        t.write(Path::new("a"), b"a", Mode::Public).unwrap();
        t.write(Path::new("b"), b"b", Mode::Public).unwrap();
        let staging = t.staging().to_path_buf();
        fs::create_dir_all(d.path().join("b/x")).unwrap();
        assert!(t.commit().is_err());
        assert!(pending(d.path()));
        assert_eq!(journals(&staging).len(), 1);
        // Later writes of this process stage elsewhere; the kept folder waits for recovery.
        let next = Txn::begin(d.path(), "next").unwrap();
        assert_ne!(next.staging(), staging);
        next.abort();
        assert!(staging.is_dir());
    }

    #[test]
    fn uncommitted_staging_is_discarded_and_journal_completed() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("keep"), "old").unwrap();
        // A run that died before its journal: a staging folder nobody holds.
        let dead = d.path().join(format!("{STAGING_PREFIX}{}-dead", u32::MAX));
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
        // Another live process (pid 1) between creating its lock file and locking it: its
        // young folder is left to it, as two talm runs in one project must not remove each
        // other's staging folders.
        let other = d.path().join(format!("{STAGING_PREFIX}1-other"));
        fs::create_dir(&other).unwrap();
        fs::write(other.join(OWNER), "").unwrap();
        assert_eq!(recover(d.path()).unwrap().discarded, 0);
        assert!(other.exists());
    }

    #[test]
    fn live_transactions_are_left_alone_and_links_are_not_followed_out() {
        let d = tempfile::tempdir().unwrap();
        let live = Txn::begin(d.path(), "live").unwrap();
        let r = recover(d.path()).unwrap();
        assert_eq!(r, Recovered::default());
        assert!(live.staging().is_dir(), "a live transaction's folder stays");
        live.abort();
        // A journal that writes through a link out of the folder is refused.
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let dead = d.path().join(format!("{STAGING_PREFIX}{}-evil", u32::MAX));
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
    fn a_dead_runs_folder_has_every_journal_completed_and_the_rest_discarded() {
        let d = tempfile::tempdir().unwrap();
        let dead = d
            .path()
            .join(format!("{STAGING_PREFIX}{}-shared", u32::MAX));
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join(OWNER), "").unwrap();
        for (id, target) in [("000000000001", "one"), ("000000000002", "two")] {
            fs::write(dead.join(format!("{id}-0")), target).unwrap();
            let j = Journal {
                label: target.into(),
                ops: vec![Op::Write {
                    target: target.into(),
                    staged: format!("{id}-0"),
                }],
            };
            let name = format!("{JOURNAL}-{id}");
            fs::write(dead.join(name), serde_json::to_vec(&j).unwrap()).unwrap();
        }
        // A third transaction had staged but not committed; its journal was still a temp file.
        fs::write(dead.join("000000000003-0"), "never").unwrap();
        fs::write(dead.join("000000000003-journal.tmp"), "{").unwrap();
        let r = recover(d.path()).unwrap();
        assert_eq!(r.completed, ["one", "two"]);
        assert_eq!(listing(d.path()), ["one", "two"]);
        assert_eq!(fs::read_to_string(d.path().join("two")).unwrap(), "two");
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
