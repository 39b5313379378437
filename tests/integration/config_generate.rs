//! Base machine-config generation against Talos's own stability vectors (v1.10–v1.13):
//! `base-*` byte for byte, `overrides-*` as YAML documents before the kubelet patch.

use serde_yaml_ng::Value;
use talm::config::generate::{generate, to_text, Input, MachineType, Options};
use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;

const SECRETS: &str = include_str!("../fixtures/talos/stability/secrets.yaml");

fn fixture(version: &str, name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/talos/stability/{version}/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn input(version: &str, options: Options) -> Input {
    Input {
        cluster_name: "base".into(),
        endpoint: "https://base:6443".into(),
        kubernetes_version: "1.28.0".into(),
        contract: Contract::parse(version).unwrap(),
        bundle: Bundle::load(SECRETS, "secrets.yaml").unwrap(),
        options,
    }
}

const VERSIONS: [&str; 4] = ["v1.10", "v1.11", "v1.12", "v1.13"];

#[test]
fn base_configs_match_talos_byte_for_byte() {
    for v in VERSIONS {
        for (kind, name) in [
            (MachineType::ControlPlane, "base-controlplane"),
            (MachineType::Worker, "base-worker"),
        ] {
            let docs = generate(&input(v, Options::default()), kind).unwrap();
            let text = to_text(&docs);
            let expected = fixture(v, name);
            assert!(
                text == expected,
                "{v} {name} differs:\n--- ours\n{text}\n--- talos\n{expected}"
            );
        }
    }
}

fn overrides() -> Options {
    Options {
        additional_sans: vec!["foo".into(), "bar".into()],
        allow_scheduling_on_control_planes: true,
        dns_domain: Some("example.com".into()),
        install_disk: Some("/dev/vda".into()),
        install_extra_kernel_args: vec!["foo=bar".into(), "bar=baz".into()],
        local_api_server_port: Some(5443),
        sysctls: [("foo".to_string(), "bar".to_string())]
            .into_iter()
            .collect(),
        cni: Some(("custom".into(), vec!["https://example.com/cni.yaml".into()])),
        registry_mirrors: vec![(
            "ghcr.io".into(),
            vec!["https://ghcr.io.my-mirror.com".into()],
        )],
        ..Options::default()
    }
}

fn docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

#[test]
fn override_options_land_where_talos_puts_them() {
    for v in VERSIONS {
        for (kind, name) in [
            (MachineType::ControlPlane, "overrides-controlplane"),
            (MachineType::Worker, "overrides-worker"),
        ] {
            let ours = generate(&input(v, overrides()), kind).unwrap();
            let mut expected = docs(&fixture(v, name));
            // The fixture also carries stability/patch.yaml's kubelet mount, applied after generation.
            let kubelet = expected[0]["machine"]["kubelet"].as_mapping_mut().unwrap();
            assert!(kubelet.remove("extraMounts").is_some());
            assert_eq!(ours, expected, "{v} {name}");
        }
    }
}

#[test]
fn empty_kubernetes_version_leaves_images_out() {
    let mut i = input("v1.13", Options::default());
    i.kubernetes_version = String::new();
    let text = to_text(&generate(&i, MachineType::ControlPlane).unwrap());
    assert!(!text.contains("image:"), "{text}");
}

#[test]
fn overrides_with_the_stability_patch_match_talos_byte_for_byte() {
    let patch_text = std::fs::read_to_string(format!(
        "{}/tests/fixtures/talos/stability/patch.yaml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let patch = talm::config::patch::load_patch(&patch_text).unwrap();
    for v in VERSIONS {
        for (kind, name) in [
            (MachineType::ControlPlane, "overrides-controlplane"),
            (MachineType::Worker, "overrides-worker"),
        ] {
            let docs = generate(&input(v, overrides()), kind).unwrap();
            let base = talm::config::encode::encode(&docs);
            assert_eq!(
                base,
                to_text(&docs),
                "{v} {name}: generation is already in Talos's order"
            );
            let out = talm::config::patch::apply(&base, std::slice::from_ref(&patch)).unwrap();
            let expected = fixture(v, name);
            assert!(
                out == expected,
                "{v} {name} differs:\n--- ours\n{out}\n--- talos\n{expected}"
            );
        }
    }
}
