//! A simulated cluster brought up in-process (nodes configured and "up" without their gRPC
//! servers, etcd bootstrapped as the Bootstrap call does), then the controllers' passes run by
//! hand and the API's objects and the health checks asserted.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};

use base64::Engine as _;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::controllers::Controllers;
use super::health::{self, Check, Expected};
use super::store::Key;
use super::Kube;
use crate::api::Registry;
use crate::node::state::Config;
use crate::node::{Node, NodeSpec};
use talm_wire::k8s::checks::Outcome;

struct Cluster {
    registry: Arc<Registry>,
    nodes: Vec<Arc<Node>>,
    ctl: Controllers,
    stop: CancellationToken,
}

fn config(kind: &str, host: &str, extra: &str) -> Config {
    let b64 = |t: &str| base64::engine::general_purpose::STANDARD.encode(t);
    let text = format!(
        "version: v1alpha1\nmachine:\n    type: {kind}\n    network:\n        hostname: {host}\n{extra}cluster:\n    clusterName: sim\n    controlPlane:\n        endpoint: https://127.0.39.1:6443\n    ca:\n        crt: {}\n        key: {}\n",
        b64("CLUSTER CA"),
        b64("CLUSTER KEY")
    );
    let docs = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    Config::new(text, docs)
}

impl Cluster {
    /// Nodes at 127.0.39.<i+1>: (machine type, hostname, extra `machine:` lines).
    fn new(nodes: &[(&str, &str, &str)]) -> Cluster {
        let stop = CancellationToken::new();
        let registry: Arc<Registry> = Arc::new(RwLock::new(HashMap::new()));
        let mut out = Vec::new();
        for (i, (kind, host, extra)) in nodes.iter().enumerate() {
            let addr: IpAddr = format!("127.0.39.{}", i + 1).parse().unwrap();
            let node = Arc::new(Node::new(NodeSpec::new(addr, 50000), stop.clone()));
            node.state().set_config(Some(config(kind, host, extra)));
            node.state().installed_disk = Some("nvme0n1".into());
            node.set_world(Arc::downgrade(&registry));
            node.up.send_replace(1);
            registry
                .write()
                .unwrap()
                .insert(node.name(), Arc::clone(&node));
            out.push(node);
        }
        crate::etcd::calls::start(&out[0], false, false);
        crate::etcd::reconcile(&registry);
        Cluster {
            registry,
            nodes: out,
            ctl: Controllers::default(),
            stop,
        }
    }

    /// Passes until the objects settle.
    fn settle(&mut self) {
        for _ in 0..4 {
            self.ctl.pass(&self.registry);
        }
    }

    fn kube(&self) -> Arc<Kube> {
        super::cluster::of(&self.nodes[0], &self.registry).unwrap()
    }

    fn names(&self, resource: &str, ns: Option<&str>) -> Vec<String> {
        self.kube()
            .objects
            .list(resource, ns)
            .0
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    }

    fn get(&self, resource: &str, ns: &str, name: &str) -> Value {
        self.kube()
            .objects
            .get(&Key::new(resource, ns, name))
            .unwrap_or_else(|| panic!("{resource} {ns}/{name} is missing"))
    }

    fn check(&self, check: Check) -> Result<Outcome, String> {
        let names: Vec<String> = self.nodes.iter().map(|n| n.name()).collect();
        let cps: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.state().config.as_ref().unwrap().is_control_plane())
            .map(|n| n.name())
            .collect();
        let workers: Vec<String> = names.into_iter().filter(|n| !cps.contains(n)).collect();
        let expected = Expected {
            control_planes: &cps,
            workers: &workers,
        };
        health::run(check, &self.nodes[0], &self.registry, &expected)
    }

    fn pods_on(&self, ns: &str, prefix: &str) -> Vec<(String, String, bool)> {
        self.kube()
            .objects
            .list("pods", Some(ns))
            .0
            .iter()
            .filter(|p| p["metadata"]["name"].as_str().unwrap().starts_with(prefix))
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_string(),
                    p["spec"]["nodeName"].as_str().unwrap_or("").to_string(),
                    super::pods::is_ready(p),
                )
            })
            .collect()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn three() -> Cluster {
    Cluster::new(&[
        ("controlplane", "cp-1", "    nodeLabels:\n        zone: a\n"),
        ("worker", "w-1", ""),
        ("worker", "w-2", ""),
    ])
}

const ALL: [Check; 7] = [
    Check::NodesReport,
    Check::StaticPods,
    Check::Components,
    Check::NodesReady,
    Check::KubeProxy,
    Check::CoreDns,
    Check::Schedulable,
];

#[tokio::test]
async fn a_bootstrapped_cluster_holds_its_nodes_static_pods_and_manifests() {
    let mut c = three();
    c.settle();
    assert_eq!(
        c.names("namespaces", None),
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    assert_eq!(c.names("nodes", None), ["cp-1", "w-1", "w-2"]);
    let cp = c.get("nodes", "", "cp-1");
    assert_eq!(
        cp["metadata"]["labels"],
        json!({
            "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": "cp-1",
            "kubernetes.io/os": "linux", "node-role.kubernetes.io/control-plane": "",
            "zone": "a",
        })
    );
    assert_eq!(
        cp["spec"]["taints"],
        json!([{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}])
    );
    assert_eq!(
        cp["status"]["addresses"],
        json!([{"type": "InternalIP", "address": "127.0.39.1"}, {"type": "Hostname", "address": "cp-1"}])
    );
    let info = &cp["status"]["nodeInfo"];
    assert_eq!(
        (
            &info["kubeletVersion"],
            &info["osImage"],
            &info["containerRuntimeVersion"]
        ),
        (
            &json!("v1.36.2"),
            &json!("Talos (v1.13.7)"),
            &json!("containerd://2.1.4")
        )
    );
    assert_eq!(cp["status"]["capacity"]["memory"], "4027520Ki");
    let w = c.get("nodes", "", "w-1");
    assert_eq!(w["spec"].get("taints"), None);
    assert_eq!(
        w["status"]["conditions"][3]["status"], "True",
        "{}",
        w["status"]
    );
    let statics: Vec<(String, String, bool)> = c
        .pods_on("kube-system", "kube-")
        .into_iter()
        .filter(|(n, _, _)| !n.starts_with("kube-proxy-") && !n.starts_with("kube-flannel-"))
        .collect();
    let on_cp = |n: &str| (n.to_string(), "cp-1".to_string(), true);
    assert_eq!(
        statics,
        [
            on_cp("kube-apiserver-cp-1"),
            on_cp("kube-controller-manager-cp-1"),
            on_cp("kube-scheduler-cp-1")
        ]
    );
    let api = c.get("pods", "kube-system", "kube-apiserver-cp-1");
    assert_eq!(api["metadata"]["labels"]["k8s-app"], "kube-apiserver");
    assert_eq!(api["metadata"]["labels"]["tier"], "control-plane");
    assert_eq!(
        api["metadata"]["annotations"]["talos.dev/config-version"],
        "1"
    );
    assert!(api["metadata"]["annotations"]
        .get("kubernetes.io/config.mirror")
        .is_some());
    assert_eq!(api["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(api["status"]["hostIP"], "127.0.39.1");
    assert_eq!(api["spec"]["priority"], 2000000000);
    // The node agents run on every node, CoreDNS's two replicas on two different nodes.
    let mut proxy_nodes: Vec<String> = c
        .pods_on("kube-system", "kube-proxy")
        .into_iter()
        .map(|(_, n, ready)| {
            assert!(ready);
            n
        })
        .collect();
    proxy_nodes.sort();
    assert_eq!(proxy_nodes, ["cp-1", "w-1", "w-2"]);
    assert_eq!(c.pods_on("kube-system", "kube-flannel").len(), 3);
    let dns = c.pods_on("kube-system", "coredns-");
    assert_eq!(dns.len(), 2);
    assert_ne!(dns[0].1, dns[1].1);
    let ds = c.get("daemonsets.apps", "kube-system", "kube-proxy");
    assert_eq!(
        (
            &ds["status"]["desiredNumberScheduled"],
            &ds["status"]["numberReady"]
        ),
        (&json!(3), &json!(3))
    );
    let dep = c.get("deployments.apps", "kube-system", "coredns");
    assert_eq!(dep["status"]["readyReplicas"], 2);
    assert_eq!(
        c.names("configmaps", Some("kube-system")),
        ["coredns", "kube-flannel-cfg", "kubeconfig-in-cluster"]
    );
    for check in ALL {
        assert_eq!(c.check(check), Ok(Outcome::Pass), "{check:?}");
    }
    // Nothing changed: a pass writes nothing.
    let v = c.kube().objects.version();
    c.settle();
    assert_eq!(c.kube().objects.version(), v);
}

#[tokio::test]
async fn a_node_that_goes_down_is_unknown_and_a_cordon_stays() {
    let mut c = three();
    c.settle();
    let key = Key::new("nodes", "", "w-2");
    c.kube()
        .objects
        .modify(&key, |n| n["spec"]["unschedulable"] = true.into());
    c.nodes[1].up.send_replace(0);
    c.settle();
    let w = c.get("nodes", "", "w-1");
    let ready = &w["status"]["conditions"][3];
    assert_eq!(
        (
            &ready["type"],
            &ready["status"],
            &ready["reason"],
            &ready["message"]
        ),
        (
            &json!("Ready"),
            &json!("Unknown"),
            &json!("NodeStatusUnknown"),
            &json!("Kubelet stopped posting node status.")
        )
    );
    assert_eq!(c.get("nodes", "", "w-2")["spec"]["unschedulable"], true);
    assert_eq!(
        c.check(Check::NodesReady),
        Err("some nodes are not ready: [w-1]".into())
    );
    assert_eq!(
        c.check(Check::Schedulable),
        Err("some nodes are not schedulable: [w-2]".into())
    );
    let proxy_w1: Vec<bool> = c
        .pods_on("kube-system", "kube-proxy")
        .into_iter()
        .filter(|(_, n, _)| n == "w-1")
        .map(|(_, _, r)| r)
        .collect();
    assert_eq!(proxy_w1, [false]);
    assert!(c
        .check(Check::KubeProxy)
        .unwrap_err()
        .starts_with("some pods are not ready: [kube-proxy-"));
    // Back up: Ready again.
    c.nodes[1].up.send_replace(2);
    c.settle();
    assert_eq!(c.check(Check::NodesReady), Ok(Outcome::Pass));
    assert_eq!(c.check(Check::KubeProxy), Ok(Outcome::Pass));
}

#[tokio::test]
async fn the_control_plane_down_stops_the_api_and_the_static_pods_check_names_it() {
    let mut c = three();
    c.settle();
    c.nodes[0].up.send_replace(0);
    c.settle();
    assert_eq!(
        c.check(Check::NodesReady),
        Err("Get \"https://127.0.39.1:6443/api/v1/nodes\": dial tcp 127.0.39.1:6443: connect: connection refused".into())
    );
    assert_eq!(
        c.check(Check::StaticPods),
        Err("error listing static pods on node 127.0.39.1: rpc error: code = Unavailable desc = connection refused".into())
    );
    // A worker that goes down while no API runs is NotReady once the API is back.
    c.nodes[2].up.send_replace(0);
    c.settle();
    c.nodes[0].up.send_replace(2);
    c.settle();
    assert_eq!(
        c.check(Check::NodesReady),
        Err("some nodes are not ready: [w-2]".into())
    );
    assert_eq!(c.check(Check::StaticPods), Ok(Outcome::Pass));
}

#[tokio::test]
async fn a_deployment_gets_pods_that_move_when_one_is_evicted() {
    let mut c = three();
    c.settle();
    let kube = c.kube();
    kube.objects
        .create(
            &Key::new("namespaces", "", "workload"),
            super::bootstrap::namespace("workload"),
        )
        .unwrap();
    let dep = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "workload", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}},
    });
    kube.objects
        .create(&Key::new("deployments.apps", "workload", "web"), dep)
        .unwrap();
    c.settle();
    let mut pods = c.pods_on("workload", "web-");
    pods.sort_by(|a, b| a.1.cmp(&b.1));
    let nodes: Vec<&str> = pods.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(nodes, ["w-1", "w-2"], "spread over the workers");
    assert_eq!(c.names("replicasets.apps", Some("workload")).len(), 1);
    let rs = &c.names("replicasets.apps", Some("workload"))[0];
    assert!(pods[0].0.starts_with(&format!("{rs}-")), "{pods:?}");
    // Drain w-1: cordon, evict; the pod comes back on w-2.
    kube.objects.modify(&Key::new("nodes", "", "w-1"), |n| {
        n["spec"]["unschedulable"] = true.into()
    });
    kube.objects
        .delete(&Key::new("pods", "workload", &pods[0].0))
        .unwrap();
    c.settle();
    let now: Vec<(String, bool)> = c
        .pods_on("workload", "web-")
        .into_iter()
        .map(|(_, n, r)| (n, r))
        .collect();
    assert_eq!(now, [("w-2".to_string(), true), ("w-2".to_string(), true)]);
    let d = c.get("deployments.apps", "workload", "web");
    assert_eq!(
        (
            &d["status"]["readyReplicas"],
            &d["status"]["updatedReplicas"]
        ),
        (&json!(2), &json!(2))
    );
    // Deleting the Deployment takes its ReplicaSet and pods.
    kube.objects
        .delete(&Key::new("deployments.apps", "workload", "web"))
        .unwrap();
    c.settle();
    assert!(c.pods_on("workload", "web-").is_empty());
    assert!(c.names("replicasets.apps", Some("workload")).is_empty());
}

#[tokio::test]
async fn faults_hold_pods_back_block_evictions_and_the_api() {
    let mut c = three();
    let mut f = c.nodes[0].faults();
    f.pod_never_ready = vec!["kube-system/coredns".into()];
    f.blocking_pdb = [(
        "kube-system/dns-pdb".to_string(),
        "k8s-app=kube-dns".to_string(),
    )]
    .into();
    f.kube_unavailable = Some(std::time::Duration::from_secs(30));
    c.nodes[0].set_faults(f);
    c.settle();
    assert_eq!(
        c.check(Check::NodesReport),
        Err("the server is currently unable to handle the request (get nodes)".into())
    );
    *c.kube().unavailable_until.lock().unwrap() = None;
    let dns: Vec<String> = c
        .pods_on("kube-system", "coredns-")
        .into_iter()
        .map(|(n, _, ready)| {
            assert!(!ready);
            n
        })
        .collect();
    assert_eq!(
        c.check(Check::CoreDns),
        Err("no ready pods found for namespace \"kube-system\" and label selector \"k8s-app=kube-dns\"".into())
    );
    assert_eq!(dns.len(), 2);
    let pdb = c.get("poddisruptionbudgets.policy", "kube-system", "dns-pdb");
    assert_eq!(pdb["spec"]["minAvailable"], 2);
    assert_eq!(
        (
            &pdb["status"]["expectedPods"],
            &pdb["status"]["disruptionsAllowed"]
        ),
        (&json!(2), &json!(0))
    );
}

#[test]
fn a_cordon_through_the_api_taints_the_node_and_an_uncordon_lifts_it() {
    let objects = super::store::Objects::default();
    let key = Key::new("nodes", "", "n1");
    let spec = |o: &super::store::Objects| o.get(&key).expect("the node")["spec"].clone();
    objects
        .create(&key, json!({"spec": {"unschedulable": true}}))
        .unwrap();
    super::model::taint_unschedulable(&objects);
    assert_eq!(
        spec(&objects),
        json!({"unschedulable": true, "taints": [{"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable"}]})
    );
    objects.modify(&key, |n| n["spec"]["unschedulable"] = false.into());
    super::model::taint_unschedulable(&objects);
    assert_eq!(spec(&objects), json!({"unschedulable": false}));
}
