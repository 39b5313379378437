//! Generated and rendered machine configs against Talos's own JSON schemas (v1.11–v1.13), each
//! document on its own, `persist` dropped from the v1alpha1 document as Talos's schema test does.

use crate::common::Dir;
use serde_json::Value as Json;
use talm::config::generate::{generate, Input, MachineType, Options};
use talm::secrets::{bundle::Bundle, contract::Contract};

/// A schema version: its definitions, to validate each document against its own kind.
struct Schema {
    defs: Json,
}

fn schema(version: &str) -> Schema {
    let text = std::fs::read_to_string(format!(
        "{}/crates/wire/schemas/config.schema.{version}.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let schema: Json = serde_json::from_str(&text).unwrap();
    Schema {
        defs: schema["$defs"].clone(),
    }
}

impl Schema {
    /// The definition for a document: the typed kind named by apiVersion/kind, else v1alpha1.
    fn def_for(&self, doc: &Json) -> String {
        let (Some(api), Some(kind)) = (doc.get("apiVersion"), doc.get("kind")) else {
            return "v1alpha1.Config".into();
        };
        for (name, def) in self.defs.as_object().unwrap() {
            let props = &def["properties"];
            let has =
                |k: &str, v: &Json| props[k]["enum"].as_array().is_some_and(|e| e.contains(v));
            if has("apiVersion", api) && has("kind", kind) {
                return name.clone();
            }
        }
        panic!("no schema definition for {api}/{kind}");
    }

    fn iter_errors(&self, doc: &Json) -> Vec<String> {
        let def = self.def_for(doc);
        let schema = serde_json::json!({"$ref": format!("#/$defs/{def}"), "$defs": self.defs});
        let v = jsonschema::draft202012::new(&schema).unwrap();
        v.iter_errors(doc)
            .map(|e| format!("{def} {}: {e}", e.instance_path()))
            .collect()
    }
}

/// Validates every document of `text`; returns the failures.
fn validate(v: &Schema, text: &str) -> Vec<String> {
    let mut errors = Vec::new();
    for (i, d) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let doc: serde_yaml_ng::Value = serde::Deserialize::deserialize(d).unwrap();
        if doc.is_null() {
            continue;
        }
        let mut json: Json = serde_json::to_value(&doc).unwrap();
        if let Some(m) = json.as_object_mut() {
            m.remove("persist");
        }
        for e in v.iter_errors(&json) {
            errors.push(format!("doc {i} {e}"));
        }
    }
    errors
}

#[test]
fn generated_configs_are_schema_valid() {
    let bundle = Bundle::load(crate::common::STABILITY_SECRETS, "secrets.yaml").unwrap();
    for v in ["v1.11", "v1.12", "v1.13"] {
        let validator = schema(v);
        for kind in [MachineType::ControlPlane, MachineType::Worker] {
            let input = Input {
                cluster_name: "base".into(),
                endpoint: "https://base:6443".into(),
                kubernetes_version: "1.34.3".into(),
                contract: Contract::parse(v).unwrap(),
                bundle: bundle.clone(),
                options: Options {
                    additional_sans: vec!["foo".into()],
                    registry_mirrors: vec![(
                        "ghcr.io".into(),
                        vec!["https://m.example.com".into()],
                    )],
                    ..Options::default()
                },
            };
            let text = talm::config::generate::to_text(&generate(&input, kind).unwrap());
            let errors = validate(&validator, &text);
            assert!(errors.is_empty(), "{v} {kind:?}: {errors:#?}");
        }
    }
    // The validator does catch a bad document.
    let errors = validate(&schema("v1.13"), "machine:\n  type: init\n  bogus: 1\n");
    assert!(errors.len() >= 2, "{errors:?}");
}

#[test]
fn full_preset_renders_are_schema_valid() {
    for (preset, talos, schema_version) in [
        ("cozystack", "v1.12", "v1.12"),
        ("generic", "v1.12", "v1.12"),
        ("generic", "v1.11", "v1.11"),
        ("cozystack", "v1.13", "v1.12"),
    ] {
        let d = Dir::seeded();
        d.talm([
            "init",
            "-p",
            preset,
            "-N",
            preset,
            "--endpoints",
            "10.0.0.1",
        ])
        .ok();
        d.write("facts.yaml", crate::common::GOLDEN_FACTS);
        for machine in ["controlplane", "worker"] {
            let o = d
                .talm([
                    "template",
                    "--facts",
                    "facts.yaml",
                    "-t",
                    &format!("templates/{machine}.yaml"),
                    "--talos-version",
                    talos,
                    "--full",
                ])
                .ok();
            let errors = validate(&schema(schema_version), &o.stdout);
            assert!(
                errors.is_empty(),
                "{preset} {machine} {talos}: {errors:#?}\n{}",
                o.stdout
            );
        }
    }
}
