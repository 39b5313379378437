//! Keeping user secrets (the values of encrypted value files) out of rendered output: omitted
//! from node files, redacted to `***` on stdout, by exact value anywhere in the documents.

use std::collections::BTreeSet;

use anyhow::Result;
use serde_yaml_ng::Value;

/// How secrets are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seal {
    /// Remove keys and list items holding a secret (node files: apply re-renders them).
    Omit,
    /// Replace every secret scalar with `***` (stdout).
    Redact,
}

/// Every non-empty string leaf of the given values.
pub fn secret_strings(values: &[Value]) -> BTreeSet<String> {
    fn walk(v: &Value, out: &mut BTreeSet<String>) {
        match v {
            Value::String(s) if !s.is_empty() => {
                out.insert(s.clone());
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
pub fn apply(text: &str, secrets: &BTreeSet<String>, mode: Seal) -> Result<String> {
    if secrets.is_empty() {
        return Ok(text.to_string());
    }
    let mut docs = Vec::new();
    for d in serde_yaml_ng::Deserializer::from_str(text) {
        let mut v: Value = serde::Deserialize::deserialize(d)?;
        match mode {
            Seal::Omit => omit(&mut v, secrets),
            Seal::Redact => redact(&mut v, secrets),
        }
        docs.push(serde_yaml_ng::to_string(&v)?);
    }
    Ok(docs.join("---\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> BTreeSet<String> {
        secret_strings(&[serde_yaml_ng::from_str("{password: hunter2, list: [s3cret]}").unwrap()])
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
                && redacted.contains("- '***'")
                && !redacted.contains("hunter2"),
            "{redacted}"
        );
        assert_eq!(apply(&omitted, &secrets(), Seal::Omit).unwrap(), omitted);
        assert_eq!(
            apply("# c\na: b\n", &BTreeSet::new(), Seal::Omit).unwrap(),
            "# c\na: b\n"
        );
    }
}
