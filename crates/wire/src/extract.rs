//! Unpacking what `Copy` streams (a gzip-compressed tar) into a local folder the way
//! `talosctl copy` does: entry names cleaned so none leaves the folder, directories made
//! owner-writable, symbolic links recreated, files created exclusively (an existing one is an
//! error) with the archive's permissions, ownership not kept. Stricter than talosctl in one
//! way: nothing is written through a symbolic link the archive itself created.

use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender};

use anyhow::{anyhow, bail, Context, Result};

/// An archive name made safe: `.`/`..`/leading `/` removed without ever climbing above the
/// folder (safepath.CleanPath); empty when nothing is left.
pub fn clean_name(name: &str) -> PathBuf {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(name).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str().unwrap_or("")),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    parts.iter().collect()
}

/// The destination folder of `copy`: an existing directory, or one made now.
pub fn prepare(dest: &Path) -> Result<()> {
    match fs::metadata(dest) {
        Ok(m) if !m.is_dir() => Err(talm_base::error::hinted(
            format!(
                "local path {:?} should be a directory",
                dest.display().to_string()
            ),
            "give a folder to unpack into, or `-` to write the .tar.gz to stdout",
        )),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dest).map_err(not_made(dest, || {
                format!("error creating local path {:?}", dest.display().to_string())
            }))
        }
        Err(e) => Err(anyhow!("failed to stat local path: {e}")),
    }
}

/// A local write that failed while unpacking: the path and the OS error. A file whose data
/// could not be written is removed again.
#[derive(Debug)]
pub struct Unwritten {
    pub path: PathBuf,
    pub error: io::Error,
}

impl std::fmt::Display for Unwritten {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot write {:?}: {}",
            self.path.display().to_string(),
            self.error
        )
    }
}

impl std::error::Error for Unwritten {}

/// Making `path` failed: a full disk, no permission, a read-only file system or the size
/// limit is `Unwritten`; anything else (an entry that exists already) is said by `what`.
fn not_made<'a>(
    path: &'a Path,
    what: impl FnOnce() -> String + 'a,
) -> impl FnOnce(io::Error) -> anyhow::Error + 'a {
    move |e| match e.kind() {
        io::ErrorKind::StorageFull
        | io::ErrorKind::QuotaExceeded
        | io::ErrorKind::PermissionDenied
        | io::ErrorKind::ReadOnlyFilesystem
        | io::ErrorKind::FileTooLarge => unwritten(path)(e),
        _ => anyhow!(e).context(what()),
    }
}

fn unwritten(path: &Path) -> impl FnOnce(io::Error) -> anyhow::Error + '_ {
    move |error| {
        Unwritten {
            path: path.to_path_buf(),
            error,
        }
        .into()
    }
}

/// Copies an entry's data into `f`: a read that fails is the archive's fault, a write that
/// fails is this machine's (`Unwritten`).
fn fill(entry: &mut impl Read, f: &mut fs::File, path: &Path) -> Result<()> {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match entry.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(anyhow!(
                    "error copying data to {:?}: {e}",
                    path.display().to_string()
                ))
            }
        };
        f.write_all(&buf[..n]).map_err(unwritten(path))?;
    }
    f.flush().map_err(unwritten(path))
}

/// Whether `rel` under `dest` passes through a symbolic link.
fn through_link(dest: &Path, rel: &Path) -> bool {
    let mut cur = dest.to_path_buf();
    let parents: Vec<_> = rel
        .parent()
        .map(|p| p.components().collect())
        .unwrap_or_default();
    for c in parents {
        cur.push(c);
        if fs::symlink_metadata(&cur).is_ok_and(|m| m.file_type().is_symlink()) {
            return true;
        }
    }
    false
}

/// Unpacks a tar.gz read from `r` into `dest` (which exists).
pub fn unpack(dest: &Path, r: impl Read) -> Result<()> {
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(r));
    let entries = ar
        .entries()
        .map_err(|e| anyhow!("error initializing gzip: {e}"))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| anyhow!("error reading tar header: {e}"))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let rel = clean_name(&name);
        if rel.as_os_str().is_empty() {
            bail!("empty tar header path");
        }
        if through_link(dest, &rel) {
            bail!("refusing to unpack {name:?}: it lies behind a symbolic link of the archive");
        }
        let path = dest.join(&rel);
        // Permission bits only: setuid, setgid and sticky from a node are not kept (as
        // talosctl's os.FileMode of the tar mode drops them), nor is ownership.
        let mode = entry.header().mode().unwrap_or(0o644) & 0o777;
        match entry.header().entry_type() {
            tar::EntryType::Directory => {
                let mode = mode | 0o700;
                fs::create_dir(&path).map_err(not_made(&path, || {
                    format!("error creating directory {:?}", path.display().to_string())
                }))?;
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).with_context(
                    || format!("error updating mode for {:?}", path.display().to_string()),
                )?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name_bytes()
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                std::os::unix::fs::symlink(&target, &path).map_err(not_made(&path, || {
                    format!(
                        "error creating symlink {:?} -> {target:?}",
                        path.display().to_string()
                    )
                }))?;
            }
            _ => {
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(&path)
                    .map_err(not_made(&path, || {
                        format!("error creating file {:?}", path.display().to_string())
                    }))?;
                if let Err(e) = fill(&mut entry, &mut f, &path) {
                    drop(f);
                    let _ = fs::remove_file(&path);
                    return Err(e);
                }
                fs::set_permissions(&path, fs::Permissions::from_mode(mode)).with_context(
                    || format!("error updating mode for {:?}", path.display().to_string()),
                )?;
            }
        }
    }
    Ok(())
}

/// A reader over chunks sent from another thread (the stream of a call).
pub struct Chunks {
    rx: Receiver<Vec<u8>>,
    buf: Vec<u8>,
    at: usize,
}

impl Read for Chunks {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at >= self.buf.len() {
            match self.rx.recv() {
                Ok(b) => {
                    self.buf = b;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.buf.len() - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// A channel whose receiving end reads as one byte stream.
pub fn chunks() -> (SyncSender<Vec<u8>>, Chunks) {
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    (
        tx,
        Chunks {
            rx,
            buf: Vec::new(),
            at: 0,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(entries: &[(&str, tar::EntryType, &str)]) -> Vec<u8> {
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        for (name, kind, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_mode(if *kind == tar::EntryType::Directory {
                0o555
            } else {
                0o640
            });
            if *kind == tar::EntryType::Symlink {
                h.set_link_name(data).unwrap();
                h.set_size(0);
                b.append_data(&mut h, name, &[][..]).unwrap();
            } else {
                h.set_size(data.len() as u64);
                b.append_data(&mut h, name, data.as_bytes()).unwrap();
            }
        }
        b.into_inner().unwrap().finish().unwrap()
    }

    #[test]
    fn unpacks_like_talosctl() {
        let d = tempfile::tempdir().unwrap();
        let bytes = archive(&[
            ("etc/", tar::EntryType::Directory, ""),
            ("etc/hostname", tar::EntryType::Regular, "node\n"),
            ("etc/alias", tar::EntryType::Symlink, "hostname"),
        ]);
        unpack(d.path(), bytes.as_slice()).unwrap();
        assert_eq!(
            fs::read_to_string(d.path().join("etc/hostname")).unwrap(),
            "node\n"
        );
        assert_eq!(
            fs::metadata(d.path().join("etc"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o755
        );
        assert_eq!(
            fs::read_link(d.path().join("etc/alias")).unwrap(),
            Path::new("hostname")
        );
        let again = unpack(d.path(), bytes.as_slice()).unwrap_err();
        assert!(
            format!("{again:#}").contains("error creating directory"),
            "{again:#}"
        );
        let sneaky = archive(&[
            ("out", tar::EntryType::Symlink, "/tmp"),
            ("out/x", tar::EntryType::Regular, "x"),
        ]);
        let d2 = tempfile::tempdir().unwrap();
        assert!(unpack(d2.path(), sneaky.as_slice())
            .unwrap_err()
            .to_string()
            .contains("symbolic link"));
        assert_eq!(clean_name("../../etc/./x"), Path::new("etc/x"));
        assert_eq!(clean_name("/abs/y"), Path::new("abs/y"));
    }

    /// One PAX extended-header record as Go's archive/tar writes it: `<len> <key>=<value>\n`,
    /// the length counting itself.
    fn pax_record(key: &str, value: &str) -> String {
        let body = format!(" {key}={value}\n");
        let mut len = body.len() + 1;
        while (len.to_string().len() + body.len()) != len {
            len = len.to_string().len() + body.len();
        }
        format!("{len}{body}")
    }

    #[test]
    fn long_names_and_link_targets_unpack_from_pax_and_gnu_records() {
        let long_dir = format!("pods/{}", "p".repeat(120));
        let long_file = format!("{long_dir}/0.log");
        let long_link = format!("containers/{}.log", "c".repeat(110));
        // Go's archive/tar (a real node's `Copy`) puts long names in PAX records.
        let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let mut b = tar::Builder::new(gz);
        let pax = |b: &mut tar::Builder<_>, records: &str| {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(tar::EntryType::XHeader);
            h.set_path("PaxHeaders.0/x").unwrap();
            h.set_size(records.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append(&h, records.as_bytes()).unwrap();
        };
        let plain = |b: &mut tar::Builder<_>, kind, name: &str, data: &str, mode| {
            let mut h = tar::Header::new_ustar();
            h.set_entry_type(kind);
            h.set_path(name).unwrap();
            h.set_size(data.len() as u64);
            h.set_mode(mode);
            h.set_cksum();
            b.append(&h, data.as_bytes()).unwrap();
        };
        plain(&mut b, tar::EntryType::Directory, "pods/", "", 0o755);
        pax(&mut b, &pax_record("path", &format!("{long_dir}/")));
        plain(&mut b, tar::EntryType::Directory, "short/", "", 0o755);
        pax(&mut b, &pax_record("path", &long_file));
        plain(&mut b, tar::EntryType::Regular, "short", "log\n", 0o4755);
        plain(&mut b, tar::EntryType::Directory, "containers/", "", 0o755);
        let target = format!("../{long_file}");
        let both = pax_record("path", &long_link) + pax_record("linkpath", &target).as_str();
        pax(&mut b, &both);
        plain(&mut b, tar::EntryType::Symlink, "short", "", 0o777);
        let pax_archive = b.into_inner().unwrap().finish().unwrap();
        // The simulator's archive (tar::Builder) uses GNU long-name records instead.
        let gnu_archive = archive(&[
            ("pods/", tar::EntryType::Directory, ""),
            (&format!("{long_dir}/"), tar::EntryType::Directory, ""),
            (&long_file, tar::EntryType::Regular, "log\n"),
            ("containers/", tar::EntryType::Directory, ""),
        ]);
        for (what, bytes) in [("pax", pax_archive), ("gnu", gnu_archive)] {
            let d = tempfile::tempdir().unwrap();
            unpack(d.path(), bytes.as_slice()).unwrap();
            assert_eq!(
                fs::read_to_string(d.path().join(&long_file)).unwrap(),
                "log\n",
                "{what}"
            );
            if what == "pax" {
                assert_eq!(
                    fs::read_link(d.path().join(&long_link)).unwrap(),
                    Path::new(&target)
                );
                let mode = fs::metadata(d.path().join(&long_file))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o7777, 0o755, "no setuid bit from the node");
            }
        }
    }

    #[test]
    fn chunked_reader_joins_chunks() {
        let (tx, mut r) = chunks();
        std::thread::spawn(move || {
            for c in [b"ab".to_vec(), vec![], b"cde".to_vec()] {
                tx.send(c).unwrap();
            }
        });
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        assert_eq!(s, "abcde");
    }
}
