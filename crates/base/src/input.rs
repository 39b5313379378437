//! Reading the files talm takes as input (project files, talosconfigs, keys, snapshots, an
//! editor's output): regular files only, and no more than a limit for their kind, so a link to
//! `/dev/zero`, a FIFO or an endless file ends in an error that names it instead of a hang or a
//! process grown to gigabytes.

use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use anyhow::Result;

use crate::error::hinted;

/// What a file holds, which sets how large it may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Text of a project or a command line: values, templates, node files, scripts, facts,
    /// Chart.yaml, the preset lock, an editor's output.
    Text,
    /// A small secret: talm.key, a talosconfig, a secrets bundle.
    Secret,
    /// An etcd snapshot (`--recover-from`).
    Snapshot,
}

impl Kind {
    /// The most bytes a file of this kind may hold.
    pub fn limit(self) -> u64 {
        match self {
            Kind::Text => 16 << 20,
            Kind::Secret => 1 << 20,
            // etcd's largest supported backend quota (--quota-backend-bytes).
            Kind::Snapshot => 8 << 30,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Kind::Text => "a text input",
            Kind::Secret => "a key or credentials file",
            Kind::Snapshot => "an etcd snapshot",
        }
    }
}

/// What a path is when it is not a regular file, in the words `ls -l` readers know.
fn not_regular(t: fs::FileType) -> Option<&'static str> {
    if t.is_file() {
        None
    } else if t.is_dir() {
        Some("a directory")
    } else if t.is_fifo() {
        Some("a named pipe (FIFO)")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a regular file")
    }
}

/// Why a file could not be read: the path and the problem, for callers that name the file in
/// their own words (`problem`) or take the whole sentence (`Display`, `into_error`).
#[derive(Debug)]
pub struct Unreadable {
    pub path: std::path::PathBuf,
    pub problem: String,
    hint: &'static str,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot read {}: {}", self.path.display(), self.problem)
    }
}

impl Unreadable {
    fn new(path: &Path, problem: impl Into<String>, hint: &'static str) -> Unreadable {
        Unreadable {
            path: path.to_path_buf(),
            problem: problem.into(),
            hint,
        }
    }

    /// The error as talm prints it, with its hint.
    pub fn into_error(self) -> anyhow::Error {
        hinted(self.to_string(), self.hint)
    }

    /// Whether the file is simply not there.
    pub fn missing(&self) -> bool {
        !self.path.exists() && std::fs::symlink_metadata(&self.path).is_err()
    }
}

const CHECK: &str = "check that the file exists and is readable by you";
const REGULAR: &str = "talm reads its inputs from regular files: put the file itself there (a link to a regular file is fine)";

/// Opens `path` for reading when it is a regular file (links followed): a FIFO is never opened,
/// so it cannot block.
pub fn open(path: &Path) -> std::result::Result<File, Unreadable> {
    let meta = fs::metadata(path).map_err(|e| Unreadable::new(path, e.to_string(), CHECK))?;
    let refuse =
        |what: &str| Unreadable::new(path, format!("it is {what}, not a regular file"), REGULAR);
    if let Some(what) = not_regular(meta.file_type()) {
        return Err(refuse(what));
    }
    // Non-blocking, in case the path was swapped for a FIFO since it was looked at.
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Unreadable::new(path, e.to_string(), CHECK))?;
    match file.metadata() {
        Ok(m) => match not_regular(m.file_type()) {
            None => Ok(file),
            Some(what) => Err(refuse(what)),
        },
        Err(e) => Err(Unreadable::new(path, e.to_string(), CHECK)),
    }
}

/// The bytes of `path`, a regular file of at most `kind.limit()` bytes.
pub fn try_read(path: &Path, kind: Kind) -> std::result::Result<Vec<u8>, Unreadable> {
    let file = open(path)?;
    let limit = kind.limit();
    let too_large = || {
        Unreadable::new(
            path,
            format!(
                "it is larger than {}, the most talm reads for {}",
                human(limit),
                kind.what()
            ),
            "check that the path names the file you meant (not a log, an image or a growing file)",
        )
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > limit {
        return Err(too_large());
    }
    let mut out = Vec::with_capacity(len as usize);
    // One byte past the limit tells a file that grew while it was read.
    file.take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| Unreadable::new(path, e.to_string(), CHECK))?;
    if out.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(out)
}

/// The text (UTF-8) of `path`, a regular file of at most `kind.limit()` bytes.
pub fn try_read_text(path: &Path, kind: Kind) -> std::result::Result<String, Unreadable> {
    String::from_utf8(try_read(path, kind)?).map_err(|e| {
        Unreadable::new(
            path,
            format!(
                "it is not UTF-8 text (invalid byte at offset {})",
                e.utf8_error().valid_up_to()
            ),
            "talm reads this file as text: check that the path names the file you meant",
        )
    })
}

/// `try_read`, its error with its hint.
pub fn read(path: &Path, kind: Kind) -> Result<Vec<u8>> {
    try_read(path, kind).map_err(Unreadable::into_error)
}

/// `try_read_text`, its error with its hint.
pub fn read_text(path: &Path, kind: Kind) -> Result<String> {
    try_read_text(path, kind).map_err(Unreadable::into_error)
}

fn human(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{} GiB", bytes >> 30)
    } else {
        format!("{} MiB", bytes >> 20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<impl std::fmt::Debug>) -> String {
        format!("{:#}", r.unwrap_err())
    }

    #[test]
    fn special_files_are_refused_without_being_read() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("values.yaml");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // A FIFO with no writer would block an open for reading: this returns at once.
        assert_eq!(
            err(read(&fifo, Kind::Text)),
            format!(
                "cannot read {}: it is a named pipe (FIFO), not a regular file",
                fifo.display()
            )
        );
        let zero = d.path().join("talm.key");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        assert_eq!(
            err(read(&zero, Kind::Secret)),
            format!(
                "cannot read {}: it is a character device, not a regular file",
                zero.display()
            )
        );
        assert_eq!(
            err(read(d.path(), Kind::Text)),
            format!(
                "cannot read {}: it is a directory, not a regular file",
                d.path().display()
            )
        );
    }

    #[test]
    fn files_past_their_kind_s_limit_are_refused_unread() {
        let d = tempfile::tempdir().unwrap();
        let big = d.path().join("talosconfig");
        // Sparse: as large as it says, without the disk.
        File::create(&big).unwrap().set_len(64 << 30).unwrap();
        assert_eq!(
            err(read(&big, Kind::Secret)),
            format!(
                "cannot read {}: it is larger than 1 MiB, the most talm reads for a key or credentials file",
                big.display()
            )
        );
        let ok = d.path().join("ok");
        fs::write(&ok, "a: 1\n").unwrap();
        assert_eq!(read_text(&ok, Kind::Secret).unwrap(), "a: 1\n");
        fs::write(&ok, [0x61, 0xff]).unwrap();
        assert_eq!(
            err(read_text(&ok, Kind::Text)),
            format!(
                "cannot read {}: it is not UTF-8 text (invalid byte at offset 1)",
                ok.display()
            )
        );
    }
}
