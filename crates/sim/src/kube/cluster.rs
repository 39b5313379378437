//! Where a node finds its cluster's Kubernetes API: the `Kube` its own etcd member keeps (a
//! control plane), else the one kept by a control plane of the same cluster (same cluster CA)
//! that holds a membership: workers reach it that way, as their kubelets reach the API.

use std::sync::Arc;

use crate::api::Registry;
use crate::kube::Kube;
use crate::node::Node;

/// The Kubernetes API of `node`'s cluster, once the cluster was bootstrapped.
pub fn of(node: &Node, registry: &Registry) -> Option<Arc<Kube>> {
    let identity = {
        let st = node.state();
        if let Some(m) = &st.etcd {
            return Some(Arc::clone(&m.lock().kube));
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
        let c = m.lock();
        (c.identity == identity).then(|| Arc::clone(&c.kube))
    })
}
