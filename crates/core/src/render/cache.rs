//! A project's templates compiled once per process: the Tera environment, the preset logic
//! (`_context.rhai`) and the Rhai templates, reused for every node and every render until a file
//! changes. Freshness: each render lists the two template folders and stats their files (size,
//! modification and change times, inode); when nothing differs the compiled project is reused
//! without reading a file. A file whose times are too close to the moment it was read (within
//! [`SETTLE`], finer than the file system may tell apart) is read again and compared by content,
//! so an edit in the same clock tick is not missed. Changed files are read, and the project is
//! recompiled only when some content differs. Where the system gives change notices
//! (`render::watch`), the folders and files are watched as they are listed, and a render that
//! finds no notice since (and the last full check under [`super::watch::RECHECK`] old) skips the
//! listing. A project is watched from its second render on: a command that renders once would
//! only pay for the watch, at its exit (the kernel ends an inotify descriptor's watches after a
//! grace period the exiting process waits for: 4–9 ms of a 12 ms `talm template` here, in steps
//! of the 4 ms clock tick). The last [`KEEP`] projects are kept, each by its
//! root: two projects never share a compiled environment. A command that will render from a
//! project starts its compile on another core ([`prefetch`]) while it does its other work; the
//! first render then waits for that compile rather than doing it again.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use anyhow::Result;

use super::context::{self, Script};
use super::engine::Engine;
use super::watch::Watch;
use talm_base::caches::claim::Claim;
use talm_base::error::hinted;

/// How many compiled projects a process keeps (a long REPL session moving between projects
/// and versions of them).
pub const KEEP: usize = 8;

/// How long after a file's last change its stamp is trusted: file systems record times in
/// ticks (coarse kernel clock, 2 s on FAT), so an edit in the same tick as the read keeps the
/// stamp; a file changed more recently than this is compared by content instead.
pub const SETTLE: Duration = Duration::from_secs(2);

/// A project's templates, ready to render. Each part is compiled at its first use, or before by
/// a thread with time to spare (`prefetch`, [`load`]).
pub struct Compiled {
    /// Tera templates' sources: `templates/` by relative path, the library's as `talm/...`.
    tera_sources: Vec<(String, String)>,
    /// The Tera environment of `tera_sources`, once compiled.
    tera: OnceLock<Engine>,
    tera_compiling: Claim,
    /// The preset logic: the project's `templates/_context.rhai`, else the library's.
    pub context: Option<Script>,
    /// Templates written in Rhai, by name (`x.rhai`).
    pub scripts: BTreeMap<String, Script>,
}

impl Compiled {
    /// The Tera templates, compiled now unless another thread did or does.
    pub fn tera(&self) -> Result<&Engine> {
        self.tera_compiling
            .get_or_build(|| self.tera.get(), || self.compile_tera())
    }

    fn compile_tera(&self) -> Result<&Engine> {
        let sources = self
            .tera_sources
            .iter()
            .map(|(n, c)| (n.as_str(), c.as_str()));
        let engine = Engine::new(sources)?;
        Ok(self.tera.get_or_init(|| engine))
    }

    /// Compiles what no thread has started, in `order` (each thread on its own part first);
    /// errors are left to the render that uses the part.
    fn offer(&self, order: Order) {
        let tera = || {
            self.tera_compiling
                .offer(|| self.tera.get(), || self.compile_tera())
        };
        let scripts = || {
            for script in self.context.iter().chain(self.scripts.values()) {
                script.offer();
            }
        };
        match order {
            Order::ScriptsFirst => {
                scripts();
                tera();
            }
            Order::TeraFirst => {
                tera();
                scripts();
            }
        }
    }
}

/// Which part of a project a thread compiles first: the prefetch takes the preset logic (the
/// larger), a render that finds it going takes the Tera templates.
#[derive(Clone, Copy)]
enum Order {
    ScriptsFirst,
    TeraFirst,
}

/// What changes on disk when a file is written, replaced or re-linked.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    /// (change time s, ns, device, inode) where the platform has them.
    inode: Option<(i64, i64, u64, u64)>,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        #[cfg(unix)]
        let inode = {
            use std::os::unix::fs::MetadataExt;
            Some((meta.ctime(), meta.ctime_nsec(), meta.dev(), meta.ino()))
        };
        #[cfg(not(unix))]
        let inode = None;
        Stamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }

    /// The file's last change as the system recorded it (the change time where there is one:
    /// it cannot be set back by hand, unlike the modification time).
    fn changed(&self) -> Option<SystemTime> {
        match self.inode {
            Some((s, ns, _, _)) if s >= 0 => Some(
                SystemTime::UNIX_EPOCH + Duration::new(s as u64, ns.clamp(0, 999_999_999) as u32),
            ),
            _ => self.modified,
        }
    }

    /// Whether the stamp alone tells this file apart from what was read at `read_at`.
    fn settled(&self, read_at: SystemTime) -> bool {
        match (self.changed(), read_at.checked_sub(SETTLE)) {
            (Some(t), Some(limit)) => t < limit,
            _ => false,
        }
    }
}

/// The template files of a project: (folder key, relative path, full path, stamp), sorted.
type Listing = Vec<(Folder, String, PathBuf, Stamp)>;

/// The two folders templates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Folder {
    Project,
    Library,
}

impl Folder {
    fn path(self, root: &Path) -> PathBuf {
        match self {
            Folder::Project => root.join("templates"),
            Folder::Library => root.join("charts/talm/templates"),
        }
    }
}

/// Lists the template files of `root`, each folder and file watched by `watch` before it is
/// read.
fn list(root: &Path, watch: &mut Option<Watch>) -> Result<Listing> {
    #[cfg(test)]
    tests::LISTINGS.with(|n| n.set(n.get() + 1));
    fn walk(
        folder: Folder,
        base: &Path,
        dir: &Path,
        out: &mut Listing,
        watch: &mut Option<Watch>,
    ) -> std::io::Result<()> {
        if let Some(w) = watch {
            w.add(dir, true);
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let meta = std::fs::metadata(&path)?;
            if meta.is_dir() {
                walk(folder, base, &path, out, watch)?;
            } else {
                if let Some(w) = watch {
                    w.add(&path, false);
                }
                let rel = crate::project::fsutil::rel_slash(base, &path);
                out.push((folder, rel, path, Stamp::of(&meta)));
            }
        }
        Ok(())
    }
    let mut out = Listing::new();
    for folder in [Folder::Project, Folder::Library] {
        let dir = folder.path(root);
        if !dir.is_dir() {
            // A folder made later would not be noticed.
            if let Some(w) = watch {
                w.gap();
            }
        } else {
            walk(folder, &dir, &dir, &mut out, watch).map_err(|e| {
                hinted(
                    format!("cannot read the templates in {}: {e}", dir.display()),
                    "check that the folder and its files are readable by you",
                )
            })?;
        }
    }
    out.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Ok(out)
}

/// One kept project.
struct Entry {
    root: PathBuf,
    listing: Listing,
    /// The files' text as read (in listing order), to tell a real edit from a touch.
    texts: Vec<String>,
    /// When the files were last read or found unchanged (taken before reading).
    read_at: SystemTime,
    compiled: Arc<Compiled>,
    /// Notices of changes since the files were last listed.
    watch: Option<Watch>,
    /// Whether a render took it (a prefetch's compile is not one): the next render watches.
    served: bool,
}

impl Entry {
    /// Whether the listing proves the files are still what was read.
    fn fresh(&self, listing: &Listing) -> bool {
        self.listing.len() == listing.len()
            && self
                .listing
                .iter()
                .zip(listing)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1 && a.3 == b.3 && b.3.settled(self.read_at))
    }
}

/// Listed in [`talm_base::caches::KEPT`].
static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

fn cache() -> std::sync::MutexGuard<'static, Vec<Entry>> {
    // A panic while holding the lock leaves at worst a stale list, which the checks redo.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Compiles started by [`prefetch`] and not finished yet, by project root; each one's flag is
/// set (and its waiters woken) when it ends.
static AHEAD: Mutex<Vec<(PathBuf, Arc<Ahead>)>> = Mutex::new(Vec::new());

/// One compile going on ahead of its renders.
#[derive(Default)]
struct Ahead {
    state: Mutex<Progress>,
    changed: Condvar,
}

/// How far a compile ahead has come.
#[derive(Default, Clone, Copy)]
struct Progress {
    /// The project is read and kept: renders may take it and compile what is left.
    read: bool,
    done: bool,
}

impl Ahead {
    fn set(&self, step: impl FnOnce(&mut Progress)) {
        step(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()));
        self.changed.notify_all();
    }

    fn wait_for(&self, reached: impl Fn(Progress) -> bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !reached(*state) {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }
}

fn ahead() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Arc<Ahead>)>> {
    AHEAD.lock().unwrap_or_else(|e| e.into_inner())
}

/// The key a project is kept by: its absolute root (a relative root means another project
/// after a change of folder).
fn key(root: &Path) -> PathBuf {
    std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf())
}

/// Starts compiling the project at `root` (its templates and preset logic) on a thread of its
/// own, for a command that renders from it once its other work is done; renders that start
/// meanwhile wait for it instead of compiling the project again. Best effort: what the thread
/// fails to compile, the render compiles again and reports. Nothing is started for a project
/// kept already or being compiled (a playbook's commands).
pub fn prefetch(root: &Path) {
    let root = key(root);
    if cache().iter().any(|e| e.root == root) {
        // Kept already: the render checks it is fresh, which costs less than a thread.
        return;
    }
    let mut going = ahead();
    if going.iter().any(|(r, _)| *r == root) {
        return;
    }
    let mark = Arc::new(Ahead::default());
    let spawned = talm_base::ahead::spawn(
        std::thread::Builder::new()
            .name("templates".into())
            // Compiling deeply nested preset logic recurses: the stack of a render thread.
            .stack_size(crate::sandbox::guard::STACK),
        {
            let (root, mark) = (root.clone(), mark.clone());
            move || {
                // Ends the compile for its waiters however the thread ends (a panic too).
                let end = End(mark);
                if let Ok(project) = load_now(&root, false) {
                    end.0.set(|p| p.read = true);
                    project.offer(Order::ScriptsFirst);
                }
            }
        },
    );
    if spawned.is_ok() {
        going.push((root, mark));
    }
}

/// Marks a compile ended when dropped: out of [`AHEAD`], its waiters woken.
struct End(Arc<Ahead>);

impl Drop for End {
    fn drop(&mut self) {
        ahead().retain(|(_, m)| !Arc::ptr_eq(m, &self.0));
        self.0.set(|p| p.done = true);
    }
}

/// The compile [`prefetch`] started for `key`, if one is going.
fn going(key: &Path) -> Option<Arc<Ahead>> {
    ahead()
        .iter()
        .find(|(r, _)| r == key)
        .map(|(_, m)| m.clone())
}

/// The compiled templates of the project at `root`, compiled now only when a file changed.
/// With a compile going on ahead this waits until it has read the project, then compiles what
/// it has not started rather than idle, and waits for the rest.
pub fn load(root: &Path) -> Result<Arc<Compiled>> {
    let ahead = going(&key(root));
    if let Some(mark) = &ahead {
        // Meanwhile, the stdlib modules the render will import that the thread compiling them
        // ahead has not reached yet.
        crate::sandbox::help_stdlib();
        mark.wait_for(|p| p.read || p.done);
    }
    let compiled = load_now(root, true)?;
    if let Some(mark) = ahead {
        compiled.offer(Order::TeraFirst);
        mark.wait_for(|p| p.done);
    }
    compiled.tera()?;
    Ok(compiled)
}

/// [`load`] without waiting for a prefetch; `render` says whether a render takes the result.
fn load_now(root: &Path, render: bool) -> Result<Arc<Compiled>> {
    let key = key(root);
    let served = {
        let mut kept = cache();
        match kept.iter().position(|e| e.root == key) {
            Some(i) if kept[i].watch.as_ref().is_some_and(Watch::quiet) => {
                let entry = kept.remove(i);
                let compiled = entry.compiled.clone();
                kept.insert(0, entry);
                return Ok(compiled);
            }
            Some(i) => kept[i].served,
            None => false,
        }
    };
    // Rendered before: worth watching from now on.
    let mut watch = if served { Watch::new() } else { None };
    let listing = list(root, &mut watch)?;
    {
        let mut kept = cache();
        if let Some(i) = kept.iter().position(|e| e.root == key) {
            if kept[i].fresh(&listing) {
                let mut entry = kept.remove(i);
                entry.watch = watch;
                entry.served |= render;
                let compiled = entry.compiled.clone();
                kept.insert(0, entry);
                return Ok(compiled);
            }
        }
    }
    let read_at = SystemTime::now();
    let mut texts = Vec::with_capacity(listing.len());
    for (_, _, path, _) in &listing {
        texts.push(crate::project::confine::read_text(root, path)?);
    }
    let mut kept = cache();
    let same = kept
        .iter()
        .position(|e| e.root == key)
        .map(|i| kept.remove(i))
        .filter(|e| e.texts == texts && same_names(&e.listing, &listing))
        .map(|e| e.compiled);
    let compiled = match same {
        Some(c) => c,
        None => Arc::new(compile(&listing, &texts)),
    };
    kept.insert(
        0,
        Entry {
            root: key,
            listing,
            texts,
            read_at,
            compiled: compiled.clone(),
            watch,
            served: served || render,
        },
    );
    kept.truncate(KEEP);
    Ok(compiled)
}

fn same_names(a: &Listing, b: &Listing) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.0 == y.0 && x.1 == y.1)
}

fn compile(listing: &Listing, texts: &[String]) -> Compiled {
    // The preset logic imports stdlib modules: they compile on another core meanwhile.
    crate::sandbox::prewarm_stdlib(None);
    let mut tera_sources: Vec<(String, String)> = Vec::new();
    let mut scripts = BTreeMap::new();
    let mut own_context = None;
    let mut library_context = None;
    for ((folder, rel, _, _), text) in listing.iter().zip(texts) {
        match folder {
            Folder::Project if rel == context::CONTEXT_SCRIPT => {
                own_context = Some(Script::new(format!("templates/{rel}"), text.as_str()));
            }
            Folder::Project if rel.ends_with(".rhai") => {
                scripts.insert(
                    rel.clone(),
                    Script::new(format!("templates/{rel}"), text.as_str()),
                );
            }
            Folder::Project => tera_sources.push((rel.clone(), text.clone())),
            // The library's context script serves presets that ship none of their own; it
            // reports errors under the name presets always used for it.
            Folder::Library if rel == context::CONTEXT_SCRIPT => {
                library_context = Some(Script::new(format!("templates/{rel}"), text.as_str()));
            }
            Folder::Library if rel.ends_with(".rhai") => {}
            Folder::Library => tera_sources.push((format!("talm/{rel}"), text.clone())),
        }
    }
    Compiled {
        tera_sources,
        tera: OnceLock::new(),
        tera_compiling: Claim::new(),
        context: own_context.or(library_context),
        scripts,
    }
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
