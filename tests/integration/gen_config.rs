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
        .expect()
        .stderr(
            "\
Error: --output - writes to stdout and needs exactly one --output-types value
hint: for example: talm gen config c https://c:6443 -o - -t controlplane
",
        )
        .status(1)
        .run();
    d.talm(args).ok();
    let before = d.snapshot();
    d.talm(args)
        .expect()
        .stderr(
            "\
Error: \"$DIR/controlplane.yaml\" already exists, use --force to overwrite
hint: pass --force, or write elsewhere with -o DIR
",
        )
        .status(1)
        .run();
    assert_eq!(d.snapshot(), before);
    d.talm(args.iter().copied().chain(["--force"])).ok();
    d.talm(["gen", "config", "base", "base:6443"])
        .expect()
        .stderr(
            "\
Error: endpoint \"base:6443\" is not a URL
hint: pass the control-plane URL, e.g. https://10.0.0.1:6443
",
        )
        .status(1)
        .run();
    d.talm(["gen", "config", "Bad_Name", "https://base:6443"])
        .expect().stderr("\
Error: cluster name \"Bad_Name\" is not a valid DNS-1123 subdomain: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
hint: use lower-case letters, digits, '-' and '.'
").status(1).run();
    d.talm([
        "gen",
        "config",
        "base",
        "https://base:6443",
        "--with-secrets",
        "missing.yaml",
    ])
    .expect()
    .stderr(
        "\
Error: cannot read missing.yaml: No such file or directory (os error 2)
hint: check that the file exists and is readable by you
",
    )
    .status(1)
    .run();
    d.talm(["gen", "config", "base", "https://base:6443", "-t", "nope"])
        .expect()
        .stderr(
            "\
error: invalid value 'nope' for '--output-types <OUTPUT_TYPES>'
  [possible values: controlplane, worker, talosconfig]

For more information, try '--help'.
",
        )
        .status(1)
        .run();
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
