//! The strict Talos config decoder: splits a YAML stream into documents, extracts
//! `$patch: delete` selectors, identifies each document and rejects unknown keys, duplicate
//! documents and unknown kinds with Talos's messages.

use std::collections::HashSet;
use std::fmt;

use anyhow::{anyhow, bail, Result};
use serde_yaml_ng::Value;

use super::encode::key_string;
use super::schema::{schema, Ty, LEGACY};

/// One raw YAML document and the line its content starts on.
#[derive(Debug, Clone)]
pub struct RawDoc {
    pub value: Value,
    pub line: usize,
}

/// A delete selector taken from a `$patch: delete` construct.
#[derive(Debug, Clone, PartialEq)]
pub struct Selector {
    pub path: Vec<String>,
    pub idx: usize,
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub key: String,
    pub value: String,
}

impl Selector {
    /// The document id this selector applies to (`apiVersion/kind[/name]`).
    pub fn doc_id(&self) -> String {
        doc_key(&self.api_version, &self.kind, &self.name)
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let path = self.path.join(".");
        let idx = self.idx.to_string();
        for (k, v) in [
            ("path", path.as_str()),
            ("apiVersion", &self.api_version),
            ("kind", &self.kind),
            ("key", &self.key),
            ("value", &self.value),
            ("idx", &idx),
            ("name", &self.name),
        ] {
            if !v.is_empty() {
                parts.push(format!("{k}:{v}"));
            }
        }
        write!(f, "{{{}}}", parts.join(", "))
    }
}

/// A decoded document: a config document or a delete selector.
#[derive(Debug, Clone)]
pub enum Doc {
    Config(Value),
    Delete(Selector),
}

/// The id Talos matches documents by: `apiVersion/kind` plus `/name` for named documents.
pub fn doc_key(api_version: &str, kind: &str, name: &str) -> String {
    if name.is_empty() {
        format!("{api_version}/{kind}")
    } else {
        format!("{api_version}/{kind}/{name}")
    }
}

/// Splits a YAML stream at `---` lines and parses each document.
pub fn split(text: &str) -> Result<Vec<RawDoc>> {
    let mut chunks: Vec<(usize, String)> = vec![(1, String::new())];
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let is_sep =
            line.starts_with("---") && line[3..].chars().next().is_none_or(char::is_whitespace);
        if is_sep {
            chunks.push((i + 1, line[3..].to_string()));
        } else if let Some(last) = chunks.last_mut() {
            last.1.push_str(line);
        }
    }
    let mut docs = Vec::new();
    for (sep_line, chunk) in chunks {
        let offset = chunk
            .lines()
            .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let Some(offset) = offset else { continue };
        let value: Value = talm_base::yaml::from_str(&chunk).map_err(|e| {
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
            match e.location() {
                Some(l) => anyhow!(
                    "decode error: yaml: {msg} at line {}",
                    l.line() + sep_line - 1
                ),
                None => anyhow!("decode error: yaml: {msg}"),
            }
        })?;
        docs.push(RawDoc {
            value,
            line: sep_line + offset,
        });
    }
    Ok(docs)
}

/// Decodes a config stream strictly; with `allow_delete`, `$patch: delete` constructs become
/// selectors. The result is in Talos container order: legacy deletes, the legacy document,
/// then the rest in input order.
pub fn decode(text: &str, allow_delete: bool) -> Result<Vec<Doc>> {
    decode_raw(split(text)?, allow_delete)
}

/// [`decode`] of documents parsed before (non-empty, in stream order): what decoding their
/// encoding gives, without writing and parsing it again. Errors name no line: a caller that
/// shows them decodes the text instead.
pub fn decode_values(docs: Vec<Value>, allow_delete: bool) -> Result<Vec<Doc>> {
    decode_raw(
        docs.into_iter()
            .map(|value| RawDoc { value, line: 0 })
            .collect(),
        allow_delete,
    )
}

fn decode_raw(raw_docs: Vec<RawDoc>, allow_delete: bool) -> Result<Vec<Doc>> {
    let mut decoded = Vec::new();
    let mut known = Known::new();
    for (idx, raw) in raw_docs.into_iter().enumerate() {
        let mut value = raw.value;
        if allow_delete {
            let found = extract_deletes(&mut value, idx).map_err(|e| {
                anyhow!(
                    "error processing patch delete statements at line {}: {e}",
                    raw.line
                )
            })?;
            decoded.extend(found.into_iter().map(Doc::Delete));
            if value.is_null() {
                continue;
            }
        }
        if !vet(&value, raw.line, &mut known)? {
            continue;
        }
        normalize(&mut value);
        decoded.push(Doc::Config(value));
    }
    let is_legacy_delete = |d: &Doc| matches!(d, Doc::Delete(s) if s.kind == "v1alpha1");
    let is_legacy =
        |d: &Doc| matches!(d, Doc::Config(v) if super::encode::doc_def(v) == Some(LEGACY));
    let mut ordered: Vec<Doc> = decoded
        .iter()
        .filter(|d| is_legacy_delete(d))
        .cloned()
        .collect();
    ordered.extend(decoded.iter().filter(|d| is_legacy(d)).cloned());
    ordered.extend(
        decoded
            .into_iter()
            .filter(|d| !is_legacy_delete(d) && !is_legacy(d)),
    );
    Ok(ordered)
}

/// The ids of the documents vetted so far in one stream.
type Known = HashSet<(String, String, String)>;

/// Whether Talos's loader takes one document of a stream (`line`: where it starts, 0 when
/// unknown): a mapping whose id no earlier document has, with keys its type knows. Ok(false)
/// for an empty document, which is skipped.
fn vet(value: &Value, line: usize, known: &mut Known) -> Result<bool> {
    match value {
        Value::Mapping(_) => {}
        Value::Null => return Ok(false),
        _ => bail!("expected a YAML document at line {line}"),
    }
    let (api, kind, name) = super::encode::doc_id(value);
    if !known.insert((api.clone(), kind.clone(), name.clone())) {
        bail!("duplicate document {api}/{kind}/{name} is not allowed (line {line})");
    }
    check_doc(value)
        .map_err(|e| anyhow!("error decoding document {api}/{kind}/{name} (line {line}): {e}"))?;
    Ok(true)
}

/// Whether documents parsed before would decode (`decode_values(docs, false)` succeeding),
/// read in place. Errors name no line, as [`decode_values`]'s.
pub fn check_values(docs: &[Value]) -> Result<()> {
    let mut known = Known::new();
    for doc in docs {
        vet(doc, 0, &mut known)?;
    }
    Ok(())
}

/// Identifies one document and checks its keys against the type tree.
fn check_doc(doc: &Value) -> Result<()> {
    let Value::Mapping(m) = doc else {
        return Ok(());
    };
    let (mut version, mut kind) = (String::new(), String::new());
    for (k, v) in m {
        match key_string(k).as_str() {
            "kind" => kind = scalar_text(v),
            "apiVersion" => version = scalar_text(v),
            "machine" | "cluster" | "debug" | "persist" => version = "v1alpha1".into(),
            _ => {}
        }
    }
    let def = match () {
        _ if version == "v1alpha1" && kind.is_empty() => LEGACY,
        _ if kind.is_empty() => bail!("missing kind"),
        _ if version.is_empty() => bail!("missing apiVersion"),
        _ => schema()
            .doc_def(&version, &kind)
            .ok_or_else(|| anyhow!("{kind:?} {version:?}: not registered"))?,
    };
    if let Some(unknown) = unknown_keys(doc, &Ty::Obj(def.to_string()))? {
        bail!(
            "unknown keys found during decoding:\n{}",
            talm_base::yaml::to_string(&unknown)
        );
    }
    Ok(())
}

/// The subtree of keys the type does not know, or `None` when every key is known.
fn unknown_keys(v: &Value, ty: &Ty) -> Result<Option<Value>> {
    match (ty, v) {
        (_, Value::Null) | (Ty::Any, _) => Ok(None),
        (Ty::Obj(name), Value::Mapping(m)) => {
            let def = schema().def(name);
            let mut out = Vec::new();
            for (k, val) in m {
                let key = key_string(k);
                match def.field(&key) {
                    None => out.push((key, sort_all(val))),
                    Some(f) => {
                        if let Some(sub) = unknown_keys(val, &f.ty)? {
                            out.push((key, sub));
                        }
                    }
                }
            }
            Ok(sorted_mapping(out))
        }
        (Ty::Map(inner), Value::Mapping(m)) => {
            let mut out = Vec::new();
            for (k, val) in m {
                if let Some(sub) = unknown_keys(val, inner)? {
                    out.push((key_string(k), sub));
                }
            }
            Ok(sorted_mapping(out))
        }
        (Ty::List(inner), Value::Sequence(s)) => {
            let mut out = Vec::new();
            for item in s {
                if let Some(sub) = unknown_keys(item, inner)? {
                    out.push(sub);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Sequence(out)))
        }
        (Ty::Obj(name), other) => bail!("cannot unmarshal {} into {name}", describe(other)),
        (
            Ty::List(_),
            other @ (Value::Mapping(_) | Value::String(_) | Value::Number(_) | Value::Bool(_)),
        ) => {
            bail!("cannot unmarshal {} into a list", describe(other))
        }
        (
            Ty::Map(_),
            other @ (Value::Sequence(_) | Value::String(_) | Value::Number(_) | Value::Bool(_)),
        ) => {
            bail!("cannot unmarshal {} into a map", describe(other))
        }
        (
            Ty::Bool | Ty::Int | Ty::Float | Ty::Str,
            other @ (Value::Mapping(_) | Value::Sequence(_)),
        ) => {
            bail!("cannot unmarshal {} into a scalar", describe(other))
        }
        _ => Ok(None),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Mapping(_) => "!!map".into(),
        Value::Sequence(_) => "!!seq".into(),
        Value::String(s) => format!("!!str `{s}`"),
        Value::Number(n) => format!("!!int `{n}`"),
        Value::Bool(b) => format!("!!bool `{b}`"),
        Value::Null => "!!null".into(),
        Value::Tagged(t) => describe(&t.value),
    }
}

fn sorted_mapping(mut entries: Vec<(String, Value)>) -> Option<Value> {
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Some(Value::Mapping(
        entries
            .into_iter()
            .map(|(k, v)| (Value::String(k), v))
            .collect(),
    ))
}

fn sort_all(v: &Value) -> Value {
    super::encode::shape(v, &Ty::Any)
}

/// Decode-time normalisation: leading `\t\n\v\f\r` go from every inline manifest's contents.
fn normalize(doc: &mut Value) {
    if super::encode::doc_def(doc) != Some(LEGACY) {
        return;
    }
    let manifests = doc
        .get_mut("cluster")
        .and_then(|c| c.get_mut("inlineManifests"))
        .and_then(Value::as_sequence_mut);
    for m in manifests.into_iter().flatten() {
        if let Some(Value::String(c)) = m.get_mut("contents") {
            *c = c
                .trim_start_matches(['\t', '\n', '\x0b', '\x0c', '\r'])
                .to_string();
        }
    }
}

enum Parent {
    Document,
    Mapping,
    Sequence,
}

/// Removes `$patch: delete` constructs from one document and returns their selectors. A
/// document left empty (or holding only `version`/`kind`/`name`) becomes null.
pub fn extract_deletes(doc: &mut Value, idx: usize) -> Result<Vec<Selector>> {
    let mut found = Vec::new();
    let root = doc.clone();
    let delete_doc = process(Parent::Document, doc, &mut Vec::new(), &mut found)?;
    let mut out = Vec::new();
    for (path, parent, node) in found {
        out.push(match parent {
            Parent::Sequence => sequence_selector(path, &root, &node, idx)?,
            _ => selector(path, &root, idx, "", "")?,
        });
    }
    if delete_doc || is_empty_doc(doc) {
        *doc = Value::Null;
    }
    Ok(out)
}

type Found = (Vec<String>, Parent, Value);

fn is_delete(k: &Value, v: &Value) -> bool {
    k.as_str() == Some("$patch") && v.as_str() == Some("delete")
}

fn process(
    parent: Parent,
    v: &mut Value,
    path: &mut Vec<String>,
    found: &mut Vec<Found>,
) -> Result<bool> {
    match v {
        Value::Mapping(m) => {
            if m.iter().any(|(k, v)| is_delete(k, v)) {
                if !matches!(parent, Parent::Sequence) && path.iter().any(|p| p.starts_with('[')) {
                    bail!("cannot delete an inner key in '{}'", path.join("."));
                }
                found.push((path.clone(), parent, Value::Mapping(m.clone())));
                return Ok(true);
            }
            let keys: Vec<Value> = m.keys().cloned().collect();
            for k in keys {
                path.push(key_string(&k));
                let del = process(
                    Parent::Mapping,
                    // Cannot fail: the key comes from iterating this mapping.
                    m.get_mut(&k).expect("key present"),
                    path,
                    found,
                )?;
                path.pop();
                if del {
                    m.remove(&k);
                    if m.is_empty() {
                        return Ok(true);
                    }
                }
            }
            Ok(false)
        }
        Value::Sequence(s) => {
            let mut i = 0;
            while i < s.len() {
                path.push(format!("[{i}]"));
                let del = process(Parent::Sequence, &mut s[i], path, found)?;
                path.pop();
                if del {
                    s.remove(i);
                    if s.is_empty() {
                        return Ok(true);
                    }
                } else {
                    i += 1;
                }
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

fn is_empty_doc(doc: &Value) -> bool {
    let Value::Mapping(m) = doc else { return false };
    m.iter().all(|(k, v)| {
        !v.is_mapping()
            && !v.is_sequence()
            && matches!(k.as_str(), Some("version" | "kind" | "name"))
    })
}

fn find_value(root: &Value, key: &str, required: bool) -> Result<String> {
    match root.get(key) {
        Some(v) => Ok(scalar_text(v)),
        None if required => bail!("missing {key} in document for which $patch: delete is used"),
        None => Ok(String::new()),
    }
}

fn selector(
    path: Vec<String>,
    root: &Value,
    idx: usize,
    key: &str,
    value: &str,
) -> Result<Selector> {
    let required = path.is_empty();
    let api_version = find_value(root, "apiVersion", required)?;
    let mut kind = find_value(root, "kind", required)?;
    match (api_version.is_empty(), kind.is_empty()) {
        (true, true) => kind = "v1alpha1".into(),
        (false, false) => {}
        _ => bail!(
            "kind and apiVersion must be both set for path {}",
            path.join(".")
        ),
    }
    Ok(Selector {
        name: find_value(root, "name", false)?,
        path,
        idx,
        api_version,
        kind,
        key: key.to_string(),
        value: value.to_string(),
    })
}

fn sequence_selector(
    path: Vec<String>,
    root: &Value,
    node: &Value,
    idx: usize,
) -> Result<Selector> {
    let Value::Mapping(m) = node else {
        bail!("expected a mapping node")
    };
    for (k, v) in m {
        if is_delete(k, v) {
            continue;
        }
        return selector(path, root, idx, &key_string(k), &scalar_text(v));
    }
    bail!(
        "no key:val found in sequence node for path {}",
        path.join(".")
    )
}

/// The text of a scalar node (empty for null and collections), as yaml.v3's `Node.Value`.
pub fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null | Value::Mapping(_) | Value::Sequence(_) => String::new(),
        Value::Tagged(t) => scalar_text(&t.value),
        v => key_string(v),
    }
}

/// Strict decode returning the documents (legacy document first).
pub fn decode_docs(text: &str) -> Result<Vec<Value>> {
    Ok(configs(decode(text, false)?))
}

/// The config documents of a decoded stream (`$patch: delete` ones left out).
pub fn configs(docs: Vec<Doc>) -> Vec<Value> {
    docs.into_iter()
        .filter_map(|d| match d {
            Doc::Config(v) => Some(v),
            Doc::Delete(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checking parsed documents in place agrees with decoding them, on good and bad streams.
    #[test]
    fn documents_check_as_they_decode() {
        let streams = [
            "machine:\n  type: worker\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n",
            "machine:\n  type: worker\n---\n---\ncluster:\n  clusterName: c\n",
            "machine:\n  nosuchkey: 1\n",
            "apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: b\n",
            "- a\n",
        ];
        for text in streams {
            let docs = talm_base::yaml::stream(text).unwrap();
            let decoded = decode_values(docs.clone(), false).map(|_| ());
            let checked = check_values(&docs);
            assert_eq!(
                checked.as_ref().map_err(ToString::to_string),
                decoded.as_ref().map_err(ToString::to_string),
                "{text}"
            );
        }
        let dup = talm_base::yaml::stream(streams[3]).unwrap();
        assert!(check_values(&dup)
            .unwrap_err()
            .to_string()
            .contains("duplicate document"));
    }
}
