//! The kubeconfig archive Talos streams: gzip over a single tar entry whose writer is never
//! closed (no padding after the data, no end-of-archive blocks). Headers come from the `tar`
//! crate, laid out as Go's `archive/tar` writes them; only the first entry is read.

use std::io::{Read, Write};

use anyhow::{Context, Result};
use flate2::{read::GzDecoder, write::GzEncoder, Compression};

/// gzip(tar header for a regular file `name` + `data`), unterminated as Talos writes it.
pub fn pack(name: &str, mode: u32, mtime: u64, data: &[u8]) -> Result<Vec<u8>> {
    let mut h = tar::Header::new_ustar();
    h.set_path(name)
        .with_context(|| format!("tar entry name {name:?}"))?;
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_size(data.len() as u64);
    h.set_mtime(mtime);
    h.set_entry_type(tar::EntryType::Regular);
    h.set_device_major(0)?;
    h.set_device_minor(0)?;
    h.set_cksum();
    // Go ends the checksum field with NUL and a space (`%06o\0 `); the crate with one NUL.
    let sum = h.cksum()?;
    h.as_old_mut()
        .cksum
        .copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    // Header and data only: `tar::Builder` would pad the entry and close the archive.
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(h.as_bytes())?;
    gz.write_all(data)?;
    Ok(gz.finish()?)
}

/// The most a node's archive may unpack to: a kubeconfig is a few KiB, so anything near this is
/// not one (and a gzip bomb must not exhaust memory).
const MAX_UNPACKED: u64 = 16 << 20;

/// The first entry of a gzipped tar stream: its name and contents.
pub fn first_entry(gz: &[u8]) -> Result<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    GzDecoder::new(gz)
        .take(MAX_UNPACKED + 1)
        .read_to_end(&mut raw)
        .context("the archive is not valid gzip")?;
    if raw.len() as u64 > MAX_UNPACKED {
        anyhow::bail!(
            "the archive unpacks to more than {} MiB: it is not a kubeconfig",
            MAX_UNPACKED >> 20
        );
    }
    let mut archive = tar::Archive::new(raw.as_slice());
    let mut entry = archive
        .entries()
        .and_then(|mut entries| entries.next().transpose())
        .with_context(|| {
            format!(
                "the archive's first tar header is unreadable ({} bytes)",
                raw.len()
            )
        })?
        .with_context(|| format!("the archive holds no tar entry ({} bytes)", raw.len()))?;
    let name = entry.path()?.to_string_lossy().into_owned();
    let size = entry.size();
    let mut data = Vec::new();
    entry
        .read_to_end(&mut data)
        .with_context(|| format!("reading entry {name:?}"))?;
    if data.len() as u64 != size {
        anyhow::bail!("the archive ends inside entry {name:?} ({size} bytes announced)");
    }
    Ok((name, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gzip_bomb_is_refused_not_unpacked() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..20 {
            gz.write_all(&zeros).unwrap();
        }
        let bomb = gz.finish().unwrap();
        let err = first_entry(&bomb).unwrap_err().to_string();
        assert!(err.contains("more than 16 MiB"), "{err}");
    }

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut raw = Vec::new();
        GzDecoder::new(gz).read_to_end(&mut raw).unwrap();
        raw
    }

    fn gzip(raw: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(raw).unwrap();
        enc.finish().unwrap()
    }

    #[test]
    fn round_trip_without_padding() {
        let gz = pack("kubeconfig", 0o600, 1_700_000_000, b"apiVersion: v1\n").unwrap();
        let raw = gunzip(&gz);
        assert_eq!(raw.len(), 512 + 15, "no padding, no end blocks");
        let (name, data) = first_entry(&gz).unwrap();
        assert_eq!(name, "kubeconfig");
        assert_eq!(data, b"apiVersion: v1\n");
    }

    #[test]
    fn header_fields_as_go_writes_them() {
        let raw = gunzip(&pack("kubeconfig", 0o600, 1_700_000_000, b"abc").unwrap());
        let field = |r: std::ops::Range<usize>| raw[r].to_vec();
        assert_eq!(field(100..108), b"0000600\0");
        assert_eq!(field(108..116), b"0000000\0");
        assert_eq!(field(124..136), b"00000000003\0");
        assert_eq!(field(136..148), b"14524770400\0");
        assert_eq!(raw[156], b'0');
        assert_eq!(field(257..265), b"ustar\x0000");
        assert_eq!(field(329..337), b"0000000\0");
        let sum: u32 = raw[..512]
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if (148..156).contains(&i) {
                    32
                } else {
                    u32::from(*b)
                }
            })
            .sum();
        assert_eq!(field(148..156), format!("{sum:06o}\0 ").as_bytes());
    }

    #[test]
    fn long_names_use_the_ustar_prefix() {
        let name = format!("{}/kubeconfig", "d".repeat(120));
        let (got, _) = first_entry(&pack(&name, 0o600, 0, b"x").unwrap()).unwrap();
        assert_eq!(got, name);
    }

    #[test]
    fn truncated_archive_is_an_error() {
        let mut raw = gunzip(&pack("kubeconfig", 0o600, 0, &[b'x'; 100]).unwrap());
        raw.truncate(560);
        let err = first_entry(&gzip(&raw)).unwrap_err();
        assert!(err.to_string().contains("ends inside entry"), "{err}");
        raw.truncate(300);
        let err = first_entry(&gzip(&raw)).unwrap_err();
        assert!(err.to_string().contains("first tar header"), "{err}");
        assert!(first_entry(&gzip(b""))
            .unwrap_err()
            .to_string()
            .contains("no tar entry"));
        assert!(first_entry(b"not gzip")
            .unwrap_err()
            .to_string()
            .contains("not valid gzip"));
        let mut bad = gunzip(&pack("kubeconfig", 0o600, 0, b"x").unwrap());
        bad[0] = b'K';
        let err = first_entry(&gzip(&bad)).unwrap_err();
        assert!(err.to_string().contains("first tar header"), "{err}");
    }
}
