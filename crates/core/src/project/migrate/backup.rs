//! Walking a project folder without following links, and the backup migrate makes before it
//! switches anything: the old `templates/`, `charts/` and Go lock copied under
//! `migrate/backup-<UTC timestamp>/` with their modes, links kept as links.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use talm_base::error::hinted;

/// What a walked entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    /// A symbolic link (to a file, a folder, or nothing); never followed.
    Link,
}

/// One entry below the project root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `/`-separated, relative to the project root.
    pub rel: String,
    pub kind: Kind,
}

/// Every file and link below `root/dir` (none when it is missing), sorted; links are listed,
/// not followed, so a link out of the project is never read through.
pub fn entries(root: &Path, dir: &str) -> Result<Vec<Entry>> {
    fn walk(root: &Path, rel: &str, out: &mut Vec<Entry>) -> Result<()> {
        let full = root.join(rel);
        let meta = match fs::symlink_metadata(&full) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", full.display())),
        };
        if meta.file_type().is_symlink() {
            out.push(Entry {
                rel: rel.to_string(),
                kind: Kind::Link,
            });
        } else if meta.is_dir() {
            let mut names: Vec<String> = fs::read_dir(&full)
                .with_context(|| format!("reading {}", full.display()))?
                .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect::<std::io::Result<_>>()
                .with_context(|| format!("reading {}", full.display()))?;
            names.sort();
            for n in names {
                walk(root, &format!("{rel}/{n}"), out)?;
            }
        } else {
            out.push(Entry {
                rel: rel.to_string(),
                kind: Kind::File,
            });
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, dir, &mut out)?;
    Ok(out)
}

/// `YYYYMMDDTHHMMSSZ` for now, in UTC.
pub fn timestamp() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A fresh folder `migrate/<prefix>-<timestamp>` (a suffix is added when it exists).
pub fn fresh_dir(root: &Path, prefix: &str) -> Result<(String, PathBuf)> {
    // `migrate/` must be the project's own folder: a link would take the backup elsewhere.
    if fs::symlink_metadata(root.join("migrate")).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(hinted(
            format!("{} is a link", root.join("migrate").display()),
            "talm keeps backups and saved edits in the project's own migrate/ folder: move the link away and rerun",
        ));
    }
    let base = format!("migrate/{prefix}-{}", timestamp());
    let mut rel = base.clone();
    let mut n = 1;
    while fs::symlink_metadata(root.join(&rel)).is_ok() {
        n += 1;
        rel = format!("{base}-{n}");
    }
    let full = root.join(&rel);
    fs::create_dir_all(&full).map_err(|e| {
        hinted(
            format!("cannot create {}: {e}", full.display()),
            "check that the project folder is writable by you",
        )
    })?;
    Ok((rel, full))
}

/// Copies `entries` (project-relative) from `root` into `dest`, keeping modes; a link is
/// recreated as the same link.
pub fn copy_entries(root: &Path, entries: &[Entry], dest: &Path) -> Result<()> {
    let mut folders = std::collections::BTreeSet::from([dest.to_path_buf()]);
    for e in entries {
        let from = root.join(&e.rel);
        let to = dest.join(&e.rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
            folders.insert(parent.to_path_buf());
        }
        match e.kind {
            Kind::File => {
                fs::copy(&from, &to).map_err(|err| {
                    hinted(
                        format!("backing up {}: {err}", from.display()),
                        "nothing was changed; check the file is readable and retry",
                    )
                })?;
                let mode = fs::metadata(&from)
                    .with_context(|| format!("reading {}", from.display()))?
                    .permissions();
                fs::set_permissions(&to, mode)
                    .with_context(|| format!("setting the mode of {}", to.display()))?;
                sync(&to)?;
            }
            Kind::Link => {
                let target = fs::read_link(&from)
                    .with_context(|| format!("reading link {}", from.display()))?;
                link(&target, &to)?;
            }
        }
    }
    // The originals are removed next: the copies must be on disk first, names included.
    for f in &folders {
        sync(f)?;
    }
    Ok(())
}

fn sync(path: &Path) -> Result<()> {
    fs::File::open(path)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("flushing the backup {} to disk", path.display()))
}

#[cfg(unix)]
fn link(target: &Path, at: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, at)
        .with_context(|| format!("creating link {}", at.display()))
}

#[cfg(not(unix))]
fn link(_target: &Path, at: &Path) -> Result<()> {
    anyhow::bail!("cannot back up the link {} on this system", at.display())
}

/// Backs up what the switch replaces: every entry below `templates/` and `charts/` and the
/// lock file, into a new `migrate/backup-<timestamp>/`. Returns its project-relative path.
pub fn backup(root: &Path, replaced: &[Entry]) -> Result<String> {
    let (rel, dest) = fresh_dir(root, "backup")?;
    copy_entries(root, replaced, &dest)?;
    Ok(rel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_keeps_modes_and_links() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        fs::create_dir_all(root.join("charts/x")).unwrap();
        fs::write(root.join("charts/x/a.tpl"), "a").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(
                root.join("charts/x/a.tpl"),
                fs::Permissions::from_mode(0o600),
            )
            .unwrap();
            std::os::unix::fs::symlink("/etc", root.join("charts/talm")).unwrap();
        }
        let list = entries(root, "charts").unwrap();
        let rel = backup(root, &list).unwrap();
        assert!(rel.starts_with("migrate/backup-"), "{rel}");
        assert_eq!(
            fs::read(root.join(&rel).join("charts/x/a.tpl")).unwrap(),
            b"a"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let m = fs::metadata(root.join(&rel).join("charts/x/a.tpl")).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o600);
            let l = fs::read_link(root.join(&rel).join("charts/talm")).unwrap();
            assert_eq!(l, Path::new("/etc"));
            assert_eq!(list[0].kind, Kind::Link);
        }
    }
}
