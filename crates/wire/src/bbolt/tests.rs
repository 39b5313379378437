//! The reader against databases assembled byte by byte from the format description (not by
//! the writer), the writer read back (multi-level trees, inline buckets, overflow pages), and
//! damaged files refused with the page and the fault named.

use super::*;

const PS: usize = 4096;

/// FNV-64a written out here (offset basis, prime) so the checksum does not come from the reader.
fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 14695981039346656037;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(1099511628211);
    }
    h
}

/// CRC-32C, bit by bit, reflected polynomial 0x82F63B78.
fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn header(id: u64, flags: u16, count: u16) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(id.to_le_bytes());
    p.extend(flags.to_le_bytes());
    p.extend(count.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p
}

/// A meta page: header, then magic, version, page size, flags, root, sequence, freelist,
/// pgid, txid, checksum (FNV-64a of the 56 bytes before it).
fn meta_page(id: u64, root: u64, pgid: u64, txid: u64) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend(0xED0CDAEDu32.to_le_bytes());
    m.extend(2u32.to_le_bytes());
    m.extend((PS as u32).to_le_bytes());
    m.extend(0u32.to_le_bytes());
    m.extend(root.to_le_bytes());
    m.extend(0u64.to_le_bytes());
    m.extend(u64::MAX.to_le_bytes());
    m.extend(pgid.to_le_bytes());
    m.extend(txid.to_le_bytes());
    let sum = fnv(&m);
    m.extend(sum.to_le_bytes());
    let mut p = header(id, 0x04, 0);
    p.extend(m);
    p.resize(PS, 0);
    p
}

/// A leaf page (or inline page when `id` is 0 and `pad` false): elements
/// flags/pos/ksize/vsize, pos counted from each element's own start.
fn leaf_page(id: u64, elems: &[(u32, &[u8], &[u8])], pad: bool) -> Vec<u8> {
    let mut p = header(id, 0x02, elems.len() as u16);
    let mut data = Vec::new();
    let table = 16 + 16 * elems.len();
    for (i, (flags, k, v)) in elems.iter().enumerate() {
        let pos = (table + data.len() - (16 + 16 * i)) as u32;
        p.extend(flags.to_le_bytes());
        p.extend(pos.to_le_bytes());
        p.extend((k.len() as u32).to_le_bytes());
        p.extend((v.len() as u32).to_le_bytes());
        data.extend_from_slice(k);
        data.extend_from_slice(v);
    }
    p.extend(data);
    if pad {
        p.resize(PS, 0);
    }
    p
}

/// A branch page: elements pos/ksize/pgid.
fn branch_page(id: u64, elems: &[(&[u8], u64)]) -> Vec<u8> {
    let mut p = header(id, 0x01, elems.len() as u16);
    let mut data = Vec::new();
    let table = 16 + 16 * elems.len();
    for (i, (k, child)) in elems.iter().enumerate() {
        let pos = (table + data.len() - (16 + 16 * i)) as u32;
        p.extend(pos.to_le_bytes());
        p.extend((k.len() as u32).to_le_bytes());
        p.extend(child.to_le_bytes());
        data.extend_from_slice(k);
    }
    p.extend(data);
    p.resize(PS, 0);
    p
}

fn bucket_header(root: u64, seq: u64) -> Vec<u8> {
    let mut v = root.to_le_bytes().to_vec();
    v.extend(seq.to_le_bytes());
    v
}

fn rev(main: u64) -> Vec<u8> {
    let mut k = main.to_be_bytes().to_vec();
    k.push(b'_');
    k.extend(0u64.to_be_bytes());
    k
}

/// Pages: 0/1 meta; 2 root leaf (`key` → tree at 3, `meta` inline); 3 branch over leaves 4, 5.
fn hand_built() -> Vec<u8> {
    let (r2, r3, r4) = (rev(2), rev(3), rev(4));
    let key_bucket = bucket_header(3, 0);
    let mut meta_bucket = bucket_header(0, 0);
    meta_bucket.extend(leaf_page(0, &[(0, b"term", &7u64.to_be_bytes())], false));
    let mut file = meta_page(0, 2, 6, 9);
    file.extend(meta_page(1, 2, 6, 8));
    file.extend(leaf_page(
        2,
        &[(1, b"key", &key_bucket), (1, b"meta", &meta_bucket)],
        true,
    ));
    file.extend(branch_page(3, &[(&r2, 4), (&r4, 5)]));
    file.extend(leaf_page(4, &[(0, &r2, b"two"), (0, &r3, b"three")], true));
    file.extend(leaf_page(5, &[(0, &r4, b"four")], true));
    file
}

fn values(entries: &[(&[u8], &[u8])]) -> Tree {
    Tree {
        sequence: 0,
        entries: entries
            .iter()
            .map(|(k, v)| (k.to_vec(), Item::Value(v.to_vec())))
            .collect(),
    }
}

#[test]
fn checksums_are_the_standard_ones() {
    assert_eq!(fnv64a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv64a(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv64a(b"foobar"), fnv(b"foobar"));
    assert_eq!(crc32c(b"123456789"), 0xE306_9283);
}

#[test]
fn a_hand_built_database_reads_back() {
    let file = hand_built();
    let db = Db::open(&file).unwrap();
    assert_eq!(db.meta().txid, 9, "the newer meta");
    assert_eq!(db.size(), 6 * PS as u64);
    let tree = db.read_tree(db.root()).unwrap();
    let (r2, r3, r4) = (rev(2), rev(3), rev(4));
    let want = Tree {
        sequence: 0,
        entries: vec![
            (
                b"key".to_vec(),
                Item::Bucket(values(&[(&r2, b"two"), (&r3, b"three"), (&r4, b"four")])),
            ),
            (
                b"meta".to_vec(),
                Item::Bucket(values(&[(b"term", &7u64.to_be_bytes())])),
            ),
        ],
    };
    assert_eq!(tree, want);
}

#[test]
fn the_status_figures_are_etcdutls() {
    let mut file = hand_built();
    let (r2, r3, r4) = (rev(2), rev(3), rev(4));
    let mut summed = b"key".to_vec();
    for (k, v) in [(&r2, &b"two"[..]), (&r3, b"three"), (&r4, b"four")] {
        summed.extend_from_slice(k);
        summed.extend_from_slice(v);
    }
    summed.extend_from_slice(b"meta");
    summed.extend_from_slice(b"term");
    summed.extend_from_slice(&7u64.to_be_bytes());
    let want = crate::snapshot::Info {
        hash: crc32c(&summed),
        revision: 4,
        total_keys: 4,
        total_size: 6 * PS,
    };
    assert_eq!(crate::snapshot::info(&file).unwrap(), want);
    // The same with etcd's SHA-256 trailer behind the pages.
    file = crate::snapshot::seal(&file);
    assert_eq!(crate::snapshot::info(&file).unwrap(), want);
}

#[test]
fn a_damaged_meta_falls_back_then_is_refused() {
    let mut file = hand_built();
    file[16 + 16] ^= 1; // meta 0's root pgid: its checksum no longer matches
    let db = Db::open(&file).unwrap();
    assert_eq!(db.meta().txid, 8, "meta 1 is used");
    file[PS + 16 + 16] ^= 1;
    let err = Db::open(&file).err().unwrap().to_string();
    assert!(err.contains("checksum error"), "{err}");

    let mut file = hand_built();
    file[16] ^= 0xff;
    file[PS + 16] ^= 0xff;
    let err = Db::open(&file).err().unwrap().to_string();
    assert!(err.contains("invalid database (magic"), "{err}");
    let mut file = hand_built();
    for at in [20, PS + 20] {
        file[at] = 3;
    }
    let err = Db::open(&file).err().unwrap().to_string();
    assert!(err.contains("version mismatch"), "{err}");
    assert!(Db::open(b"not a database").is_err());
}

#[test]
fn damaged_pages_are_named() {
    let walk = |file: &[u8]| -> String {
        let db = match Db::open(file) {
            Ok(db) => db,
            Err(e) => return e.to_string(),
        };
        db.read_tree(db.root()).err().unwrap().to_string()
    };
    let file = hand_built();
    assert!(walk(&file[..5 * PS]).starts_with("the database is cut short"));
    let mut f = file.clone();
    f[4 * PS] = 9;
    assert_eq!(walk(&f), "page 4 identifies itself as page 9");
    let mut f = file.clone();
    f[3 * PS + 8] = 0x10;
    assert_eq!(
        walk(&f),
        "page 3 is a freelist page where a branch or leaf page belongs"
    );
    let mut f = file.clone();
    f[3 * PS + 16 + 8] = 3; // the branch points at itself
    assert!(walk(&f).contains("deeper than 64 levels"), "{}", walk(&f));
    let mut f = file.clone();
    f[3 * PS + 16 + 8] = 40;
    assert_eq!(walk(&f), "page 40 is outside the database (pages 2..6)");
    let mut f = file.clone();
    f[4 * PS + 16 + 12] = 0xff; // vsize of the first element
    f[4 * PS + 16 + 13] = 0xff;
    assert_eq!(
        walk(&f),
        "page 4: element 0 points past the end of the page"
    );
    let mut f = file.clone();
    f[5 * PS + 16 + 16 + 7] = 1; // page 5's key now sorts before page 4's
    assert!(walk(&f).contains("is out of order"), "{}", walk(&f));
}

#[test]
fn no_single_byte_change_makes_the_reader_panic() {
    let file = hand_built();
    for at in (0..file.len()).step_by(7) {
        let mut f = file.clone();
        f[at] ^= 0xa5;
        if let Ok(db) = Db::open(&f) {
            let _ = db.read_tree(db.root());
        }
    }
}

#[test]
fn written_databases_read_back_with_branch_pages_inline_buckets_and_overflow() {
    let many = Tree {
        sequence: 5,
        entries: (0..20_000u32)
            .map(|i| {
                (
                    format!("/registry/pods/ns-{:04}/pod-{i:08}", i % 97).into_bytes(),
                    Item::Value(format!("v{i}").into_bytes()),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
            .into_iter()
            .collect(),
    };
    let nested = Tree {
        sequence: 0,
        entries: vec![
            (b"big".to_vec(), Item::Value(vec![7u8; 3 * PS + 100])),
            (b"small".to_vec(), Item::Bucket(values(&[(b"a", b"1")]))),
        ],
    };
    let root = Tree {
        sequence: 0,
        entries: vec![
            (b"empty".to_vec(), Item::Bucket(Tree::default())),
            (b"many".to_vec(), Item::Bucket(many)),
            (b"nested".to_vec(), Item::Bucket(nested)),
        ],
    };
    let file = write(&root, PS, 12);
    assert_eq!(file.len() % PS, 0);
    let db = Db::open(&file).unwrap();
    assert_eq!(db.meta().txid, 12);
    assert_eq!(db.size() as usize, file.len());
    assert_eq!(db.read_tree(db.root()).unwrap(), root);
    // `many` needs two levels of branch pages; `empty` and `small` are inline.
    let mut kinds = Vec::new();
    db.for_each(db.root(), &mut |name, e| {
        kinds.push((String::from_utf8_lossy(name).into_owned(), e));
        Ok(())
    })
    .unwrap();
    assert!(matches!(
        kinds[0].1,
        Entry::Bucket(BucketRef::Inline { .. })
    ));
    let Entry::Bucket(BucketRef::Paged {
        root: top,
        sequence,
    }) = kinds[1].1
    else {
        panic!("many is not paged: {:?}", kinds[1]);
    };
    assert_eq!(sequence, 5);
    let flags_of =
        |id: u64| u16::from_le_bytes([file[id as usize * PS + 8], file[id as usize * PS + 9]]);
    assert_eq!(flags_of(top), BRANCH_PAGE);
    let child = u64::from_le_bytes(
        file[top as usize * PS + 24..top as usize * PS + 32]
            .try_into()
            .unwrap(),
    );
    assert_eq!(flags_of(child), BRANCH_PAGE, "a second branch level");
}
