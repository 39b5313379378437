//! One copy of what many simulated nodes hold alike: the parts of their machine configs. The
//! workers of a cluster are sent the same v1alpha1 document (secrets, certificates, cluster
//! settings) and differ in a few small documents (hostname, links), so each node keeps shared
//! pieces of text and shared parsed documents, not a copy of its own; fifteen thousand nodes
//! then hold one v1alpha1 document, not fifteen thousand.

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use serde_yaml_ng::Value;

/// The live values by hash; dead entries are swept when the table has doubled since the last
/// sweep (a value whose hash is taken by another live value is simply not shared).
struct Table<T: ?Sized> {
    live: HashMap<u64, Weak<T>>,
    swept_at: usize,
}

impl<T: ?Sized> Table<T> {
    fn new() -> Table<T> {
        Table {
            live: HashMap::new(),
            swept_at: 0,
        }
    }

    /// The live value kept under `hash`, when `same` says it is the one wanted.
    fn find(&self, hash: u64, same: impl FnOnce(&T) -> bool) -> Option<Arc<T>> {
        self.live
            .get(&hash)
            .and_then(Weak::upgrade)
            .filter(|kept| same(kept))
    }

    /// Keeps `fresh` under `hash` unless a live value holds it already.
    fn keep(&mut self, hash: u64, fresh: &Arc<T>) {
        if self.live.get(&hash).is_some_and(|w| w.strong_count() > 0) {
            return;
        }
        self.live.insert(hash, Arc::downgrade(fresh));
        if self.live.len() > 2 * self.swept_at + 1024 {
            self.live.retain(|_, w| w.strong_count() > 0);
            self.swept_at = self.live.len();
        }
    }
}

fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

fn lock<T: ?Sized>(m: &Mutex<Table<T>>) -> std::sync::MutexGuard<'_, Table<T>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The shared copy of a piece of text.
pub fn text(piece: &str) -> Arc<str> {
    static TEXTS: OnceLock<Mutex<Table<str>>> = OnceLock::new();
    let mut t = lock(TEXTS.get_or_init(|| Mutex::new(Table::new())));
    let hash = hash_of(piece);
    if let Some(kept) = t.find(hash, |k| k == piece) {
        return kept;
    }
    let fresh: Arc<str> = Arc::from(piece);
    t.keep(hash, &fresh);
    fresh
}

/// The shared copy of a parsed document.
pub fn doc(value: Value) -> Arc<Value> {
    static DOCS: OnceLock<Mutex<Table<Value>>> = OnceLock::new();
    let mut t = lock(DOCS.get_or_init(|| Mutex::new(Table::new())));
    let hash = hash_of(&value);
    if let Some(kept) = t.find(hash, |k| *k == value) {
        return kept;
    }
    let fresh = Arc::new(value);
    t.keep(hash, &fresh);
    fresh
}

/// A config's text cut where it can be shared: before each `---` line, and between the
/// comment lines that open a document (talm's modeline names the node) and its body.
pub fn pieces(text: &str) -> Vec<Arc<str>> {
    let mut out = Vec::new();
    let (mut start, mut pos) = (0, 0);
    // In the head of a piece (its `---` line and comments), and whether the head has comments.
    let (mut head, mut commented) = (true, false);
    for line in text.split_inclusive('\n') {
        let separator = line.starts_with("---");
        let comment = line.starts_with('#');
        if separator && pos > start {
            out.push(self::text(&text[start..pos]));
            start = pos;
            (head, commented) = (true, false);
        } else if head && !separator && !comment {
            if commented && pos > start {
                out.push(self::text(&text[start..pos]));
                start = pos;
            }
            head = false;
        }
        commented |= head && comment;
        pos += line.len();
    }
    if pos > start {
        out.push(self::text(&text[start..pos]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_join_to_the_text_and_are_shared() {
        let a = "# talm: nodes=[\"a\"]\nversion: v1alpha1\nmachine: {}\n---\nkind: HostnameConfig\nhostname: a\n";
        let b = "# talm: nodes=[\"b\"]\nversion: v1alpha1\nmachine: {}\n---\nkind: HostnameConfig\nhostname: b\n";
        let (pa, pb) = (pieces(a), pieces(b));
        assert_eq!(pa.concat(), a);
        assert_eq!(pb.concat(), b);
        let texts = |p: &[Arc<str>]| p.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            texts(&pa),
            [
                "# talm: nodes=[\"a\"]\n",
                "version: v1alpha1\nmachine: {}\n",
                "---\nkind: HostnameConfig\nhostname: a\n"
            ]
        );
        assert!(Arc::ptr_eq(&pa[1], &pb[1]), "the v1alpha1 body is one copy");
        assert!(!Arc::ptr_eq(&pa[2], &pb[2]));
    }

    #[test]
    fn text_without_a_final_newline_or_comments_is_kept_whole() {
        for t in ["version: v1alpha1", "", "---\n# c\nkind: A\n---\nkind: B"] {
            assert_eq!(pieces(t).concat(), t);
        }
    }

    #[test]
    fn equal_documents_are_one_copy() {
        let v: Value = serde_yaml_ng::from_str("machine: {type: worker}").unwrap();
        let (x, y) = (doc(v.clone()), doc(v));
        assert!(Arc::ptr_eq(&x, &y));
        let other: Value = serde_yaml_ng::from_str("machine: {type: controlplane}").unwrap();
        assert!(!Arc::ptr_eq(&x, &doc(other)));
    }
}
