//! A control plane's kube-apiserver as the controllers start and stop it: the cluster's
//! Kubernetes CA from the node's config, and the listener on `<node address>:6443` until the
//! node stops serving it (reboot, power off, reset, etcd without quorum).
//! The HTTP/TLS server itself is `kube::api`.

use std::net::{IpAddr, SocketAddr};
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
    start_at(node, node.spec.addr, kube, stop)
}

/// Starts serving `kube` at `ip` (the node's own address or a virtual IP it holds). An
/// address still held by the previous holder's closing listener is tried again until `stop`.
pub fn start_at(node: &Node, ip: IpAddr, kube: Arc<Kube>, stop: CancellationToken) -> bool {
    let ca = node.state().config.as_ref().and_then(cluster_ca);
    let Some(ca) = ca else { return false };
    let addr = SocketAddr::new(ip, PORT);
    tokio::spawn(async move {
        loop {
            match listen(addr, &ca, Arc::clone(&kube), stop.clone()).await {
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && !stop.is_cancelled() => {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                Err(e) => {
                    eprintln!("sim {addr}: kube-apiserver cannot listen: {e}");
                    return;
                }
                Ok(()) => return,
            }
        }
    });
    true
}

/// The cluster endpoint's virtual IP as Talos's VIP controller keeps it: one serving control
/// plane holds it, and when that one stops serving the next takes it over.
#[derive(Default)]
pub struct Vip {
    held: Option<(String, IpAddr, CancellationToken)>,
}

impl Vip {
    /// Keeps the VIP on a control plane of `serving` (names in order) whose config names one;
    /// only loopback addresses are taken (the simulator never binds anything else).
    pub fn keep(&mut self, serving: &[&Node], kube: &Arc<Kube>) {
        if let Some((holder, _, stop)) = &self.held {
            if serving.iter().any(|n| &n.name() == holder) && !stop.is_cancelled() {
                return;
            }
            stop.cancel();
            self.held = None;
        }
        for node in serving {
            let vip = node
                .state()
                .config
                .as_ref()
                .and_then(|c| c.vips().first().cloned())
                .and_then(|v| v.parse::<IpAddr>().ok())
                .filter(|ip| ip.is_loopback() && *ip != node.spec.addr);
            let Some(ip) = vip else { continue };
            let stop = node.stop.child_token();
            if start_at(node, ip, Arc::clone(kube), stop.clone()) {
                self.held = Some((node.name(), ip, stop));
                return;
            }
        }
    }

    /// Gives the VIP up (the cluster's API stops everywhere).
    pub fn release(&mut self) {
        if let Some((_, _, stop)) = self.held.take() {
            stop.cancel();
        }
    }
}
