//! Node facts: the resources a render may look up (links, addresses, routes, disks, ...), from
//! a live node or from a file recorded by `talm discover`, and `lookup(kind, namespace, id)`.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use crate::error::hinted;

/// A node's resources by lookup kind, each `{metadata: {namespace, type, id, ...}, spec}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Facts {
    /// The node the facts were read from, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// The node's Talos version (tag, sha, arch, platform, ...), when discovered live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
    #[serde(default)]
    pub resources: BTreeMap<String, Vec<Value>>,
}

fn field<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(*k))
}

impl Facts {
    /// No facts at all: every lookup answers `{}` (offline rendering).
    pub fn empty() -> Facts {
        Facts::default()
    }

    /// Reads a facts file; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Facts> {
        let value = crate::yaml::parse(text, file)?;
        if value.get("resources").is_none() {
            return Err(hinted(
                format!("{file} has no `resources:` key: it is not a talm facts file"),
                "record one with `talm discover --nodes IP > facts.yaml` (it lists the node's links, addresses, routes, disks... under `resources:`)",
            ));
        }
        serde_yaml_ng::from_value(value).map_err(|e| {
            hinted(
                format!("{file}: not a talm facts file: {e}"),
                "record one with `talm discover --nodes IP > facts.yaml`",
            )
        })
    }

    /// The facts file text.
    pub fn to_yaml(&self) -> Result<String> {
        Ok(crate::yaml::to_string(&serde_yaml_ng::to_value(self)?))
    }

    /// Talos-style lookup. With an `id`: that resource, or `{}`. Without: `{apiVersion: v1,
    /// kind: List, items: [...]}`, or `{}` when there is none. A non-empty `namespace` keeps
    /// only resources in that namespace.
    pub fn lookup(&self, kind: &str, namespace: &str, id: &str) -> Value {
        let items: Vec<&Value> = self
            .resources
            .get(kind)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let items: Vec<&Value> = items
            .into_iter()
            .filter(|r| {
                namespace.is_empty()
                    || field(r, &["metadata", "namespace"])
                        .and_then(Value::as_str)
                        .is_none_or(|ns| ns == namespace)
            })
            .collect();
        if !id.is_empty() {
            return items
                .into_iter()
                .find(|r| field(r, &["metadata", "id"]).and_then(Value::as_str) == Some(id))
                .cloned()
                .unwrap_or_else(|| Value::Mapping(Mapping::new()));
        }
        if items.is_empty() {
            return Value::Mapping(Mapping::new());
        }
        let mut list = Mapping::new();
        list.insert("apiVersion".into(), "v1".into());
        list.insert("kind".into(), "List".into());
        list.insert(
            "items".into(),
            Value::Sequence(items.into_iter().cloned().collect()),
        );
        Value::Mapping(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FACTS: &str = "node: 127.0.0.11\nresources:\n  links:\n    - metadata: {namespace: network, id: eth0}\n      spec: {kind: physical}\n    - metadata: {namespace: other, id: lo}\n      spec: {kind: loopback}\n";

    #[test]
    fn lookup_shapes() {
        let f = Facts::parse(FACTS, "facts.yaml").unwrap();
        assert_eq!(
            f.lookup("links", "", "eth0")["spec"]["kind"].as_str(),
            Some("physical")
        );
        assert_eq!(
            f.lookup("links", "", "nope"),
            Value::Mapping(Mapping::new())
        );
        let list = f.lookup("links", "", "");
        assert_eq!(list["kind"].as_str(), Some("List"));
        assert_eq!(list["items"].as_sequence().unwrap().len(), 2);
        assert_eq!(
            f.lookup("links", "network", "")["items"]
                .as_sequence()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(f.lookup("disks", "", ""), Value::Mapping(Mapping::new()));
        assert_eq!(Facts::parse(&f.to_yaml().unwrap(), "x").unwrap(), f);
    }

    #[test]
    fn bad_facts_files_are_named() {
        let err = Facts::parse("resources: [1]\n", "facts.yaml").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("facts.yaml: not a talm facts file"),
            "{err}"
        );
    }
}
