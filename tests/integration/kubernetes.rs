//! The Kubernetes layer through the real binary against simulated clusters: upgrade and reboot
//! drain and uncordon, a budget that stops a drain (naming it, the node left as said), the
//! health check's Kubernetes checks on the node and from the client, rotate-ca finding its
//! nodes from Kubernetes, and a real kubectl against a simulated cluster.

use crate::common::expect::{addrs, log_stamps, uuids};
use crate::common::kube::{apply, client, cluster, cordoned, name_of, placed, until};
use crate::common::net;
use crate::common::sim::Nodes;
use talm::talos::block_on;

const NEW: &str = "ghcr.io/siderolabs/installer:v1.13.9";

const WORKLOAD: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: workload}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: workload}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: 'nginx:1.27'}]
";

const BUDGET: &str = "\
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: workload}
spec: {minAvailable: 2, selector: {matchLabels: {app: web}}}
";

/// Output with addresses, log stamps and IDs as placeholders.
fn masked(text: &str) -> String {
    uuids(&log_stamps(&addrs(text)))
}

/// Every pod of `workload` Ready.
fn workload_ready(c: &talm::talos::k8s::Cluster, want: usize) -> bool {
    block_on(c.pods("workload", "app=web", "")).is_ok_and(|ps| {
        ps.len() == want
            && ps.iter().all(|p| {
                p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
    })
}

#[test]
fn an_upgrade_drains_the_node_and_uncordons_it_once_ready() {
    let [cp, w1, w2]: [String; 3] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let c = client(&d);
    apply(&c, WORKLOAD);
    until("the workload runs", || workload_ready(&c, 2));
    let name = name_of(&c, &w1);
    let boots = nodes.boots(&w1);
    let o = d.talm(["upgrade", "-f", "nodes/w1.yaml", "-i", NEW]).ok();
    println!("{}", o.stderr);
    assert!(nodes.boots(&w1) > boots);
    assert!(!cordoned(&c, &name));
    until("the workload runs again", || workload_ready(&c, 2));
    let on: Vec<String> = placed(&c, "workload").into_iter().map(|(_, n)| n).collect();
    assert_eq!(on.len(), 2);
    assert!(
        masked(&o.stderr).contains(&format!(
            "{name}: cordoning node\n{name}: node cordoned\n{name}: draining node\n"
        )),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains(&format!("{name}: waiting for node to become Ready\n{name}: uncordoning node\n{name}: node uncordoned\n")), "{}", o.stderr);
}

#[test]
fn a_budget_that_allows_no_eviction_stops_the_drain_and_says_what_is_left() {
    let [cp, w1, w2]: [String; 3] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let c = client(&d);
    apply(&c, WORKLOAD);
    until("the workload runs", || workload_ready(&c, 2));
    apply(&c, BUDGET);
    let name = name_of(&c, &w1);
    let boots = nodes.boots(&w1);
    let o = d
        .talm([
            "reboot",
            "-f",
            "nodes/w1.yaml",
            "--drain",
            "--drain-timeout",
            "6s",
        ])
        .run();
    println!("{}", o.stderr);
    assert_eq!(o.code, 1);
    assert_eq!(nodes.boots(&w1), boots, "the node was not rebooted");
    assert!(
        cordoned(&c, &name),
        "the node is left cordoned, as the message says"
    );
}

#[test]
fn rotate_ca_finds_the_nodes_from_kubernetes() {
    let [cp, w1]: [String; 2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1]);
    let o = d.talm(["rotate-ca", "-f", "nodes/cp1.yaml"]).ok();
    assert!(
        o.stderr.starts_with(&format!(
            "> Auto-discovering cluster nodes...\n  Control plane: [{cp}]\n  Workers: [{w1}]\n"
        )),
        "{}",
        o.stderr
    );
}

#[test]
fn kubectl_lists_the_nodes_of_a_simulated_cluster() {
    let [cp, w1]: [String; 2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1]);
    let out = std::process::Command::new("kubectl")
        .args(["--kubeconfig", "kubeconfig", "get", "nodes", "-o", "wide"])
        .current_dir(d.path())
        .output()
        .expect("kubectl runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
}
