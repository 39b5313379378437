//! `talm apply` through the real binary against simulated nodes: every mode, the dry-run drift
//! preview with redaction, side-patch chains and their refusals, the one-body-one-node rule, the
//! declared-resources gate and direct-patch mode.

use crate::common::expect::addrs;
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
    #[track_caller]
    fn run(d: &Dir, args: &[&str], stdout: &str, stderr: &str) {
        d.talm(args)
            .expect()
            .mask(addrs)
            .stdout(stdout)
            .stderr(stderr)
            .run();
    }
    let mode = |m: &'static str| {
        let mut args = chain.to_vec();
        args.extend(["-m", m]);
        args
    };

    run(&d, &mode("no-reboot"), "", "\
- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
  ~ MachineConfig
      machine.sysctls.vm.swappiness: (absent) -> 1
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Applied configuration without a reboot
");
    // The second apply changes nothing.
    run(&d, &mode("auto"), "", "\
- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Applied configuration without a reboot
");
    run(&d, &mode("staged"), "", "\
- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Staged configuration to be applied after the next reboot
");
    let mut try_2m = mode("try");
    try_2m.extend(["--timeout", "2m"]);
    run(&d, &try_2m, "", "\
- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Applied configuration without a reboot
The config is applied in 'try' mode and will be automatically reverted back in 2m0s
");
    let boots = nodes.boots(&ip);
    run(&d, &mode("reboot"), "", "\
- talm: file=nodes/node1.yaml, side-patches=[sysctl.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Applied configuration with a reboot
");
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
        .status(1)
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
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/node1.yaml, side-patches=[token.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
  ~ MachineConfig
      machine.token: ***redacted (len=23)*** -> ***redacted (len=23)***
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Dry run summary:
Applied configuration with a reboot (skipped in dry-run).
Config diff:

--- a
+++ b
@@ -3,7 +3,7 @@
 persist: true
 machine:
     type: controlplane
-    token: ***
+    token: ***
     ca:
         crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJQakNCOGFBREFnRUNBaEI5cStGVXpodzkycHVPemtpNzB1eGRNQVVHQXl0bGNEQVFNUTR3REFZRFZRUUsKRXdWMFlXeHZjekFlRncweU16RXdNVEl4TURRMk1EbGFGdzB6TXpFd01Ea3hNRFEyTURsYU1CQXhEakFNQmdOVgpCQW9UQlhSaGJHOXpNQ293QlFZREsyVndBeUVBaHVLczZxeCtKWi8wWG8ybXdpQUNjK1EwSVYySGhMd3ozVTZICmUxemZjS2lqWVRCZk1BNEdBMVVkRHdFQi93UUVBd0lDaERBZEJnTlZIU1VFRmpBVUJnZ3JCZ0VGQlFjREFRWUkKS3dZQkJRVUhBd0l3RHdZRFZSMFRBUUgvQkFVd0F3RUIvekFkQmdOVkhRNEVGZ1FVSlgzWlVNRktWWFZ5NWhKWQozZG9NWENpVEJZRXdCUVlESzJWd0EwRUFCbUxrbDhITmQ3cUpEN3VqQkk2UG9abVRQQWlEcU9GQ0NTVDZJYlZDClF3UzQ1bk1tMldtalRIc3ZrYU5FQ0dneTBhQXJaaFdsbnVYWUswY0t3Z2VJQ0E9PQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==
         key: ***

")
        .run()
        .stderr;
    assert!(
        !o.contains("abcdef.0123456789abcdef") && !o.contains(&old),
        "secrets stay out of the output: {o}"
    );
    d.talm([
        "apply",
        "-f",
        "nodes/node1.yaml",
        "-f",
        "token.yaml",
        "--dry-run",
        "--show-secrets-in-drift",
    ])
    .expect()
    .mask(addrs)
    .replace(&old, "$OLD_TOKEN")
    .stdout("")
    .stderr("\
- talm: file=nodes/node1.yaml, side-patches=[token.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
  ~ MachineConfig
      machine.token: $OLD_TOKEN -> abcdef.0123456789abcdef
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Dry run summary:
Applied configuration with a reboot (skipped in dry-run).
Config diff:

--- a
+++ b
@@ -3,7 +3,7 @@
 persist: true
 machine:
     type: controlplane
-    token: $OLD_TOKEN
+    token: abcdef.0123456789abcdef
     ca:
         crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJQakNCOGFBREFnRUNBaEI5cStGVXpodzkycHVPemtpNzB1eGRNQVVHQXl0bGNEQVFNUTR3REFZRFZRUUsKRXdWMFlXeHZjekFlRncweU16RXdNVEl4TURRMk1EbGFGdzB6TXpFd01Ea3hNRFEyTURsYU1CQXhEakFNQmdOVgpCQW9UQlhSaGJHOXpNQ293QlFZREsyVndBeUVBaHVLczZxeCtKWi8wWG8ybXdpQUNjK1EwSVYySGhMd3ozVTZICmUxemZjS2lqWVRCZk1BNEdBMVVkRHdFQi93UUVBd0lDaERBZEJnTlZIU1VFRmpBVUJnZ3JCZ0VGQlFjREFRWUkKS3dZQkJRVUhBd0l3RHdZRFZSMFRBUUgvQkFVd0F3RUIvekFkQmdOVkhRNEVGZ1FVSlgzWlVNRktWWFZ5NWhKWQozZG9NWENpVEJZRXdCUVlESzJWd0EwRUFCbUxrbDhITmQ3cUpEN3VqQkk2UG9abVRQQWlEcU9GQ0NTVDZJYlZDClF3UzQ1bk1tMldtalRIc3ZrYU5FQ0dneTBhQXJaaFdsbnVYWUswY0t3Z2VJQ0E9PQotLS0tLUVORCBDRVJUSUZJQ0FURS0tLS0tCg==
         key: LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0KTUM0Q0FRQXdCUVlESzJWd0JDSUVJTURXbklEdVpSdlhQcW1tbSt6bk15SWMrdk53ZjdnYksvSmR3WC9iN2d1RQotLS0tLUVORCBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0K

")
    .run();
    // Nothing changed on the node.
    let mc = nodes.node(&ip).state().config.clone().unwrap().text();
    assert!(!mc.contains("abcdef.0123456789abcdef"));
    // Maintenance nodes have no config to compare with.
    let fresh = Nodes::start(&[&fresh_ip], |_| {});
    let d2 = project(&fresh, &fresh_ip, false);
    let o = d2
        .talm(["apply", "-f", "nodes/node1.yaml", "-i", "--dry-run"])
        .expect()
        .stdout("")
        .run();
    // What talm says, exactly; the node's own diff of the whole config follows.
    let (said, diff) = o.stderr.split_once("Config diff:\n").unwrap();
    assert_eq!(
        addrs(said),
        "\
- talm: file=nodes/node1.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
node $A1: talm: drift verification unavailable on maintenance connection
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
"
    );
    assert!(diff.starts_with("\n--- a\n+++ b\n@@ -0,0 +1,"), "{diff}");
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
    let before = d.snapshot();
    d.talm(["apply", "-f", "nodes/node1.yaml", "--nodes", &format!("{a},{b}"), "-i"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/node1.yaml, nodes=[$A1,$A2], endpoints=[$A1]
Error: anchor \"nodes/node1.yaml\" would be stamped onto 2 nodes ([\"$A1\", \"$A2\"]) but carries a non-empty per-node body
hint: give each node its own node file, or keep the shared file's body empty
")
        .status(1)
        .run();
    assert_eq!(d.snapshot(), before);
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
    let before = d.snapshot();
    d.talm(["apply", "-f", "nodes/node1.yaml", "-f", "disk.yaml", "-i"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/node1.yaml, side-patches=[disk.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
[blocker] declared disk \"/dev/sdz\" not found on target node (source: doc[0].machine.install.disk)
  hint: available disks: /dev/nvme0n1
Error: pre-flight: 1 declared host resource(s) do not resolve on the target node
hint: correct the values referenced above, or pass --skip-resource-validation to bypass.
")
        .status(1)
        .run();
    assert_eq!(d.snapshot(), before);
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
    .expect()
    .mask(addrs)
    .stdout("")
    .stderr("\
- talm: file=nodes/node1.yaml, side-patches=[disk.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
node $A1: talm: drift verification unavailable on maintenance connection
Error: node $A1: ApplyConfiguration: rpc error: code = InvalidArgument desc = 1 error occurred:
\t* install disk \"/dev/sdz\" does not exist on the node


")
    .status(1)
    .run();
    d.write(
        "link.yaml",
        "apiVersion: v1alpha1\nkind: LinkConfig\nname: eth9\nmtu: 9000\n",
    );
    let before = d.snapshot();
    d.talm(["apply", "-f", "nodes/node1.yaml", "-f", "link.yaml", "-i"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/node1.yaml, side-patches=[link.yaml], nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
[blocker] declared link \"eth9\" not found on target node (source: doc[1].name)
  hint: available links: eth0
Error: pre-flight: 1 declared host resource(s) do not resolve on the target node
hint: correct the values referenced above, or pass --skip-resource-validation to bypass.
")
        .status(1)
        .run();
    assert_eq!(d.snapshot(), before);
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
        .text();
    assert!(
        cfg.contains("type: worker")
            && cfg.contains("disk: /dev/nvme0n1")
            && cfg.contains("clusterName: mycluster")
            && cfg.contains("endpoint: https://127.0.0.11:6443"),
        "{cfg}"
    );
}
