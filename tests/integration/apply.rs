//! `talm apply` through the real binary against simulated nodes: every mode, the dry-run drift
//! preview with redaction, side-patch chains and their refusals, the one-body-one-node rule, the
//! declared-resources gate and direct-patch mode.

use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

/// A generic project with nodes/node1.yaml for the node at `ip`, configured when `configure`.
fn project(nodes: &Nodes, ip: &str, configure: bool) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, ip));
    if configure {
        let boots = nodes.boots(ip);
        d.talm(["apply", "-f", "nodes/node1.yaml", "-i"]).ok();
        nodes.wait_reboot(ip, boots);
    }
    d
}

#[test]
fn every_mode_through_the_binary() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&nodes, &ip, true);
    d.write(
        "sysctl.yaml",
        "machine:\n  sysctls:\n    vm.swappiness: \"1\"\n",
    );
    let chain = ["apply", "-f", "nodes/node1.yaml", "-f", "sysctl.yaml"];
    let run = |mode: &str| {
        d.talm(chain.iter().copied().chain(["-m", mode]))
            .ok()
            .stderr
    };

    let o = run("no-reboot");
    assert!(o.contains(&format!("- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[{ip}], endpoints=[{ip}]")), "{o}");
    assert!(
        o.contains("machine.sysctls.vm.swappiness: (absent) -> 1"),
        "{o}"
    );
    assert!(o.contains("Applied configuration without a reboot"), "{o}");
    let o = run("auto");
    assert!(
        o.contains("0 updates"),
        "the second apply changes nothing: {o}"
    );
    let o = run("staged");
    assert!(
        o.contains("Staged configuration to be applied after the next reboot"),
        "{o}"
    );
    let o = d
        .talm(
            chain
                .iter()
                .copied()
                .chain(["-m", "try", "--timeout", "2m"]),
        )
        .ok()
        .stderr;
    assert!(
        o.contains("will be automatically reverted back in 2m0s"),
        "{o}"
    );
    let boots = nodes.boots(&ip);
    let o = run("reboot");
    assert!(o.contains("Applied configuration with a reboot"), "{o}");
    nodes.wait_reboot(&ip, boots);
    d.talm(chain.iter().copied().chain(["-m", "sometimes"]))
        .expect()
        .stderr(
            "\
error: invalid value 'sometimes' for '--mode <MODE>'
  [possible values: auto, no-reboot, reboot, staged, try]

For more information, try '--help'.
",
        )
        .status(2)
        .run();
    d.talm(
        chain
            .iter()
            .copied()
            .chain(["-m", "try", "--timeout", "soon"]),
    )
    .expect()
    .stderr(
        "\
Error: --timeout \"soon\" is not a duration: time: invalid duration \"soon\"
hint: give Go duration text such as 30s, 2m or 1m30s
",
    )
    .status(1)
    .run();
}

#[test]
fn dry_run_previews_and_redacts() {
    let [ip, fresh_ip] = net::addrs();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&nodes, &ip, true);
    let token = |text: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with("token:"))
            .unwrap()
            .trim()
            .to_string()
    };
    // A changed machine token: a secret field.
    let full = d
        .talm([
            "template",
            "-f",
            "nodes/node1.yaml",
            "--full",
            "--show-secrets",
        ])
        .ok()
        .stdout;
    let old = token(&full).trim_start_matches("token: ").to_string();
    d.write("token.yaml", "machine:\n  token: abcdef.0123456789abcdef\n");
    let o = d
        .talm([
            "apply",
            "-f",
            "nodes/node1.yaml",
            "-f",
            "token.yaml",
            "--dry-run",
        ])
        .ok()
        .stderr;
    assert!(
        o.contains(&format!(
            "machine.token: ***redacted (len={})*** -> ***redacted (len=23)***",
            old.len()
        )),
        "{o}"
    );
    assert!(
        !o.contains("abcdef.0123456789abcdef") && !o.contains(&old),
        "secrets stay out of the output: {o}"
    );
    assert!(o.contains("Dry run summary:"), "{o}");
    let shown = d
        .talm([
            "apply",
            "-f",
            "nodes/node1.yaml",
            "-f",
            "token.yaml",
            "--dry-run",
            "--show-secrets-in-drift",
        ])
        .ok()
        .stderr;
    assert!(
        shown.contains(&format!("machine.token: {old} -> abcdef.0123456789abcdef")),
        "{shown}"
    );
    // Nothing changed on the node.
    let mc = nodes.node(&ip).state().config.clone().unwrap().text;
    assert!(!mc.contains("abcdef.0123456789abcdef"));
    // Maintenance nodes have no config to compare with.
    let fresh = Nodes::start(&[&fresh_ip], |_| {});
    let d2 = project(&fresh, &fresh_ip, false);
    let o = d2
        .talm(["apply", "-f", "nodes/node1.yaml", "-i", "--dry-run"])
        .ok()
        .stderr;
    assert!(
        o.contains(&format!(
            "node {fresh_ip}: talm: drift verification unavailable on maintenance connection"
        )),
        "{o}"
    );
    assert!(fresh.node(&fresh_ip).state().in_maintenance());
}

#[test]
fn chains_and_bodies_are_refused_when_ambiguous() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = project(&nodes, &a, false);
    d.write("side.yaml", &d.read("nodes/node1.yaml"));
    d.refuses(&["apply", "-f", "nodes/node1.yaml", "-f", "side.yaml", "-i"], 1, "\
Error: side-patch side.yaml carries its own modeline; the apply chain treats only the first -f file as the anchor and stacks subsequent files as side-patches
hint: apply node files one at a time: for f in nodes/*.yaml; do talm apply -f $f; done
");
    d.write("plain.yaml", "machine:\n  sysctls:\n    a: \"1\"\n");
    d.write("p.yaml", "machine:\n  sysctls:\n    a: \"1\"\n");
    d.refuses(
        &["apply", "-f", "plain.yaml", "-f", "p.yaml", "-i"],
        1,
        "\
Error: first -f file plain.yaml lacks a modeline; side-patches require a modelined anchor
hint: start the chain with a node file made by `talm template`
",
    );
    d.write(
        "notemplates.yaml",
        &format!("# talm: nodes=[\"{a}\"], endpoints=[\"{a}\"], templates=[]\nmachine: {{}}\n"),
    );
    d.refuses(
        &["apply", "-f", "notemplates.yaml", "-f", "p.yaml", "-i"],
        1,
        "\
Error: anchor notemplates.yaml declares no templates; side-patches require chart rendering
hint: add templates=[...] to the anchor's modeline
",
    );
    d.write("bad-side.yaml", "# talm: nodes=[oops\nmachine: {}\n");
    d.refuses(&[
            "apply",
            "-f",
            "nodes/node1.yaml",
            "-f",
            "bad-side.yaml",
            "-i",
        ], 1, "Error: parsing modeline in side-patch bad-side.yaml: bad-side.yaml:1: error parsing JSON array for key nodes, value [oops: expected value at line 1 column 2\n");
    // One body, two nodes.
    d.refused(&["apply", "-f", "nodes/node1.yaml", "--nodes", &format!("{a},{b}"), "-i"],
        &format!("anchor \"nodes/node1.yaml\" would be stamped onto 2 nodes ([\"{a}\", \"{b}\"]) but carries a non-empty per-node body"));
    assert!(nodes.node(&a).state().in_maintenance() && nodes.node(&b).state().in_maintenance());
    // No files: nothing to do.
    d.talm(["apply"]).ok();
}

#[test]
fn declared_resources_gate() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&nodes, &ip, false);
    d.write("disk.yaml", "machine:\n  install:\n    disk: /dev/sdz\n");
    let o = d.refused(
        &["apply", "-f", "nodes/node1.yaml", "-f", "disk.yaml", "-i"],
        "pre-flight: 1 declared host resource(s) do not resolve on the target node",
    );
    assert!(o.contains("[blocker] declared disk \"/dev/sdz\" not found on target node (source: doc[0].machine.install.disk)"), "{o}");
    assert!(o.contains("  hint: available disks: /dev/nvme0n1"), "{o}");
    assert!(o.contains("hint: correct the values referenced above, or pass --skip-resource-validation to bypass."), "{o}");
    assert!(nodes.node(&ip).state().in_maintenance(), "nothing was sent");
    // Skipped, the node itself refuses the disk.
    d.talm([
        "apply",
        "-f",
        "nodes/node1.yaml",
        "-f",
        "disk.yaml",
        "-i",
        "--skip-resource-validation",
    ])
    .fails_with("install disk \"/dev/sdz\" does not exist on the node");
    d.write(
        "link.yaml",
        "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth9\nmtu: 9000\n",
    );
    let o = d.refused(
        &["apply", "-f", "nodes/node1.yaml", "-f", "link.yaml", "-i"],
        "declared host resource(s) do not resolve",
    );
    assert!(
        o.contains("declared link \"eth9\" not found on target node"),
        "{o}"
    );
    assert!(o.contains("available links: eth0"), "{o}");
}

#[test]
fn direct_patch_mode_applies_a_plain_patch() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    d.write(
        "nodes/raw.yaml",
        &format!("# talm: nodes=[\"{ip}\"], endpoints=[\"{ip}\"], templates=[]\nmachine:\n  type: worker\n  install:\n    disk: /dev/nvme0n1\ncluster:\n  clusterName: mycluster\n  controlPlane:\n    endpoint: https://127.0.0.11:6443\n"),
    );
    d.talm(["apply", "-f", "nodes/raw.yaml", "-i"]).ok();
    let cfg = nodes
        .node(&ip)
        .state()
        .config
        .clone()
        .expect("configured")
        .text;
    assert!(
        cfg.contains("type: worker")
            && cfg.contains("disk: /dev/nvme0n1")
            && cfg.contains("clusterName: mycluster")
            && cfg.contains("endpoint: https://127.0.0.11:6443"),
        "{cfg}"
    );
}
