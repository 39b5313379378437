//! etcd snapshot files: the database as etcd streams it followed by its 32-byte SHA-256
//! trailer (the whole file is then `512·k + 32` bytes long), the integrity checks `etcd
//! snapshot` and a restore make, and the `snapshot info` figures (hash, revision, keys, size).
//!
//! The database part is the simulated etcd's keyspace in pages of 4096 bytes (a header with
//! magic, revision and the key/value pairs), not a bbolt file: a snapshot of a real etcd passes
//! the length and trailer checks, but its figures cannot be read here.

use anyhow::{bail, Result};
use sha2::{Digest, Sha256};

/// Length of the SHA-256 trailer.
pub const TRAILER: usize = 32;
/// bbolt pages are multiples of 512 bytes.
const SECTOR: usize = 512;
/// The page size of the simulated database.
const PAGE: usize = 4096;
const MAGIC: &[u8; 16] = b"talm-sim-etcd-db";

/// The keyspace a snapshot holds.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Db {
    /// etcd's latest revision.
    pub revision: i64,
    /// Keys and values, sorted by key.
    pub kvs: Vec<(String, String)>,
}

/// What `etcdutl snapshot status` reports of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    pub hash: u32,
    pub revision: i64,
    pub total_keys: usize,
    pub total_size: usize,
}

/// The database pages of `db`.
pub fn encode(db: &Db) -> Vec<u8> {
    // Cannot fail: strings and integers always serialise.
    let body = serde_json::to_vec(db).unwrap_or_default();
    let mut out = Vec::with_capacity(MAGIC.len() + 4 + body.len() + PAGE);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&body);
    let padded = out.len().div_ceil(PAGE).max(1) * PAGE;
    out.resize(padded, 0);
    out
}

/// The keyspace in database pages (without trailer).
pub fn decode(db: &[u8]) -> Result<Db> {
    if db.len() < MAGIC.len() + 4 || &db[..MAGIC.len()] != MAGIC {
        bail!("invalid database: not an etcd database talm can read (a snapshot of the simulated etcd)");
    }
    let mut len = [0u8; 4];
    len.copy_from_slice(&db[MAGIC.len()..MAGIC.len() + 4]);
    let len = u32::from_le_bytes(len) as usize;
    let start = MAGIC.len() + 4;
    let body = db
        .get(start..start + len)
        .ok_or_else(|| anyhow::anyhow!("invalid database: the key/value page is cut short"))?;
    serde_json::from_slice(body).map_err(|e| anyhow::anyhow!("invalid database: {e}"))
}

/// A snapshot file: the database followed by its SHA-256.
pub fn seal(db: &[u8]) -> Vec<u8> {
    let mut out = db.to_vec();
    out.extend_from_slice(&Sha256::digest(db));
    out
}

/// Whether the file's length says it carries a trailer (`size % 512 == 32`).
pub fn has_trailer(file: &[u8]) -> bool {
    file.len() % SECTOR == TRAILER
}

/// The check `etcd snapshot` makes after download: the length rule.
pub fn check_length(file: &[u8]) -> Result<()> {
    if !has_trailer(file) {
        bail!("sha256 checksum not found (size {})", file.len());
    }
    Ok(())
}

/// The database part of a snapshot file after etcd's restore checks: the trailer must match
/// unless `skip_hash_check` (then a file without trailer is taken whole).
pub fn verified(file: &[u8], skip_hash_check: bool) -> Result<&[u8]> {
    if !has_trailer(file) {
        if skip_hash_check {
            return Ok(file);
        }
        bail!("snapshot missing hash but --skip-hash-check=false");
    }
    let (db, sha) = file.split_at(file.len() - TRAILER);
    if !skip_hash_check {
        let got = Sha256::digest(db);
        if got.as_slice() != sha {
            bail!("expected sha256 {}, got {}", go_bytes(sha), go_bytes(&got));
        }
    }
    Ok(db)
}

/// Go's `%v` of a byte slice: `[1 2 3]`.
fn go_bytes(b: &[u8]) -> String {
    let parts: Vec<String> = b.iter().map(u8::to_string).collect();
    format!("[{}]", parts.join(" "))
}

/// The status figures of a snapshot file (trailer stripped when present).
pub fn info(file: &[u8]) -> Result<Info> {
    let db_bytes = if has_trailer(file) {
        &file[..file.len() - TRAILER]
    } else {
        file
    };
    let db = decode(db_bytes)?;
    let mut h = Crc32c::default();
    h.update(b"key");
    for (k, v) in &db.kvs {
        h.update(k.as_bytes());
        h.update(v.as_bytes());
    }
    Ok(Info {
        hash: h.finish(),
        revision: db.revision,
        total_keys: db.kvs.len(),
        total_size: db_bytes.len(),
    })
}

/// CRC-32 with the Castagnoli polynomial, as etcdutl hashes a snapshot's buckets.
#[derive(Default)]
struct Crc32c {
    crc: u32,
}

impl Crc32c {
    fn update(&mut self, data: &[u8]) {
        let mut crc = !self.crc;
        for &b in data {
            crc ^= u32::from(b);
            for _ in 0..8 {
                let mask = (crc & 1).wrapping_neg();
                crc = (crc >> 1) ^ (0x82F6_3B78 & mask);
            }
        }
        self.crc = !crc;
    }

    fn finish(&self) -> u32 {
        self.crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Db {
        Db {
            revision: 9,
            kvs: vec![
                ("/registry/a".into(), "1".into()),
                ("/registry/b".into(), "2".into()),
            ],
        }
    }

    #[test]
    fn crc32c_matches_the_standard_check_value() {
        let mut h = Crc32c::default();
        h.update(b"123456789");
        assert_eq!(h.finish(), 0xE306_9283);
    }

    #[test]
    fn a_sealed_snapshot_follows_the_length_rule_and_verifies() {
        let db = encode(&sample());
        assert_eq!(db.len() % PAGE, 0);
        let file = seal(&db);
        assert_eq!(file.len() % 512, 32);
        check_length(&file).unwrap();
        assert_eq!(verified(&file, false).unwrap(), db.as_slice());
        assert_eq!(decode(verified(&file, false).unwrap()).unwrap(), sample());
        let i = info(&file).unwrap();
        assert_eq!((i.revision, i.total_keys, i.total_size), (9, 2, db.len()));
        assert_eq!(
            info(&db).unwrap(),
            i,
            "the same figures without the trailer"
        );
    }

    #[test]
    fn damage_is_caught_by_the_trailer() {
        let mut file = seal(&encode(&sample()));
        file[30] ^= 0xff;
        let err = verified(&file, false).unwrap_err().to_string();
        assert!(err.starts_with("expected sha256 ["), "{err}");
        assert!(verified(&file, true).is_ok(), "skip-hash-check takes it");
        let cut = &file[..file.len() - 1];
        assert_eq!(
            check_length(cut).unwrap_err().to_string(),
            format!("sha256 checksum not found (size {})", cut.len())
        );
        let raw = encode(&sample());
        assert_eq!(
            verified(&raw, false).unwrap_err().to_string(),
            "snapshot missing hash but --skip-hash-check=false"
        );
        assert_eq!(verified(&raw, true).unwrap(), raw.as_slice());
        assert!(decode(b"not a database at all").is_err());
    }
}
