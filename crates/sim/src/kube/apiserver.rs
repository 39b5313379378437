//! A control plane's kube-apiserver as the controllers start and stop it: the cluster's
//! Kubernetes CA from the node's config, and the listener on `<node address>:6443` until the
//! node stops serving it (reboot, power off, reset, etcd without quorum).
//!
//! The HTTP/TLS server is helper H1's `kube::api::listen`; until it is merged, `listen` here
//! is a placeholder with the same signature that only binds the port (connections wait).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::kube::Kube;
use crate::node::state::Config;
use crate::node::Node;

/// The port kube-apiserver listens on.
pub const PORT: u16 = 6443;

/// The cluster's Kubernetes CA: certificate and key, PEM.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClusterCa {
    pub crt: String,
    pub key: String,
}

impl ClusterCa {
    /// `cluster.ca` of a control plane's config, decoded; `None` without a key.
    pub fn of(cfg: &Config) -> Option<ClusterCa> {
        use base64::Engine as _;
        let (crt, key) = cfg.cluster_ca();
        let decode = |t: &str| {
            base64::engine::general_purpose::STANDARD
                .decode(t.trim())
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
        };
        let (crt, key) = (decode(&crt)?, decode(&key)?);
        (!key.is_empty()).then_some(ClusterCa { crt, key })
    }
}

/// Placeholder for H1's server: binds `addr` and holds it until `stop`.
pub async fn listen(
    addr: SocketAddr,
    _ca: &ClusterCa,
    _kube: Arc<Kube>,
    stop: CancellationToken,
) -> io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    stop.cancelled().await;
    drop(listener);
    Ok(())
}

/// Starts serving `kube` on the node's address until `stop` is cancelled; `false` when the
/// node's config carries no cluster CA key to serve with.
pub fn start(node: &Node, kube: Arc<Kube>, stop: CancellationToken) -> bool {
    let ca = node.state().config.as_ref().and_then(ClusterCa::of);
    let Some(ca) = ca else { return false };
    let addr = SocketAddr::new(node.spec.addr, PORT);
    tokio::spawn(async move {
        if let Err(e) = listen(addr, &ca, kube, stop).await {
            eprintln!("sim {}: kube-apiserver cannot listen: {e}", addr);
        }
    });
    true
}
