//! Talos's config patcher (`configpatcher`): loading patches (strategic merge, JSON6902 as JSON
//! or as a YAML list of ops), applying them in order, and the strict decoder check.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::Value as Json;
use serde_yaml_ng::Value;

use super::decode::{self, configs, doc_key, Doc};
use super::encode::{doc_def, doc_id, encode};
use super::jsonpatch;
use super::merge::{apply_delete, merge, Deleted};
use super::schema::{Ty, LEGACY};

pub use super::decode::Selector;

/// A loaded patch.
#[derive(Debug, Clone)]
pub enum Patch {
    /// Strategic merge: config documents and delete selectors, in Talos container order.
    Strategic(StrategicPatch),
    /// RFC 6902 operations (consecutive JSON patches are concatenated by `load_patches`).
    Json(Vec<Json>),
}

/// The documents of a strategic merge patch.
#[derive(Debug, Clone)]
pub struct StrategicPatch {
    docs: Vec<Doc>,
}

impl StrategicPatch {
    /// The config documents (without delete selectors).
    pub fn documents(&self) -> Vec<&Value> {
        self.docs
            .iter()
            .filter_map(|d| match d {
                Doc::Config(v) => Some(v),
                Doc::Delete(_) => None,
            })
            .collect()
    }

    /// The delete selectors.
    pub fn deletes(&self) -> Vec<&Selector> {
        self.docs
            .iter()
            .filter_map(|d| match d {
                Doc::Delete(s) => Some(s),
                Doc::Config(_) => None,
            })
            .collect()
    }
}

/// Loads one patch: a strategic merge patch if it decodes as a config (with `$patch: delete`),
/// else a JSON Patch, else a YAML list of JSON Patch operations.
pub fn load_patch(text: &str) -> Result<Patch> {
    let strategic_err = match decode::decode(text, true) {
        Ok(docs) => return Ok(Patch::Strategic(StrategicPatch { docs })),
        Err(e) => e,
    };
    let json_err = match jsonpatch::decode(text) {
        Ok(ops) => return Ok(Patch::Json(ops)),
        Err(e) => e,
    };
    match talm_base::yaml::from_str(text) {
        Ok(Value::Sequence(items)) if items.iter().all(|i| i.is_mapping() || i.is_null()) => {
            let ops = items
                .iter()
                .filter(|i| i.is_mapping())
                .map(jsonpatch::to_json)
                .collect();
            Ok(Patch::Json(ops))
        }
        _ if text.trim().starts_with('[') => Err(json_err),
        _ => Err(strategic_err),
    }
}

/// [`load_patch`] of a text parsed before (`value`, from `serde_yaml_ng::from_str(text)`): a
/// mapping decodes as the same strategic patch without parsing the text again. A text with a
/// line the decoder would split on (`---...`), or whose parse does not decode, goes through
/// `load_patch`, whose errors name the line.
pub fn load_parsed_patch(text: &str, value: Value) -> Result<Patch> {
    if value.is_mapping() && !text.lines().any(|l| l.starts_with("---")) {
        if let Ok(docs) = decode::decode_values(vec![value], true) {
            return Ok(Patch::Strategic(StrategicPatch { docs }));
        }
    }
    load_patch(text)
}

/// Loads patches from arguments: `@file`, a bare file path (no space or newline, not starting
/// with `[` or `{`), or inline text. Relative paths are read from `base`.
pub fn load_patches(args: &[String], base: &Path) -> Result<Vec<Patch>> {
    let mut out: Vec<Patch> = Vec::new();
    for arg in args {
        let file = match arg.strip_prefix('@') {
            Some(f) => Some(f),
            None if !arg.contains(['\n', ' ']) && !arg.starts_with(['[', '{']) => {
                Some(arg.as_str())
            }
            None => None,
        };
        let text = match file {
            Some(f) => {
                let path = base.join(f);
                talm_base::input::try_read_text(&path, talm_base::input::Kind::Text).map_err(
                    |e| {
                        talm_base::error::hinted(
                            format!("open {}: {}", path.display(), e.problem),
                            "patches are `@file`, a file path, or inline YAML/JSON",
                        )
                    },
                )?
            }
            None => arg.clone(),
        };
        let patch = load_patch(&text).with_context(|| match file {
            Some(f) => format!("loading patch {f}"),
            None => "loading inline patch".to_string(),
        })?;
        match (out.last_mut(), patch) {
            (Some(Patch::Json(prev)), Patch::Json(ops)) => prev.extend(ops),
            (_, p) => out.push(p),
        }
    }
    Ok(out)
}

/// A config as patches see it: its text, or its strictly decoded documents (legacy first).
pub enum State {
    Bytes(String),
    Docs(Vec<Value>),
}

/// A config kept both as text and decoded, for a base patched many times (a fleet's nodes):
/// a strategic patch starts from the documents instead of decoding the text again.
#[derive(Debug)]
pub struct Decoded {
    pub text: String,
    pub docs: Vec<Value>,
}

impl Decoded {
    /// Decodes `text` strictly, as `apply` would before a strategic patch.
    pub fn new(text: String) -> Result<Decoded> {
        let docs = configs(decode::decode(&text, false)?);
        Ok(Decoded { text, docs })
    }

    /// `apply(&self.text, patches)` before its final encoding.
    pub fn apply(&self, patches: &[Patch]) -> Result<State> {
        let start = match patches.first() {
            Some(Patch::Strategic(_)) => State::Docs(self.docs.clone()),
            _ => State::Bytes(self.text.clone()),
        };
        apply_from(start, patches)
    }
}

impl State {
    /// The first document: the legacy one when there is one.
    pub fn first_doc(self) -> Result<Value> {
        match self {
            State::Docs(docs) => docs
                .into_iter()
                .next()
                .context("the patched config has no document"),
            State::Bytes(text) => {
                let first = serde_yaml_ng::Deserializer::from_str(&text)
                    .next()
                    .context("the patched config has no document")?;
                Ok(serde::Deserialize::deserialize(first)?)
            }
        }
    }
}

/// Applies patches in order. With no patches the input comes back unchanged; after a strategic
/// patch the result is the Talos encoding, after a JSON patch the ghodss/yaml rendering.
pub fn apply(config: &str, patches: &[Patch]) -> Result<String> {
    Ok(
        match apply_from(State::Bytes(config.to_string()), patches)? {
            State::Bytes(b) => b,
            State::Docs(d) => encode(&d),
        },
    )
}

/// [`apply`] to a config already parsed into its documents (`docs`, in stream order): a
/// strategic patch starts from them instead of from their encoding parsed again.
pub fn apply_docs(docs: Vec<Value>, patches: &[Patch]) -> Result<String> {
    let start = match patches.first() {
        Some(Patch::Strategic(_)) => State::Docs(configs(decode::decode_values(docs, false)?)),
        _ => State::Bytes(encode(&docs)),
    };
    Ok(match apply_from(start, patches)? {
        State::Bytes(b) => b,
        State::Docs(d) => encode(&d),
    })
}

fn apply_from(mut state: State, patches: &[Patch]) -> Result<State> {
    for patch in patches {
        state = match patch {
            Patch::Json(ops) => {
                let bytes = match state {
                    State::Bytes(b) => b,
                    State::Docs(d) => encode(&d),
                };
                State::Bytes(json6902(&bytes, ops)?)
            }
            Patch::Strategic(p) => {
                let docs = match state {
                    State::Docs(d) => d,
                    State::Bytes(b) => configs(decode::decode(&b, false)?),
                };
                State::Docs(strategic(docs, p)?)
            }
        };
    }
    Ok(state)
}

/// Checks a config strictly, as Talos's config loader does: unknown keys, unknown kinds and
/// duplicate documents are errors.
pub fn decode_check(text: &str) -> Result<()> {
    decode::decode(text, false).map(|_| ())
}

/// Removes `$patch: delete` constructs from raw YAML (no type decoding): returns the selectors
/// and the remaining non-empty documents.
pub fn extract_deletes(text: &str) -> Result<(Vec<Selector>, Vec<Value>)> {
    let mut sels = Vec::new();
    let mut docs = Vec::new();
    for (idx, raw) in decode::split(text)?.into_iter().enumerate() {
        let mut v = raw.value;
        sels.extend(decode::extract_deletes(&mut v, idx)?);
        if !v.is_null() {
            docs.push(v);
        }
    }
    Ok((sels, docs))
}

fn json6902(bytes: &str, ops: &[Json]) -> Result<String> {
    let docs =
        decode::split(bytes).map_err(|e| anyhow!("failure decoding talos machine config: {e}"))?;
    if docs.len() != 1 {
        bail!("JSON6902 patches are not supported for multi-document machine configuration");
    }
    let mut json = jsonpatch::to_json(&docs[0].value);
    jsonpatch::apply(&mut json, ops)
        .map_err(|e| anyhow!("failure applying rfc6902 patches to talos machine config: {e}"))?;
    Ok(jsonpatch::to_yaml(&json))
}

fn id_of(doc: &Value) -> String {
    let (api, kind, name) = doc_id(doc);
    doc_key(&api, &kind, &name)
}

fn strategic(left: Vec<Value>, patch: &StrategicPatch) -> Result<Vec<Value>> {
    // Documents of the base are matched by id; appended documents are not matched again.
    let mut left: Vec<(Value, bool)> = left.into_iter().map(|d| (d, true)).collect();
    for right in &patch.docs {
        let id = match right {
            Doc::Config(v) => id_of(v),
            Doc::Delete(s) => s.doc_id(),
        };
        let pos = left
            .iter()
            .position(|(d, indexed)| *indexed && id_of(d) == id);
        match (pos, right) {
            (Some(i), Doc::Config(r)) => {
                let ty = doc_def(&left[i].0).map_or(Ty::Any, |d| Ty::Obj(d.to_string()));
                merge(&mut left[i].0, r, &ty)?;
            }
            (Some(i), Doc::Delete(sel)) => {
                let def = doc_def(&left[i].0).unwrap_or("");
                if apply_delete(&mut left[i].0, def, sel)? == Deleted::Document {
                    left.remove(i);
                }
            }
            (None, Doc::Config(r)) => left.push((r.clone(), false)),
            (None, Doc::Delete(_)) => {}
        }
    }
    let (legacy, rest): (Vec<Value>, Vec<Value>) = left
        .into_iter()
        .map(|(d, _)| d)
        .partition(|d| doc_def(d) == Some(LEGACY));
    if legacy.len() > 1 {
        bail!("duplicate v1alpha1.Config");
    }
    let mut seen = HashSet::new();
    for d in &rest {
        let (_, kind, name) = doc_id(d);
        let id = format!("{kind}/{name}");
        if !seen.insert(id.clone()) {
            bail!("duplicate document: {id}");
        }
    }
    Ok(legacy.into_iter().chain(rest).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Patching parsed documents gives what patching their encoding gives, for Talos's own
    /// configs of every contract and the presets' renders, and a bad document still fails.
    #[test]
    fn patching_documents_equals_patching_their_encoding() {
        let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
        let mut texts = Vec::new();
        for v in ["v1.10", "v1.11", "v1.12", "v1.13"] {
            for f in ["base-controlplane", "base-worker", "overrides-controlplane"] {
                let p = format!("{fixtures}/talos/stability/{v}/{f}.yaml");
                texts.push(std::fs::read_to_string(p).unwrap());
            }
        }
        for f in ["cozystack-controlplane-multidoc", "generic-worker-legacy"] {
            let p = format!("{fixtures}/talm-golden/{f}.golden.yaml");
            texts.push(std::fs::read_to_string(p).unwrap());
        }
        let patches = [
            "machine:\n  nodeLabels:\n    a: b\n  install:\n    disk: /dev/vdb\n",
            "machine:\n  network:\n    hostname: x\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: y\n",
            "machine:\n  certSANs:\n    - 10.0.0.9\n",
        ];
        for text in &texts {
            let docs = talm_base::yaml::documents(text).unwrap();
            for p in patches {
                let p = [load_patch(p).unwrap()];
                let by_text = apply(&encode(&docs), &p);
                let by_docs = apply_docs(docs.clone(), &p);
                match (by_text, by_docs) {
                    (Ok(a), Ok(b)) => assert_eq!(a, b),
                    (Err(_), Err(_)) => {}
                    (a, b) => panic!("{a:?} vs {b:?}"),
                }
            }
        }
        let bad = talm_base::yaml::documents("machine:\n  nosuchkey: 1\n").unwrap();
        let p = [load_patch("machine:\n  nodeLabels:\n    a: b\n").unwrap()];
        let err = apply_docs(bad, &p).unwrap_err();
        assert!(err.to_string().contains("nosuchkey"), "{err}");
    }

    /// A rendered document loaded from its parse is the patch its text loads as; what the parse
    /// cannot stand for (a `---` line, a document that does not decode) goes by the text.
    #[test]
    fn parsed_patches_load_as_their_text() {
        let same = [
            "machine:\n  nodeLabels:\n    a: b\n",
            "machine:\n  network:\n    interfaces:\n      - interface: eth0\n        $patch: delete\n",
            "cluster:\n  clusterName: c\n  $patch: delete\n",
        ];
        for text in same {
            let value: Value = serde_yaml_ng::from_str(text).unwrap();
            assert_eq!(
                format!("{:?}", load_parsed_patch(text, value).unwrap()),
                format!("{:?}", load_patch(text).unwrap()),
                "{text}"
            );
        }
        // Not a config document: the text's error, with its line.
        let bad = "machine:\n  type: worker\n  nosuchkey: 1\n";
        let value: Value = serde_yaml_ng::from_str(bad).unwrap();
        let by_parse = load_parsed_patch(bad, value).unwrap_err().to_string();
        assert_eq!(by_parse, load_patch(bad).unwrap_err().to_string());
        assert!(by_parse.contains("line 1"), "{by_parse}");
        // A `--- x` line the decoder splits on: the text decides (here, two documents).
        let two = "machine:\n  type: worker\n--- {apiVersion: v1alpha1, kind: HostnameConfig, hostname: h}\n";
        let one: Value = serde_yaml_ng::from_str("machine: {type: worker}").unwrap();
        let Patch::Strategic(p) = load_parsed_patch(two, one).unwrap() else {
            panic!("a strategic patch")
        };
        assert_eq!(p.docs.len(), 2);
    }
}
