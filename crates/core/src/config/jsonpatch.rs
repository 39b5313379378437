//! RFC 6902 JSON Patch on a single-document config: the `json-patch` crate applies it, with Talos's
//! op checks and error texts; the ghodss/yaml-style output (yaml.v2: 2-space indent, sequences not
//! indented under their key, every key sorted) is ours, as no YAML crate writes that layout.

use std::cmp::Ordering;

use anyhow::{anyhow, bail, Result};
use json_patch::jsonptr::Pointer;
use json_patch::{PatchErrorKind, PatchOperation};
use serde_json::Value as Json;
use serde_yaml_ng::Value;

use super::encode::key_string;

/// Parses a JSON Patch (a JSON array of operation objects), as `jsonpatch.DecodePatch`.
pub fn decode(text: &str) -> Result<Vec<Json>> {
    let ops: Vec<serde_json::Map<String, Json>> = serde_json::from_str(text)?;
    Ok(ops.into_iter().map(Json::Object).collect())
}

/// Converts YAML to JSON (keys become strings).
pub fn to_json(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64().map_or(Json::Null, Json::from)
            }
        }
        Value::String(s) => Json::String(s.clone()),
        Value::Sequence(s) => Json::Array(s.iter().map(to_json).collect()),
        Value::Mapping(m) => {
            Json::Object(m.iter().map(|(k, v)| (key_string(k), to_json(v))).collect())
        }
        Value::Tagged(t) => to_json(&t.value),
    }
}

/// Applies the operations in order with the `json-patch` crate; a malformed operation fails
/// when it is reached, as in Talos, and failures keep the texts of Go's `evanphx/json-patch`.
pub fn apply(doc: &mut Json, ops: &[Json]) -> Result<()> {
    for op in ops {
        let op = operation(op)?;
        // One operation at a time, without the crate's undo: on error the document is dropped.
        json_patch::patch_unsafe(doc, std::slice::from_ref(&op))
            .map_err(|e| failure(doc, &op, &e.kind))?;
    }
    Ok(())
}

/// One operation checked as Talos checks it, then read into the crate's type.
fn operation(op: &Json) -> Result<PatchOperation> {
    let kind = op.get("op").and_then(Json::as_str).unwrap_or("unknown");
    if !matches!(
        kind,
        "add" | "remove" | "replace" | "move" | "copy" | "test"
    ) {
        bail!("Unexpected kind: {kind}");
    }
    let pointers: &[&str] = match kind {
        "move" | "copy" => &["from", "path"],
        _ => &["path"],
    };
    for key in pointers {
        let p = op
            .get(*key)
            .and_then(Json::as_str)
            .ok_or_else(|| anyhow!("operation missing {key}"))?;
        if !p.is_empty() && !p.starts_with('/') {
            bail!("JSON pointer must be empty or start with a \"/\"");
        }
    }
    if matches!(kind, "add" | "replace" | "test") && op.get("value").is_none() {
        bail!("{kind} operation has no value");
    }
    serde_json::from_value(op.clone()).map_err(|e| anyhow!("invalid {kind} operation: {e}"))
}

/// The error text Talos gives for an operation that does not apply.
fn failure(doc: &Json, op: &PatchOperation, kind: &PatchErrorKind) -> anyhow::Error {
    let path = op.path();
    let name = match op {
        PatchOperation::Add(_) => "add",
        PatchOperation::Remove(_) => "remove",
        PatchOperation::Replace(_) => "replace",
        PatchOperation::Move(_) => "move",
        PatchOperation::Copy(_) => "copy",
        PatchOperation::Test(_) => "test",
    };
    match (kind, op) {
        (PatchErrorKind::TestFailed, _) => anyhow!("testing value {path} failed: test failed"),
        (PatchErrorKind::InvalidFromPointer, PatchOperation::Move(m)) => {
            from_missing(name, &m.from)
        }
        (PatchErrorKind::InvalidFromPointer, PatchOperation::Copy(c)) => {
            from_missing(name, &c.from)
        }
        (PatchErrorKind::InvalidPointer, PatchOperation::Add(_) | PatchOperation::Remove(_)) => {
            match path.split_back() {
                Some((parent, last))
                    if doc.pointer(parent.as_str()).is_some_and(Json::is_array) =>
                {
                    anyhow!(
                        "Unable to access invalid index: {}: invalid index referenced",
                        last.decoded()
                    )
                }
                _ => missing(name, path),
            }
        }
        (PatchErrorKind::InvalidPointer, _) => missing(name, path),
        (other, _) => anyhow!("{name} operation does not apply: {other}"),
    }
}

fn missing(op: &str, path: &Pointer) -> anyhow::Error {
    anyhow!("{op} operation does not apply: doc is missing path: \"{path}\": missing value")
}

fn from_missing(op: &str, from: &Pointer) -> anyhow::Error {
    anyhow!("{op} operation does not apply: doc is missing from path: \"{from}\": missing value")
}

/// Writes JSON as ghodss `JSONToYAML` does.
pub fn to_yaml(v: &Json) -> String {
    let mut out = String::new();
    match v {
        Json::Object(m) if !m.is_empty() => emit_map(m, 0, false, &mut out),
        Json::Array(a) if !a.is_empty() => emit_seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn emit_map(
    m: &serde_json::Map<String, Json>,
    indent: usize,
    first_inline: bool,
    out: &mut String,
) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort_by(|a, b| v2_key_order(a, b));
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 || !first_inline {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(&scalar(&Json::String(k.clone()), indent));
        out.push(':');
        match &m[k] {
            Json::Object(sub) if !sub.is_empty() => {
                out.push('\n');
                emit_map(sub, indent + 2, false, out);
            }
            Json::Array(a) if !a.is_empty() => {
                out.push('\n');
                emit_seq(a, indent, out);
            }
            other => {
                out.push(' ');
                out.push_str(&scalar(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn emit_seq(a: &[Json], indent: usize, out: &mut String) {
    for item in a {
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        match item {
            Json::Object(m) if !m.is_empty() => emit_map(m, indent + 2, true, out),
            Json::Array(inner) if !inner.is_empty() => {
                let mut sub = String::new();
                emit_seq(inner, indent + 2, &mut sub);
                out.push_str(sub.trim_start());
            }
            other => {
                out.push_str(&scalar(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn scalar(v: &Json, block_indent: usize) -> String {
    match v {
        Json::Null => "null".into(),
        Json::Bool(b) => b.to_string(),
        Json::Number(n) => n.to_string(),
        Json::Array(_) => "[]".into(),
        Json::Object(_) => "{}".into(),
        Json::String(s) => string(s, block_indent),
    }
}

fn string(s: &str, block_indent: usize) -> String {
    if s.is_empty() {
        return "\"\"".to_string();
    }
    let breaks_block = |c: char| c != '\n' && c != '\t' && talm_base::yaml::unprintable(c);
    if s.contains('\n') && !s.starts_with(' ') && !s.chars().any(breaks_block) {
        let body = s.strip_suffix('\n').unwrap_or(s);
        let mut out = if s.ends_with('\n') {
            "|".to_string()
        } else {
            "|-".to_string()
        };
        for line in body.split('\n') {
            out.push('\n');
            if !line.is_empty() {
                out.push_str(&" ".repeat(block_indent));
                out.push_str(line);
            }
        }
        return out;
    }
    let special = s.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        || s.ends_with(' ')
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':');
    let printable = !s.chars().any(talm_base::yaml::unprintable);
    if special && printable {
        format!("'{}'", s.replace('\'', "''"))
    } else if talm_base::yaml::to_string(&Value::String(s.to_string())).starts_with('"') {
        // JSON quoting, with yaml.v2's escapes for what YAML reads as a line break or a BOM.
        serde_json::to_string(s)
            .unwrap_or_default()
            .replace('\u{85}', "\\N")
            .replace('\u{2028}', "\\L")
            .replace('\u{2029}', "\\P")
            .replace('\u{feff}', "\\uFEFF")
    } else {
        s.to_string()
    }
}

/// yaml.v2's key order: letters after other characters, digit runs compared as numbers.
fn v2_key_order(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(doc: &str, ops: &str) -> Result<String> {
        let mut j = to_json(&serde_yaml_ng::from_str(doc).unwrap());
        apply(&mut j, &decode(ops).unwrap())?;
        Ok(to_yaml(&j))
    }

    #[test]
    fn ghodss_layout() {
        let out = run(
            "b: {z: 1, a: [x, {k: v, c: ''}]}\na10: 1\na2: 'yes'\n",
            r#"[{"op": "add", "path": "/b/a/-", "value": "n: m"}, {"op": "remove", "path": "/a10"}]"#,
        )
        .unwrap();
        assert_eq!(
            out,
            "a2: \"yes\"\nb:\n  a:\n  - x\n  - c: \"\"\n    k: v\n  - 'n: m'\n  z: 1\n"
        );
    }

    #[test]
    fn ops_and_errors() {
        let out = run("a: [1, 2]\nb: {c: 1}\n", r#"[{"op":"move","from":"/b/c","path":"/a/0"},{"op":"copy","from":"/a","path":"/d"},{"op":"test","path":"/d/1","value":1},{"op":"replace","path":"/b","value":"x"}]"#).unwrap();
        assert_eq!(out, "a:\n- 1\n- 1\n- 2\nb: x\nd:\n- 1\n- 1\n- 2\n");
        assert!(run("a: 1\n", r#"[{"op":"replace","path":"/x","value":1}]"#).is_err());
        assert!(run("a: 1\n", r#"[{"op":"remove","path":"/x"}]"#).is_err());
        assert!(run("a: 1\n", r#"[{"op":"add","path":"/x/y","value":1}]"#).is_err());
    }

    #[test]
    fn talos_error_texts() {
        let err = |ops: &str| run("a: [1]\nb: {c: 1}\n", ops).unwrap_err().to_string();
        assert_eq!(
            err(r#"[{"op":"replace","path":"/x","value":1}]"#),
            "replace operation does not apply: doc is missing path: \"/x\": missing value"
        );
        assert_eq!(
            err(r#"[{"op":"remove","path":"/b/x"}]"#),
            "remove operation does not apply: doc is missing path: \"/b/x\": missing value"
        );
        assert_eq!(
            err(r#"[{"op":"add","path":"/x/y","value":1}]"#),
            "add operation does not apply: doc is missing path: \"/x/y\": missing value"
        );
        assert_eq!(
            err(r#"[{"op":"add","path":"/a/5","value":1}]"#),
            "Unable to access invalid index: 5: invalid index referenced"
        );
        assert_eq!(
            err(r#"[{"op":"move","from":"/q","path":"/z"}]"#),
            "move operation does not apply: doc is missing from path: \"/q\": missing value"
        );
        assert_eq!(
            err(r#"[{"op":"test","path":"/b/c","value":2}]"#),
            "testing value /b/c failed: test failed"
        );
        assert_eq!(
            err(r#"[{"op":"frob","path":"/a"}]"#),
            "Unexpected kind: frob"
        );
        assert_eq!(
            err(r#"[{"op":"add","path":"/a"}]"#),
            "add operation has no value"
        );
        assert_eq!(err(r#"[{"op":"remove"}]"#), "operation missing path");
        assert_eq!(
            err(r#"[{"op":"remove","path":"a"}]"#),
            "JSON pointer must be empty or start with a \"/\""
        );
    }

    #[test]
    fn line_separators_stay_in_their_strings() {
        // Found by tests/trust/properties.rs: an unquoted U+2028 key broke the YAML.
        for text in [
            "\u{2028}",
            "x\u{2029}",
            "\u{85}y",
            "\u{feff}",
            "a\nb\u{2028}\n",
            " a\u{2028}",
        ] {
            let doc = serde_json::json!({"a": {text: null}, "b": text});
            let back: Json = serde_yaml_ng::from_str(&to_yaml(&doc)).unwrap();
            assert_eq!(back, doc, "{}", to_yaml(&doc));
        }
        assert_eq!(
            to_yaml(&serde_json::json!({"k": "\u{2028}"})),
            "k: \"\\L\"\n"
        );
    }

    #[test]
    fn v2_order() {
        let mut keys = vec!["b", "a10", "a2", "A", "_x", "a"];
        keys.sort_by(|a, b| v2_key_order(a, b));
        assert_eq!(keys, ["_x", "A", "a", "a2", "a10", "b"]);
    }
}
