//! Keyed digests of what a cache is keyed by when the key itself is too large to keep (a
//! project's values, a preset's files): 128 bits from two hashers drawn once per process.

use std::hash::{BuildHasher, DefaultHasher, Hasher, RandomState};
use std::sync::OnceLock;

/// Two independently keyed hashers, drawn once per process: nobody outside it can aim inputs
/// at a digest.
fn hashers() -> &'static (RandomState, RandomState) {
    static STATES: OnceLock<(RandomState, RandomState)> = OnceLock::new();
    STATES.get_or_init(|| (RandomState::new(), RandomState::new()))
}

/// A 128-bit keyed digest of what `feed` writes.
pub fn digest(feed: impl Fn(&mut DefaultHasher)) -> (u64, u64) {
    let (a, b) = hashers();
    let one = |state: &RandomState| {
        let mut h = state.build_hasher();
        feed(&mut h);
        h.finish()
    };
    (one(a), one(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    #[test]
    fn same_input_same_digest_and_another_differs() {
        let of = |s: &str| digest(|h| s.hash(h));
        assert_eq!(of("a"), of("a"));
        assert_ne!(of("a"), of("b"));
    }
}
