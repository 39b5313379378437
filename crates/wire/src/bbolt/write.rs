//! A small bbolt writer: lays a [`Tree`] out as a compact database file the way a bbolt
//! `Tx.WriteTo` copy looks (both meta pages, meta 1 one transaction behind, no stored
//! freelist as etcd runs bbolt): one leaf/branch tree per bucket, small buckets without
//! sub-buckets inline in their parent's leaf, values too large for a page on overflow pages.

use super::{
    Item, Meta, Tree, BRANCH_PAGE, BUCKET_HEADER, BUCKET_LEAF, ELEMENT, LEAF_PAGE, NO_FREELIST,
    PAGE_HEADER,
};

/// The database file holding `root`'s buckets, with pages of `page_size` bytes (a power of two
/// of at least 1024) written as transaction `txid` (at least 1).
pub fn write(root: &Tree, page_size: usize, txid: u64) -> Vec<u8> {
    let mut w = Writer {
        page_size,
        out: vec![0u8; 2 * page_size],
    };
    let root_page = w.tree(root);
    let meta = Meta {
        page_size: page_size as u32,
        flags: 0,
        root: root_page,
        sequence: root.sequence,
        freelist: NO_FREELIST,
        pgid: (w.out.len() / page_size) as u64,
        txid: txid.max(1),
    };
    w.out[..page_size].copy_from_slice(&meta.page(0));
    let older = Meta {
        txid: meta.txid - 1,
        ..meta
    };
    w.out[page_size..2 * page_size].copy_from_slice(&older.page(1));
    w.out
}

/// One element of a page being laid out.
struct Element {
    flags: u32,
    key: Vec<u8>,
    /// The value (leaf) or nothing (branch).
    value: Vec<u8>,
    /// The child page (branch).
    child: u64,
}

struct Writer {
    page_size: usize,
    out: Vec<u8>,
}

/// The image of a page (id 0, no overflow yet) holding `elems`.
fn image(flags: u16, elems: &[Element]) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_HEADER + elems.len() * ELEMENT];
    p[8..10].copy_from_slice(&flags.to_le_bytes());
    p[10..12].copy_from_slice(&(elems.len() as u16).to_le_bytes());
    for (i, e) in elems.iter().enumerate() {
        let at = PAGE_HEADER + i * ELEMENT;
        let pos = (p.len() - at) as u32;
        let words: [u8; 16] = if flags == LEAF_PAGE {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&e.flags.to_le_bytes());
            b[4..8].copy_from_slice(&pos.to_le_bytes());
            b[8..12].copy_from_slice(&(e.key.len() as u32).to_le_bytes());
            b[12..].copy_from_slice(&(e.value.len() as u32).to_le_bytes());
            b
        } else {
            let mut b = [0u8; 16];
            b[..4].copy_from_slice(&pos.to_le_bytes());
            b[4..8].copy_from_slice(&(e.key.len() as u32).to_le_bytes());
            b[8..].copy_from_slice(&e.child.to_le_bytes());
            b
        };
        p[at..at + ELEMENT].copy_from_slice(&words);
        p.extend_from_slice(&e.key);
        p.extend_from_slice(&e.value);
    }
    p
}

fn footprint(e: &Element) -> usize {
    ELEMENT + e.key.len() + e.value.len()
}

impl Writer {
    /// Appends a page image (padded to whole pages, overflow set): its pgid.
    fn alloc(&mut self, mut p: Vec<u8>) -> u64 {
        let id = (self.out.len() / self.page_size) as u64;
        let pages = p.len().div_ceil(self.page_size).max(1);
        p[..8].copy_from_slice(&id.to_le_bytes());
        p[12..16].copy_from_slice(&((pages - 1) as u32).to_le_bytes());
        p.resize(pages * self.page_size, 0);
        self.out.extend_from_slice(&p);
        id
    }

    /// Lays `elems` out on as many pages of type `flags` as they need: (first key, pgid) each.
    fn level(&mut self, flags: u16, elems: Vec<Element>) -> Vec<(Vec<u8>, u64)> {
        let mut pages = Vec::new();
        let mut group: Vec<Element> = Vec::new();
        let mut used = PAGE_HEADER;
        for e in elems {
            if !group.is_empty() && used + footprint(&e) > self.page_size {
                pages.push(std::mem::take(&mut group));
                used = PAGE_HEADER;
            }
            used += footprint(&e);
            group.push(e);
        }
        pages.push(group);
        pages
            .into_iter()
            .map(|g| {
                let first = g.first().map(|e| e.key.clone()).unwrap_or_default();
                (first, self.alloc(image(flags, &g)))
            })
            .collect()
    }

    /// Writes bucket `t`'s tree: its root pgid.
    fn tree(&mut self, t: &Tree) -> u64 {
        let elems = t
            .entries
            .iter()
            .map(|(k, item)| {
                let (flags, value) = match item {
                    Item::Value(v) => (0, v.clone()),
                    Item::Bucket(sub) => (BUCKET_LEAF, self.bucket_value(sub)),
                };
                Element {
                    flags,
                    key: k.clone(),
                    value,
                    child: 0,
                }
            })
            .collect();
        let mut level = self.level(LEAF_PAGE, elems);
        while level.len() > 1 {
            let branch = level
                .into_iter()
                .map(|(key, child)| Element {
                    flags: 0,
                    key,
                    value: Vec::new(),
                    child,
                })
                .collect();
            level = self.level(BRANCH_PAGE, branch);
        }
        level[0].1
    }

    /// A bucket's value in its parent: header plus inline page when small, else its own tree.
    fn bucket_value(&mut self, t: &Tree) -> Vec<u8> {
        let simple = t.entries.iter().all(|(_, i)| matches!(i, Item::Value(_)));
        let elems: Vec<Element> = if simple {
            t.entries
                .iter()
                .map(|(k, i)| Element {
                    flags: 0,
                    key: k.clone(),
                    value: match i {
                        Item::Value(v) => v.clone(),
                        Item::Bucket(_) => Vec::new(),
                    },
                    child: 0,
                })
                .collect()
        } else {
            Vec::new()
        };
        let size = PAGE_HEADER + elems.iter().map(footprint).sum::<usize>();
        let mut v = Vec::with_capacity(BUCKET_HEADER + size);
        if simple && size <= self.page_size / 4 {
            v.extend_from_slice(&0u64.to_le_bytes());
            v.extend_from_slice(&t.sequence.to_le_bytes());
            v.extend_from_slice(&image(LEAF_PAGE, &elems));
        } else {
            let root = self.tree(t);
            v.extend_from_slice(&root.to_le_bytes());
            v.extend_from_slice(&t.sequence.to_le_bytes());
        }
        v
    }
}
