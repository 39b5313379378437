//! ZIP archives as `talm support` writes them, with their reader: each entry deflated (stored
//! when deflating does not shrink it), sizes and CRC-32 known before its header (no data
//! descriptors), a central directory and its end record; no ZIP64, so at most 65535 entries and
//! 4 GiB. Entries are laid out as Go's `archive/zip` writes talosctl's bundle (version 2.0, no
//! file attributes), stamped with the time the archive is made.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};
use flate2::{read::DeflateDecoder, write::DeflateEncoder, Compression, Crc};

use talm_base::error::hinted;

const LOCAL: u32 = 0x0403_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const END: u32 = 0x0605_4b50;
/// Version 2.0: what deflate needs, and what Go writes as "made by" (MS-DOS attributes).
const VERSION: u16 = 20;
const STORED: u16 = 0;
const DEFLATED: u16 = 8;
/// General-purpose flag: the name is UTF-8.
const UTF8: u16 = 1 << 11;
const MAX_ENTRIES: usize = u16::MAX as usize;

/// An MS-DOS date and time, as ZIP headers hold them (local time, two-second steps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DosTime {
    pub time: u16,
    pub date: u16,
}

impl DosTime {
    /// The DOS form of `t` (clamped to 1980..=2107, the years it can hold).
    pub fn of(t: time::PrimitiveDateTime) -> DosTime {
        let year = t.year().clamp(1980, 2107) as u16;
        DosTime {
            time: (u16::from(t.hour()) << 11)
                | (u16::from(t.minute()) << 5)
                | u16::from(t.second() / 2),
            date: ((year - 1980) << 9) | ((t.month() as u16) << 5) | u16::from(t.day()),
        }
    }

    /// Now, in local time when the offset is known (else UTC).
    pub fn now() -> DosTime {
        let now =
            time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
        DosTime::of(time::PrimitiveDateTime::new(now.date(), now.time()))
    }
}

/// Refuses an entry name that would land outside the folder it is extracted in, or that a
/// reader could not take as a path: empty, absolute, with `..`, a backslash or a NUL.
pub fn check_name(name: &str) -> Result<()> {
    let bad = name.is_empty()
        || name.starts_with('/')
        || name.ends_with('/')
        || name.contains(['\\', '\0'])
        || name
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(hinted(
            format!("archive entry name {name:?} is not a relative file path"),
            "name entries like `node/dir/file.log`: no leading `/`, no `..`, `.` or empty parts, no backslashes",
        ));
    }
    Ok(())
}

fn crc32(data: &[u8]) -> u32 {
    let mut c = Crc::new();
    c.update(data);
    c.sum()
}

fn u32_of(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n)
        .ok()
        .filter(|n| *n != u32::MAX)
        .ok_or_else(|| {
            hinted(
                format!("{what} is {n} bytes: more than a ZIP archive without ZIP64 holds (4 GiB)"),
                "collect from fewer nodes at a time",
            )
        })
}

/// The archive of `entries` (name, content), in their order.
pub fn write(entries: &[(String, Vec<u8>)], stamp: DosTime) -> Result<Vec<u8>> {
    if entries.len() > MAX_ENTRIES {
        return Err(hinted(
            format!(
                "{} archive entries: more than a ZIP archive without ZIP64 holds ({MAX_ENTRIES})",
                entries.len()
            ),
            "collect from fewer nodes at a time",
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in entries {
        check_name(name)?;
        if !seen.insert(name.as_str()) {
            bail!("archive entry {name:?} is given twice");
        }
        let mut enc = DeflateEncoder::new(Vec::new(), Compression::default());
        enc.write_all(data)?;
        let deflated = enc.finish()?;
        let (method, body) = if deflated.len() < data.len() {
            (DEFLATED, deflated.as_slice())
        } else {
            (STORED, data.as_slice())
        };
        let flags = if name.is_ascii() { 0 } else { UTF8 };
        let name_len =
            u16::try_from(name.len()).context("archive entry name longer than 65535 bytes")?;
        let offset = u32_of(out.len(), "the archive before an entry")?;
        let (crc, csize, size) = (
            crc32(data),
            u32_of(body.len(), name)?,
            u32_of(data.len(), name)?,
        );
        // What the local and central headers share, from "version needed" to the name length.
        let mut common = Vec::with_capacity(26);
        for v in [VERSION, flags, method, stamp.time, stamp.date] {
            common.extend_from_slice(&v.to_le_bytes());
        }
        for v in [crc, csize, size] {
            common.extend_from_slice(&v.to_le_bytes());
        }
        common.extend_from_slice(&name_len.to_le_bytes());

        out.extend_from_slice(&LOCAL.to_le_bytes());
        out.extend_from_slice(&common);
        out.extend_from_slice(&0u16.to_le_bytes()); // extra field length
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(body);

        central.extend_from_slice(&CENTRAL.to_le_bytes());
        central.extend_from_slice(&VERSION.to_le_bytes()); // made by
        central.extend_from_slice(&common);
        // Extra and comment lengths, disk number, internal attributes: none.
        central.extend_from_slice(&[0u8; 8]);
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = u32_of(out.len(), "the archive's entries")?;
    let cd_size = u32_of(central.len(), "the archive's directory")?;
    out.extend_from_slice(&central);
    let count = entries.len() as u16;
    out.extend_from_slice(&END.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]); // this disk, the directory's disk
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes()); // comment length
    Ok(out)
}

fn u16_at(b: &[u8], at: usize) -> Result<u16> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .context("ZIP archive cut short")
}

fn u32_at(b: &[u8], at: usize) -> Result<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .context("ZIP archive cut short")
}

/// The entries of an archive (name, content) in directory order; every entry's local header
/// must agree with the directory, and its content with its size and CRC-32.
pub fn read(b: &[u8]) -> Result<Vec<(String, Vec<u8>)>> {
    let end = (0..=b.len().saturating_sub(22))
        .rev()
        .take(22 + 65535)
        .find(|&i| u32_at(b, i).ok() == Some(END))
        .context("not a ZIP archive: no end-of-directory record")?;
    let count = u16_at(b, end + 10)? as usize;
    let mut at = u32_at(b, end + 16)? as usize;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        if u32_at(b, at)? != CENTRAL {
            bail!("ZIP directory entry at {at} has no signature");
        }
        let method = u16_at(b, at + 10)?;
        let crc = u32_at(b, at + 16)?;
        let csize = u32_at(b, at + 20)? as usize;
        let size = u32_at(b, at + 24)? as usize;
        let (name_len, extra_len, comment_len) = (
            u16_at(b, at + 28)? as usize,
            u16_at(b, at + 30)? as usize,
            u16_at(b, at + 32)? as usize,
        );
        let local = u32_at(b, at + 42)? as usize;
        let name_bytes = b
            .get(at + 46..at + 46 + name_len)
            .context("ZIP archive cut short")?;
        let name = String::from_utf8(name_bytes.to_vec()).context("ZIP entry name is not UTF-8")?;
        at += 46 + name_len + extra_len + comment_len;

        if u32_at(b, local)? != LOCAL {
            bail!("ZIP entry {name:?}: no local header at {local}");
        }
        let lname_len = u16_at(b, local + 26)? as usize;
        let lextra_len = u16_at(b, local + 28)? as usize;
        if b.get(local + 30..local + 30 + lname_len) != Some(name_bytes)
            || u16_at(b, local + 8)? != method
            || u32_at(b, local + 14)? != crc
        {
            bail!("ZIP entry {name:?}: local header disagrees with the directory");
        }
        let start = local + 30 + lname_len + lextra_len;
        let body = b
            .get(start..start + csize)
            .context("ZIP archive cut short")?;
        let data = match method {
            STORED => body.to_vec(),
            DEFLATED => {
                let mut v = Vec::with_capacity(size);
                DeflateDecoder::new(body)
                    .read_to_end(&mut v)
                    .with_context(|| format!("ZIP entry {name:?}: bad deflate data"))?;
                v
            }
            m => bail!("ZIP entry {name:?}: compression method {m} is not supported"),
        };
        if data.len() != size || crc32(&data) != crc {
            bail!("ZIP entry {name:?}: size or CRC-32 does not match its content");
        }
        out.push((name, data));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries() -> Vec<(String, Vec<u8>)> {
        vec![
            ("n/a.log".into(), b"line\n".repeat(200)),
            ("n/tiny".into(), b"x".to_vec()),
            ("n/empty".into(), Vec::new()),
            ("n/ünï.yaml".into(), "spec: <REDACTED>\n".into()),
        ]
    }

    #[test]
    fn round_trip_keeps_order_and_content() {
        let stamp = DosTime::of(time::macros::datetime!(2025-03-04 05:06:08));
        let bytes = write(&entries(), stamp).unwrap();
        assert_eq!(read(&bytes).unwrap(), entries());
        // Repetitive text is deflated, a single byte stored.
        assert!(bytes.len() < 1000, "{}", bytes.len());
        assert_eq!(u16_at(&bytes, 8).unwrap(), DEFLATED);
        assert_eq!(
            stamp,
            DosTime {
                time: (5 << 11) | (6 << 5) | 4,
                date: (45 << 9) | (3 << 5) | 4
            }
        );
        assert_eq!(u16_at(&bytes, 10).unwrap(), stamp.time);
    }

    #[test]
    fn bad_names_and_duplicates_are_refused() {
        for bad in [
            "",
            "/etc/passwd",
            "a/../../b",
            "a//b",
            "a\\b",
            "./a",
            "dir/",
        ] {
            let err = write(&[(bad.to_string(), vec![])], DosTime::default()).unwrap_err();
            assert!(
                err.to_string().contains("is not a relative file path"),
                "{bad}: {err}"
            );
        }
        let twice = [("a".to_string(), vec![]), ("a".to_string(), vec![1])];
        assert!(write(&twice, DosTime::default())
            .unwrap_err()
            .to_string()
            .contains("given twice"));
    }

    #[test]
    fn damage_is_detected() {
        let mut bytes = write(&entries(), DosTime::default()).unwrap();
        // The stored entry's content ("x") follows its name in the local header.
        let name = bytes.windows(6).position(|w| w == b"n/tiny").unwrap();
        assert_eq!(bytes[name + 6], b'x');
        bytes[name + 6] = b'y';
        assert!(read(&bytes).unwrap_err().to_string().contains("CRC-32"));
        assert!(read(b"not a zip").is_err());
    }

    /// An independent reader agrees, where the system has one (Info-ZIP's `unzip`).
    #[test]
    fn unzip_accepts_the_archive() {
        let Ok(out) = std::process::Command::new("unzip").arg("-v").output() else {
            eprintln!("unzip not installed; skipped");
            return;
        };
        assert!(out.status.success());
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.zip");
        std::fs::write(&path, write(&entries(), DosTime::now()).unwrap()).unwrap();
        let t = std::process::Command::new("unzip")
            .arg("-t")
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&t.stdout);
        assert!(t.status.success(), "{text}");
        assert!(text.contains("No errors detected"), "{text}");
    }
}
