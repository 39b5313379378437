//! Change notices for a project's template files (Linux inotify), so a render can trust the
//! compiled project without listing and stating every file: each folder and each file met while
//! listing is watched before it is read, and a render that finds no notice queued since, and
//! the folders still the ones watched, knows nothing it read has changed. What inotify cannot
//! see (a file system that does not report changes made elsewhere, such as NFS; writes through
//! a shared mapping) is caught by the full check the render cache still makes at least once per
//! [`RECHECK`]. Elsewhere than Linux there are no notices and every render checks.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long a quiet watch is trusted before the files are checked again in full.
pub const RECHECK: Duration = Duration::from_secs(1);

/// Notices for the folders and files of one listing.
pub struct Watch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// Each watched folder with its (device, inode) when it was watched.
    folders: Vec<(std::path::PathBuf, (u64, u64))>,
    /// False when a folder or file could not be watched: the watch proves nothing.
    whole: bool,
    since: Instant,
}

fn identity(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

impl Watch {
    /// A new, empty watch (None where the platform or the process's limits give none).
    pub fn new() -> Option<Watch> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::FromRawFd;
            // SAFETY: inotify_init1 takes flags only and returns a new descriptor or -1.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return None;
            }
            Some(Watch {
                // SAFETY: fd is a descriptor just opened and owned by nothing else.
                fd: unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) },
                folders: Vec::new(),
                whole: true,
                since: Instant::now(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// Watches `path` (a folder: its entries coming and going; a file: its content and
    /// attributes, whatever name it is changed through) from now on.
    pub fn add(&mut self, path: &Path, folder: bool) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            use std::os::unix::ffi::OsStrExt;
            let mask = libc::IN_MODIFY
                | libc::IN_ATTRIB
                | libc::IN_CLOSE_WRITE
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_MOVED_FROM
                | libc::IN_MOVED_TO
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF;
            let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
                self.whole = false;
                return;
            };
            // SAFETY: the descriptor is ours and open, `c` a NUL-terminated path.
            let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c.as_ptr(), mask) };
            if wd < 0 {
                self.whole = false;
            }
        }
        if folder {
            match identity(path) {
                Some(id) => self.folders.push((path.to_path_buf(), id)),
                None => self.whole = false,
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            self.whole = false;
        }
    }

    /// Marks the watch as proving nothing (a folder that was not there to watch).
    pub fn gap(&mut self) {
        self.whole = false;
    }

    /// Whether nothing watched has changed since the watch began, as far as it can tell: no
    /// notice queued, every folder still the one watched, and not older than [`RECHECK`].
    pub fn quiet(&self) -> bool {
        if !self.whole || self.since.elapsed() >= RECHECK {
            return false;
        }
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let mut buf = [0u8; 512];
            // SAFETY: reads into a buffer of the given length from our own descriptor.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast::<libc::c_void>(),
                    buf.len(),
                )
            };
            let none_queued =
                n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::WouldBlock;
            if !none_queued {
                return false;
            }
        }
        self.folders
            .iter()
            .all(|(path, id)| identity(path) == Some(*id))
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn watched(dir: &Path) -> Watch {
        let mut w = Watch::new().unwrap();
        w.add(dir, true);
        w.add(&dir.join("a"), false);
        w
    }

    #[test]
    fn quiet_until_something_changes() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a"), "1").unwrap();
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("b"), "x").unwrap();
        std::fs::hard_link(d.join("a"), other.path().join("a-too")).unwrap();
        type Change = Box<dyn Fn(&Path)>;
        let changes: Vec<(&str, Change)> = vec![
            (
                "an edit",
                Box::new(|d| std::fs::write(d.join("a"), "2").unwrap()),
            ),
            (
                "a new file",
                Box::new(|d| std::fs::write(d.join("c"), "").unwrap()),
            ),
            (
                "a rename",
                Box::new(|d| std::fs::rename(d.join("c"), d.join("e")).unwrap()),
            ),
            (
                "a removal",
                Box::new(|d| std::fs::remove_file(d.join("e")).unwrap()),
            ),
            (
                "an edit through another name",
                Box::new({
                    let other = other.path().to_path_buf();
                    move |_| std::fs::write(other.join("a-too"), "3").unwrap()
                }),
            ),
        ];
        for (what, change) in changes {
            let w = watched(d);
            assert!(w.quiet(), "{what}: quiet before");
            change(d);
            assert!(!w.quiet(), "{what}: noticed");
        }
        // A folder replaced at its path, its parent moved away (no notice reaches the watch).
        let t = d.join("t");
        std::fs::create_dir(&t).unwrap();
        let mut w = Watch::new().unwrap();
        w.add(&t, true);
        assert!(w.quiet());
        std::fs::rename(d, other.path().join("moved")).unwrap();
        std::fs::create_dir_all(&t).unwrap();
        assert!(!w.quiet(), "a replaced folder is noticed");
        // A folder that was not there proves nothing.
        let mut w = watched(d);
        w.gap();
        assert!(!w.quiet());
    }
}
