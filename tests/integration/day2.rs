//! Day-two commands through the real binary against simulated nodes: kubeconfig (default path,
//! explicit path, merge, from a worker, from an unreachable node), reboot, reset (META kept),
//! upgrade waiting for the new version.

use crate::common::expect::{addrs, rebooted, services_stopped, uuids, RESET_CP_PHASES};
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

/// A generic project with its control plane at `cp` configured (and `worker` as a worker).
fn cluster(nodes: &Nodes, cp: &str, worker: Option<&str>) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, cp));
    let boots = nodes.boots(cp);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(cp, boots);
    if let Some(w) = worker {
        let out = d
            .talm([
                "template",
                "-e",
                w,
                "--nodes",
                w,
                "-t",
                "templates/worker.yaml",
                "-i",
            ])
            .ok()
            .stdout;
        d.write("nodes/worker.yaml", &out);
        let boots = nodes.boots(w);
        d.talm(["apply", "-f", "nodes/worker.yaml", "-i"]).ok();
        nodes.wait_reboot(w, boots);
    }
    d
}

#[test]
fn kubeconfig_paths_merge_and_refusals() {
    let [cp, worker, nobody] = net::addrs();
    let nodes = Nodes::start(&[&cp, &worker], |_| {});
    let d = cluster(&nodes, &cp, Some(&worker));
    d.talm(["kubeconfig", "-f", "nodes/worker.yaml"])
        .expect().stderr("Error: error initializing gzip: rpc error: code = Unimplemented desc = kubeconfig is only available on control plane nodes\n").status(1).run();
    assert!(!d.exists("kubeconfig"));
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml"]).ok();
    assert_eq!(d.mode("kubeconfig"), 0o600);
    // The encrypted twin is refreshed only where the project keeps one.
    assert!(!d.exists("kubeconfig.encrypted"));
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml", "other.yaml"]).expect().stderr("\
Error: talm kubeconfig writes to project root by default; positional path is not consumed in this mode
hint: to write elsewhere, merge into your own kubeconfig: talm kubeconfig --login PATH
").status(1).run();
    // An explicit path, then a merge into a kubeconfig holding another cluster.
    d.write("other.yaml", "apiVersion: v1\nkind: Config\nclusters:\n  - name: other\n    cluster: {server: https://10.9.9.9:6443}\nusers:\n  - name: admin@other\n    user: {token: x}\ncontexts:\n  - name: admin@other\n    context: {cluster: other, user: admin@other}\ncurrent-context: admin@other\n");
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml", "--login", "other.yaml"])
        .ok();
    let merged: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("other.yaml")).unwrap();
    let names: Vec<&str> = merged["clusters"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["other", "mycluster"]);
    assert_eq!(merged["current-context"], "admin@mycluster");
    assert_eq!(d.mode("other.yaml"), 0o600);
    // A node whose kubeconfig names a credential plugin (a program for kubectl to run): the
    // plugin is dropped with a warning, the certificate kept.
    nodes.node(&cp).set_faults(talm::sim::net::faults::Faults {
        exec_kubeconfig: true,
        ..Default::default()
    });
    let o = d
        .talm(["kubeconfig", "-f", "nodes/cp.yaml", "--force"])
        .ok();
    assert_eq!(
        o.stderr,
        format!("WARNING: {cp}: the kubeconfig from the node gives user \"admin@mycluster\": exec (\"/bin/sh\"): dropped, talm never keeps a program a node names for your kubectl to run\nkubeconfig written to {}\n", d.join("kubeconfig").display())
    );
    let kept: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("kubeconfig")).unwrap();
    let user = &kept["users"][0]["user"];
    assert!(user.get("exec").is_none() && user.get("client-certificate-data").is_some());
    nodes.node(&cp).set_faults(Default::default());
    d.talm(["kubeconfig", "-n", &nobody, "-e", &nobody])
        .expect().stderr(format!("\
Error: error copying: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp {nobody}:50000: connect: connection refused\"
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
    d.talm([
        "kubeconfig",
        "--nodes",
        &format!("{cp},{worker}"),
        "-e",
        &cp,
    ])
    .expect()
    .stderr(
        "\
Error: command \"kubeconfig\" is not supported with multiple nodes
hint: fetch it from one control-plane node: talm kubeconfig -f nodes/node1.yaml
",
    )
    .status(1)
    .run();
}

#[test]
fn reboot_reset_and_upgrade() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = cluster(&nodes, &ip, None);
    let boots = nodes.boots(&ip);
    d.talm(["reboot", "-f", "nodes/cp.yaml", "--wait"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(rebooted("$A1"))
        .run();
    assert!(nodes.boots(&ip) > boots);

    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/cp.yaml",
            "--image",
            "ghcr.io/siderolabs/installer:v1.13.9",
        ])
        .ok();
    assert!(
        o.stderr.contains(&format!("{ip}: running v1.13.9")),
        "{}",
        o.stderr
    );
    d.talm(["upgrade", "--drain=false", "-f", "nodes/cp.yaml", "--image", "ghcr.io/siderolabs/installer:v1.13.8"])
        .expect().mask(addrs).stderr("\
Error: node $A1: ghcr.io/siderolabs/installer:v1.13.8 is older than the running Talos v1.13.9: refusing to downgrade
hint: pass --allow-downgrade to go back on purpose, or set a newer image in values.yaml / --image
").status(1).run();
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/cp.yaml",
            "--image",
            "ghcr.io/siderolabs/installer:v1.13.8",
            "--allow-downgrade",
        ])
        .ok();
    assert!(o.stderr.contains("running v1.13.8"), "{}", o.stderr);

    let boots = nodes.boots(&ip);
    // META is kept.
    d.talm(["reset", "-f", "nodes/cp.yaml", "--reboot"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped(
            "$A1",
            "reset",
            RESET_CP_PHASES,
            "post check passed\n",
        ))
        .run();
    nodes.wait_reboot(&ip, boots);
    assert!(
        nodes.node(&ip).state().in_maintenance(),
        "back in maintenance mode"
    );
    d.talm(["reset", "-f", "nodes/cp.yaml", "--wipe-mode", "everything"])
        .expect()
        .stderr(
            "\
error: invalid value 'everything' for '--wipe-mode <WIPE_MODE>'
  [possible values: all, system-disk, user-disks]

For more information, try '--help'.
",
        )
        .status(1)
        .run();
}

#[test]
fn logs_dmesg_and_services() {
    let [ip, fresh_ip] = net::addrs();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = cluster(&nodes, &ip, None);
    let logs = d
        .talm(["logs", "kubelet", "-f", "nodes/cp.yaml", "--tail", "3"])
        .ok()
        .stdout;
    assert_eq!(logs.lines().count(), 3, "{logs}");
    assert!(
        logs.ends_with(
            " kubelet_node_status.go:78] \"Successfully registered node\" node=\"talos-node\"\n"
        ),
        "{logs}"
    );
    d.talm(["logs", "nosuch", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
ERROR: rpc error: code = Unknown desc = log \"nosuch\" was not registered
",
        )
        .status(1)
        .run();
    let kernel = d
        .talm(["logs", "kernel", "-f", "nodes/cp.yaml"])
        .ok()
        .stdout;
    assert!(kernel.contains("Linux version"), "{kernel}");
    assert_eq!(
        d.talm(["dmesg", "-f", "nodes/cp.yaml", "--tail", "1"])
            .ok()
            .stdout
            .lines()
            .count(),
        1
    );
    let services = d.talm(["services", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert!(services.starts_with("NODE "), "{services}");
    assert!(
        services
            .lines()
            .any(|l| l.split_whitespace().take(4).collect::<Vec<_>>()
                == [ip.as_str(), "etcd", "Preparing", "?"]),
        "{services}"
    );
    d.talm(["bootstrap", "-f", "nodes/cp.yaml"]).ok();
    let services = d.talm(["services", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert!(
        services
            .lines()
            .any(|l| l.split_whitespace().take(4).collect::<Vec<_>>()
                == [ip.as_str(), "etcd", "Running", "OK"]),
        "{services}"
    );
    // Reading logs is open to readers (Talos's role table), so a maintenance node answers.
    let fresh = Nodes::start(&[&fresh_ip], |_| {});
    let kernel = d
        .talm(["logs", "kernel", "-n", &fresh_ip, "-i"])
        .ok()
        .stdout;
    assert!(kernel.contains("Linux version"), "{kernel}");
    drop(fresh);
}
