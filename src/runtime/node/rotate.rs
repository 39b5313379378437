//! Natives of `talm rotate-ca`: the machine-config edits of Talos's rotation steps (accept a
//! new CA, make it the issuing one, drop the old one) over `machine.*` (Talos API) or
//! `cluster.*` (Kubernetes API), each idempotent (a resumed rotation may do a step again), the
//! issuing CA a config holds, and node handles that speak with a talosconfig given as text (the
//! intermediate, the bridge trusting both CAs, and the new one).

use anyhow::{anyhow, Result};
use rhai::{Engine, FuncRegistration, Map, Module};
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use crate::error::hinted;
use crate::runtime::native;
use crate::runtime::node::Node;
use crate::talos::creds;

/// Which CA of the machine config a step changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    /// `machine.ca` / `machine.acceptedCAs`: the Talos API.
    Machine,
    /// `cluster.ca` / `cluster.acceptedCAs`: the Kubernetes API.
    Cluster,
}

impl Section {
    fn parse(s: &str) -> Result<Section> {
        match s {
            "machine" => Ok(Section::Machine),
            "cluster" => Ok(Section::Cluster),
            other => Err(anyhow!(
                "unknown CA section {other:?} (machine: Talos API, cluster: Kubernetes API)"
            )),
        }
    }

    fn key(self) -> &'static str {
        match self {
            Section::Machine => "machine",
            Section::Cluster => "cluster",
        }
    }
}

/// The documents of a machine config.
fn documents(text: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v = Value::deserialize(doc).map_err(|e| anyhow!("the machine config: {e}"))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

fn encode(docs: &[Value]) -> String {
    docs.iter()
        .map(crate::yaml::to_string)
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The `machine` or `cluster` mapping of the v1alpha1 document.
fn section_of(docs: &mut [Value], s: Section) -> Result<&mut Mapping> {
    docs.iter_mut()
        .find(|d| d.get("apiVersion").is_none() && d.get("machine").is_some())
        .and_then(|d| d.get_mut(s.key()))
        .and_then(Value::as_mapping_mut)
        .ok_or_else(|| {
            hinted(
                format!("the node's machine config has no v1alpha1 `{}` section", s.key()),
                "rotate-ca edits the config the node runs; check it with `talm get machineconfig -o yaml`",
            )
        })
}

fn edit(text: &str, section: &str, f: impl FnOnce(&mut Mapping)) -> Result<String> {
    let s = Section::parse(section)?;
    let mut docs = documents(text)?;
    f(section_of(&mut docs, s)?);
    Ok(encode(&docs))
}

/// Runs `f` on `acceptedCAs` (absent: empty), leaving the key out when the list ends empty.
fn with_accepted(m: &mut Mapping, f: impl FnOnce(&mut Vec<Value>)) {
    let mut list = match m.remove("acceptedCAs") {
        Some(Value::Sequence(s)) => s,
        _ => Vec::new(),
    };
    f(&mut list);
    if !list.is_empty() {
        m.insert("acceptedCAs".into(), Value::Sequence(list));
    }
}

fn crt_of(v: &Value) -> &str {
    v.get("crt").and_then(Value::as_str).unwrap_or("")
}

fn ca_map(crt: &str, key: &str) -> Value {
    let mut m = Mapping::new();
    m.insert("crt".into(), crt.into());
    m.insert("key".into(), key.into());
    Value::Mapping(m)
}

/// Appends `crt` to the accepted CAs (step 1); a CA accepted already stays as it is, so a
/// step done again (a resumed rotation) changes nothing.
fn accept(text: &str, section: &str, crt: &str) -> Result<String> {
    edit(text, section, |m| {
        let mut one = Mapping::new();
        one.insert("crt".into(), crt.into());
        with_accepted(m, |l| {
            if !l.iter().any(|c| crt_of(c) == crt) {
                l.push(Value::Mapping(one));
            }
        });
    })
}

/// Drops `crt` from the accepted CAs (step 3; also the new one in step 2).
fn unaccept(text: &str, section: &str, crt: &str) -> Result<String> {
    edit(text, section, |m| {
        with_accepted(m, |l| l.retain(|c| crt_of(c) != crt));
    })
}

/// Makes (`crt`, `key`) the issuing CA (`key` empty on workers, which hold no CA key).
fn issue(text: &str, section: &str, crt: &str, key: &str) -> Result<String> {
    edit(text, section, |m| {
        m.insert("ca".into(), ca_map(crt, key));
    })
}

/// The issuing CA a config holds: #{crt, key} (base64 PEM, key "" on workers).
fn issuing(text: &str, section: &str) -> Result<Map> {
    let s = Section::parse(section)?;
    let mut docs = documents(text)?;
    let m = section_of(&mut docs, s)?;
    let ca = m.get("ca").cloned().unwrap_or(Value::Null);
    let field = |k: &str| ca.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut out = Map::new();
    out.insert("crt".into(), field("crt").into());
    out.insert("key".into(), field("key").into());
    Ok(out)
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("accept")
        .with_comments(["/// The machine config `text` with `crt` (base64 PEM) appended to `<section>.acceptedCAs`; section \"machine\" (Talos API) or \"cluster\" (Kubernetes API)."])
        .set_into_module(&mut m, |text: &str, section: &str, crt: &str| {
            native(|| accept(text, section, crt))
        });
    FuncRegistration::new("unaccept")
        .with_comments([
            "/// The machine config `text` with `crt` removed from `<section>.acceptedCAs`.",
        ])
        .set_into_module(&mut m, |text: &str, section: &str, crt: &str| {
            native(|| unaccept(text, section, crt))
        });
    FuncRegistration::new("issue")
        .with_comments(["/// The machine config `text` with `<section>.ca` set to #{crt, key} (key \"\" for a worker)."])
        .set_into_module(&mut m, |text: &str, section: &str, crt: &str, key: &str| {
            native(|| issue(text, section, crt, key))
        });
    FuncRegistration::new("issuing")
        .with_comments([
            "/// The issuing CA of the machine config `text`: #{crt, key} of `<section>.ca`.",
        ])
        .set_into_module(&mut m, |text: &str, section: &str| {
            native(|| issuing(text, section))
        });
    engine.register_static_module("rotate", m.into());
    FuncRegistration::new("with_talosconfig")
        .with_comments(["/// The same node through the same endpoints, speaking with the current context of the talosconfig `text` (its own connection)."])
        .register_into_engine(engine, |n: &mut Node, text: &str| {
            native(|| {
                let ctx = creds::parse_context(
                    text,
                    "the rotated talosconfig",
                    "",
                    time::OffsetDateTime::now_utc(),
                )?;
                Ok(n.with_auth(ctx.auth))
            })
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: &str = "version: v1alpha1\nmachine:\n    type: controlplane\n    ca:\n        crt: OLD\n        key: OLDKEY\ncluster:\n    ca:\n        crt: K\n        key: KK\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n";

    #[test]
    fn the_three_steps_over_machine() {
        let a = accept(CFG, "machine", "NEW").unwrap();
        let b = issue(&a, "machine", "NEW", "NEWKEY").unwrap();
        let b = accept(&b, "machine", "OLD").unwrap();
        let b = unaccept(&b, "machine", "NEW").unwrap();
        let docs = documents(&b).unwrap();
        assert_eq!(docs.len(), 2, "other documents kept: {b}");
        assert_eq!(docs[0]["machine"]["ca"]["crt"].as_str(), Some("NEW"));
        assert_eq!(
            docs[0]["machine"]["acceptedCAs"][0]["crt"].as_str(),
            Some("OLD")
        );
        assert_eq!(docs[0]["cluster"]["ca"]["crt"].as_str(), Some("K"));
        let c = unaccept(&b, "machine", "OLD").unwrap();
        assert!(!c.contains("acceptedCAs"), "{c}");
        let ca = issuing(&c, "machine").unwrap();
        assert_eq!(ca["key"].clone().into_string().unwrap(), "NEWKEY");
        // Each step done twice is done once.
        assert_eq!(accept(&a, "machine", "NEW").unwrap(), a);
        assert_eq!(unaccept(&c, "machine", "OLD").unwrap(), c);
        assert!(accept(CFG, "kernel", "X")
            .unwrap_err()
            .to_string()
            .contains("unknown CA section"));
    }
}
