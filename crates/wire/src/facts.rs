//! Node facts: the resources a render may look up (links, addresses, routes, disks, ...), from
//! a live node (discovery) or from a file recorded by `talm discover`, and `lookup(kind,
//! namespace, id)` (indexed by kind and id on first use).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::OnceLock;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_yaml_ng::{Mapping, Value};

use talm_base::error::hinted;

/// A node's resources by lookup kind, each `{metadata: {namespace, type, id, ...}, spec}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Facts {
    /// The node the facts were read from, when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node: String,
    /// The node's Talos version (tag, sha, arch, platform, ...), when discovered live.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Value>,
    #[serde(default)]
    pub resources: BTreeMap<String, Vec<Value>>,
    /// Built from `resources` on the first lookup (fill `resources` before that; leave it as
    /// `Memo::default()` when building facts by hand).
    #[serde(skip)]
    pub derived: Memo,
}

/// The indexes of a node's facts, computed once.
#[derive(Debug, Clone, Default)]
pub struct Memo(OnceLock<Derived>);

/// What a render reads from the facts again and again, computed once.
#[derive(Debug, Clone, Default)]
struct Derived {
    /// kind -> id -> positions in `resources[kind]`, in order.
    ids: HashMap<String, HashMap<String, Vec<usize>>>,
    /// The strings of `resources` that could break out of a scalar (`render::verify`).
    risky: talm_base::yaml::risky::Risky,
    /// The keyed digest kept renders tell facts apart by (`render::kept`).
    digest: (u64, u64),
}

impl PartialEq for Facts {
    fn eq(&self, other: &Facts) -> bool {
        self.node == other.node
            && self.version == other.version
            && self.resources == other.resources
    }
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
        let value = talm_base::yaml::parse(text, file)?;
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
        Ok(talm_base::yaml::to_string(&serde_yaml_ng::to_value(self)?))
    }

    fn derived(&self) -> &Derived {
        self.derived.0.get_or_init(|| {
            let mut ids: HashMap<String, HashMap<String, Vec<usize>>> = HashMap::new();
            for (kind, items) in &self.resources {
                let by_id = ids.entry(kind.clone()).or_default();
                for (i, r) in items.iter().enumerate() {
                    if let Some(id) = field(r, &["metadata", "id"]).and_then(Value::as_str) {
                        by_id.entry(id.to_string()).or_default().push(i);
                    }
                }
            }
            let json = serde_json::to_value(&self.resources).unwrap_or_default();
            let risky = talm_base::yaml::risky::risky_in("facts", &json);
            let digest = talm_base::caches::digest::digest(|h| {
                self.node.hash(h);
                let null = Value::Null;
                talm_base::yaml::ordered::hash(self.version.as_ref().unwrap_or(&null), h);
                h.write_u8(u8::from(self.version.is_some()));
                h.write_usize(self.resources.len());
                for (kind, items) in &self.resources {
                    kind.hash(h);
                    h.write_usize(items.len());
                    items
                        .iter()
                        .for_each(|r| talm_base::yaml::ordered::hash(r, h));
                }
            });
            Derived { ids, risky, digest }
        })
    }

    /// A keyed digest of the facts (computed once, like the indexes): the same for equal facts
    /// within one process.
    pub fn digest(&self) -> (u64, u64) {
        self.derived().digest
    }

    /// The strings of the resources that could break out of a scalar (found once).
    pub fn risky(&self) -> &talm_base::yaml::risky::Risky {
        &self.derived().risky
    }

    /// Talos-style lookup. With an `id`: that resource, or `{}`. Without: `{apiVersion: v1,
    /// kind: List, items: [...]}`, or `{}` when there is none. A non-empty `namespace` keeps
    /// only resources in that namespace.
    pub fn lookup(&self, kind: &str, namespace: &str, id: &str) -> Value {
        match self.find(kind, namespace, id) {
            Found::One(r) => r.clone(),
            Found::List(items) => {
                let mut list = Mapping::new();
                list.insert("apiVersion".into(), "v1".into());
                list.insert("kind".into(), "List".into());
                list.insert(
                    "items".into(),
                    Value::Sequence(items.into_iter().cloned().collect()),
                );
                Value::Mapping(list)
            }
            Found::Nothing => Value::Mapping(Mapping::new()),
        }
    }

    /// What [`Facts::lookup`] answers, as references into the facts.
    pub fn find(&self, kind: &str, namespace: &str, id: &str) -> Found<'_> {
        let in_namespace = |r: &Value| {
            namespace.is_empty()
                || field(r, &["metadata", "namespace"])
                    .and_then(Value::as_str)
                    .is_none_or(|ns| ns == namespace)
        };
        let all = self.resources.get(kind).map(Vec::as_slice).unwrap_or(&[]);
        if !id.is_empty() {
            let at = self
                .derived()
                .ids
                .get(kind)
                .and_then(|by_id| by_id.get(id))
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            return at
                .iter()
                .map(|&i| &all[i])
                .find(|r| in_namespace(r))
                .map_or(Found::Nothing, Found::One);
        }
        let items: Vec<&Value> = all.iter().filter(|r| in_namespace(r)).collect();
        if items.is_empty() {
            Found::Nothing
        } else {
            Found::List(items)
        }
    }
}

/// What a lookup found: one resource, a list of them, or nothing.
pub enum Found<'a> {
    One(&'a Value),
    List(Vec<&'a Value>),
    Nothing,
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
