//! A read-only reader of bbolt database files (etcd's storage engine): the two meta pages
//! (magic, version, page size, root bucket, high-water mark, FNV-64a checksum), branch and
//! leaf pages with their elements, overflow pages, and buckets stored in their own trees or
//! inline in their parent's leaf. Every offset is bounds-checked: a damaged file is an error
//! naming the page and what is wrong, never a panic. The writer (`write`) builds such files.

use anyhow::{anyhow, bail, Result};

mod write;
pub use write::write;

#[cfg(test)]
mod tests;

/// The marker at the start of every meta.
pub const MAGIC: u32 = 0xED0C_DAED;
/// The data file format version.
pub const VERSION: u32 = 2;
/// Bytes of a page header: id u64, flags u16, count u16, overflow u32.
pub const PAGE_HEADER: usize = 16;
/// Bytes of a branch element (pos u32, ksize u32, pgid u64) and of a leaf element
/// (flags u32, pos u32, ksize u32, vsize u32).
pub const ELEMENT: usize = 16;
/// Bytes of a bucket header (root pgid u64, sequence u64) in front of a bucket's value.
pub const BUCKET_HEADER: usize = 16;
pub const BRANCH_PAGE: u16 = 0x01;
pub const LEAF_PAGE: u16 = 0x02;
pub const META_PAGE: u16 = 0x04;
pub const FREELIST_PAGE: u16 = 0x10;
/// A leaf element whose value is a bucket.
pub const BUCKET_LEAF: u32 = 0x01;
/// The freelist pgid of a database that does not store its freelist (etcd's setting).
pub const NO_FREELIST: u64 = u64::MAX;
/// Bytes of a meta (magic, version, page size, flags, root bucket, freelist, pgid, txid,
/// checksum), of which the first 56 are covered by its checksum.
const META_LEN: usize = 64;
const META_SUMMED: usize = 56;
/// Deeper trees than this are taken as a cycle of pages.
const MAX_DEPTH: usize = 64;

/// FNV-64a, the checksum of a meta.
pub fn fnv64a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn le_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// A database's meta: where its tree starts and how far its pages reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub page_size: u32,
    pub flags: u32,
    /// The root bucket's root page and sequence.
    pub root: u64,
    pub sequence: u64,
    pub freelist: u64,
    /// The high-water mark: pages `0..pgid` make up the database.
    pub pgid: u64,
    pub txid: u64,
}

impl Meta {
    /// The meta of the page starting at `page`, validated as bbolt does (magic, version, checksum).
    fn read(page: &[u8]) -> std::result::Result<Meta, String> {
        let m = page
            .get(PAGE_HEADER..PAGE_HEADER + META_LEN)
            .ok_or_else(|| "the file is too short for a meta page".to_string())?;
        let magic = le_u32(m, 0).unwrap_or(0);
        if magic != MAGIC {
            return Err(format!(
                "invalid database (magic {magic:#010x}, not {MAGIC:#010x})"
            ));
        }
        let version = le_u32(m, 4).unwrap_or(0);
        if version != VERSION {
            return Err(format!(
                "version mismatch (format {version}, not {VERSION})"
            ));
        }
        let sum = le_u64(m, META_SUMMED).unwrap_or(0);
        let want = fnv64a(&m[..META_SUMMED]);
        if sum != want {
            return Err(format!(
                "checksum error (meta says {sum:016x}, its bytes sum to {want:016x})"
            ));
        }
        let u64_at = |at| le_u64(m, at).unwrap_or(0);
        Ok(Meta {
            page_size: le_u32(m, 8).unwrap_or(0),
            flags: le_u32(m, 12).unwrap_or(0),
            root: u64_at(16),
            sequence: u64_at(24),
            freelist: u64_at(32),
            pgid: u64_at(40),
            txid: u64_at(48),
        })
    }

    /// The meta page image for page `id` (0 or 1), checksum included.
    pub fn page(&self, id: u64) -> Vec<u8> {
        let mut p = vec![0u8; self.page_size as usize];
        p[..8].copy_from_slice(&id.to_le_bytes());
        p[8..10].copy_from_slice(&META_PAGE.to_le_bytes());
        let mut m = Vec::with_capacity(META_LEN);
        for w in [MAGIC, VERSION, self.page_size, self.flags] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        for w in [
            self.root,
            self.sequence,
            self.freelist,
            self.pgid,
            self.txid,
        ] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        let sum = fnv64a(&m);
        m.extend_from_slice(&sum.to_le_bytes());
        p[PAGE_HEADER..PAGE_HEADER + m.len()].copy_from_slice(&m);
        p
    }
}

/// Where a bucket's entries live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketRef<'a> {
    /// A tree rooted at a page.
    Paged { root: u64, sequence: u64 },
    /// A leaf page image stored in the parent's value.
    Inline { sequence: u64, page: &'a [u8] },
}

/// One entry of a bucket: a value, or a nested bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    Value(&'a [u8]),
    Bucket(BucketRef<'a>),
}

/// A bucket read (or to be written) whole: entries sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Tree {
    pub sequence: u64,
    pub entries: Vec<(Vec<u8>, Item)>,
}

/// The value of a [`Tree`] entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Value(Vec<u8>),
    Bucket(Tree),
}

/// A page: where it came from (for messages), its type, element count and bytes.
struct Page<'a> {
    what: String,
    flags: u16,
    count: usize,
    bytes: &'a [u8],
}

fn page_type(flags: u16) -> String {
    match flags {
        BRANCH_PAGE => "branch".into(),
        LEAF_PAGE => "leaf".into(),
        META_PAGE => "meta".into(),
        FREELIST_PAGE => "freelist".into(),
        other => format!("unknown<{other:02x}>"),
    }
}

/// An open database: the file's bytes and its current meta.
pub struct Db<'a> {
    data: &'a [u8],
    page_size: usize,
    meta: Meta,
}

impl<'a> Db<'a> {
    /// Opens the database in `data` as bbolt does: the page size from meta 0 (or from meta 1
    /// found at a power-of-two offset), then the valid meta with the higher transaction id.
    pub fn open(data: &'a [u8]) -> Result<Db<'a>> {
        let first = Meta::read(data);
        let page_size = match &first {
            Ok(m) => m.page_size as usize,
            Err(e0) => (9..=16)
                .map(|shift| 1usize << shift)
                .find(|&off| {
                    data.get(off..)
                        .and_then(|p| Meta::read(p).ok())
                        .is_some_and(|m| m.page_size as usize == off)
                })
                .ok_or_else(|| anyhow!("not a bbolt database: meta page 0: {e0}"))?,
        };
        if !page_size.is_power_of_two() || !(512..=65536).contains(&page_size) {
            bail!("not a bbolt database: meta page 0 gives a page size of {page_size} bytes");
        }
        let second = data
            .get(page_size..)
            .ok_or_else(|| anyhow!("not a bbolt database: the file ends before meta page 1"))
            .and_then(|p| Meta::read(p).map_err(|e| anyhow!("{e}")));
        let meta = match (first, second) {
            (Ok(a), Ok(b)) => {
                if b.txid > a.txid {
                    b
                } else {
                    a
                }
            }
            (Ok(a), Err(_)) => a,
            (Err(_), Ok(b)) => b,
            (Err(e0), Err(_)) => bail!("not a bbolt database: meta page 0: {e0}"),
        };
        if meta.page_size as usize != page_size {
            bail!(
                "not a bbolt database: the meta pages disagree on the page size ({} and {page_size})",
                meta.page_size
            );
        }
        let need = (meta.pgid as u128) * page_size as u128;
        if meta.pgid < 3 || need > data.len() as u128 {
            bail!(
                "the database is cut short: its meta counts {} pages of {page_size} bytes ({need} bytes), the file has {} bytes",
                meta.pgid,
                data.len()
            );
        }
        if meta.root < 2 || meta.root >= meta.pgid {
            bail!(
                "the root bucket's page {} is outside the database (pages 2..{})",
                meta.root,
                meta.pgid
            );
        }
        Ok(Db {
            data,
            page_size,
            meta,
        })
    }

    /// The meta in use.
    pub fn meta(&self) -> Meta {
        self.meta
    }

    /// The database's size as bbolt counts it: high-water mark × page size.
    pub fn size(&self) -> u64 {
        self.meta.pgid * self.page_size as u64
    }

    /// The root bucket (whose entries are the top-level buckets).
    pub fn root(&self) -> BucketRef<'a> {
        BucketRef::Paged {
            root: self.meta.root,
            sequence: self.meta.sequence,
        }
    }

    fn page(&self, id: u64) -> Result<Page<'a>> {
        let what = format!("page {id}");
        if id < 2 || id >= self.meta.pgid {
            bail!(
                "{what} is outside the database (pages 2..{})",
                self.meta.pgid
            );
        }
        let off = id as usize * self.page_size;
        let head = &self.data[off..off + PAGE_HEADER];
        let own = le_u64(head, 0).unwrap_or(0);
        if own != id {
            bail!("{what} identifies itself as page {own}");
        }
        let overflow = u64::from(le_u32(head, 12).unwrap_or(0));
        if id + overflow >= self.meta.pgid {
            bail!("{what} overflows past the end of the database ({overflow} more pages)");
        }
        let end = off + (1 + overflow as usize) * self.page_size;
        Ok(Page {
            what,
            flags: le_u16(head, 8).unwrap_or(0),
            count: usize::from(le_u16(head, 10).unwrap_or(0)),
            bytes: &self.data[off..end],
        })
    }

    /// Calls `f` with every entry of bucket `b` in key order.
    pub fn for_each(
        &self,
        b: BucketRef<'a>,
        f: &mut dyn FnMut(&'a [u8], Entry<'a>) -> Result<()>,
    ) -> Result<()> {
        let mut last = None;
        match b {
            BucketRef::Paged { root, .. } => self.walk(root, 0, f, &mut last),
            BucketRef::Inline { page, .. } => {
                let p = Page {
                    what: "an inline bucket".into(),
                    flags: le_u16(page, 8)
                        .ok_or_else(|| anyhow!("an inline bucket is shorter than a page header"))?,
                    count: usize::from(le_u16(page, 10).unwrap_or(0)),
                    bytes: page,
                };
                if p.flags != LEAF_PAGE {
                    bail!(
                        "an inline bucket holds a {} page, not a leaf",
                        page_type(p.flags)
                    );
                }
                leaf(&p, f, &mut last)
            }
        }
    }

    fn walk(
        &self,
        id: u64,
        depth: usize,
        f: &mut dyn FnMut(&'a [u8], Entry<'a>) -> Result<()>,
        last: &mut Option<&'a [u8]>,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            bail!(
                "the tree reaching page {id} is deeper than {MAX_DEPTH} levels (pages in a cycle?)"
            );
        }
        let p = self.page(id)?;
        match p.flags {
            BRANCH_PAGE => {
                for i in 0..p.count {
                    let (_, e) = element(&p, i)?;
                    let child = le_u64(e, 8).unwrap_or(0);
                    self.walk(child, depth + 1, f, last)?;
                }
                Ok(())
            }
            LEAF_PAGE => leaf(&p, f, last),
            other => bail!(
                "{} is a {} page where a branch or leaf page belongs",
                p.what,
                page_type(other)
            ),
        }
    }

    /// The whole bucket `b` as an owned tree (nested buckets included).
    pub fn read_tree(&self, b: BucketRef<'a>) -> Result<Tree> {
        let sequence = match b {
            BucketRef::Paged { sequence, .. } | BucketRef::Inline { sequence, .. } => sequence,
        };
        let mut entries = Vec::new();
        self.for_each(b, &mut |k, e| {
            let item = match e {
                Entry::Value(v) => Item::Value(v.to_vec()),
                Entry::Bucket(sub) => Item::Bucket(self.read_tree(sub)?),
            };
            entries.push((k.to_vec(), item));
            Ok(())
        })?;
        Ok(Tree { sequence, entries })
    }
}

/// Element `i` of a page: its offset in the page and its 16 bytes.
fn element<'a>(p: &Page<'a>, i: usize) -> Result<(usize, &'a [u8])> {
    let at = PAGE_HEADER + i * ELEMENT;
    let e = p.bytes.get(at..at + ELEMENT).ok_or_else(|| {
        anyhow!(
            "{}: element {i} of {} lies past the end of the page",
            p.what,
            p.count
        )
    })?;
    Ok((at, e))
}

/// `len` bytes at `pos` past the element at `at`.
fn span<'a>(p: &Page<'a>, i: usize, at: usize, pos: u32, len: u32) -> Result<&'a [u8]> {
    let start = at + pos as usize;
    p.bytes
        .get(start..start + len as usize)
        .ok_or_else(|| anyhow!("{}: element {i} points past the end of the page", p.what))
}

fn leaf<'a>(
    p: &Page<'a>,
    f: &mut dyn FnMut(&'a [u8], Entry<'a>) -> Result<()>,
    last: &mut Option<&'a [u8]>,
) -> Result<()> {
    for i in 0..p.count {
        let (at, e) = element(p, i)?;
        let word = |n| le_u32(e, n).unwrap_or(0);
        let (flags, pos, ksize, vsize) = (word(0), word(4), word(8), word(12));
        let kv = span(p, i, at, pos, ksize.saturating_add(vsize))?;
        let (key, value) = kv.split_at(ksize as usize);
        if last.is_some_and(|l| key <= l) {
            bail!(
                "{}: key {:?} is out of order",
                p.what,
                String::from_utf8_lossy(key)
            );
        }
        *last = Some(key);
        let entry = if flags & BUCKET_LEAF != 0 {
            Entry::Bucket(bucket_ref(value).map_err(|e| anyhow!("{}: element {i}: {e}", p.what))?)
        } else {
            Entry::Value(value)
        };
        f(key, entry)?;
    }
    Ok(())
}

fn bucket_ref(value: &[u8]) -> Result<BucketRef<'_>> {
    let (Some(root), Some(sequence)) = (le_u64(value, 0), le_u64(value, 8)) else {
        bail!(
            "a bucket value of {} bytes is shorter than a bucket header",
            value.len()
        );
    };
    Ok(if root == 0 {
        BucketRef::Inline {
            sequence,
            page: &value[BUCKET_HEADER..],
        }
    } else {
        BucketRef::Paged { root, sequence }
    })
}
