//! `talm gen config` through the binary: Talos's stability base configs reproduced from the
//! stability secrets, for every contract v1.10–v1.13.

use crate::common::Dir;

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/tests/fixtures/talos/stability/{rel}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

#[test]
fn reproduces_talos_stability_base_configs() {
    for v in ["v1.10", "v1.11", "v1.12", "v1.13"] {
        let d = Dir::new();
        d.write("secrets.yaml", crate::common::STABILITY_SECRETS);
        let o = d
            .talm([
                "gen",
                "config",
                "base",
                "https://base:6443",
                "--with-secrets",
                "secrets.yaml",
                "--kubernetes-version",
                "1.28.0",
                "--talos-version",
                v,
            ])
            .ok();
        assert!(o.stderr.contains("Created"), "{}", o.stderr);
        assert_eq!(
            d.read("controlplane.yaml"),
            fixture(&format!("{v}/base-controlplane.yaml")),
            "{v}"
        );
        assert_eq!(
            d.read("worker.yaml"),
            fixture(&format!("{v}/base-worker.yaml")),
            "{v}"
        );
        assert_eq!(d.mode("controlplane.yaml"), 0o600);
        let tc = d.read("talosconfig");
        assert!(
            tc.starts_with("context: base\ncontexts:\n    base:\n        endpoints: []\n"),
            "{tc}"
        );
    }
}

#[test]
fn stdout_output_and_refusals() {
    let d = Dir::new();
    d.write("secrets.yaml", crate::common::STABILITY_SECRETS);
    let args = [
        "gen",
        "config",
        "base",
        "https://base:6443",
        "--with-secrets",
        "secrets.yaml",
        "--kubernetes-version",
        "v1.28.0",
        "--talos-version",
        "v1.13",
    ];
    let o = d
        .talm(args.iter().copied().chain(["-o", "-", "-t", "worker"]))
        .ok();
    assert_eq!(o.stdout, fixture("v1.13/base-worker.yaml"));
    d.talm(args.iter().copied().chain(["-o", "-"]))
        .fails_with("needs exactly one --output-types value");
    d.talm(args).ok();
    let before = d.snapshot();
    d.talm(args)
        .fails_with("already exists, use --force to overwrite");
    assert_eq!(d.snapshot(), before);
    d.talm(args.iter().copied().chain(["--force"])).ok();
    d.talm(["gen", "config", "base", "base:6443"])
        .fails_with("is not a URL");
    d.talm(["gen", "config", "Bad_Name", "https://base:6443"])
        .fails_with("is not a valid DNS-1123 subdomain");
    d.talm([
        "gen",
        "config",
        "base",
        "https://base:6443",
        "--with-secrets",
        "missing.yaml",
    ])
    .fails_with("cannot read missing.yaml");
    d.talm(["gen", "config", "base", "https://base:6443", "-t", "nope"])
        .fails_with("invalid value 'nope'");
}

#[test]
fn generates_fresh_secrets_when_none_are_given() {
    let d = Dir::new();
    let o = d
        .talm([
            "gen",
            "config",
            "fresh",
            "https://10.0.0.1:6443",
            "-t",
            "controlplane,talosconfig",
        ])
        .ok();
    assert!(o.stderr.contains("generating PKI and tokens"));
    let cp = d.read("controlplane.yaml");
    assert!(
        cp.contains("image: ghcr.io/siderolabs/kubelet:v1.36.2"),
        "{cp}"
    );
    assert!(!d.exists("worker.yaml"));
    assert!(d.exists("talosconfig"));
}
