//! Keeping scripts and templates inside their project. A project-relative path may not be
//! absolute or climb with `..`; and once symbolic links are followed (the deepest existing part
//! canonicalised, a dangling link read by hand, the rest appended) it must still lead below the
//! project root. A refusal names the path and where it leads.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use talm_base::error::hinted;

const HINT: &str = "scripts and templates read and write only inside the project: copy the file into the project instead of linking to it";

/// How many links a path may pass through (as the kernel's ELOOP limit).
const MAX_LINKS: usize = 40;

/// Where `path` really leads: symbolic links followed as far as the path exists, `..` in the
/// part that does not exist taken lexically.
pub fn resolve(path: &Path) -> PathBuf {
    resolve_links(path, 0)
}

fn resolve_links(path: &Path, links: usize) -> PathBuf {
    let mut rest: Vec<OsString> = Vec::new();
    let mut cur = path.to_path_buf();
    loop {
        if let Ok(real) = cur.canonicalize() {
            return append(real, &rest);
        }
        if links < MAX_LINKS {
            if let Ok(target) = std::fs::read_link(&cur) {
                let target = match cur.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
                return append(resolve_links(&target, links + 1), &rest);
            }
        }
        match (cur.parent(), cur.file_name()) {
            (Some(parent), Some(name)) if !parent.as_os_str().is_empty() => {
                rest.push(name.to_owned());
                cur = parent.to_path_buf();
            }
            _ => return append(cur, &rest),
        }
    }
}

/// `base` with the missing components (innermost last in `rest`) appended, `..` popping.
fn append(mut base: PathBuf, rest: &[OsString]) -> PathBuf {
    for name in rest.iter().rev() {
        if Path::new(name).components().next() == Some(Component::ParentDir) {
            base.pop();
        } else {
            base.push(name);
        }
    }
    base
}

/// Fails unless `path` (a path below `root`) still leads below `root` with links followed.
pub fn check(root: &Path, path: &Path) -> Result<()> {
    let base = resolve(root);
    let real = resolve(path);
    if real.starts_with(&base) {
        return Ok(());
    }
    let shown = path.strip_prefix(root).unwrap_or(path);
    Err(hinted(
        format!(
            "{} leads outside the project at {}: through a symbolic link it resolves to {}",
            shown.display(),
            root.display(),
            real.display()
        ),
        HINT,
    ))
}

/// Joins a project-relative path to the root, refusing anything that would leave the root,
/// lexically or through a symbolic link.
pub fn inside(root: &str, rel: &str) -> Result<PathBuf> {
    let rel_path = Path::new(rel);
    let escapes = rel_path.is_absolute()
        || rel_path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)));
    if escapes {
        return Err(hinted(
            format!("path {rel:?} is outside the project at {root}"),
            "scripts may only read and write files inside the project root",
        ));
    }
    let path = Path::new(root).join(rel_path);
    check(Path::new(root), &path)?;
    Ok(path)
}

/// Reads a project file (`path` below `root`) after checking where it leads.
pub fn read_text(root: &Path, path: &Path) -> Result<String> {
    check(root, path)?;
    super::fsutil::read_text(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cannot_leave_the_project() {
        assert!(inside("/p", "../etc/passwd").is_err());
        assert!(inside("/p", "/etc/passwd").is_err());
        assert!(inside("/p", "a/../../b").is_err());
        assert_eq!(
            inside("/p", "nodes/a.yaml").unwrap(),
            PathBuf::from("/p/nodes/a.yaml")
        );
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        let p = tempfile::tempdir().unwrap();
        let root = p.path().to_str().unwrap();
        std::fs::create_dir(p.path().join("in")).unwrap();
        symlink(outside.path().join("secret"), p.path().join("file")).unwrap();
        symlink(outside.path(), p.path().join("dir")).unwrap();
        symlink(outside.path().join("new/x"), p.path().join("dangling")).unwrap();
        symlink("in", p.path().join("inner")).unwrap();
        symlink("in/../../", p.path().join("up")).unwrap();
        for rel in ["file", "dir/secret", "dir/new/file", "dangling", "up/x"] {
            let err = inside(root, rel).unwrap_err().to_string();
            assert!(err.starts_with(&format!("{rel} leads outside")), "{err}");
        }
        let err = inside(root, "file").unwrap_err().to_string();
        assert!(
            err.ends_with(&format!(
                "resolves to {}",
                outside
                    .path()
                    .canonicalize()
                    .unwrap()
                    .join("secret")
                    .display()
            )),
            "{err}"
        );
        assert!(inside(root, "inner/new.yaml").is_ok());
        assert!(inside(root, "missing/deep/file").is_ok());
        assert!(read_text(p.path(), &p.path().join("file")).is_err());
    }
}
