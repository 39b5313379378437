//! Reading lookup results in place for the native stdlib modules, with Go template rules
//! (`tpl::`): the items of a list lookup, a resource's spec field, text compared as Go's `eq`.

use rhai::{Array, Dynamic, EvalAltResult, ImmutableString, Module};

/// What a native stdlib function returns.
pub type Res = Result<Dynamic, Box<EvalAltResult>>;

/// What a pass over a list returns.
pub type Step = Result<(), Box<EvalAltResult>>;

/// `f` over the items of a list lookup (`res.items` when it is an array, else none), read in
/// place.
pub fn items<R>(res: &Dynamic, f: impl FnOnce(&[Dynamic]) -> R) -> R {
    let Ok(map) = res.as_map_ref() else {
        return f(&[]);
    };
    let Some(Ok(list)) = map.get("items").map(Dynamic::as_array_ref) else {
        return f(&[]);
    };
    f(&list)
}

/// `res.spec[key]`, `()` when either level is missing.
pub fn spec(res: &Dynamic, key: &str) -> Dynamic {
    crate::sandbox::tpl::get2(res, "spec", key)
}

/// The text when `v` is text.
pub fn as_str(v: &Dynamic) -> Option<ImmutableString> {
    v.read_lock::<ImmutableString>().map(|s| s.clone())
}

/// Go's `eq v "text"`: whether `v` is text equal to `text` (nil and other types never are).
pub fn is_str(v: &Dynamic, text: &str) -> bool {
    v.read_lock::<ImmutableString>()
        .is_some_and(|s| s.as_str() == text)
}

/// Sets a module constant holding a list of words.
pub fn set_words(m: &mut Module, name: &str, words: &[&str]) {
    let list: Array = words.iter().map(|w| Dynamic::from(w.to_string())).collect();
    m.set_var(name, list);
}
