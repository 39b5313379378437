//! Render throughput of the cozystack preset: node configs per second, patch and full config,
//! for the golden node's facts. Run: `cargo bench --bench render`.

use std::sync::Arc;
use std::time::Instant;

use talm::config::assemble;
use talm::render::{facts::Facts, pipeline};
use talm::secrets::{bundle::Bundle, contract::Contract};

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // A cozystack project as `talm init` writes it (files only; no secrets generation needed).
    for (rel, content) in talm::project::presets::stamped_preset("cozystack", "bench", "0.1.0")
        .into_iter()
        .chain(talm::project::presets::vendored_library("0.1.0"))
    {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
    let facts = Facts::parse(
        include_str!("../tests/fixtures/talm-golden/facts.yaml"),
        "facts.yaml",
    )
    .unwrap();
    let bundle = Bundle::load(
        include_str!("../tests/fixtures/talos/stability/secrets.yaml"),
        "secrets.yaml",
    )
    .unwrap();
    let mut values: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root.join("values.yaml")).unwrap())
            .unwrap();
    values["endpoint"] = "https://10.0.0.1:6443".into();
    let facts = Arc::new(facts);
    let request = |template: &str| pipeline::Request {
        root,
        templates: vec![template.to_string()],
        facts: facts.clone(),
        values: values.clone(),
        chart_name: "bench".into(),
        chart_version: "0.1.0".into(),
        talos_version: "v1.12".into(),
        kubernetes_version: "1.34.3".into(),
    };
    let base = assemble::Base {
        contract: Contract::parse("v1.12").unwrap(),
        kubernetes_version: "1.34.3",
        bundle: &bundle,
    };
    for (label, full) in [("patch", false), ("full config", true)] {
        let n = 300;
        let start = Instant::now();
        for i in 0..n {
            let t = if i % 2 == 0 {
                "templates/controlplane.yaml"
            } else {
                "templates/worker.yaml"
            };
            let out = pipeline::render(&request(t)).unwrap();
            let out = if full {
                assemble::full(&out, &base).unwrap()
            } else {
                out
            };
            std::hint::black_box(out);
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "cozystack {label:<12} {n} renders in {secs:.3} s: {:.0} node configs/s ({:.2} ms each)",
            n as f64 / secs,
            secs * 1e3 / n as f64
        );
    }
}
