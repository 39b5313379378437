//! Finding the project root: the nearest folder holding Chart.yaml and secrets.yaml (or
//! secrets.encrypted.yaml).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Whether a folder is a project root.
pub fn is_root(dir: &Path) -> bool {
    dir.join("Chart.yaml").is_file()
        && (dir.join("secrets.yaml").is_file() || dir.join("secrets.encrypted.yaml").is_file())
}

/// Makes a path absolute against the current directory, without touching the file system
/// beyond that, and with `.`/`..` folded.
pub fn absolute(path: &Path) -> Result<PathBuf> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .context("cannot determine the current working directory")?
            .join(path)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    Ok(out)
}

/// Walks up from `start` to the first project root.
pub fn detect(start: &Path) -> Result<Option<PathBuf>> {
    let mut dir = Some(absolute(start)?);
    while let Some(d) = dir {
        if is_root(&d) {
            return Ok(Some(d));
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_alone_is_not_a_root() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(dir.path().join("Chart.yaml"), "name: x\n").unwrap();
        assert_eq!(detect(&sub).unwrap(), None);
        std::fs::write(dir.path().join("secrets.encrypted.yaml"), "a: b\n").unwrap();
        assert_eq!(
            detect(&sub).unwrap().unwrap(),
            absolute(dir.path()).unwrap()
        );
    }
}
