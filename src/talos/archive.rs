//! The kubeconfig archive Talos streams: gzip over a single tar entry whose writer is never
//! closed (no padding after the data, no end-of-archive blocks). Read the first entry only.

use std::io::{Read, Write};

use anyhow::{bail, Context, Result};
use flate2::{read::GzDecoder, write::GzEncoder, Compression};

const BLOCK: usize = 512;

fn octal(field: &mut [u8], value: u64) {
    let width = field.len() - 1;
    let text = format!("{value:0width$o}");
    field[..width].copy_from_slice(&text.as_bytes()[text.len() - width..]);
    field[width] = 0;
}

/// gzip(tar header for a regular file `name` + `data`), unterminated as Talos writes it.
pub fn pack(name: &str, mode: u32, mtime: u64, data: &[u8]) -> Result<Vec<u8>> {
    if name.len() > 100 {
        bail!("tar entry name {name:?} is longer than 100 bytes");
    }
    let mut h = [0u8; BLOCK];
    h[..name.len()].copy_from_slice(name.as_bytes());
    octal(&mut h[100..108], u64::from(mode));
    octal(&mut h[108..116], 0);
    octal(&mut h[116..124], 0);
    octal(&mut h[124..136], data.len() as u64);
    octal(&mut h[136..148], mtime);
    h[156] = b'0';
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    let text = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(text.as_bytes());
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    gz.write_all(&h)?;
    gz.write_all(data)?;
    Ok(gz.finish()?)
}

fn parse_octal(field: &[u8]) -> Result<u64> {
    let text: String = field
        .iter()
        .take_while(|b| **b != 0)
        .map(|b| *b as char)
        .collect();
    let text = text.trim();
    if text.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(text, 8).with_context(|| format!("bad octal number {text:?} in tar header"))
}

/// The first entry of a gzipped tar stream: its name and contents.
pub fn first_entry(gz: &[u8]) -> Result<(String, Vec<u8>)> {
    let mut raw = Vec::new();
    GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .context("the archive is not valid gzip")?;
    if raw.len() < BLOCK {
        bail!(
            "the archive ends inside its first tar header ({} bytes)",
            raw.len()
        );
    }
    let h = &raw[..BLOCK];
    let name_field = |r: std::ops::Range<usize>| -> String {
        String::from_utf8_lossy(&h[r])
            .trim_end_matches('\0')
            .to_string()
    };
    let mut name = name_field(0..100);
    if &h[257..262] == b"ustar" {
        let prefix = name_field(345..500);
        if !prefix.is_empty() {
            name = format!("{prefix}/{name}");
        }
    }
    let size = parse_octal(&h[124..136])? as usize;
    let data = raw.get(BLOCK..BLOCK + size).with_context(|| {
        format!("the archive ends inside entry {name:?} ({size} bytes announced)")
    })?;
    Ok((name, data.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_without_padding() {
        let gz = pack("kubeconfig", 0o600, 1_700_000_000, b"apiVersion: v1\n").unwrap();
        let mut raw = Vec::new();
        GzDecoder::new(&gz[..]).read_to_end(&mut raw).unwrap();
        assert_eq!(raw.len(), 512 + 15, "no padding, no end blocks");
        let (name, data) = first_entry(&gz).unwrap();
        assert_eq!(name, "kubeconfig");
        assert_eq!(data, b"apiVersion: v1\n");
    }

    #[test]
    fn truncated_archive_is_an_error() {
        let gz = pack("kubeconfig", 0o600, 0, &[b'x'; 100]).unwrap();
        let mut raw = Vec::new();
        GzDecoder::new(&gz[..]).read_to_end(&mut raw).unwrap();
        raw.truncate(560);
        let mut enc = GzEncoder::new(Vec::new(), Compression::default());
        enc.write_all(&raw).unwrap();
        let err = first_entry(&enc.finish().unwrap()).unwrap_err();
        assert!(err.to_string().contains("ends inside entry"), "{err}");
    }
}
