//! etcd's backend database as bbolt holds it: the buckets etcd creates, the `key` bucket's
//! revision keys (8-byte big-endian main revision, `_`, 8-byte sub revision; a trailing `t`
//! marks a deletion) with `mvccpb.KeyValue` values, the `meta` bucket (consistent index, term,
//! storage version), and `members` (hex ID → JSON). Builds a database from a keyspace and reads
//! one back.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use prost::Message;

use super::bbolt::{self, Entry, Item, Tree};

/// The page size etcd's bbolt uses on Linux/amd64.
pub const PAGE_SIZE: usize = 4096;
/// The storage version etcd 3.6 records.
const STORAGE_VERSION: &str = "3.6.0";

/// `mvccpb.KeyValue` (field numbers as etcd's kv.proto).
#[derive(Clone, PartialEq, Message)]
struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    key: Vec<u8>,
    #[prost(int64, tag = "2")]
    create_revision: i64,
    #[prost(int64, tag = "3")]
    mod_revision: i64,
    #[prost(int64, tag = "4")]
    version: i64,
    #[prost(bytes = "vec", tag = "5")]
    value: Vec<u8>,
    #[prost(int64, tag = "6")]
    lease: i64,
}

/// A member as etcd's membership store writes it (`members` bucket).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DbMember {
    pub id: u64,
    #[serde(rename = "peerURLs")]
    pub peer_urls: Vec<String>,
    #[serde(default)]
    pub name: String,
    #[serde(rename = "clientURLs", default)]
    pub client_urls: Vec<String>,
}

/// The keyspace a snapshot holds, with the cluster metadata etcd keeps beside it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Db {
    /// etcd's latest revision.
    pub revision: i64,
    /// Keys and values, sorted by key.
    pub kvs: Vec<(String, String)>,
    pub members: Vec<DbMember>,
    pub consistent_index: u64,
    pub term: u64,
}

/// A revision key: main and sub revision big-endian around `_`.
pub fn revision_key(main: i64, sub: i64) -> Vec<u8> {
    let mut k = Vec::with_capacity(17);
    k.extend_from_slice(&main.to_be_bytes());
    k.push(b'_');
    k.extend_from_slice(&sub.to_be_bytes());
    k
}

/// The main revision of a `key` bucket key.
pub fn revision_of(key: &[u8]) -> Result<i64> {
    let main: [u8; 8] = key
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            anyhow!(
                "a key of {} bytes in the `key` bucket is not a revision",
                key.len()
            )
        })?;
    Ok(i64::from_be_bytes(main))
}

fn value(v: &[u8]) -> Item {
    Item::Value(v.to_vec())
}

fn bucket(entries: Vec<(Vec<u8>, Item)>) -> Item {
    Item::Bucket(Tree {
        sequence: 0,
        entries,
    })
}

/// The `key` bucket: one revision per key, ending at `db.revision` (a single transaction with
/// sub revisions when there are more keys than revisions).
fn key_bucket(db: &Db) -> Item {
    let n = db.kvs.len() as i64;
    let entries = db
        .kvs
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let i = i as i64;
            let (main, sub) = if db.revision >= n {
                (db.revision - n + 1 + i, 0)
            } else {
                (db.revision, i)
            };
            let kv = KeyValue {
                key: k.as_bytes().to_vec(),
                create_revision: main,
                mod_revision: main,
                version: 1,
                value: v.as_bytes().to_vec(),
                lease: 0,
            };
            (revision_key(main, sub), Item::Value(kv.encode_to_vec()))
        })
        .collect();
    bucket(entries)
}

/// etcd's buckets holding `db` (sorted by name, as bbolt keeps them).
pub fn tree(db: &Db) -> Tree {
    let mut members: Vec<(Vec<u8>, Item)> = db
        .members
        .iter()
        .map(|m| {
            // Cannot fail: strings and integers always serialise.
            let json = serde_json::to_vec(m).unwrap_or_default();
            (format!("{:x}", m.id).into_bytes(), Item::Value(json))
        })
        .collect();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    let voters: Vec<String> = db.members.iter().map(|m| m.id.to_string()).collect();
    let conf = format!("{{\"voters\":[{}],\"auto_leave\":false}}", voters.join(","));
    let meta = vec![
        (b"confState".to_vec(), value(conf.as_bytes())),
        (
            b"consistent_index".to_vec(),
            value(&db.consistent_index.to_be_bytes()),
        ),
        (
            b"storageVersion".to_vec(),
            value(STORAGE_VERSION.as_bytes()),
        ),
        (b"term".to_vec(), value(&db.term.to_be_bytes())),
    ];
    let entries = vec![
        (b"alarm".to_vec(), bucket(Vec::new())),
        (
            b"auth".to_vec(),
            bucket(vec![
                (b"authEnabled".to_vec(), value(&[0])),
                (b"authRevision".to_vec(), value(&1u64.to_be_bytes())),
            ]),
        ),
        (b"authRoles".to_vec(), bucket(Vec::new())),
        (b"authUsers".to_vec(), bucket(Vec::new())),
        (
            b"cluster".to_vec(),
            bucket(vec![(b"clusterVersion".to_vec(), value(b"3.6.0"))]),
        ),
        (b"key".to_vec(), key_bucket(db)),
        (b"lease".to_vec(), bucket(Vec::new())),
        (b"members".to_vec(), bucket(members)),
        (b"members_removed".to_vec(), bucket(Vec::new())),
        (b"meta".to_vec(), bucket(meta)),
    ];
    Tree {
        sequence: 0,
        entries,
    }
}

/// The bbolt database file (without trailer) holding `db`.
pub fn encode(db: &Db) -> Vec<u8> {
    bbolt::write(&tree(db), PAGE_SIZE, db.consistent_index.max(1) + 1)
}

fn be_u64(v: &[u8]) -> u64 {
    v.try_into().map(u64::from_be_bytes).unwrap_or(0)
}

/// The keyspace and metadata of an etcd database file (without trailer).
pub fn decode(bytes: &[u8]) -> Result<Db> {
    let file = bbolt::Db::open(bytes)?;
    let mut buckets = BTreeMap::new();
    file.for_each(file.root(), &mut |name, e| {
        if let Entry::Bucket(b) = e {
            buckets.insert(name, b);
        }
        Ok(())
    })?;
    let Some(&keys) = buckets.get(&b"key"[..]) else {
        bail!("the database has no `key` bucket: not an etcd database");
    };
    let mut db = Db::default();
    let mut kvs = BTreeMap::new();
    file.for_each(keys, &mut |k, e| {
        let Entry::Value(v) = e else {
            bail!("the `key` bucket holds a bucket");
        };
        db.revision = revision_of(k)?;
        let kv = KeyValue::decode(v)
            .map_err(|e| anyhow!("revision {}: not an mvccpb.KeyValue: {e}", db.revision))?;
        let key = String::from_utf8_lossy(&kv.key).into_owned();
        if k.len() == 18 && k[17] == b't' {
            kvs.remove(&key);
        } else {
            kvs.insert(key, String::from_utf8_lossy(&kv.value).into_owned());
        }
        Ok(())
    })?;
    db.kvs = kvs.into_iter().collect();
    if let Some(&m) = buckets.get(&b"members"[..]) {
        file.for_each(m, &mut |k, e| {
            if let Entry::Value(v) = e {
                let m: DbMember = serde_json::from_slice(v)
                    .map_err(|e| anyhow!("member {}: {e}", String::from_utf8_lossy(k)))?;
                db.members.push(m);
            }
            Ok(())
        })?;
    }
    if let Some(&m) = buckets.get(&b"meta"[..]) {
        file.for_each(m, &mut |k, e| {
            if let Entry::Value(v) = e {
                match k {
                    b"consistent_index" => db.consistent_index = be_u64(v),
                    b"term" => db.term = be_u64(v),
                    _ => {}
                }
            }
            Ok(())
        })?;
    }
    Ok(db)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize) -> Db {
        Db {
            revision: 7 + n as i64,
            kvs: (0..n)
                .map(|i| (format!("/registry/k{i:05}"), format!("value {i}")))
                .collect(),
            members: vec![DbMember {
                id: 0x8e9e_05c5_2164_694d,
                peer_urls: vec!["https://10.0.0.1:2380".into()],
                name: "cp-1".into(),
                client_urls: vec!["https://10.0.0.1:2379".into()],
            }],
            consistent_index: 42,
            term: 3,
        }
    }

    #[test]
    fn the_keyspace_and_metadata_come_back() {
        for n in [0, 3, 600] {
            let mut db = sample(n);
            if n == 0 {
                // Without keys the `key` bucket has no revision to give.
                db.revision = 0;
            }
            assert_eq!(decode(&encode(&db)).unwrap(), db, "{n} keys");
        }
        // Fewer revisions than keys: one transaction with sub revisions.
        let mut db = sample(5);
        db.revision = 2;
        assert_eq!(decode(&encode(&db)).unwrap(), db);
    }

    #[test]
    fn revision_keys_are_etcds() {
        assert_eq!(
            revision_key(5, 1),
            [0, 0, 0, 0, 0, 0, 0, 5, b'_', 0, 0, 0, 0, 0, 0, 0, 1]
        );
        assert_eq!(revision_of(&revision_key(1 << 40, 3)).unwrap(), 1 << 40);
        assert!(revision_of(b"short").is_err());
    }

    #[test]
    fn a_deletion_removes_the_key() {
        let put = KeyValue {
            key: b"/a".to_vec(),
            create_revision: 2,
            mod_revision: 2,
            version: 1,
            value: b"x".to_vec(),
            lease: 0,
        };
        let del = KeyValue {
            key: b"/a".to_vec(),
            mod_revision: 3,
            ..Default::default()
        };
        let mut tomb = revision_key(3, 0);
        tomb.push(b't');
        let t = Tree {
            sequence: 0,
            entries: vec![(
                b"key".to_vec(),
                bucket(vec![
                    (revision_key(2, 0), Item::Value(put.encode_to_vec())),
                    (tomb, Item::Value(del.encode_to_vec())),
                ]),
            )],
        };
        let db = decode(&bbolt::write(&t, PAGE_SIZE, 2)).unwrap();
        assert_eq!((db.revision, db.kvs.len()), (3, 0));
    }
}
