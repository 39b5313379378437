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

/// Talos's health checks, in order.
const CHECKS: [&str; 16] = [
    "etcd to be healthy",
    "etcd members to be consistent across nodes",
    "etcd members to be control plane nodes",
    "apid to be ready",
    "all nodes memory sizes",
    "all nodes disk sizes",
    "no diagnostics",
    "kubelet to be healthy",
    "all nodes to finish boot sequence",
    "all k8s nodes to report",
    "all control plane static pods to be running",
    "all control plane components to be ready",
    "all k8s nodes to report ready",
    "kube-proxy to report ready",
    "coredns to report ready",
    "all k8s nodes to report schedulable",
];

/// The progress lines of the first `passed` checks, each `OK` but those `skipped`; then, when
/// `failing` names the next check's state, its lines and the error that ends the command.
#[track_caller]
fn progress(passed: usize, skipped: &[&str], failing: Option<(&str, &str)>) -> String {
    let mut out = String::new();
    for c in &CHECKS[..passed] {
        let state = if skipped.contains(c) { "SKIP" } else { "OK" };
        out += &format!("waiting for {c}: ...\nwaiting for {c}: {state}\n");
    }
    if let Some((error, state)) = failing {
        let c = CHECKS[passed];
        out += &format!("waiting for {c}: ...\nwaiting for {c}: {state}\nError: {error}\nhint: the check \"{c}\" did not pass within 6s: {state}\n");
    }
    out
}

const SERVER_TIMEOUT: &str = "healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded";
/// What the client-side checks skip: they need the node's own view.
const CLIENT_SKIPS: [&str; 2] = ["all nodes disk sizes", "no diagnostics"];

#[test]
fn health_runs_the_kubernetes_checks_on_the_node_and_from_the_client() {
    let [cp, w1]: [String; 2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1]);
    let c = client(&d);
    let worker = name_of(&c, &w1);
    let discovered = format!("discovered nodes: [\"{cp}\" \"{w1}\"]\n");
    let server = |timeout: &str| d.talm(["health", "-f", "nodes/cp1.yaml", "--wait-timeout", timeout]).run();
    let client_side = |timeout: &str| {
        d.talm([
            "health", "-f", "nodes/cp1.yaml", "--server=false", "--control-plane-nodes", &cp,
            "--worker-nodes", &w1, "--wait-timeout", timeout,
        ])
        .run()
    };
    let o = server("30s");
    assert_eq!((o.code, o.stderr), (0, format!("{discovered}{}", progress(16, &[], None))));
    let o = client_side("30s");
    assert_eq!((o.code, o.stderr), (0, progress(16, &CLIENT_SKIPS, None)));

    // The worker's kubelet fails its health check: its Node turns NotReady, and the check that
    // looks at Kubernetes' nodes names it (the kubelet check covers control planes only).
    let mut f = nodes.node(&w1).faults();
    f.unhealthy = Some(talm::sim::net::unhealthy::Unhealthy {
        services: vec!["kubelet".into()],
        version: None,
    });
    nodes.node(&w1).set_faults(f);
    let not_ready = format!("some nodes are not ready: [{worker}]");
    until("the worker is NotReady", || {
        block_on(c.node(&worker)).is_ok_and(|n| n.is_some_and(|n| !talm::talos::k8s::is_ready(&n)))
    });
    let o = server("6s");
    assert_eq!(
        (o.code, o.stderr),
        (1, format!("{discovered}{}", progress(12, &[], Some((SERVER_TIMEOUT, &not_ready)))))
    );
    let o = client_side("6s");
    assert_eq!(
        (o.code, o.stderr),
        (1, progress(12, &CLIENT_SKIPS, Some(("context deadline exceeded", &not_ready))))
    );

    // CoreDNS never becomes Ready.
    nodes.node(&w1).set_faults(Default::default());
    until("the worker is Ready again", || {
        block_on(c.node(&worker)).is_ok_and(|n| n.is_some_and(|n| talm::talos::k8s::is_ready(&n)))
    });
    let mut f = nodes.node(&cp).faults();
    f.pod_never_ready = vec!["kube-system/coredns".into()];
    nodes.node(&cp).set_faults(f);
    until("CoreDNS is not Ready", || {
        block_on(c.pods("kube-system", "k8s-app=kube-dns", "")).is_ok_and(|ps| {
            ps.iter().all(|p| {
                !p.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
        })
    });
    let dns = "no ready pods found for namespace \"kube-system\" and label selector \"k8s-app=kube-dns\"";
    let o = server("6s");
    assert_eq!((o.code, o.stderr), (1, format!("{discovered}{}", progress(14, &[], Some((SERVER_TIMEOUT, dns))))));

    // A control plane's scheduler never becomes Ready.
    let mut f = nodes.node(&cp).faults();
    f.pod_never_ready = vec!["kube-system/kube-scheduler".into()];
    nodes.node(&cp).set_faults(f);
    let o = server("6s");
    println!("SCHED {}\n{}", o.code, o.stderr);
    assert_eq!(o.code, 1);
}
