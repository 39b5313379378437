//! Upgrading and applying as the Go talm does, through the real binary against simulated nodes:
//! the upgrade followed by talosctl's action tracker, its flags honoured by the node (stage,
//! reboot mode), and the new image written back into the node files (only that line changes).

use crate::common::expect::addrs;
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
    // The tracker: the action's own events, the node going away, the new boot replayed until
    // RUNNING and ready, then the boot ID changed.
    let mut want: Vec<String> = vec![
        "waiting for actor ID".into(),
        "actor ID: <actor>".into(),
        "sequence: upgrade action: START".into(),
    ];
    want.extend(phases(&[
        "drain",
        "cleanup",
        "dbus",
        "stopServices",
        "unmountUserDisks",
        "unmountSystemDisks",
        "upgrade",
        "meta",
        "kexec",
        "stopEverything",
        "reboot",
    ]));
    want.extend(
        [
            "unavailable, retrying...",
            "sequence: boot action: START",
            "sequence: boot action: STOP",
            "events check condition met",
            "post check passed",
        ]
        .map(String::from),
    );
    assert_eq!(tracked(&o.stderr, &ip), want, "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("{ip}: running v1.13.9\n")),
        "{}",
        o.stderr
    );
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
    assert!(o.stderr.ends_with(&format!(
        "Synced machine.install.image in nodes/cp.yaml to {NEW}\nSkipped nodes/extra.yaml: no machine.install.image key (orphan or side-patch shape)\n"
    )), "{}", o.stderr);
    assert_eq!(d.mode("nodes/cp.yaml") & 0o777, 0o644);
    // The next apply sends the new image.
    let dry = d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"]).ok();
    assert!(dry.stderr.contains(NEW), "{}", dry.stderr);
    assert!(
        !dry.stderr.contains(&format!("+    image: {OLD}")),
        "{}",
        dry.stderr
    );
    // Talos applies machine.install at once: the written-back file goes on without a reboot.
    let boots = nodes.boots(&ip);
    let o = d.talm(["apply", "-f", "nodes/cp.yaml"]).ok();
    assert!(
        o.stderr
            .contains("Applied configuration without a reboot\n"),
        "{}",
        o.stderr
    );
    let cfg = nodes.node(&ip).state().config.clone().unwrap();
    assert!(cfg.text.contains(&format!("image: {NEW}")), "{}", cfg.text);
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
        "drain",
        "cleanup",
        "dbus",
        "stopServices",
        "unmountUserDisks",
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
    d.talm(["upgrade", "-f", "nodes/cp.yaml", "-i", NEW, "--insecure"])
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
    .status(2)
    .run();
    assert!(
        d.read("nodes/cp.yaml").contains(OLD),
        "refusals write nothing"
    );
    let boots = nodes.boots(&ip);
    let o = d
        .talm([
            "upgrade",
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
    assert!(!o.stderr.contains("actor ID:"), "no tracking: {}", o.stderr);
    assert!(o
        .stderr
        .contains("Synced machine.install.image in nodes/cp.yaml"));
    nodes.wait_reboot(&ip, boots);
    let asked = nodes.node(&ip).state().last_upgrade.clone().unwrap();
    assert_eq!(
        (asked.stage, asked.preserve, asked.force, asked.reboot_mode),
        (false, false, true, 0)
    );
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
}

/// A generic project whose control plane at `ip` is configured from `nodes/cp.yaml`.
fn configured(nodes: &Nodes, ip: &str) -> Dir {
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
    let o = d.talm(verify).ok();
    assert!(!o.stderr.contains("post-apply"), "{}", o.stderr);
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
    let o = d.talm(verify).expect().mask(addrs).stderr("\
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
    let report: Vec<&str> = o
        .stderr
        .lines()
        .skip_while(|l| !l.starts_with("talm: post-apply divergence"))
        .take_while(|l| !l.starts_with("Error:"))
        .collect();
    assert_eq!(
        report,
        [
            format!("talm: post-apply divergence (node {ip})").as_str(),
            "  ~ MachineConfig",
            "      machine.sysctls.vm.max_map_count: 262144 -> 524288",
            "talm: 0 additions, 0 removals, 1 update, 0 unchanged.",
        ],
        "{}",
        o.stderr
    );
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
    let warning = "warning: pre-flight: configured talosVersion=current is newer than the node's running Talos v1.12.6\nhint: the generated config may include fields the node's machinery doesn't know; either reboot the node into a maintenance image matching templateOptions.talosVersion / --talos-version, or lower templateOptions.talosVersion / --talos-version to match the running Talos.\n";
    let d = configured(&nodes, &old);
    let o = d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"]).ok();
    assert!(o.stderr.contains(warning), "{}", o.stderr);
    // A warning only: the apply went on.
    assert!(o.stderr.contains("Dry run summary:"), "{}", o.stderr);
    // The node runs the legacy network (its config was rendered without a contract): a
    // multi-document render refuses it as the Go talm does, showing what it found, and the
    // contract matches the node, so no pre-flight warning.
    let o = d
        .talm([
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
    let block =
        format!("Detected legacy block:\n- addresses:\n    - {old}/24\n  interface: eth0\n");
    assert!(o.stderr.contains(&block), "{}", o.stderr);
    assert!(!o.stderr.contains("pre-flight"), "{}", o.stderr);
    let d = configured(&nodes, &new);
    let o = d.talm(["apply", "-f", "nodes/cp.yaml", "--dry-run"]).ok();
    assert!(!o.stderr.contains("pre-flight"), "{}", o.stderr);
}

/// A kubeconfig holding `mycluster` (another server, another user) and `other`.
const CLASHING: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: mycluster\n  cluster:\n    server: https://10.9.9.9:6443\n- name: other\n  cluster:\n    server: https://10.8.8.8:6443\nusers:\n- name: admin@mycluster\n  user:\n    token: old\n- name: admin@other\n  user:\n    token: x\ncontexts:\n- name: admin@mycluster\n  context:\n    cluster: mycluster\n    user: admin@mycluster\n- name: admin@other\n  context:\n    cluster: other\n    user: admin@other\ncurrent-context: admin@other\n";

fn names(v: &serde_yaml_ng::Value, key: &str) -> Vec<String> {
    v[key]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn kubeconfig_login_merges_into_an_existing_file_with_a_clashing_context() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.write("home/.kube/config", CLASHING);
    let home = d.join("home");
    let login = |extra: &[&str]| {
        let mut args = vec!["kubeconfig", "-f", "nodes/cp.yaml", "--login"];
        args.extend_from_slice(extra);
        d.talm(args).env("HOME", &home).env("KUBECONFIG", "")
    };
    // --force=false: the clashing cluster, its user and context are renamed, as talosctl does.
    let o = login(&["--force=false"]).ok();
    assert_eq!(
        o.stdout,
        "renamed cluster \"mycluster\" -> \"mycluster-1\"\nrenamed auth info \"admin@mycluster\" -> \"admin@mycluster-1\"\nrenamed context \"admin@mycluster\" -> \"admin@mycluster-1\"\n"
    );
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(names(&v, "clusters"), ["mycluster", "other", "mycluster-1"]);
    assert_eq!(
        names(&v, "users"),
        ["admin@mycluster", "admin@other", "admin@mycluster-1"]
    );
    assert_eq!(
        names(&v, "contexts"),
        ["admin@mycluster", "admin@other", "admin@mycluster-1"]
    );
    assert_eq!(v["current-context"], "admin@mycluster-1");
    assert_eq!(v["contexts"][2]["context"]["cluster"], "mycluster-1");
    assert_eq!(v["contexts"][2]["context"]["user"], "admin@mycluster-1");
    assert_eq!(
        v["clusters"][0]["cluster"]["server"], "https://10.9.9.9:6443",
        "the old one kept"
    );
    assert_eq!(d.mode("home/.kube/config"), 0o600);
    assert!(
        !d.exists("kubeconfig"),
        "the project's kubeconfig is left alone with --login"
    );
    // talm's default --force: the clash is overwritten in place; nothing renamed.
    d.write("home/.kube/config", CLASHING);
    let o = login(&[]).ok();
    assert_eq!(o.stdout, "");
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(names(&v, "clusters"), ["mycluster", "other"]);
    assert_ne!(
        v["clusters"][0]["cluster"]["server"],
        "https://10.9.9.9:6443"
    );
    assert_eq!(v["current-context"], "admin@mycluster");
    // --force-context-name names the merged context.
    let o = login(&["--force-context-name", "prod"]).ok();
    assert_eq!(
        o.stdout,
        "renamed context \"admin@mycluster\" -> \"prod\"\n"
    );
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(v["current-context"], "prod");
    // Several files in $KUBECONFIG: which one is unclear.
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml", "--login"])
        .env(
            "KUBECONFIG",
            format!("{}:{}", d.join("a").display(), d.join("b").display()),
        )
        .expect()
        .stderr(
            "\
Error: multiple kubeconfig files defined
hint: name the file to merge into: talm kubeconfig --login PATH
",
        )
        .status(1)
        .run();
}

#[test]
fn project_kubeconfig_points_at_the_cluster_endpoint_and_refreshes_its_twin() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.write(".gitignore", "secrets.yaml\n");
    let values = d.read("values.yaml");
    let endpoint = values
        .lines()
        .find(|l| l.starts_with("endpoint:"))
        .unwrap()
        .to_string();
    d.write(
        "values.yaml",
        &values.replace(&endpoint, "endpoint: \"https://10.20.30.40:6443\""),
    );
    let o = d.talm(["kubeconfig", "-f", "nodes/cp.yaml"]).ok();
    assert!(
        o.stderr
            .contains("Updated cluster mycluster server to https://10.20.30.40:6443\n"),
        "{}",
        o.stderr
    );
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("kubeconfig")).unwrap();
    assert_eq!(
        v["clusters"][0]["cluster"]["server"],
        "https://10.20.30.40:6443"
    );
    assert!(
        d.read(".gitignore").lines().any(|l| l == "kubeconfig"),
        "{}",
        d.read(".gitignore")
    );
    assert!(!d.exists("kubeconfig.encrypted"));
    // Once the project keeps an encrypted twin, each fetch refreshes it.
    d.talm(["init", "--encrypt"]).ok();
    assert!(d.exists("kubeconfig.encrypted"));
    let before = d.read("kubeconfig.encrypted");
    let o = d.talm(["kubeconfig", "-f", "nodes/cp.yaml"]).ok();
    assert!(
        o.stderr.contains("Updated kubeconfig.encrypted"),
        "{}",
        o.stderr
    );
    assert_ne!(d.read("kubeconfig.encrypted"), before);
}
