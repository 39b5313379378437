//! One writing talm run at a time in a folder: an advisory lock (`flock`) on the folder itself,
//! so no file is left behind; a second run waits for the first, saying so, and a run killed
//! while holding it releases it with its death.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Result;

/// Held while a run reads, decides and writes in a folder; released when dropped.
#[derive(Debug)]
pub struct Exclusive {
    _dir: File,
    pub path: PathBuf,
}

/// Takes `dir` (made if missing) for this run, waiting while another run holds it.
pub fn take(dir: &Path) -> Result<Exclusive> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let f = File::open(dir).map_err(|e| anyhow::anyhow!("cannot open {}: {e}", dir.display()))?;
    if f.try_lock().is_err() {
        talm_base::output::err(&format!(
            "talm: waiting for another talm run writing in {} to finish",
            dir.display()
        ));
        f.lock()
            .map_err(|e| anyhow::anyhow!("cannot lock {}: {e}", dir.display()))?;
    }
    Ok(Exclusive {
        _dir: f,
        path: dir.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_waits_for_the_first() {
        let d = tempfile::tempdir().unwrap();
        let first = take(d.path()).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let dir = d.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let held = take(&dir).unwrap();
            tx.send(()).unwrap();
            drop(held);
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(first);
        rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        second.join().unwrap();
    }
}
