//! A simulated cluster's Kubernetes side for tests: a bootstrapped cluster whose workers reach
//! the Talos API through the first control plane (as talosctl's drain needs: the kubeconfig
//! comes from a control plane), and a Kubernetes client from the kubeconfig talm writes.

use std::time::{Duration, Instant};

use talm::talos::block_on;
use talm::talos::k8s::Cluster;

use super::cluster::{cp_file, worker_file};
use super::sim::{template_node, Nodes};
use super::Dir;

/// Waits until `ok` holds, for up to a minute (Kubernetes follows the nodes in steps).
pub fn until(what: &str, ok: impl Fn() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A generic project with control planes `cps` (`nodes/cpN.yaml`) and workers `workers`
/// (`nodes/wN.yaml`, reached through the first control plane), etcd bootstrapped, every node
/// registered and Ready in Kubernetes. The kubeconfig is at the project's root.
pub fn cluster(nodes: &Nodes, cps: &[&str], workers: &[&str]) -> Dir {
    let d = Dir::project("generic");
    // The cluster's endpoint is the first control plane, whose kube-apiserver serves it.
    let values = d.read("values.yaml").replace(
        "endpoint: \"https://127.0.0.11:6443\"",
        &format!("endpoint: \"https://{}:6443\"", cps[0]),
    );
    d.write("values.yaml", &values);
    let install = |file: &str, ip: &str| {
        let boots = nodes.boots(ip);
        d.talm(["apply", "-f", file, "-i"]).ok();
        nodes.wait_reboot(ip, boots);
    };
    for (i, ip) in cps.iter().enumerate() {
        let file = cp_file(i + 1);
        d.write(&file, &template_node(&d, ip));
        install(&file, ip);
    }
    for (i, ip) in workers.iter().enumerate() {
        let args = [
            "template",
            "-e",
            cps[0],
            "--nodes",
            ip,
            "-t",
            "templates/worker.yaml",
            "-i",
        ];
        let out = d.talm(args).ok().stdout;
        let file = worker_file(i + 1);
        d.write(&file, &out);
        install(&file, ip);
    }
    d.talm(["bootstrap", "-f", &cp_file(1)]).ok();
    d.talm(["kubeconfig", "-f", &cp_file(1)]).ok();
    let c = client(&d);
    let all = cps.len() + workers.len();
    until("every node registered and Ready", || {
        block_on(c.nodes())
            .is_ok_and(|ns| ns.len() == all && ns.iter().all(talm::talos::k8s::is_ready))
    });
    d
}

/// A client of the project's cluster, from the kubeconfig `talm kubeconfig` wrote.
pub fn client(d: &Dir) -> Cluster {
    block_on(Cluster::connect(&d.read("kubeconfig"), None)).expect("a Kubernetes client")
}

/// Applies objects (YAML) server side, as a user's kubectl would.
pub fn apply(c: &Cluster, yaml: &str) {
    let objects = talm::talos::k8s::apply::objects(yaml, "test").expect("objects");
    block_on(c.apply(&objects, false)).expect("applied");
}

/// The Kubernetes name of the node at `ip` (its InternalIP).
pub fn name_of(c: &Cluster, ip: &str) -> String {
    block_on(c.nodes())
        .expect("nodes")
        .into_iter()
        .find(|n| {
            n.status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .is_some_and(|a| a.iter().any(|a| a.type_ == "InternalIP" && a.address == ip))
        })
        .and_then(|n| n.metadata.name)
        .unwrap_or_else(|| panic!("no Kubernetes node has InternalIP {ip}"))
}

/// Whether the named node is cordoned.
pub fn cordoned(c: &Cluster, name: &str) -> bool {
    block_on(c.node(name))
        .expect("node")
        .and_then(|n| n.spec)
        .and_then(|s| s.unschedulable)
        == Some(true)
}
