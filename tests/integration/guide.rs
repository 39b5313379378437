//! The Cozystack bring-up guide, command line for command line through the real binary, against
//! three simulated nodes at .11–.13 of a /24 of their own (port 50000) with the cluster VIP at .10:
//! init, template -i, apply -i, wait for port 50000, bootstrap, kubeconfig, then the day-2 lines
//! (dry run, try mode, upgrade). `talm demo` runs the same on the addresses `--nodes` gives it,
//! and refuses addresses that are no loopback or are taken.

use crate::common::expect::addrs;
use std::time::{Duration, Instant};

use crate::common::sim::{template_node, Nodes};
use crate::common::{net, verify_signed_by, Dir};
use x509_parser::prelude::{FromDer, X509Certificate};

/// Waits until every node listens on port 50000 again and answers with its cluster identity.
fn wait_for_port(d: &Dir, file: &str) {
    let started = Instant::now();
    loop {
        if d.talm(["version", "-f", file]).run().code == 0 {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{file}: node did not come back"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn set_value(d: &Dir, key: &str, value: &str) {
    let text: String = d
        .read("values.yaml")
        .lines()
        .map(|l| {
            if l.starts_with(&format!("{key}:")) {
                format!("{key}: {value}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    d.write("values.yaml", &text);
}

#[test]
fn cozystack_guide_end_to_end() {
    let lan = net::subnet(24);
    let (vip, ips) = (lan.host(10), [11, 12, 13].map(|i| lan.host(i)));
    let nodes = Nodes::start(&ips, |_| {});
    let d = Dir::new();
    d.talm(["init", "--preset", "cozystack", "--name", "mycluster"])
        .ok();
    // The guide's values.yaml edit: the cluster endpoint and its floating IP.
    set_value(&d, "endpoint", &format!("\"https://{vip}:6443\""));
    set_value(&d, "floatingIP", &vip);

    for (i, ip) in ips.iter().enumerate() {
        // talm template -e IP --nodes IP -t templates/controlplane.yaml -i > nodes/nodeN.yaml
        let out = template_node(&d, ip);
        d.write(&format!("nodes/node{}.yaml", i + 1), &out);
    }
    for i in 0..ips.len() {
        let file = format!("nodes/node{}.yaml", i + 1);
        d.talm(["apply", "-f", &file, "-i"])
            .expect()
            .mask(addrs)
            .stdout("")
            .stderr(format!(
                "- talm: file={file}, nodes=[$A1], endpoints=[$A1]\n\
                 node $A1: talm: drift verification unavailable on maintenance connection\n\
                 Applied configuration without a reboot\n"
            ))
            .run();
    }
    for i in 1..=3 {
        wait_for_port(&d, &format!("nodes/node{i}.yaml"));
    }
    d.talm(["bootstrap", "-f", "nodes/node1.yaml"]).ok();
    d.talm(["kubeconfig", "-f", "nodes/node1.yaml"]).ok();
    assert_eq!(d.mode("kubeconfig"), 0o600);
    // As the Go talm: an encrypted copy is refreshed where the project keeps one, not created
    // (`talm init --encrypt` makes it).
    assert!(!d.exists("kubeconfig.encrypted"));

    // The kubeconfig's client certificate chains to the cluster CA; its server is the endpoint.
    let kc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("kubeconfig")).unwrap();
    assert_eq!(
        kc["clusters"][0]["cluster"]["server"],
        format!("https://{vip}:6443").as_str()
    );
    assert_eq!(kc["current-context"], "admin@mycluster");
    let unb64 =
        |v: &serde_yaml_ng::Value| talm::secrets::bundle::unb64(v.as_str().unwrap()).unwrap();
    let secrets: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("secrets.yaml")).unwrap();
    let ca_pem = unb64(&secrets["certs"]["k8s"]["crt"]);
    assert_eq!(
        unb64(&kc["clusters"][0]["cluster"]["certificate-authority-data"]),
        ca_pem
    );
    let ca_der = talm::secrets::pki::pem_decode(&ca_pem).unwrap().1;
    let crt_der =
        talm::secrets::pki::pem_decode(&unb64(&kc["users"][0]["user"]["client-certificate-data"]))
            .unwrap()
            .1;
    let (_, ca) = X509Certificate::from_der(&ca_der).unwrap();
    let (_, crt) = X509Certificate::from_der(&crt_der).unwrap();
    verify_signed_by(&crt, &ca);

    // Day two: a dry run changes nothing; try mode applies for a while.
    d.talm(["apply", "-f", "nodes/node1.yaml", "--dry-run"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
- talm: file=nodes/node1.yaml, nodes=[$A1], endpoints=[$A1]
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 6 unchanged.
Dry run summary:
Applied configuration without a reboot (skipped in dry-run).
No changes.
",
        )
        .run();
    d.talm(["apply", "-f", "nodes/node2.yaml", "-m", "try"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
- talm: file=nodes/node2.yaml, nodes=[$A1], endpoints=[$A1]
talm: drift preview (node $A1)
talm: 0 additions, 0 removals, 0 updates, 6 unchanged.
Applied configuration without a reboot
The config is applied in 'try' mode and will be automatically reverted back in 1m0s
",
        )
        .run();
    // Upgrade takes the image from values.yaml; the preset's is older than the nodes' v1.13.7.
    d.talm(["upgrade", "-f", "nodes/node3.yaml"])
        .expect().mask(addrs).stderr("\
Using image from values.yaml: ghcr.io/cozystack/cozystack/talos:v1.12.6
Error: node $A1: ghcr.io/cozystack/cozystack/talos:v1.12.6 is older than the running Talos v1.13.7: refusing to downgrade
hint: pass --allow-downgrade to go back on purpose, or set a newer image in values.yaml / --image
").status(1).run();
    set_value(&d, "image", "ghcr.io/siderolabs/installer:v1.13.8");
    let o = d.talm(["upgrade", "-f", "nodes/node3.yaml"]).ok();
    assert!(
        o.stderr
            .contains("Using image from values.yaml: ghcr.io/siderolabs/installer:v1.13.8"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!("{}: running v1.13.8", ips[2])),
        "{}",
        o.stderr
    );
    assert_eq!(nodes.node(&ips[2]).state().version, "v1.13.8");
}

#[test]
fn demo_runs_the_guide_by_playbook_on_embedded_nodes() {
    let ips: [String; 3] = net::addrs();
    let d = Dir::new();
    let o = d
        .talm(["demo", "--dir", "cluster", "--nodes", &ips.join(",")])
        .ok();
    assert!(
        o.stderr.starts_with(&format!(
            "talm demo: 3 simulated Talos v1.13.7 nodes in maintenance mode at {}\n",
            ips.join(", ")
        )),
        "{}",
        o.stderr
    );
    for step in [
        "[1/7] init",
        "[2/7] template -i",
        "[3/7] apply -i",
        "[4/7] wait",
        "[5/7] bootstrap",
        "[6/7] kubeconfig",
    ] {
        assert!(o.stderr.contains(step), "{step}: {}", o.stderr);
    }
    // It ends with the cluster's nodes as `kubectl get nodes` prints them (names and ages vary).
    let tail: Vec<&str> = o
        .stderr
        .lines()
        .rev()
        .take(5)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let row = regex::Regex::new(
        r"^talos-[0-9a-f]{5}   Ready    control-plane   [0-9]+s +v1\.[0-9]+\.[0-9]+$",
    )
    .unwrap();
    assert_eq!(
        tail[0], "NAME          STATUS   ROLES           AGE   VERSION",
        "{}",
        o.stderr
    );
    for r in &tail[1..4] {
        assert!(row.is_match(r), "{r:?} in {}", o.stderr);
    }
    assert_eq!(
        tail[4],
        format!(
            "done: {0}/cluster/kubeconfig (kubectl --kubeconfig {0}/cluster/kubeconfig get nodes)",
            d.path().display()
        )
    );
    assert!(
        o.stderr.contains(&format!(
            "{}: Talos v1.13.7, configured (RBAC true)",
            ips[2]
        )),
        "{}",
        o.stderr
    );
    assert!(o.stdout.trim_end().ends_with("/cluster"), "{}", o.stdout);
    for i in 1..=3 {
        let f = d.read(&format!("cluster/nodes/node{i}.yaml"));
        assert!(
            f.contains("# -- Discovered interfaces:"),
            "node{i} was rendered from discovery"
        );
    }
    assert_eq!(d.mode("cluster/kubeconfig"), 0o600);
    // The demo's folder must be new or empty.
    d.talm(["demo", "--dir", "cluster", "--nodes", &ips.join(",")])
        .expect()
        .stderr(
            "\
Error: $DIR/cluster is not empty
hint: give the demo a new or empty folder with --dir
",
        )
        .status(1)
        .run();
}

#[test]
fn demo_refuses_addresses_that_are_no_loopback_or_taken() {
    let d = Dir::new();
    let refused = |nodes: &str, stderr: String| {
        let o = d.talm(["demo", "--dir", "cluster", "--nodes", nodes]).run();
        assert_eq!(o.code, 1, "{nodes}");
        assert_eq!(o.stderr, stderr, "{nodes}");
        assert!(!d.exists("cluster"), "{nodes}: no folder is left behind");
    };
    let example = "e.g. talm demo --nodes 127.0.0.21,127.0.0.22,127.0.0.23";
    let [a, b] = net::addrs();
    refused(
        &format!("{a},10.0.0.1"),
        format!("Error: talm demo: --nodes 10.0.0.1 is not a loopback address\nhint: the demo's nodes listen on 127.0.0.0/8 (or ::1) only, {example}\n"),
    );
    refused(
        &format!("{a},node-2"),
        format!("Error: talm demo: --nodes \"node-2\" is not an IP address\nhint: give loopback addresses separated by commas, {example}\n"),
    );
    refused(
        &format!("{a},{b},{a}"),
        format!("Error: {a} is given twice: --nodes address #1 and --nodes address #3\nhint: each simulated node needs an address of its own: drop one, or give it another loopback address\n"),
    );
    // Another process holds port 50000 of the second address.
    let _taken = std::net::TcpListener::bind((b.as_str(), 50000)).unwrap();
    refused(
        &format!("{a},{b}"),
        format!("Error: talm demo: cannot start the simulated nodes: cannot listen on {b}:50000: the address is already in use\nhint: another process (a `talm sim`?) may hold port 50000 there: stop it, or give the demo free loopback addresses with --nodes (e.g. --nodes 127.0.0.21,127.0.0.22,127.0.0.23)\n"),
    );
}
