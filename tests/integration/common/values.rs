//! Shared helpers of the values-mapping tests: a preset project rendered through the binary
//! with a values file and node facts, its output as YAML documents.
#![allow(dead_code)]

use super::Dir;
use serde_yaml_ng::Value;

/// The golden node: eth0 with 192.168.201.10/24 and the default route via 192.168.201.1.
pub const GOLDEN_FACTS: &str = include_str!("../../fixtures/talm-golden/facts.yaml");

/// The §9 node: enp3s0 (default route), enp4s0, enp5s0 (10.0.0.5/24, mtu 9000).
pub const BOND_FACTS: &str = include_str!("../../fixtures/values/facts-bond.yaml");

/// A project of `preset` whose renders read `facts`.
pub fn project(preset: &str, facts: &str) -> Dir {
    let d = Dir::seeded();
    d.talm(["init", "-p", preset, "-N", preset]).ok();
    d.write("facts.yaml", facts);
    d
}

fn args<'a>(machine: &'a str, talos: &'a str) -> Vec<String> {
    vec![
        "template".into(),
        "--facts".into(),
        "facts.yaml".into(),
        "-t".into(),
        format!("templates/{machine}.yaml"),
        "--talos-version".into(),
        talos.into(),
        "--set".into(),
        "endpoint=https://192.0.2.100:6443".into(),
        "--values".into(),
        "v.yaml".into(),
    ]
}

/// The YAML documents of a text, empty ones left out.
pub fn docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Renders `machine` (controlplane / worker) at `talos` with `values` (YAML text) on top of the
/// preset's values; the documents.
pub fn render(d: &Dir, machine: &str, talos: &str, values: &str) -> Vec<Value> {
    d.write("v.yaml", values);
    docs(&d.talm(args(machine, talos)).ok().stdout)
}

/// The raw text of a render.
pub fn render_text(d: &Dir, machine: &str, talos: &str, values: &str) -> String {
    d.write("v.yaml", values);
    d.talm(args(machine, talos)).ok().stdout
}

/// Renders and expects a refusal whose message contains `needle`; returns stderr.
pub fn refused(d: &Dir, machine: &str, talos: &str, values: &str, needle: &str) -> String {
    d.write("v.yaml", values);
    d.talm(args(machine, talos)).fails_with(needle).stderr
}

/// The documents of a given kind (multi-document renders).
pub fn kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter()
        .filter(|d| d["kind"].as_str() == Some(kind))
        .collect()
}

/// The kinds of the documents after the first, in order.
pub fn kinds(docs: &[Value]) -> Vec<String> {
    docs.iter()
        .skip(1)
        .map(|d| d["kind"].as_str().unwrap_or("").to_string())
        .collect()
}

/// YAML text parsed as one value.
pub fn y(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

/// Checks a multi-document render the way Talos's config loader does (unknown keys, unknown
/// kinds, duplicate documents), after dropping the preset's `$patch: delete` directive.
pub fn schema_check(docs: &[Value]) {
    let mut docs = docs.to_vec();
    if let Some(m) = docs[0]["machine"].as_mapping_mut() {
        m.remove("nodeLabels");
    }
    let text = docs
        .iter()
        .map(|d| serde_yaml_ng::to_string(d).unwrap())
        .collect::<Vec<_>>()
        .join("---\n");
    if let Err(e) = talm::config::patch::decode_check(&text) {
        panic!("{e:#}\n{text}");
    }
}
