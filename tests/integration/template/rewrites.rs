//! template's warnings and node-file rewrites: full configs, encrypted values, bad bodies, syntax errors, offline rewrites, modeline endpoints.

use super::*;

#[test]
fn full_config_and_the_empty_kubernetes_version_warning() {
    let d = project();
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    let o = d
        .talm([
            "template",
            "--facts",
            "facts.yaml",
            "-t",
            "templates/worker.yaml",
            "--full",
        ])
        .ok();
    let first: serde_yaml_ng::Value = serde::Deserialize::deserialize(
        serde_yaml_ng::Deserializer::from_str(&o.stdout)
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["machine"]["type"].as_str(), Some("worker"));
    assert_eq!(
        first["machine"]["kubelet"]["image"].as_str(),
        Some("ghcr.io/siderolabs/kubelet:v1.34.3")
    );
    assert!(
        first["machine"]["token"].as_str().is_some(),
        "the base config carries the secrets"
    );
    assert!(
        o.stdout
            .contains("kind: HostnameConfig\nhostname: \"talos-23c56\""),
        "{}",
        o.stdout
    );
    assert!(!o.stderr.contains("kubernetesVersion is empty"));
    let chart = d
        .read("Chart.yaml")
        .replace("kubernetesVersion: \"v1.34.3\"", "kubernetesVersion: \"\"");
    d.write("Chart.yaml", &chart);
    let o = d
        .talm([
            "template",
            "--facts",
            "facts.yaml",
            "-t",
            "templates/controlplane.yaml",
            "--full",
        ])
        .ok();
    assert!(
        o.stderr
            .contains("WARN: templateOptions.kubernetesVersion is empty"),
        "{}",
        o.stderr
    );
    assert!(
        !o.stdout.contains("image: registry.k8s.io/kube-")
            && !o.stdout.contains("ghcr.io/siderolabs/kubelet"),
        "{}",
        o.stdout
    );
    d.refuses(&[
            "template",
            "--facts",
            "facts.yaml",
            "-t",
            "templates/worker.yaml",
            "--full",
            "--with-secrets",
            "nope.yaml",
        ], 1, "\
Error: failed to load secrets bundle: cannot read $DIR/nope.yaml: No such file or directory (os error 2)
hint: run `talm init -d` to open secrets.encrypted.yaml, or pass --with-secrets
");
}

#[test]
fn encrypted_values_only_on_the_command_line_are_warned_about_with_in_place() {
    let d = project();
    d.write("values-secret.yaml", "clusterDomain: hunter2.example\n");
    d.talm(["init", "--encrypt"]).ok();
    probe_node_file(&d, "nodes/n.yaml");
    d.talm([
        "template",
        "--offline",
        "-f",
        "nodes/n.yaml",
        "-I",
        "--values",
        "values-secret.encrypted.yaml",
    ])
    .expect()
    .stdout("")
    .stderr("\
warning: values-secret.encrypted.yaml holds encrypted values that were omitted from the rendered node file, but it is not in Chart.yaml templateOptions.valueFiles; `talm apply` will re-render WITHOUT these secrets and the fields will be absent from the applied config. Add it to templateOptions.valueFiles (or re-pass --values values-secret.encrypted.yaml to apply).
- talm: file=nodes/n.yaml, nodes=[1.2.3.4], endpoints=[127.0.0.11], templates=[templates/probe.yaml]
Updated.
")
    .run();
    assert!(!d.read("nodes/n.yaml").contains("hunter2"));
}

#[test]
fn a_node_body_that_is_not_yaml_is_refused() {
    let d = project();
    d.write("nodes/n.yaml", "# talm: nodes=[\"1.2.3.4\"], templates=[\"templates/probe.yaml\"]\nmachine:\n  type: [worker\n");
    d.refuses(&["template", "--offline", "-f", "nodes/n.yaml", "-I"], 1, "\
Error: nodes/n.yaml:4:1: the node file's body is not YAML: did not find expected ',' or ']'
hint: the body below the modeline must be a Talos config patch in YAML; fix it, or re-create the file with `talm template ... -I`
");
}

#[test]
fn template_syntax_errors_say_error_once() {
    let d = Dir::project("generic");
    d.write("templates/bad.yaml", "{{ broken\n");
    let o = d
        .talm(["template", "-t", "templates/bad.yaml", "--offline"])
        .expect()
        .stderr(
            "\
Error: Unexpected end of input
 --> bad.yaml:1:10
  |
1 | {{ broken
  |          ^
hint: fix the template at the position shown
",
        )
        .status(1)
        .run();
    assert!(
        o.stderr
            .starts_with("Error: Unexpected end of input\n --> bad.yaml:1:10\n"),
        "{}",
        o.stderr
    );
}

/// The bond fixture's node (default route on enp3s0, hostname node1, resolver 192.0.2.53) on
/// an NVMe system disk, so no preset default can stand in for what discovery found.
fn nvme_facts() -> String {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/values/facts-bond.yaml"
    );
    std::fs::read_to_string(p)
        .unwrap()
        .replace("devPath: /dev/sda", "devPath: /dev/nvme0n1")
}

#[test]
fn an_offline_rewrite_never_drops_what_discovery_found() {
    let d = project();
    d.write("facts.yaml", &nvme_facts());
    d.write(
        "nodes/n1.yaml",
        "# talm: nodes=[\"127.0.0.11\"], endpoints=[\"127.0.0.11\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    let o = d
        .talm([
            "template",
            "--facts",
            "facts.yaml",
            "-f",
            "nodes/n1.yaml",
            "-I",
        ])
        .ok();
    assert!(o.stderr.ends_with("Updated.\n"), "{}", o.stderr);
    let rendered = d.read("nodes/n1.yaml");
    assert!(
        rendered.contains("    disk: \"/dev/nvme0n1\"\n"),
        "{rendered}"
    );
    // An in-place render without facts (`--offline`, as docs/commands.md says) refuses, naming each loss.
    let err = d.refuses(&["template", "--offline", "-f", "nodes/n1.yaml", "-I"], 1, "\
- talm: file=nodes/n1.yaml, nodes=[127.0.0.11], endpoints=[127.0.0.11], templates=[templates/controlplane.yaml]
Error: nodes/n1.yaml: rendering it without the node's facts would drop what discovery put in it: the install disk (machine.install.disk: /dev/nvme0n1); the hostname (HostnameConfig hostname: node1); the nameservers (ResolverConfig); the addresses and routes of enp3s0 (LinkConfig), enp5s0 (LinkConfig); the file was left as it was
hint: render it with the node's facts: `talm template --facts FILE -f nodes/n1.yaml -I` (`talm discover -n 127.0.0.11 > FILE` records them), or from the node itself: `talm template -f nodes/n1.yaml -I`
");
    assert_eq!(
        err,
        "- talm: file=nodes/n1.yaml, nodes=[127.0.0.11], endpoints=[127.0.0.11], templates=[templates/controlplane.yaml]\n\
         Error: nodes/n1.yaml: rendering it without the node's facts would drop what discovery put in it: \
         the install disk (machine.install.disk: /dev/nvme0n1); the hostname (HostnameConfig hostname: node1); \
         the nameservers (ResolverConfig); the addresses and routes of enp3s0 (LinkConfig), enp5s0 (LinkConfig); \
         the file was left as it was\n\
         hint: render it with the node's facts: `talm template --facts FILE -f nodes/n1.yaml -I` \
         (`talm discover -n 127.0.0.11 > FILE` records them), or from the node itself: `talm template -f nodes/n1.yaml -I`\n"
    );
    assert!(!err.contains("Updated."));
    // With the facts it re-renders as before; a file rendered offline stays offline-renderable.
    d.talm([
        "template",
        "--facts",
        "facts.yaml",
        "-f",
        "nodes/n1.yaml",
        "-I",
    ])
    .ok();
    assert_eq!(d.read("nodes/n1.yaml"), rendered);
    d.write(
        "nodes/n2.yaml",
        "# talm: nodes=[\"127.0.0.12\"], endpoints=[\"127.0.0.12\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    d.talm(["template", "--offline", "-f", "nodes/n2.yaml", "-I"])
        .ok();
    d.talm(["template", "--offline", "-f", "nodes/n2.yaml", "-I"])
        .expect()
        .stdout("")
        .stderr("\
- talm: file=nodes/n2.yaml, nodes=[127.0.0.12], endpoints=[127.0.0.12], templates=[templates/controlplane.yaml]
Updated.
")
        .run();
}

#[test]
fn empty_advertised_subnets_name_the_value_to_set() {
    // The cozystack preset as init writes it: advertisedSubnets: [].
    let d = Dir::project("cozystack");
    d.write(
        "nodes/n1.yaml",
        "# talm: nodes=[\"127.0.0.11\"], endpoints=[\"127.0.0.11\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    d.refuses(&["template", "--offline", "-f", "nodes/n1.yaml", "-I"], 1, "\
- talm: file=nodes/n1.yaml, nodes=[127.0.0.11], endpoints=[127.0.0.11], templates=[templates/controlplane.yaml]
Error: values.yaml: `advertisedSubnets` was left empty and talm could not derive a default from discovery. No default-gateway-bearing link was found on the node. This field is a cluster-wide subnet selector fed to kubelet and etcd; `talm template` is invoked once per node and cannot merge per-node values into one cluster value. Either set advertisedSubnets explicitly in values.yaml, or ensure the node has a default route before running `talm template`.
  --> config.tera:28:30
   |
28 | {%- if not node.subnets %}{{ fail(message=node.subnets_error, hint=node.subnets_hint) }}{% endif %}
   |                              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^

note: called from controlplane.yaml:2:53
  |
2 | {%- set machine_type = \"controlplane\" -%}{% include \"config.tera\" -%}
  |                                                     ^^^^^^^^^^^^^
hint: set advertisedSubnets in values.yaml to the nodes' network (for example advertisedSubnets: [192.168.100.0/24]), or render with the node's facts (--facts FILE, or without --offline) so talm derives it from the default route
");
}

#[test]
fn modeline_endpoints_come_from_flags_node_files_or_the_context() {
    let d = project();
    let first_line = |args: &[&str]| {
        let o = d.talm(args).ok();
        o.stdout.lines().next().unwrap().to_string()
    };
    let args = [
        "template",
        "--offline",
        "-t",
        "templates/controlplane.yaml",
        "--nodes",
        "127.0.0.11",
    ];
    // No -e: the talosconfig context's endpoints (init --endpoints 127.0.0.11).
    assert_eq!(
        first_line(&args),
        r#"# talm: nodes=["127.0.0.11"], endpoints=["127.0.0.11"], templates=["templates/controlplane.yaml"]"#
    );
    // Another talosconfig: its context's.
    let tc = d
        .read("talosconfig")
        .replace("- 127.0.0.11", "- 127.0.0.21\n            - 127.0.0.22");
    d.write("other.talosconfig", &tc);
    let mut other = args.to_vec();
    other.extend(["--talosconfig", "other.talosconfig"]);
    assert_eq!(
        first_line(&other),
        r#"# talm: nodes=["127.0.0.11"], endpoints=["127.0.0.21","127.0.0.22"], templates=["templates/controlplane.yaml"]"#
    );
    // No talosconfig: none, never a made-up address.
    d.remove("talosconfig");
    assert_eq!(
        first_line(&args),
        r#"# talm: nodes=["127.0.0.11"], endpoints=[], templates=["templates/controlplane.yaml"]"#
    );
    d.write(
        "nodes/n1.yaml",
        "# talm: nodes=[\"127.0.0.11\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    let o = d
        .talm(["template", "--offline", "-f", "nodes/n1.yaml"])
        .ok();
    assert!(
        o.stdout.starts_with(
            "# talm: nodes=[\"127.0.0.11\"], endpoints=[], templates=[\"templates/controlplane.yaml\"]\n"
        ),
        "{}",
        o.stdout
    );
}
