//! Reading the machine config's `v1alpha1` document by key path: a value, its text, its flag,
//! its list of strings, each absent or empty when the path is missing.

use serde_yaml_ng::Value;

/// The value at `path` (map keys from the root).
pub fn at<'a>(doc: Option<&'a Value>, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(doc?, |cur, k| cur.get(*k))
}

/// The text at `path`, "" when missing or not text.
pub fn text_at(doc: Option<&Value>, path: &[&str]) -> String {
    at(doc, path)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The flag at `path`, false when missing.
pub fn flag_at(doc: Option<&Value>, path: &[&str]) -> bool {
    at(doc, path).and_then(Value::as_bool).unwrap_or(false)
}

/// The strings of the list at `path` (other items skipped), empty when missing.
pub fn texts_at(doc: Option<&Value>, path: &[&str]) -> Vec<String> {
    at(doc, path)
        .and_then(Value::as_sequence)
        .map(|v| {
            v.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The strings of the list at `path`, `default` alone when there are none (Talos's default).
pub fn texts_or(doc: Option<&Value>, path: &[&str], default: &str) -> Vec<String> {
    let v = texts_at(doc, path);
    if v.is_empty() {
        vec![default.to_string()]
    } else {
        v
    }
}
