//! `once(key, f)` for preset logic: `f` called with the items of the array `key` as its
//! arguments, its result kept by the content of `key` and returned again, without a call, to
//! every later render of the same compiled script with an equal key. What the values alone
//! decide (checked extension keys, the VIP set, the cluster name) is the same for every node of
//! a fleet; a preset computes it once per values rather than once per node. `f` must depend on
//! its arguments only (a script `fn` cannot see the caller's variables). A key or result holding
//! something that has no content to compare (a function pointer, a shared or custom value) is
//! not kept: `f` then runs every time. A failing `f` is not kept either.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use rhai::{Array, Dynamic, EvalAltResult, FnPtr, NativeCallContext};

/// Results a compiled script keeps (a REPL session moving between values files).
const KEEP: usize = 8;

/// The results kept for one compiled script, newest last.
#[derive(Default)]
pub struct Kept(Mutex<Vec<(Vec<u8>, Dynamic)>>);

impl Kept {
    fn get(&self, key: &[u8]) -> Option<Dynamic> {
        let kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        kept.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    fn put(&self, key: Vec<u8>, value: Dynamic) {
        let mut kept = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if kept.iter().any(|(k, _)| *k == key) {
            return;
        }
        if kept.len() >= KEEP {
            drop(kept.remove(0));
        }
        kept.push((key, value));
    }

    /// How many results are kept (tests).
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

thread_local! {
    /// The kept results of the script this thread is running.
    static CURRENT: RefCell<Option<Arc<Kept>>> = const { RefCell::new(None) };
}

/// Runs `f` with `kept` as the store of this thread's `once` calls (restoring the previous
/// one after).
pub fn with_kept<R>(kept: &Arc<Kept>, f: impl FnOnce() -> R) -> R {
    super::scoped(&CURRENT, kept.clone(), f)
}

/// Appends `v` to `out` so that two values encode alike only when they are equal in content
/// (type tag, then length-prefixed parts); false when `v` holds something without content.
fn encode(v: &Dynamic, out: &mut Vec<u8>) -> bool {
    if v.is_shared() {
        return false;
    }
    let bytes = |out: &mut Vec<u8>, tag: u8, b: &[u8]| {
        out.push(tag);
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    };
    if v.is_unit() {
        out.push(0);
    } else if let Ok(b) = v.as_bool() {
        out.extend_from_slice(&[1, u8::from(b)]);
    } else if let Ok(i) = v.as_int() {
        bytes(out, 2, &i.to_le_bytes());
    } else if let Ok(f) = v.as_float() {
        bytes(out, 3, &f.to_bits().to_le_bytes());
    } else if let Ok(c) = v.as_char() {
        bytes(out, 4, &u32::from(c).to_le_bytes());
    } else if let Some(s) = v.read_lock::<rhai::ImmutableString>() {
        bytes(out, 5, s.as_bytes());
    } else if let Ok(a) = v.as_array_ref() {
        bytes(out, 6, &(a.len() as u64).to_le_bytes());
        return a.iter().all(|x| encode(x, out));
    } else if let Ok(m) = v.as_map_ref() {
        bytes(out, 7, &(m.len() as u64).to_le_bytes());
        // Rhai maps iterate in key order: equal maps encode alike.
        return m.iter().all(|(k, x)| {
            bytes(out, 8, k.as_bytes());
            encode(x, out)
        });
    } else if let Ok(b) = v.as_blob_ref() {
        bytes(out, 9, &b);
    } else {
        return false;
    }
    true
}

/// The key of a call: the function (name and curried values) and the key's content.
fn key_of(f: &FnPtr, key: &Array) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    out.extend_from_slice(&(f.fn_name().len() as u64).to_le_bytes());
    out.extend_from_slice(f.fn_name().as_bytes());
    let curry = f.curry().iter().all(|c| encode(c, &mut out));
    (curry && key.iter().all(|k| encode(k, &mut out))).then_some(out)
}

/// `once(key, f)`.
pub fn once(ctx: &NativeCallContext, key: Array, f: FnPtr) -> Result<Dynamic, Box<EvalAltResult>> {
    let kept = CURRENT.with(|c| c.borrow().clone());
    let id = kept.as_ref().and_then(|_| key_of(&f, &key));
    if let (Some(kept), Some(id)) = (&kept, &id) {
        if let Some(v) = kept.get(id) {
            return Ok(v);
        }
    }
    let value: Dynamic = f.call_raw(ctx, None, key)?;
    if let (Some(kept), Some(id)) = (kept, id) {
        if encode(&value, &mut Vec::new()) {
            kept.put(id, value.clone());
        }
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: Dynamic) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        encode(&v, &mut out).then_some(out)
    }

    #[test]
    fn equal_content_encodes_alike_and_nothing_else_does() {
        let engine = rhai::Engine::new();
        let eval = |s: &str| engine.eval::<Dynamic>(s).unwrap();
        assert_eq!(
            enc(eval("#{b: [1, \"x\"], a: ()}")),
            enc(eval("#{a: (), b: [1, \"x\"]}"))
        );
        let distinct = [
            "1",
            "\"1\"",
            "1.0",
            "'1'",
            "true",
            "()",
            "[1]",
            "[[1]]",
            "#{}",
            "[]",
            "\"\"",
            "#{a: 1}",
            "#{a: \"1\"}",
            "[\"ab\", \"c\"]",
            "[\"a\", \"bc\"]",
        ];
        let encoded: Vec<_> = distinct.iter().map(|s| enc(eval(s)).unwrap()).collect();
        for (i, a) in encoded.iter().enumerate() {
            for (j, b) in encoded.iter().enumerate() {
                assert_eq!(i == j, a == b, "{} vs {}", distinct[i], distinct[j]);
            }
        }
        assert_eq!(enc(eval("Fn(\"x\")")), None);
        assert_eq!(enc(eval("[1, Fn(\"x\")]")), None);
    }
}
