//! Reading the option maps scripts pass to natives (`#{root: ..., templates: [...]}`).

use rhai::{Array, Map};

/// A string option ("" when absent or not a string).
pub fn text(m: &Map, key: &str) -> String {
    m.get(key)
        .and_then(|v| v.clone().into_string().ok())
        .unwrap_or_default()
}

/// A boolean option (false when absent).
pub fn flag(m: &Map, key: &str) -> bool {
    m.get(key).and_then(|v| v.as_bool().ok()).unwrap_or(false)
}

/// A list-of-strings option (non-strings skipped; empty when absent).
pub fn list(m: &Map, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(|v| v.clone().try_cast::<Array>())
        .map(strings)
        .unwrap_or_default()
}

/// The strings of an array.
pub fn strings(a: Array) -> Vec<String> {
    a.into_iter().filter_map(|d| d.into_string().ok()).collect()
}
