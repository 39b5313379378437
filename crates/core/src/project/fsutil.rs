//! Writing project files safely: atomic replace (temp file, fsync, rename) with the right mode,
//! and a plan that collects every write of a command so nothing is written before all checks pass.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

/// File modes used by the project: secrets 0600, everything else 0644.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Secret,
    Public,
}

impl Mode {
    pub fn bits(self) -> u32 {
        match self {
            Mode::Secret => 0o600,
            Mode::Public => 0o644,
        }
    }

    pub fn parse(s: &str) -> Result<Mode> {
        match s {
            "secret" => Ok(Mode::Secret),
            "public" => Ok(Mode::Public),
            other => anyhow::bail!("unknown file mode {other:?} (use \"secret\" or \"public\")"),
        }
    }
}

/// Replaces `path` with `content` atomically: staged in a hidden, git-ignored folder beside it
/// with the final mode, synced, then renamed over the target (`txn`); on any failure the target
/// is untouched.
pub fn write_atomic(path: &Path, content: &[u8], mode: Mode) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut plan = Plan::new(dir, "write");
    plan.write(path.to_path_buf(), content.to_vec(), mode, "");
    plan.commit().map(|_| ())
}

/// Reads a text file of a project or a command line: a regular file, bounded (`input`); the
/// error names it and says what to check.
pub fn read_text(path: &Path) -> Result<String> {
    talm_base::input::read_text(path, talm_base::input::Kind::Text)
}

/// `path` relative to `base`, its parts joined by `/` (the form templates and listings name
/// files by).
pub fn rel_slash(base: &Path, path: &Path) -> String {
    path.strip_prefix(base)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every file below `dir`, as (`/`-separated path relative to `dir`, full path), sorted.
pub fn files_below(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(base, &path, out)?;
            } else {
                out.push((rel_slash(base, &path), path));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// One step of a plan.
#[derive(Debug, Clone)]
pub enum Step {
    Write {
        path: PathBuf,
        content: Vec<u8>,
        mode: Mode,
        note: String,
    },
    Mkdir {
        path: PathBuf,
    },
    Remove {
        path: PathBuf,
        note: String,
    },
    Say {
        note: String,
    },
}

/// The writes of one command, gathered while it checks its input and carried out together at
/// the end as one transaction (`txn`), so a refused or killed command leaves the disk as it was.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The folder every path of the plan lies below.
    pub root: PathBuf,
    /// What the plan is for, named when a killed run's writes are completed later.
    pub label: String,
    pub steps: Vec<Step>,
}

impl Plan {
    pub fn new(root: &Path, label: &str) -> Plan {
        Plan {
            root: root.to_path_buf(),
            label: label.to_string(),
            steps: Vec::new(),
        }
    }

    pub fn write(
        &mut self,
        path: PathBuf,
        content: impl Into<Vec<u8>>,
        mode: Mode,
        note: impl Into<String>,
    ) {
        self.steps.push(Step::Write {
            path,
            content: content.into(),
            mode,
            note: note.into(),
        });
    }

    pub fn mkdir(&mut self, path: PathBuf) {
        self.steps.push(Step::Mkdir { path });
    }

    pub fn remove(&mut self, path: PathBuf, note: impl Into<String>) {
        self.steps.push(Step::Remove {
            path,
            note: note.into(),
        });
    }

    /// Plans printing a line when the plan reaches this point.
    pub fn say(&mut self, note: impl Into<String>) {
        self.steps.push(Step::Say { note: note.into() });
    }

    /// Carries out every step as one transaction, then prints each step's note on stderr in
    /// order. Returns the number of steps.
    pub fn commit(&mut self) -> Result<usize> {
        let steps = std::mem::take(&mut self.steps);
        let n = steps.len();
        let mut txn = super::txn::Txn::begin(&self.root, &self.label)?;
        let mut notes = Vec::new();
        let staged = (|| -> Result<()> {
            for step in steps {
                match step {
                    Step::Write {
                        path,
                        content,
                        mode,
                        note,
                    } => {
                        txn.write(&path, &content, mode)?;
                        notes.push(note);
                    }
                    Step::Mkdir { path } => txn.mkdir(&path)?,
                    Step::Remove { path, note } => {
                        txn.remove(&path)?;
                        notes.push(note);
                    }
                    Step::Say { note } => notes.push(note),
                }
            }
            Ok(())
        })();
        if let Err(e) = staged {
            txn.abort();
            return Err(e);
        }
        txn.commit()?;
        for note in notes.into_iter().filter(|n| !n.is_empty()) {
            talm_base::output::err(&note);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_sets_mode_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("secrets.yaml");
        write_atomic(&p, b"a: 1\n", Mode::Secret).unwrap();
        write_atomic(&p, b"", Mode::Secret).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&p).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn failed_write_keeps_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("sub");
        fs::create_dir(&target).unwrap();
        // Renaming a file over a directory fails: the directory stays, no temp is left.
        assert!(write_atomic(&target, b"x", Mode::Public).is_err());
        assert!(target.is_dir());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
