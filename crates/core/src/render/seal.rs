//! Keeping user secrets (the values of encrypted value files) out of rendered output: omitted
//! from node files, redacted to `***` on stdout, by exact value anywhere in the documents —
//! in place in the text, so node files keep their comments.

use std::collections::BTreeSet;

use anyhow::Result;
use serde_yaml_ng::Value;

use talm_base::yaml::located::{self, Kind, Node};

/// How secrets are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// Remove keys and list items holding a secret (node files: apply re-renders them).
    Omit,
    /// Replace every secret scalar with `***` (stdout).
    Redact,
}

/// Every non-empty text leaf of the given values, with the forms templates commonly print it
/// in: trimmed, as one line-ended block, and base64 of each (the registry TLS keys are base64
/// of the trimmed PEM and a line break).
/// Numbers and booleans are left out: alone they cannot be told from the config's own.
pub fn secret_strings(values: &[Value]) -> BTreeSet<String> {
    use base64::Engine as _;
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::String(s) if !s.trim().is_empty() => {
                let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
                let line = format!("{}\n", s.trim());
                out.insert(s.clone());
                out.insert(s.trim().to_string());
                out.insert(b64(s));
                out.insert(b64(s.trim()));
                out.insert(b64(&line));
                out.insert(line);
            }
            Value::Mapping(m) => m.values().for_each(|x| walk(x, out)),
            Value::Sequence(s) => s.iter().for_each(|x| walk(x, out)),
            Value::Tagged(t) => walk(&t.value, out),
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    values.iter().for_each(|v| walk(v, &mut out));
    out
}

/// Every text leaf of `v` with its key path (`a.b[0]`).
fn text_leaves<'a>(v: &'a Value, path: String, out: &mut Vec<(String, &'a str)>) {
    match v {
        Value::String(s) => out.push((path, s)),
        Value::Mapping(m) => {
            for (k, x) in m {
                let key = k.as_str().unwrap_or("?");
                let p = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                text_leaves(x, p, out);
            }
        }
        Value::Sequence(items) => {
            for (i, x) in items.iter().enumerate() {
                text_leaves(x, format!("{path}[{i}]"), out);
            }
        }
        Value::Tagged(t) => text_leaves(&t.value, path, out),
        _ => {}
    }
}

/// A secret with a line break inside that the rendered `text` holds in a form sealing cannot
/// tell (folded into a longer scalar, its lines joined by spaces), so it would be written or
/// printed in clear: the encrypted file and key path that set it. `files` are the encrypted
/// value files with what they hold. A text that is not YAML is refused by the render's own
/// check, with the secrets masked.
pub fn split_secret(text: &str, files: &[(&str, &Value)]) -> Option<(String, String)> {
    let multiline: Vec<(&str, String, Vec<&str>)> = files
        .iter()
        .flat_map(|(file, v)| {
            let mut leaves = Vec::new();
            text_leaves(v, String::new(), &mut leaves);
            leaves
                .into_iter()
                .filter(|(_, s)| s.trim().contains('\n'))
                .map(|(path, s)| {
                    let lines = s.lines().map(str::trim).filter(|l| !l.is_empty());
                    (*file, path, lines.collect::<Vec<_>>())
                })
                .collect::<Vec<_>>()
        })
        .collect();
    if multiline.is_empty() {
        return None;
    }
    let docs = talm_base::yaml::stream(text).ok()?;
    let values: Vec<Value> = files.iter().map(|(_, v)| (*v).clone()).collect();
    let forms = secret_strings(&values);
    let mut scalars = Vec::new();
    for d in &docs {
        text_leaves(d, String::new(), &mut scalars);
    }
    for (file, path, lines) in multiline {
        let folded = scalars
            .iter()
            .any(|(_, s)| !forms.contains(*s) && lines.iter().all(|l| s.contains(l)));
        if folded {
            return Some((file.to_string(), path));
        }
    }
    None
}

fn holds_secret(v: &Value, secrets: &BTreeSet<String>) -> bool {
    match v {
        Value::String(s) => secrets.contains(s),
        Value::Mapping(m) => m.values().any(|x| holds_secret(x, secrets)),
        Value::Sequence(s) => s.iter().any(|x| holds_secret(x, secrets)),
        Value::Tagged(t) => holds_secret(&t.value, secrets),
        _ => false,
    }
}

fn omit(v: &mut Value, secrets: &BTreeSet<String>) {
    match v {
        Value::Mapping(m) => {
            m.retain(|_, x| match x {
                Value::String(s) => !secrets.contains(s),
                Value::Sequence(_) => !holds_secret(x, secrets),
                _ => true,
            });
            m.values_mut().for_each(|x| omit(x, secrets));
        }
        Value::Sequence(items) => items.retain(|x| !holds_secret(x, secrets)),
        _ => {}
    }
}

fn redact(v: &mut Value, secrets: &BTreeSet<String>) {
    match v {
        Value::String(s) if secrets.contains(s.as_str()) => *s = "***".into(),
        Value::Mapping(m) => m.values_mut().for_each(|x| redact(x, secrets)),
        Value::Sequence(items) => items.iter_mut().for_each(|x| redact(x, secrets)),
        _ => {}
    }
}

/// Applies the seal to every document of `text`; without secrets the text is returned as is.
/// The seal is applied in place in the text (comments, order and quoting kept) wherever that
/// reads back the same as sealing the documents; otherwise the documents are re-encoded.
pub fn apply(text: &str, secrets: &BTreeSet<String>, mode: Seal) -> Result<String> {
    if secrets.is_empty() {
        return Ok(text.to_string());
    }
    let mut docs = Vec::new();
    for mut v in talm_base::yaml::stream(text)? {
        match mode {
            Seal::Omit => omit(&mut v, secrets),
            Seal::Redact => redact(&mut v, secrets),
        }
        docs.push(v);
    }
    let in_place = located::locate(text).ok().and_then(|l| {
        let mut edits = Vec::new();
        for doc in &l.docs {
            match mode {
                Seal::Omit => omit_in_place(text, doc, secrets, None, &mut edits)?,
                Seal::Redact => redact_in_place(text, doc, secrets, &mut edits),
            }
        }
        Some(located::splice(text, edits))
    });
    if let Some(t) = in_place {
        if reads_as(&t, &docs) {
            return Ok(t);
        }
    }
    let mut out = Vec::new();
    for v in &docs {
        out.push(serde_yaml_ng::to_string(v)?);
    }
    Ok(out.join("---\n"))
}

fn reads_as(text: &str, docs: &[Value]) -> bool {
    let mut got: Vec<Value> = Vec::new();
    for d in serde_yaml_ng::Deserializer::from_str(text) {
        match serde::Deserialize::deserialize(d) {
            Ok(v) => got.push(v),
            Err(_) => return false,
        }
    }
    got == docs
}

fn is_secret(n: &Node, secrets: &BTreeSet<String>) -> bool {
    matches!(&n.kind, Kind::Scalar(s) if secrets.contains(&s.value))
}

fn node_holds(n: &Node, secrets: &BTreeSet<String>) -> bool {
    match &n.kind {
        Kind::Scalar(s) => secrets.contains(&s.value),
        Kind::Seq(items) => items.iter().any(|i| node_holds(i, secrets)),
        Kind::Map(entries) => entries.iter().any(|(_, v)| node_holds(v, secrets)),
        Kind::Alias => false,
    }
}

/// The whole lines from `start` to `end`, when nothing else shares them (only blanks, and a
/// `- ` where `dash` allows it, before `start`).
fn whole_lines(text: &str, start: usize, end: usize, dash: bool) -> Option<(usize, usize)> {
    let from = located::line_start(text, start);
    let before = text[from..start].trim();
    let ok = before.is_empty() || (dash && before.chars().all(|c| c == '-' || c == ' '));
    if !ok {
        return None;
    }
    Some((from, located::line_end_after(text, end)?))
}

/// Removes, line by line, the entries `omit` removes from the values; `colon` is where the key
/// owning this node ends, so an emptied mapping can be written `{}` there.
fn omit_in_place(
    text: &str,
    node: &Node,
    secrets: &BTreeSet<String>,
    colon: Option<usize>,
    edits: &mut Vec<(usize, usize, String)>,
) -> Option<()> {
    match &node.kind {
        Kind::Map(entries) => {
            let mut removed = 0;
            for (k, v) in entries {
                let drop = is_secret(v, secrets)
                    || matches!(v.kind, Kind::Seq(_)) && node_holds(v, secrets);
                if drop {
                    if node.flow {
                        return None;
                    }
                    let (a, b) = whole_lines(text, k.start, v.end.max(k.end), false)?;
                    edits.push((a, b, String::new()));
                    removed += 1;
                } else if matches!(v.kind, Kind::Map(_)) {
                    let after_key = text[k.end..].find(':').map(|i| k.end + i + 1)?;
                    omit_in_place(text, v, secrets, Some(after_key), edits)?;
                }
            }
            if removed > 0 && removed == entries.len() {
                match colon {
                    Some(at) => edits.push((at, at, " {}".into())),
                    None => edits.push((node.start, node.start, "{}\n".into())),
                }
            }
            Some(())
        }
        Kind::Seq(items) if colon.is_none() => {
            let mut removed = 0;
            for item in items {
                if node_holds(item, secrets) {
                    if node.flow {
                        return None;
                    }
                    let (a, b) = whole_lines(text, item.start, item.end, true)?;
                    edits.push((a, b, String::new()));
                    removed += 1;
                }
            }
            (removed == 0 || removed < items.len()).then_some(())
        }
        _ => Some(()),
    }
}

/// Writes `'***'` over every secret scalar.
fn redact_in_place(
    text: &str,
    node: &Node,
    secrets: &BTreeSet<String>,
    edits: &mut Vec<(usize, usize, String)>,
) {
    for (_, s) in located::value_scalars(node) {
        if secrets.contains(&s.value) {
            let nl = if text[s.start..s.end].ends_with('\n') {
                "\n"
            } else {
                ""
            };
            edits.push((s.start, s.end, format!("'***'{nl}")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> BTreeSet<String> {
        secret_strings(&[serde_yaml_ng::from_str("{password: hunter2, list: [s3cret]}").unwrap()])
    }

    #[test]
    fn a_folded_multiline_secret_is_named_by_file_and_key() {
        let values: Value =
            serde_yaml_ng::from_str("auth:\n  password: \"first-line\\n  second-line\"\n").unwrap();
        let files = [("values-secret.encrypted.yaml", &values)];
        assert_eq!(
            split_secret("machine:\n  pw: first-line\n    second-line\n", &files),
            Some((
                "values-secret.encrypted.yaml".to_string(),
                "auth.password".to_string()
            ))
        );
        // Printed whole (a block or quoted), sealing finds it: nothing to refuse.
        assert_eq!(
            split_secret("machine:\n  pw: \"first-line\\n  second-line\"\n", &files),
            None
        );
    }

    #[test]
    fn omit_and_redact() {
        let text = "a: hunter2\nb: keep\nl: [x, s3cret]\nm: {n: hunter2, o: 1}\nitems:\n- {k: s3cret}\n- {k: fine}\n---\nc: hunter2\n";
        let omitted = apply(text, &secrets(), Seal::Omit).unwrap();
        // A list holding a secret anywhere goes as a whole (apply re-renders it).
        assert_eq!(omitted, "b: keep\nm:\n  o: 1\n---\n{}\n");
        let redacted = apply(text, &secrets(), Seal::Redact).unwrap();
        assert!(
            redacted.contains("a: '***'")
                && redacted.contains(", '***']")
                && !redacted.contains("hunter2"),
            "{redacted}"
        );
        assert_eq!(apply(&omitted, &secrets(), Seal::Omit).unwrap(), omitted);
        assert_eq!(
            apply("# c\na: b\n", &BTreeSet::new(), Seal::Omit).unwrap(),
            "# c\na: b\n"
        );
    }

    #[test]
    fn derived_forms_of_a_secret_are_sealed_too() {
        use base64::Engine as _;
        let pem = "-----BEGIN KEY-----\nabc\n-----END KEY-----\n";
        let set = secret_strings(&[serde_yaml_ng::from_str(&format!("k: {pem:?}")).unwrap()]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem.trim());
        let text = format!("key: {b64}\nother: x\n");
        assert_eq!(apply(&text, &set, Seal::Omit).unwrap(), "other: x\n");
    }

    #[test]
    fn comments_stay_where_secrets_go() {
        let text = "# disks: nvme0n1\nmachine:\n  # the install section\n  install:\n    password: hunter2\n  registries:\n    token: s3cret # tok\n    mirror: fine\n---\n# second\nkey: value\n";
        assert_eq!(
            apply(text, &secrets(), Seal::Omit).unwrap(),
            "# disks: nvme0n1\nmachine:\n  # the install section\n  install: {}\n  registries:\n    mirror: fine\n---\n# second\nkey: value\n"
        );
        assert_eq!(
            apply(text, &secrets(), Seal::Redact).unwrap(),
            "# disks: nvme0n1\nmachine:\n  # the install section\n  install:\n    password: '***'\n  registries:\n    token: '***' # tok\n    mirror: fine\n---\n# second\nkey: value\n"
        );
    }
}
