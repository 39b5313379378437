//! The Kubernetes layer through the real binary against simulated clusters: upgrade and reboot
//! drain and uncordon, a budget that stops a drain (naming it, the node left as said), the
//! health check's Kubernetes checks on the node and from the client, rotate-ca finding its
//! nodes from Kubernetes, and a real kubectl against a simulated cluster.

use crate::common::expect::HEALTH_CHECKS as CHECKS;
use crate::common::kube::{apply, client, cluster, cordoned, name_of, until};
use crate::common::net;
use crate::common::sim::Nodes;
use crate::common::Dir;
use talm::talos::block_on;
use talm::talos::k8s::Cluster;

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

/// How many pods of `namespace` match `selector`, and how many of them are Ready.
fn pods_ready(c: &talm::talos::k8s::Cluster, namespace: &str, selector: &str) -> (usize, usize) {
    let ps = block_on(c.pods(namespace, selector, "")).unwrap_or_default();
    let ready = ps
        .iter()
        .filter(|p| {
            p.status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count();
    (ps.len(), ready)
}

/// The workload's `want` pods, all Ready.
fn workload_ready(c: &talm::talos::k8s::Cluster, want: usize) -> bool {
    pods_ready(c, "workload", "app=web") == (want, want)
}

/// A control plane and two workers, the workload's two pods Ready on them.
fn with_workload() -> ([String; 3], Nodes, Dir, Cluster) {
    let [cp, w1, w2]: [String; 3] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let c = client(&d);
    apply(&c, WORKLOAD);
    until("the workload runs", || workload_ready(&c, 2));
    ([cp, w1, w2], nodes, d, c)
}

/// The drain lines of node `name` in `stderr`, without the `name: ` prefix.
fn drain_lines(stderr: &str, name: &str) -> Vec<String> {
    let prefix = format!("{name}: ");
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(str::to_string)
        .collect()
}

/// Checks one node's drain in talosctl's words: cordon, the evictions of `evicted` (their lines
/// in any order: they run together), then Ready and uncordoned.
#[track_caller]
fn assert_drained(stderr: &str, name: &str, evicted: &[String]) {
    let mine = drain_lines(stderr, name);
    let n = mine.len();
    assert!(n >= 7, "{stderr}");
    assert_eq!(
        mine[..3],
        ["cordoning node", "node cordoned", "draining node"],
        "{stderr}"
    );
    let mut middle = mine[3..n - 4].to_vec();
    middle.sort();
    let mut want: Vec<String> = evicted
        .iter()
        .flat_map(|p| [format!("evicted pod {p}"), format!("evicting pod {p}")])
        .collect();
    want.sort();
    assert_eq!(middle, want, "{stderr}");
    assert_eq!(
        mine[n - 4..],
        [
            "node drained",
            "waiting for node to become Ready",
            "uncordoning node",
            "node uncordoned"
        ],
        "{stderr}"
    );
}

#[test]
fn a_rolling_upgrade_drains_each_node_and_uncordons_it_once_ready() {
    let ([_, w1, w2], nodes, d, c) = with_workload();
    let (first, second) = (name_of(&c, &w1), name_of(&c, &w2));
    let evicted = evictable(&c, &first);
    assert!(
        evicted.iter().any(|p| p.starts_with("workload/web-")),
        "{evicted:?}"
    );
    let boots = [nodes.boots(&w1), nodes.boots(&w2)];
    let o = d
        .talm([
            "upgrade",
            "--rolling",
            "-f",
            "nodes/w1.yaml",
            "-f",
            "nodes/w2.yaml",
            "-i",
            NEW,
        ])
        .ok();
    assert!(nodes.boots(&w1) > boots[0] && nodes.boots(&w2) > boots[1]);
    assert_drained(&o.stderr, &first, &evicted);
    // The first node's pods moved to the second (the control plane takes none): its drain
    // evicts both replicas, whatever else it evicts.
    let second_evicted: Vec<String> = drain_lines(&o.stderr, &second)
        .iter()
        .filter_map(|l| l.strip_prefix("evicted pod "))
        .map(str::to_string)
        .collect();
    let web = second_evicted
        .iter()
        .filter(|p| p.starts_with("workload/web-"))
        .count();
    assert_eq!(web, 2, "{}", o.stderr);
    let mut sorted = second_evicted.clone();
    sorted.sort();
    assert_drained(&o.stderr, &second, &sorted);
    // One node at a time, the cluster's health (its Kubernetes checks too) passing between.
    let at = |line: &str| {
        o.stderr
            .lines()
            .position(|l| l == line)
            .unwrap_or_else(|| panic!("no line {line:?} in:\n{}", o.stderr))
    };
    assert!(
        at(&format!("{first}: node uncordoned"))
            < at(&format!("rolling: cluster healthy after {w1}"))
    );
    assert!(
        at(&format!("rolling: cluster healthy after {w1}"))
            < at(&format!("{second}: cordoning node"))
    );
    assert!(!cordoned(&c, &first) && !cordoned(&c, &second));
    until("the workload runs again", || workload_ready(&c, 2));
}

/// The pods a drain of node `name` evicts (`namespace/name`, sorted): all but DaemonSet and
/// mirror pods.
fn evictable(c: &talm::talos::k8s::Cluster, name: &str) -> Vec<String> {
    let mut out: Vec<String> = block_on(c.pods("", "", &format!("spec.nodeName={name}")))
        .expect("pods")
        .into_iter()
        .filter(|p| {
            let daemon = p
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "DaemonSet");
            let mirror = p
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
            !daemon && !mirror
        })
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.unwrap_or_default(),
                p.metadata.name.unwrap_or_default()
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_budget_that_allows_no_eviction_stops_the_drain_and_says_what_is_left() {
    let ([cp, w1, _], nodes, d, c) = with_workload();
    apply(&c, BUDGET);
    let name = name_of(&c, &w1);
    let on_node = evictable(&c, &name);
    let web: Vec<&String> = on_node
        .iter()
        .filter(|p| p.starts_with("workload/"))
        .collect();
    assert_eq!(
        web.len(),
        1,
        "one of the two replicas runs on the node: {on_node:?}"
    );
    let pod = web[0];
    let others: Vec<&String> = on_node
        .iter()
        .filter(|p| !p.starts_with("workload/"))
        .collect();
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
    // The other pods are evicted; the budget's never is (their lines in any order).
    let mut evictions: Vec<String> = on_node
        .iter()
        .map(|p| format!("{name}: evicting pod {p}"))
        .chain(others.iter().map(|p| format!("{name}: evicted pod {p}")))
        .collect();
    let mut seen: Vec<String> = o
        .stderr
        .lines()
        .skip(3)
        .take(evictions.len())
        .map(str::to_string)
        .collect();
    let in_order: Vec<String> = seen.clone();
    seen.sort();
    evictions.sort();
    assert_eq!(seen, evictions, "{}", o.stderr);
    let expected = format!(
        "{name}: cordoning node\n{name}: node cordoned\n{name}: draining node\n{}\n\
Error: error draining node \"{name}\": pod {pod} could not be evicted within 6s: PodDisruptionBudget workload/web needs 2 healthy pods and has 2; the node {name} is left cordoned\n\
hint: make room for the pod (or raise --drain-timeout) and run the command again, or make the node schedulable again with `talm uncordon -n {w1} -e {cp}`\n",
        in_order.join("\n")
    );
    assert_eq!((o.code, o.stderr), (1, expected));
    assert_eq!(nodes.boots(&w1), boots, "the node was not rebooted");
    assert!(
        cordoned(&c, &name),
        "the node is left cordoned, as the message says"
    );
    // The command line the hint gives makes it schedulable again.
    d.talm(["uncordon", "-n", &w1, "-e", &cp]).ok();
    assert!(!cordoned(&c, &name));
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
fn kubectl_lists_and_drains_the_nodes_of_a_simulated_cluster() {
    let [cp, w1]: [String; 2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1]);
    let c = client(&d);
    let kubectl = |args: &[&str]| {
        let out = std::process::Command::new("kubectl")
            .args(["--kubeconfig", "kubeconfig"])
            .args(args)
            .current_dir(d.path())
            .output()
            .expect("kubectl runs");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "kubectl {args:?}: {err}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The rows' cells (split at column gaps), AGE read as a placeholder.
    let cells = |text: &str| -> Vec<Vec<String>> {
        let gap = regex::Regex::new(r"\s{2,}").unwrap();
        text.lines()
            .map(|l| {
                gap.split(l.trim_end())
                    .enumerate()
                    .map(|(i, c)| {
                        if i == 3 && c != "AGE" {
                            "<age>".into()
                        } else {
                            c.to_string()
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let (cpn, wn) = (name_of(&c, &cp), name_of(&c, &w1));
    let row = |name: &str, role: &str, ip: &str| -> Vec<String> {
        [
            name,
            "Ready",
            role,
            "<age>",
            "v1.36.2",
            ip,
            "<none>",
            "Talos (v1.13.7)",
            "6.18.3-talos",
            "containerd://2.1.4",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut rows = vec![row(&cpn, "control-plane", &cp), row(&wn, "<none>", &w1)];
    rows.sort();
    let header = [
        "NAME",
        "STATUS",
        "ROLES",
        "AGE",
        "VERSION",
        "INTERNAL-IP",
        "EXTERNAL-IP",
        "OS-IMAGE",
        "KERNEL-VERSION",
        "CONTAINER-RUNTIME",
    ];
    rows.insert(0, header.map(String::from).to_vec());
    assert_eq!(cells(&kubectl(&["get", "nodes", "-o", "wide"])), rows);
    // talm cordon and uncordon, through the worker's endpoint (the control plane).
    let o = d.talm(["cordon", "-n", &w1, "-e", &cp]).ok();
    assert_eq!(
        o.stderr,
        format!("{wn}: cordoning node\n{wn}: node cordoned\n")
    );
    assert!(cordoned(&c, &wn));
    let o = d.talm(["uncordon", "-n", &w1, "-e", &cp]).ok();
    assert_eq!(
        o.stderr,
        format!("{wn}: uncordoning node\n{wn}: node uncordoned\n")
    );
    assert!(!cordoned(&c, &wn));
    // kubectl's own drain: the DaemonSet pods stay, the others are evicted.
    kubectl(&[
        "drain",
        &wn,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
    ]);
    assert!(cordoned(&c, &wn));
    assert_eq!(evictable(&c, &wn), Vec::<String>::new());
    assert_eq!(
        kubectl(&["uncordon", &wn]),
        format!("node/{wn} uncordoned\n")
    );
    assert!(!cordoned(&c, &wn));
}

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

const SERVER_TIMEOUT: &str =
    "healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded";
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
    let server = |timeout: &str| {
        d.talm(["health", "-f", "nodes/cp1.yaml", "--wait-timeout", timeout])
            .run()
    };
    let client_side = |timeout: &str| {
        d.talm([
            "health",
            "-f",
            "nodes/cp1.yaml",
            "--server=false",
            "--control-plane-nodes",
            &cp,
            "--worker-nodes",
            &w1,
            "--wait-timeout",
            timeout,
        ])
        .run()
    };
    let o = server("30s");
    assert_eq!(
        (o.code, o.stderr),
        (0, format!("{discovered}{}", progress(16, &[], None)))
    );
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
        (
            1,
            format!(
                "{discovered}{}",
                progress(12, &[], Some((SERVER_TIMEOUT, &not_ready)))
            )
        )
    );
    let o = client_side("6s");
    assert_eq!(
        (o.code, o.stderr),
        (
            1,
            progress(
                12,
                &CLIENT_SKIPS,
                Some(("context deadline exceeded", &not_ready))
            )
        )
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
        pods_ready(&c, "kube-system", "k8s-app=kube-dns").1 == 0
    });
    let dns =
        "no ready pods found for namespace \"kube-system\" and label selector \"k8s-app=kube-dns\"";
    let o = server("6s");
    assert_eq!(
        (o.code, o.stderr),
        (
            1,
            format!(
                "{discovered}{}",
                progress(14, &[], Some((SERVER_TIMEOUT, dns)))
            )
        )
    );

    // A control plane's scheduler never becomes Ready.
    let mut f = nodes.node(&cp).faults();
    f.pod_never_ready = vec!["kube-system/kube-scheduler".into()];
    nodes.node(&cp).set_faults(f);
    until("the scheduler is not Ready", || {
        pods_ready(&c, "kube-system", "k8s-app=kube-scheduler").1 == 0
    });
    let scheduler = format!(
        "some pods are not ready for kube-scheduler: [kube-scheduler-{}]",
        name_of(&c, &cp)
    );
    let o = server("6s");
    assert_eq!(
        (o.code, o.stderr),
        (
            1,
            format!(
                "{discovered}{}",
                progress(11, &[], Some((SERVER_TIMEOUT, &scheduler)))
            )
        )
    );
}
