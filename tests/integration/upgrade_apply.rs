//! Upgrading and applying as the Go talm does, through the real binary against simulated nodes:
//! the upgrade followed by talosctl's action tracker, its flags honoured by the node (stage,
//! reboot mode), and the new image written back into the node files (only that line changes).

use crate::common::expect::{addrs, installer_run, log_stamps, PINNED_NEW};
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

const OLD: &str = "ghcr.io/siderolabs/installer:v1.13.7";
const NEW: &str = "ghcr.io/siderolabs/installer:v1.13.9";

/// A generic project whose control plane at `ip` is configured, with `nodes/cp.yaml` pinning
/// the installer image by hand (with a comment) and `nodes/extra.yaml` a side file without it.
fn pinned(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    let rendered = template_node(&d, ip);
    assert!(rendered.contains("\n  install:\n"), "{rendered}");
    let file = rendered.replacen(
        "\n  install:\n",
        &format!("\n  install:\n    # the installer this node runs\n    image: {OLD}   # pinned\n"),
        1,
    );
    d.write("nodes/cp.yaml", &file);
    d.write(
        "nodes/extra.yaml",
        &format!("# talm: nodes=[\"{ip}\"], endpoints=[\"{ip}\"], templates=[]\n# a side file\nmachine:\n  sysctls:\n    vm.nr_hugepages: \"0\"\n"),
    );
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

/// The lines that differ between two texts of the same length in lines.
fn changed(a: &str, b: &str) -> Vec<(String, String)> {
    assert_eq!(a.lines().count(), b.lines().count(), "{a}\n---\n{b}");
    a.lines()
        .zip(b.lines())
        .filter(|(x, y)| x != y)
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .collect()
}

/// The tracker's lines for `ip` (`"ip": ...`), the actor ID replaced by `<actor>`.
fn tracked(stderr: &str, ip: &str) -> Vec<String> {
    let prefix = format!("\"{ip}\": ");
    let mut actor = String::new();
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|m| {
            if let Some(a) = m.strip_prefix("actor ID: ") {
                actor = a.to_string();
            }
            if actor.is_empty() {
                m.to_string()
            } else {
                m.replace(&actor, "<actor>")
            }
        })
        // How often the node is polled while it is down depends on timing.
        .filter(|m| m != "didn't reboot yet")
        .collect()
}

fn phases(names: &[&str]) -> Vec<String> {
    names
        .iter()
        .flat_map(|p| {
            [
                format!("phase: {p} action: START"),
                format!("phase: {p} action: STOP"),
            ]
        })
        .collect()
}

#[test]
fn upgrade_waits_like_talosctl_and_writes_the_image_back() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = pinned(&nodes, &ip);
    let before = d.read("nodes/cp.yaml");
    let extra = d.read("nodes/extra.yaml");
    let boots = nodes.boots(&ip);
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-n",
            &ip,
            "-e",
            &ip,
            "-f",
            "nodes/cp.yaml",
            "-f",
            "nodes/extra.yaml",
            "--image",
            NEW,
        ])
        .ok();
    // talosctl v1.13's path on a v1.13 node: the image pulled, the installer's output, then the
    // reboot followed by the tracker: the node going away, the new boot replayed until RUNNING
    // and ready (with its services' events), then the boot ID changed.
    let want: Vec<String> = [
        "waiting for actor ID",
        "actor ID: <actor>",
        "sequence: reboot action: START",
        "unavailable, retrying...",
        "sequence: boot action: START",
        "service: apid message: Health check successful healthy: true",
        "service: containerd message: Health check successful healthy: true",
        "service: cri message: Health check successful healthy: true",
        "service: etcd message: Waiting for service to start healthy: false",
        "service: kubelet message: Health check successful healthy: true",
        "service: machined message: Health check successful healthy: true",
        "service: trustd message: Health check successful healthy: true",
        "service: udevd message: Health check successful healthy: true",
        "sequence: boot action: STOP",
        "events check condition met",
        "post check passed",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(tracked(&o.stderr, &ip), want, "{}", o.stderr);
    let said: String = o
        .stderr
        .lines()
        .filter(|l| !l.starts_with('"'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        log_stamps(&addrs(&said)),
        format!(
            "\
- talm: upgrading $A1 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
{}$A1: running v1.13.9
Synced machine.install.image in nodes/cp.yaml to ghcr.io/siderolabs/installer:v1.13.9
Skipped nodes/extra.yaml: no machine.install.image key (orphan or side-patch shape)
",
            installer_run("$A1", PINNED_NEW, "v1.13.7", "v1.13.9")
        )
    );
    assert_eq!(o.stdout, "");
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
    assert_eq!(nodes.boots(&ip), boots + 1);
    // Writeback: exactly the image line of the node file changes; the side file is skipped.
    assert_eq!(
        changed(&before, &d.read("nodes/cp.yaml")),
        [(
            format!("    image: {OLD}   # pinned"),
            format!("    image: {NEW}   # pinned")
        )]
    );
    assert_eq!(d.read("nodes/extra.yaml"), extra);
    assert_eq!(d.mode("nodes/cp.yaml") & 0o777, 0o644);
    // The next apply sends the new image.
    d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
  ~ MachineConfig
      machine.install.image: ghcr.io/siderolabs/installer:v1.13.7 -> ghcr.io/siderolabs/installer:v1.13.9
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
Config diff:

--- a
+++ b
@@ -28,7 +28,7 @@
             - 8.8.8.8
     install:
         disk: /dev/nvme0n1
-        image: ghcr.io/siderolabs/installer:v1.13.7
+        image: ghcr.io/siderolabs/installer:v1.13.9
         wipe: false
         grubUseUKICmdline: true
     features:

")
        .run();
    // Talos applies machine.install at once: the written-back file goes on without a reboot.
    let boots = nodes.boots(&ip);
    d.talm(["apply", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
  ~ MachineConfig
      machine.install.image: ghcr.io/siderolabs/installer:v1.13.7 -> ghcr.io/siderolabs/installer:v1.13.9
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Applied configuration without a reboot
")
        .run();
    let cfg = nodes.node(&ip).state().config.clone().unwrap();
    assert!(
        cfg.text().contains(&format!("image: {NEW}")),
        "{}",
        cfg.text()
    );
    assert_eq!(nodes.boots(&ip), boots);
    assert!(!nodes.node(&ip).state().rebooting);
}

#[test]
fn staged_powercycle_upgrade_installs_during_the_next_boot() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = pinned(&nodes, &ip);
    let boots = nodes.boots(&ip);
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/cp.yaml",
            "-i",
            NEW,
            "--stage",
            "--preserve",
            "--reboot-mode",
            "powercycle",
            "--progress",
            "plain",
            "--timeout",
            "1m",
        ])
        .ok();
    let lines = tracked(&o.stderr, &ip);
    let mut want: Vec<String> = vec![
        "waiting for actor ID".into(),
        "actor ID: <actor>".into(),
        "sequence: stageUpgrade action: START".into(),
    ];
    // Staged: nothing is installed before the reboot; powercycle: no kexec.
    want.extend(phases(&[
        "cleanup",
        "dbus",
        "stopServices",
        "umount",
        "unmountBind",
        "unmountSystem",
        "volumeFinalize",
        "stopEverything",
        "reboot",
    ]));
    assert_eq!(lines[..want.len()], want[..], "{}", o.stderr);
    assert_eq!(lines.last().map(String::as_str), Some("post check passed"));
    // The installer ran during the next boot, which rebooted once more into the new version.
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
    assert_eq!(nodes.boots(&ip), boots + 2);
    // The node got every flag.
    let asked = nodes.node(&ip).state().last_upgrade.clone().unwrap();
    assert_eq!(
        (asked.stage, asked.preserve, asked.force, asked.reboot_mode),
        (true, true, false, 1)
    );
    assert!(d
        .read("nodes/cp.yaml")
        .contains(&format!("    image: {NEW}   # pinned\n")));
}

#[test]
fn upgrade_without_waiting_and_its_refusals() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = pinned(&nodes, &ip);
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "-i",
        NEW,
        "--insecure",
    ])
    .expect()
    .stderr(
        "\
Error: cannot use --wait and --insecure together
hint: a node in maintenance mode cannot be followed; pass --wait=false
",
    )
    .status(1)
    .run();
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "-i",
        NEW,
        "--reboot-mode",
        "force",
    ])
    .expect()
    .stderr(
        "\
error: invalid value 'force' for '--reboot-mode <REBOOT_MODE>'
  [possible values: default, powercycle]

For more information, try '--help'.
",
    )
    .status(1)
    .run();
    assert!(
        d.read("nodes/cp.yaml").contains(OLD),
        "refusals write nothing"
    );
    let boots = nodes.boots(&ip);
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/cp.yaml",
            "-i",
            NEW,
            "--wait=false",
            "-F",
        ])
        .ok();
    // talosctl's table of the accepted requests (its exact form: day2_gaps).
    assert!(o.stdout.starts_with("NODE"), "{}", o.stdout);
    assert!(
        o.stdout
            .contains(&format!("\n{ip}   Upgrade request received   ")),
        "{}",
        o.stdout
    );
    // --force takes the legacy path (talosctl deprecates the flag); no tracking, then the Go
    // talm's post-upgrade check waits for the new version.
    assert_eq!(
        addrs(&o.stderr),
        "\
Flag --force has been deprecated, legacy flag for MachineService.Upgrade fallback, to be removed in Talos 1.18
- talm: upgrading $A1 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
post-upgrade verify: waiting 1m30s for the node to finish booting...
$A1: running v1.13.9
Synced machine.install.image in nodes/cp.yaml to ghcr.io/siderolabs/installer:v1.13.9
"
    );
    nodes.wait_reboot(&ip, boots);
    let asked = nodes.node(&ip).state().last_upgrade.clone().unwrap();
    assert_eq!(
        (asked.stage, asked.preserve, asked.force, asked.reboot_mode),
        (false, false, true, 0)
    );
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
}

/// A generic project whose control plane at `ip` is configured from `nodes/cp.yaml`.
pub(crate) fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, ip));
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

/// `nodes/cp.yaml` with a sysctl set in its body (a change Talos applies without a reboot).
fn with_sysctl(d: &Dir, value: &str) {
    let text = d.read("nodes/cp.yaml");
    let text = match text.find("\n  sysctls:\n") {
        Some(_) => {
            let start = text.find("    vm.max_map_count: ").unwrap();
            let end = start + text[start..].find('\n').unwrap();
            format!(
                "{}    vm.max_map_count: \"{value}\"{}",
                &text[..start],
                &text[end..]
            )
        }
        None => text.replacen(
            "\nmachine:\n",
            &format!("\nmachine:\n  sysctls:\n    vm.max_map_count: \"{value}\"\n"),
            1,
        ),
    };
    d.write("nodes/cp.yaml", &text);
}

#[test]
fn post_apply_verification_is_off_by_default_and_names_what_diverged() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let verify = [
        "apply",
        "-f",
        "nodes/cp.yaml",
        "-m",
        "no-reboot",
        "--skip-drift-preview",
        "--skip-post-apply-verify=false",
    ];
    // The node runs what was sent: the check passes quietly.
    with_sysctl(&d, "262144");
    d.talm(verify)
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
Applied configuration without a reboot
")
        .run();
    // A node that keeps its previous config (a controller reverting it)...
    nodes.node(&ip).set_faults(talm::sim::net::faults::Faults {
        keep_config: true,
        ..Default::default()
    });
    with_sysctl(&d, "524288");
    // ...goes unnoticed by default, as with the Go talm,
    d.talm([
        "apply",
        "-f",
        "nodes/cp.yaml",
        "-m",
        "no-reboot",
        "--skip-drift-preview",
    ])
    .ok();
    // and is caught when the check is on, naming the node and the paths that differ.
    d.talm(verify).expect().mask(addrs).stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
Applied configuration without a reboot
talm: post-apply divergence (node $A1)
  ~ MachineConfig
      machine.sysctls.vm.max_map_count: 262144 -> 524288
talm: 0 additions, 0 removals, 1 update, 0 unchanged.
Error: node $A1: post-apply: 1 document(s) on the node diverge from the configuration sent to the node
hint: a controller on the node may have reverted the fields above, or templateOptions.talosVersion / --talos-version is newer than the node's Talos; look with `talm get machineconfig -o yaml`
").status(1).run();
    // Other modes are not checked (as the Go talm: only no-reboot).
    d.talm([
        "apply",
        "-f",
        "nodes/cp.yaml",
        "--skip-drift-preview",
        "--skip-post-apply-verify=false",
    ])
    .ok();
}

#[test]
fn apply_warns_when_the_contract_is_newer_than_the_node() {
    let [old, new] = net::addrs();
    let nodes = Nodes::start(&[&old, &new], |spec| {
        if spec.addr.to_string() == old {
            spec.version = "v1.12.6".into();
        }
    });
    let d = configured(&nodes, &old);
    // A warning only: the apply went on.
    d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
warning: pre-flight: configured talosVersion=current is newer than the node's running Talos v1.12.6
hint: the generated config may include fields the node's machinery doesn't know; either reboot the node into a maintenance image matching templateOptions.talosVersion / --talos-version, or lower templateOptions.talosVersion / --talos-version to match the running Talos.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
No changes.
")
        .run();
    // The node runs the legacy network (its config was rendered without a contract): a
    // multi-document render refuses it as the Go talm does, showing what it found, and the
    // contract matches the node, so no pre-flight warning.
    d.talm([
        "apply",
        "-f",
        "nodes/cp.yaml",
        "--dry-run",
        "--talos-version",
        "v1.12",
    ])
    .expect().mask(addrs).stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
Error: talm: the multi-doc renderer cannot translate legacy machine.network.interfaces[] from the running MachineConfig. Move the interfaces, vlans, and addresses below into per-node body overlays as v1.12 typed documents (LinkConfig, VLANConfig, BondConfig, RouteConfig) before re-running talm apply, or pin templateOptions.talosVersion to v1.11 in Chart.yaml until the translator lands.

Detected legacy block:
- addresses:
    - $A1/24
  interface: eth0
  routes:
    - gateway: $A2
      network: 0.0.0.0/0

").status(1).run();
    let d = configured(&nodes, &new);
    d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
- talm: file=nodes/cp.yaml, nodes=[$A1], endpoints=[$A1]
WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 1 unchanged.
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
No changes.
")
        .run();
}
