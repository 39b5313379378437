//! The shipped presets against the Go presets' golden renders (8 cases: cozystack and generic,
//! control plane and worker, legacy v1.11 and multi-document v1.12), compared as YAML documents
//! with comments aside. The cozystack cases gain the five always-on DRBD/LINSTOR sysctls.

mod common;
use common::Dir;
use serde_yaml_ng::Value;

fn fixture(name: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/talm-golden/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

const DRBD: [(&str, &str); 5] = [
    ("net.ipv4.ip_local_port_range", "16384 65535"),
    ("net.ipv4.ip_local_reserved_ports", "30000-32767"),
    ("net.ipv4.tcp_tw_reuse", "1"),
    ("net.ipv4.tcp_syn_retries", "4"),
    ("net.ipv4.tcp_retries2", "8"),
];

/// A project of `preset` named like the golden chart, rendered from the golden node's facts.
fn render(preset: &str, machine: &str, talos: &str) -> Vec<Value> {
    let d = Dir::seeded();
    d.talm(["init", "-p", preset, "-N", preset]).ok();
    d.write("facts.yaml", &fixture("facts.yaml"));
    let o = d
        .talm([
            "template",
            "--facts",
            "facts.yaml",
            "-t",
            &format!("templates/{machine}.yaml"),
            "--talos-version",
            talos,
            "--set",
            "endpoint=https://talm-test.invalid:6443",
            "--set-json",
            r#"{"advertisedSubnets": ["192.168.1.0/24"]}"#,
        ])
        .ok();
    docs(&o.stdout)
}

#[test]
fn golden_renders() {
    for preset in ["cozystack", "generic"] {
        for machine in ["controlplane", "worker"] {
            for (flavour, talos) in [("legacy", "v1.11"), ("multidoc", "v1.12")] {
                let name = format!("{preset}-{machine}-{flavour}");
                let mut expected = docs(&fixture(&format!("{name}.golden.yaml")));
                if preset == "cozystack" {
                    let sysctls = expected[0]["machine"]["sysctls"].as_mapping_mut().unwrap();
                    for (k, v) in DRBD {
                        sysctls.insert(k.into(), v.into());
                    }
                }
                let ours = render(preset, machine, talos);
                assert!(
                    ours == expected,
                    "{name} differs:\n--- ours\n{}\n--- golden (+DRBD)\n{}",
                    ours.iter()
                        .map(|d| serde_yaml_ng::to_string(d).unwrap())
                        .collect::<Vec<_>>()
                        .join("---\n"),
                    expected
                        .iter()
                        .map(|d| serde_yaml_ng::to_string(d).unwrap())
                        .collect::<Vec<_>>()
                        .join("---\n"),
                );
            }
        }
    }
}
