//! Writing project files safely: atomic replace (temp file, fsync, rename) with the right mode,
//! and a plan that collects every write of a command so nothing is written before all checks pass.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

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

/// Replaces `path` with `content` atomically: a hidden temp file in the same folder is created
/// with the final mode, written, synced and renamed over the target; on any failure the temp
/// file is removed and the target is untouched.
pub fn write_atomic(path: &Path, content: &[u8], mode: Mode) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("creating directory {}", dir.display()))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.talm-tmp-{}", std::process::id()));
    let result = (|| -> Result<()> {
        let mut f = open_new(&tmp, mode)?;
        f.write_all(content)?;
        f.sync_all()?;
        drop(f);
        set_mode(&tmp, mode)?;
        fs::rename(&tmp, path)?;
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
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
fn set_mode(path: &Path, mode: Mode) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(path, fs::Permissions::from_mode(mode.bits()))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: Mode) -> std::io::Result<()> {
    Ok(())
}

/// Reads a text file; the error names it and says what to check.
pub fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(|e| {
        crate::error::hinted(
            format!("cannot read {}: {e}", path.display()),
            "check that the file exists and is readable by you",
        )
    })
}

/// Every file below `dir`, as (`/`-separated path relative to `dir`, full path), sorted.
pub fn files_below(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
        for entry in fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(base, &path, out)?;
            } else {
                let rel = path
                    .strip_prefix(base)
                    .unwrap_or(&path)
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                out.push((rel, path));
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
        content: String,
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
/// the end, so a refused command leaves the disk as it was.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub steps: Vec<Step>,
}

impl Plan {
    pub fn write(&mut self, path: PathBuf, content: String, mode: Mode, note: impl Into<String>) {
        self.steps.push(Step::Write {
            path,
            content,
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

    /// Carries out every step in order, printing each step's note on stderr.
    pub fn commit(&mut self) -> Result<usize> {
        let steps = std::mem::take(&mut self.steps);
        let n = steps.len();
        for step in steps {
            match step {
                Step::Write {
                    path,
                    content,
                    mode,
                    note,
                } => {
                    write_atomic(&path, content.as_bytes(), mode)?;
                    if !note.is_empty() {
                        eprintln!("{note}");
                    }
                }
                Step::Mkdir { path } => {
                    fs::create_dir_all(&path)
                        .with_context(|| format!("creating directory {}", path.display()))?;
                }
                Step::Remove { path, note } => {
                    fs::remove_file(&path)
                        .with_context(|| format!("removing {}", path.display()))?;
                    if !note.is_empty() {
                        eprintln!("{note}");
                    }
                    remove_empty_parents(&path);
                }
                Step::Say { note } => eprintln!("{note}"),
            }
        }
        Ok(n)
    }
}

fn remove_empty_parents(path: &Path) {
    let mut dir = path.parent();
    while let Some(d) = dir {
        if fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
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
