//! COSI resources as talm shows them: `{metadata, spec}` maps with the metadata fields talosctl
//! prints and the spec parsed from the YAML the node sends.

use serde_yaml_ng::{Mapping, Value};

use crate::proto::cosi::resource as cosi;

/// RFC 3339 text of a protobuf timestamp (UTC, whole seconds as Talos prints them).
pub fn timestamp(ts: &prost_types::Timestamp) -> String {
    time::OffsetDateTime::from_unix_timestamp(ts.seconds)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// A resource as `{metadata: {namespace, type, id, version, owner, phase, created, updated,
/// labels?, annotations?}, spec}`.
pub fn to_value(res: &cosi::Resource) -> Value {
    let mut meta = Mapping::new();
    if let Some(md) = &res.metadata {
        meta.insert("namespace".into(), md.namespace.clone().into());
        meta.insert("type".into(), md.r#type.clone().into());
        meta.insert("id".into(), md.id.clone().into());
        meta.insert("version".into(), md.version.clone().into());
        meta.insert("owner".into(), md.owner.clone().into());
        meta.insert("phase".into(), md.phase.clone().into());
        if let Some(t) = &md.created {
            meta.insert("created".into(), timestamp(t).into());
        }
        if let Some(t) = &md.updated {
            meta.insert("updated".into(), timestamp(t).into());
        }
        for (key, map) in [("labels", &md.labels), ("annotations", &md.annotations)] {
            if !map.is_empty() {
                let mut sorted: Vec<_> = map.iter().collect();
                sorted.sort();
                let m: Mapping = sorted
                    .into_iter()
                    .map(|(k, v)| (Value::from(k.clone()), Value::from(v.clone())))
                    .collect();
                meta.insert(key.into(), Value::Mapping(m));
            }
        }
    }
    let spec = res
        .spec
        .as_ref()
        .map(|s| s.yaml_spec.as_str())
        .filter(|s| !s.trim().is_empty())
        .map(|s| serde_yaml_ng::from_str(s).unwrap_or_else(|_| Value::String(s.to_string())))
        .unwrap_or(Value::Null);
    let mut out = Mapping::new();
    out.insert("metadata".into(), Value::Mapping(meta));
    out.insert("spec".into(), spec);
    Value::Mapping(out)
}

/// A resource definition's facts used to resolve a user's kind: `(type, default namespace)`
/// when `kind` names it (its ID, or one of its aliases), case-insensitively.
pub fn matches_definition(def: &Value, kind: &str) -> Option<(String, String)> {
    let spec = def.get("spec")?;
    let ty = spec.get("type")?.as_str()?.to_string();
    let ns = spec
        .get("defaultNamespace")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let want = kind.to_ascii_lowercase();
    let id = def
        .get("metadata")
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let aliases = spec
        .get("allAliases")
        .or_else(|| spec.get("aliases"))
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let hit = id == want
        || ty.to_ascii_lowercase() == want
        || aliases
            .iter()
            .filter_map(Value::as_str)
            .any(|a| a.to_ascii_lowercase() == want);
    hit.then_some((ty, ns))
}
