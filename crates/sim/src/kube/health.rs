//! The Kubernetes checks of a simulated control plane's server-side health: each reaches the
//! cluster's API as the node's health client would (refused while no kube-apiserver runs, 503
//! while the `kube_unavailable` fault holds), lists what Talos's check lists, and judges it
//! with the shared checks of `talm_wire::k8s::checks` (the very functions talm's client-side
//! health calls), so the messages are Talos's.

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::api::Registry;
use crate::kube::Kube;
use crate::node::Node;
use talm_wire::k8s::checks::{self, Outcome};

/// The Kubernetes checks, in Talos's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    NodesReport,
    StaticPods,
    Components,
    NodesReady,
    KubeProxy,
    CoreDns,
    Schedulable,
}

/// The nodes the cluster is expected to have (their addresses).
pub struct Expected<'a> {
    pub control_planes: &'a [String],
    pub workers: &'a [String],
}

/// The error a client meets when no kube-apiserver answers at the cluster endpoint.
fn refused(node: &Node) -> String {
    let endpoint = node
        .state()
        .config
        .as_ref()
        .map(|c| c.cluster_endpoint())
        .unwrap_or_default();
    let host = endpoint
        .split_once("://")
        .map_or(endpoint.as_str(), |(_, r)| r)
        .trim_end_matches('/');
    format!("Get \"{endpoint}/api/v1/nodes\": dial tcp {host}: connect: connection refused")
}

/// Whether control plane `n` serves the API: up, not rebooting, its etcd running with quorum.
fn serves(n: &Node, registry: &Registry) -> bool {
    if *n.up.borrow() == 0 || *n.halted.borrow() {
        return false;
    }
    let member = {
        let st = n.state();
        match (&st.etcd, &st.etcd_down, st.rebooting) {
            (Some(m), None, false) => m.clone(),
            _ => return false,
        }
    };
    let alive = crate::etcd::alive(registry, &member.cluster);
    let quorum = member.lock().quorum(&alive);
    quorum
}

/// The cluster's API as a client reaches it.
fn reach(node: &Node, registry: &Registry, expected: &Expected) -> Result<Arc<Kube>, String> {
    let kube = crate::kube::cluster::of(node, registry).ok_or_else(|| refused(node))?;
    let targets: Vec<Arc<Node>> = {
        let nodes = registry.read().unwrap_or_else(|e| e.into_inner());
        expected
            .control_planes
            .iter()
            .filter_map(|n| nodes.get(n).cloned())
            .collect()
    };
    if !targets.iter().any(|n| serves(n, registry)) {
        return Err(refused(node));
    }
    let held = *kube
        .unavailable_until
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if held.is_some_and(|t| Instant::now() < t) {
        return Err("the server is currently unable to handle the request (get nodes)".into());
    }
    Ok(kube)
}

/// Waits (up to two seconds) until the controllers made two more passes over the cluster, so
/// that what the nodes did before the checks began is in the API.
fn settled(node: &Node, registry: &Registry) {
    let Some(etcd) = crate::kube::cluster::etcd_of(node, registry) else {
        return;
    };
    let passes = || etcd.lock().unwrap_or_else(|e| e.into_inner()).kube_passes;
    let target = passes() + 2;
    let deadline = Instant::now() + std::time::Duration::from_secs(2);
    while passes() < target && Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The IDs of a control plane's `StaticPodStatus` resources, or Talos's listing error.
fn static_pod_ids(name: &str, registry: &Registry) -> Result<Vec<String>, String> {
    let node = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(name)
        .cloned();
    let Some(node) = node.filter(|n| *n.up.borrow() > 0) else {
        return Err(format!(
            "error listing static pods on node {name}: rpc error: code = Unavailable desc = connection refused"
        ));
    };
    const STATUSES: &str = "StaticPodStatuses.kubernetes.talos.dev";
    Ok(node
        .synced_only(crate::cosi::store::Only::Kinds(&[("k8s", STATUSES)]))
        .with_kind("k8s", STATUSES, |k| {
            k.items()
                .filter_map(|r| r.metadata.as_ref().map(|m| m.id.clone()))
                .collect()
        }))
}

/// Whether the node's config disables the CNI (`cluster.network.cni.name: none`).
fn cni_none(node: &Node) -> bool {
    let st = node.state();
    st.config.as_ref().and_then(|c| c.v1alpha1()).and_then(|d| {
        d.get("cluster")?
            .get("network")?
            .get("cni")?
            .get("name")?
            .as_str()
    }) == Some("none")
}

fn ips(list: &[String]) -> Vec<Vec<String>> {
    list.iter().map(|n| vec![n.clone()]).collect()
}

/// Copies, for the checks `talm_wire` shares with the client (which reads typed objects).
fn kube_system(kube: &Kube, resource: &str) -> Vec<Value> {
    owned(kube.objects.list(resource, Some("kube-system")).0)
}

fn owned(objects: Vec<crate::kube::store::Object>) -> Vec<Value> {
    objects.iter().map(|o| Value::clone(o)).collect()
}

/// Runs one Kubernetes check from control plane `node`.
pub fn run(
    check: Check,
    node: &Node,
    registry: &Registry,
    expected: &Expected,
) -> Result<Outcome, String> {
    if cni_none(node) && matches!(check, Check::NodesReady | Check::CoreDns) {
        return Ok(Outcome::Skip);
    }
    if check == Check::NodesReport {
        settled(node, registry);
    }
    let kube = || reach(node, registry, expected);
    let nodes = |kube: &Arc<Kube>| owned(kube.objects.list("nodes", None).0);
    match check {
        Check::NodesReport => {
            let all: Vec<String> = expected
                .control_planes
                .iter()
                .chain(expected.workers)
                .cloned()
                .collect();
            checks::nodes_reported(&ips(&all), &nodes(&kube()?))
        }
        Check::StaticPods => {
            let mut found = Vec::new();
            for cp in expected.control_planes {
                found.push((cp.clone(), static_pod_ids(cp, registry)?));
            }
            checks::static_pods(&found)
        }
        Check::Components => {
            let kube = kube()?;
            checks::control_plane_components(
                &ips(expected.control_planes),
                &nodes(&kube),
                &kube_system(&kube, "daemonsets.apps"),
                &kube_system(&kube, "pods"),
            )
        }
        Check::NodesReady => checks::nodes_ready(&nodes(&kube()?)),
        Check::KubeProxy => {
            let kube = kube()?;
            checks::kube_proxy(
                &kube_system(&kube, "daemonsets.apps"),
                &kube_system(&kube, "pods"),
            )
        }
        Check::CoreDns => {
            let kube = kube()?;
            checks::coredns(
                false,
                &kube_system(&kube, "deployments.apps"),
                &kube_system(&kube, "pods"),
            )
        }
        Check::Schedulable => checks::nodes_schedulable(&nodes(&kube()?)),
    }
}
