//! A local file that could not be written while saving what a node sent (an etcd snapshot, a
//! copied tree): the message names the node, what was being done, the path and the OS error,
//! and says what was left; the hint depends on why (a full disk, no permission, a read-only
//! file system, a file past the size limit).

use std::io;
use std::path::Path;

/// What a failed write left on disk.
#[derive(Debug, Clone, Copy)]
pub enum Left<'a> {
    /// Written as `part`, which was removed: nothing is saved at `dest`.
    PartRemoved { part: &'a Path, dest: &'a Path },
    /// Nothing was made: nothing is saved at `dest`.
    NothingSaved { dest: &'a Path },
    /// One entry of a tree being unpacked into `into`: what was written of it was removed, and
    /// what was unpacked before it stays.
    FileRemoved { into: &'a Path },
}

impl std::fmt::Display for Left<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Left::PartRemoved { part, dest } => write!(
                f,
                "the partial file {:?} was removed; nothing was saved to {:?}",
                part.display().to_string(),
                dest.display().to_string()
            ),
            Left::NothingSaved { dest } => write!(
                f,
                "nothing was saved to {:?}",
                dest.display().to_string()
            ),
            Left::FileRemoved { into } => write!(
                f,
                "it was not written (nothing of it is left); what was unpacked before it stays in {}",
                into.display()
            ),
        }
    }
}

/// What to do about a write that failed with `err` at `path`.
fn hint(path: &Path, err: &io::Error) -> String {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.display().to_string(),
        _ => ".".to_string(),
    };
    match err.kind() {
        io::ErrorKind::StorageFull => format!(
            "the file system holding {dir} is full: free space there, or choose a path on another file system"
        ),
        io::ErrorKind::QuotaExceeded => format!(
            "your disk quota on the file system holding {dir} is used up: free space there, or choose a path on another file system"
        ),
        io::ErrorKind::PermissionDenied => format!(
            "this user may not write in {dir}: choose another path, or change the folder's permissions"
        ),
        io::ErrorKind::ReadOnlyFilesystem => format!(
            "{dir} is on a read-only file system: choose a path on a writable one"
        ),
        io::ErrorKind::FileTooLarge => "the file passed the largest size allowed here (the file system's limit, or this process's `ulimit -f`): raise the limit, or choose a path on a file system that holds files this large".to_string(),
        _ => format!("check {dir} and the disk it is on, then retry"),
    }
}

/// `node N: DOING: cannot write "PATH": OS ERROR; WHAT WAS LEFT`, with a hint for the kind of
/// error.
pub fn local_write(
    node: &str,
    doing: &str,
    path: &Path,
    err: &io::Error,
    left: Left<'_>,
) -> anyhow::Error {
    super::hinted(
        format!(
            "node {node}: {doing}: cannot write {:?}: {err}; {left}",
            path.display().to_string()
        ),
        hint(path, err),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_path_the_error_and_what_was_left_with_a_hint_per_kind() {
        let part = Path::new("out/db.snap.part");
        let dest = Path::new("out/db.snap");
        let e = local_write(
            "10.0.0.1",
            "etcd snapshot",
            part,
            &io::Error::from_raw_os_error(libc::ENOSPC),
            Left::PartRemoved { part, dest },
        );
        assert_eq!(
            crate::error::render(&e),
            "Error: node 10.0.0.1: etcd snapshot: cannot write \"out/db.snap.part\": No space left on device (os error 28); the partial file \"out/db.snap.part\" was removed; nothing was saved to \"out/db.snap\"\n\
             hint: the file system holding out is full: free space there, or choose a path on another file system\n"
        );
        let kinds = [
            (libc::EACCES, "this user may not write in out:"),
            (libc::EROFS, "out is on a read-only file system"),
            (libc::EFBIG, "the file passed the largest size allowed here"),
            (
                libc::EDQUOT,
                "your disk quota on the file system holding out",
            ),
            (libc::EIO, "check out and the disk it is on"),
        ];
        for (errno, said) in kinds {
            let h = hint(part, &io::Error::from_raw_os_error(errno));
            assert!(h.starts_with(said), "{errno}: {h}");
        }
        assert!(hint(
            Path::new("db.snap"),
            &io::Error::from_raw_os_error(libc::EIO)
        )
        .starts_with("check . and"));
    }
}
