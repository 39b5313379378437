//! etcd snapshot files: the database as etcd streams it followed by its 32-byte SHA-256
//! trailer (the whole file is then `512·k + 32` bytes long), the integrity checks `etcd
//! snapshot` and a restore make, and the `snapshot info` figures (hash, revision, keys, size).
//!
//! The database is etcd's bbolt file (see `bbolt` and `etcd_db`), whether a real etcd or the
//! simulator wrote it; the figures are computed as `etcdutl snapshot status` does.

use anyhow::{anyhow, bail, Result};
use sha2::{Digest, Sha256};

use super::bbolt::{self, Entry};
pub use super::etcd_db::{decode, encode, Db, DbMember};

/// Length of the SHA-256 trailer.
pub const TRAILER: usize = 32;
/// bbolt pages are multiples of 512 bytes.
const SECTOR: usize = 512;

/// What `etcdutl snapshot status` reports of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Info {
    pub hash: u32,
    pub revision: i64,
    pub total_keys: usize,
    pub total_size: usize,
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

/// The status figures of a snapshot file (trailer stripped when present), as etcdutl's
/// snapshot status computes them: CRC-32C over every top-level bucket's name followed by each
/// of its keys and values (a nested bucket's value is empty), the `key` bucket's last main
/// revision, the count of entries in all buckets, and the database size bbolt reports.
pub fn info(file: &[u8]) -> Result<Info> {
    let db_bytes = if has_trailer(file) {
        &file[..file.len() - TRAILER]
    } else {
        file
    };
    let db = bbolt::Db::open(db_bytes)?;
    let mut h = Crc32c::default();
    let (mut revision, mut total_keys) = (0i64, 0usize);
    db.for_each(db.root(), &mut |name, e| {
        let Entry::Bucket(b) = e else {
            bail!(
                "cannot get hash of bucket {}",
                String::from_utf8_lossy(name)
            );
        };
        h.update(name);
        let is_key = name == b"key";
        db.for_each(b, &mut |k, e| {
            h.update(k);
            if let Entry::Value(v) = e {
                h.update(v);
            }
            if is_key {
                revision = super::etcd_db::revision_of(k)?;
            }
            total_keys += 1;
            Ok(())
        })
        .map_err(|e| {
            anyhow!(
                "cannot write bucket {} : {e:#}",
                String::from_utf8_lossy(name)
            )
        })
    })?;
    Ok(Info {
        hash: h.finish(),
        revision,
        total_keys,
        total_size: db.size() as usize,
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
            ..Db::default()
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
        assert_eq!(db.len() % 4096, 0);
        let file = seal(&db);
        assert_eq!(file.len() % 512, 32);
        check_length(&file).unwrap();
        assert_eq!(verified(&file, false).unwrap(), db.as_slice());
        assert_eq!(decode(verified(&file, false).unwrap()).unwrap(), sample());
        let i = info(&file).unwrap();
        // 2 keys, authEnabled and authRevision, clusterVersion, 4 meta entries.
        assert_eq!((i.revision, i.total_keys, i.total_size), (9, 9, db.len()));
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
