//! Memory of pure work (a compiled script, a parsed secrets bundle, the command line's
//! definition), process-wide or per thread: the last few results, each keyed by everything its
//! work reads, so a playbook driving hundreds of nodes does the work once and a changed input is
//! worked afresh.

use std::sync::Mutex;

/// The last `kept` results of one kind of work.
pub struct Memo<K, V> {
    kept: usize,
    entries: Mutex<Vec<(K, V)>>,
}

impl<K: PartialEq, V: Clone> Memo<K, V> {
    pub const fn new(kept: usize) -> Memo<K, V> {
        Memo {
            kept,
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The result kept for `key`, or `work`'s (kept when it succeeds; errors are not kept).
    /// The work runs unlocked: two threads may both do it once, never block each other on it.
    pub fn get_or_try<E>(&self, key: K, work: impl FnOnce(&K) -> Result<V, E>) -> Result<V, E> {
        {
            let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = entries.iter().position(|(k, _)| *k == key) {
                // Most recently used last: the oldest goes first when full.
                let entry = entries.remove(i);
                let value = entry.1.clone();
                entries.push(entry);
                return Ok(value);
            }
        }
        let value = work(&key)?;
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if !entries.iter().any(|(k, _)| *k == key) {
            if entries.len() >= self.kept {
                entries.remove(0);
            }
            entries.push((key, value.clone()));
        }
        Ok(value)
    }

    /// Whether a result is kept for `key` (tests of what callers keep).
    pub fn holds(&self, key: &K) -> bool {
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.iter().any(|(k, _)| k == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_results_and_works_a_new_key_afresh() {
        let memo: Memo<String, usize> = Memo::new(2);
        let runs = std::cell::Cell::new(0);
        let get = |k: &str| {
            memo.get_or_try::<()>(k.to_string(), |k| {
                runs.set(runs.get() + 1);
                Ok(k.len())
            })
            .unwrap()
        };
        assert_eq!(get("a"), 1);
        assert_eq!(get("a"), 1);
        assert_eq!(get("bb"), 2);
        assert_eq!(get("ccc"), 3); // "a" goes
        assert_eq!(get("bb"), 2);
        assert_eq!(get("a"), 1);
        assert_eq!(runs.get(), 4);
        let failed: Result<usize, &str> = memo.get_or_try("x".into(), |_| Err("no"));
        assert!(failed.is_err());
        assert_eq!(memo.get_or_try::<()>("x".into(), |_| Ok(7)), Ok(7));
    }
}
