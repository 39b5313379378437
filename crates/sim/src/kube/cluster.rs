//! Where a node finds its cluster's Kubernetes API: the `Kube` its own etcd member keeps (a
//! control plane), else the one kept by a control plane of the same cluster (same cluster CA)
//! that holds a membership: workers reach it that way, as their kubelets reach the API.

use std::sync::{Arc, Mutex};

use crate::api::Registry;
use crate::etcd::Cluster;
use crate::kube::Kube;
use crate::node::Node;

/// The Kubernetes API of `node`'s cluster, once the cluster was bootstrapped.
pub fn of(node: &Node, registry: &Registry) -> Option<Arc<Kube>> {
    let etcd = etcd_of(node, registry)?;
    let kube = Arc::clone(&etcd.lock().unwrap_or_else(|e| e.into_inner()).kube);
    Some(kube)
}

/// The etcd cluster that keeps `node`'s cluster's objects.
pub fn etcd_of(node: &Node, registry: &Registry) -> Option<Arc<Mutex<Cluster>>> {
    let identity = {
        let st = node.state();
        if let Some(m) = &st.etcd {
            return Some(Arc::clone(&m.cluster));
        }
        st.config.as_ref()?.cluster_ca().0
    };
    let nodes: Vec<Arc<Node>> = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    nodes.iter().find_map(|p| {
        let m = p.state().etcd.clone()?;
        let same = m.lock().identity == identity;
        same.then_some(m.cluster)
    })
}
