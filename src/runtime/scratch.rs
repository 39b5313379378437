//! A scratch file that holds secrets for a moment (the machine config being edited): made 0600
//! inside the project's staging folder (git-ignored, and removed by the next talm run if this
//! one is killed), removed when it is dropped, and removed too when talm is ended by SIGINT,
//! SIGTERM or SIGHUP while it exists. `Guard` gives any file being written (an etcd snapshot's
//! `.part`) the same removal.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use anyhow::Result;

use crate::project::txn::Txn;

/// The scratch files alive now, removed by the signal watchers.
static ALIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// A path removed when the guard is dropped, and when talm is ended by SIGINT, SIGTERM or
/// SIGHUP while the guard is held: for a file written only for a while.
pub struct Guard(PathBuf);

impl Guard {
    pub fn new(path: PathBuf) -> Guard {
        watch_signals();
        ALIVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.clone());
        Guard(path)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
        ALIVE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| p != &self.0);
    }
}

/// One scratch file; gone when dropped.
pub struct Scratch {
    guard: Guard,
    /// The transaction whose staging folder holds the file (none outside a project): dropped
    /// unused, it removes the folder with the file.
    _txn: Option<Txn>,
}

impl Scratch {
    /// Writes `text` to a new file named `name` in `root`'s staging folder (the system temp
    /// folder outside a project).
    pub fn create(root: Option<&Path>, name: &str, text: &str) -> Result<Scratch> {
        let (dir, txn) = match root {
            Some(r) => {
                let t = Txn::begin(r, "edit")?;
                (t.staging().to_path_buf(), Some(t))
            }
            None => (std::env::temp_dir(), None),
        };
        let scratch = Scratch {
            guard: Guard::new(dir.join(name)),
            _txn: txn,
        };
        {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(scratch.path())
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", scratch.path().display()))?;
            f.write_all(text.as_bytes())?;
        }
        Ok(scratch)
    }

    pub fn path(&self) -> &Path {
        &self.guard.0
    }
}

/// Removes the live scratch files (and guarded paths) and ends talm as the signal would (128 + its number). A
/// Ctrl-C with no scratch file alive is left to the script's own handler where one is installed.
fn on_signal(name: &str, number: i32) {
    let alive = ALIVE.lock().unwrap_or_else(|e| e.into_inner());
    if alive.is_empty() && number == libc::SIGINT && crate::sandbox::interrupt::installed() {
        return;
    }
    for p in alive.iter() {
        let _ = std::fs::remove_file(p);
    }
    eprintln!("Error: interrupted ({name})");
    std::process::exit(128 + number)
}

/// Watches SIGINT, SIGTERM and SIGHUP (once per process) for as long as talm runs; with no
/// scratch file alive a signal ends talm as its default action would.
fn watch_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        use tokio::signal::unix::{signal, SignalKind};
        let rt = crate::talos::runtime();
        let _entered = rt.enter();
        for (kind, name, number) in [
            (SignalKind::interrupt(), "SIGINT", libc::SIGINT),
            (SignalKind::terminate(), "SIGTERM", libc::SIGTERM),
            (SignalKind::hangup(), "SIGHUP", libc::SIGHUP),
        ] {
            if let Ok(mut sig) = signal(kind) {
                rt.spawn(async move {
                    while sig.recv().await.is_some() {
                        on_signal(name, number);
                    }
                });
            }
        }
    });
}
