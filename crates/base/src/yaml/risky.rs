//! The strings of a render's input that could change a YAML document's structure if printed
//! verbatim (a line break, a quote, `: `...), found once per input and checked against every
//! render's output (`render::verify`).

use std::fmt::Write as _;

use serde_json::Value as Json;

/// A string of a render's input that could break out of a scalar: where it is (`values.a[1].b`,
/// `facts.links[0].spec.kind (the key \"k\")`) and the string.
pub type Risky = Vec<(String, String)>;

/// The risky strings of `v`, an input of a render named `name` (`values`, `facts`): found once
/// per distinct input (`render::prepared`, the facts' indexes) and checked against every
/// render's output.
pub fn risky_in(name: &str, v: &Json) -> Risky {
    let mut leaves = Vec::new();
    risky_leaves(v, &mut name.to_string(), &mut leaves);
    leaves
}

/// A string that can change YAML structure when printed as is without breaking the parse:
/// line breaks, quotes, `: `, ` #`, or a leading flow/anchor/alias/tag/block indicator. (One
/// character alone cannot; what breaks the parse is caught by parsing.)
fn risky(s: &str) -> bool {
    s == "#"
        || s.starts_with("# ")
        || s.chars().count() >= 2
            && (s.contains(['\n', '\r', '"', '\''])
                || s.contains(": ")
                || s.contains(" #")
                || s.starts_with(['{', '[', '&', '*', '!', '|', '>', '%', '@']))
}

/// Every risky string leaf of a JSON value with its path (`path` is where `v` is; it is
/// extended while walking and left as it was, so that only a risky leaf costs a copy).
fn risky_leaves(v: &Json, path: &mut String, out: &mut Vec<(String, String)>) {
    let at = path.len();
    match v {
        Json::String(s) if risky(s) && !s.trim().is_empty() => out.push((path.clone(), s.clone())),
        Json::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                let _ = write!(path, "[{i}]");
                risky_leaves(x, path, out);
                path.truncate(at);
            }
        }
        Json::Object(m) => {
            for (k, x) in m {
                if risky(k) {
                    out.push((format!("{path} (the key {k:?})"), k.clone()));
                }
                path.push('.');
                path.push_str(k);
                risky_leaves(x, path, out);
                path.truncate(at);
            }
        }
        _ => {}
    }
}
