//! A control plane's kube-apiserver as the controllers start and stop it: the cluster's
//! Kubernetes CA from the node's config, and the listener on `<node address>:6443` until the
//! node stops serving it (reboot, power off, reset, etcd without quorum).
//! The HTTP/TLS server itself is `kube::api`.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::kube::api::{listen, ClusterCa};
use crate::kube::Kube;
use crate::node::state::Config;
use crate::node::Node;

/// The port kube-apiserver listens on.
pub const PORT: u16 = 6443;

/// `cluster.ca` of a control plane's config, decoded; `None` without a key.
pub fn cluster_ca(cfg: &Config) -> Option<ClusterCa> {
    use base64::Engine as _;
    let (crt, key) = cfg.cluster_ca();
    let decode = |t: &str| {
        base64::engine::general_purpose::STANDARD
            .decode(t.trim())
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
    };
    let (cert_pem, key_pem) = (decode(&crt)?, decode(&key)?);
    (!key_pem.is_empty()).then_some(ClusterCa { cert_pem, key_pem })
}

/// Starts serving `kube` on the node's address until `stop` is cancelled; `false` when the
/// node's config carries no cluster CA key to serve with.
pub fn start(node: &Node, kube: Arc<Kube>, stop: CancellationToken) -> bool {
    let ca = node.state().config.as_ref().and_then(cluster_ca);
    let Some(ca) = ca else { return false };
    let addr = SocketAddr::new(node.spec.addr, PORT);
    tokio::spawn(async move {
        if let Err(e) = listen(addr, &ca, kube, stop).await {
            eprintln!("sim {}: kube-apiserver cannot listen: {e}", addr);
        }
    });
    true
}
