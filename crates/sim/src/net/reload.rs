//! The TLS a configured node serves, kept in step with its config: Talos's apid picks up a new
//! machine CA or accepted CAs without a reboot (as `rotate-ca` relies on), so each new
//! connection is accepted with the certificates of the config the node runs at that moment.

use std::sync::Arc;

use tokio_rustls::TlsAcceptor;

use crate::api::Registry;
use crate::node::Node;

/// The acceptor of the config version it was made for.
pub struct Tls {
    version: u64,
    acceptor: TlsAcceptor,
}

impl Tls {
    /// The boot's TLS, made for the node's config as it is now.
    pub fn new(node: &Node, cfg: rustls::ServerConfig) -> Tls {
        Tls {
            version: node.state().config_version,
            acceptor: TlsAcceptor::from(Arc::new(cfg)),
        }
    }

    /// The acceptor as it was made (maintenance mode keeps its certificate for the boot).
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor.clone()
    }

    /// The acceptor for the config the node runs now: remade when the config changed; kept
    /// (and the failure said once) when the new one cannot be made.
    pub fn current(&mut self, node: &Arc<Node>, registry: &Arc<Registry>) -> TlsAcceptor {
        let version = node.state().config_version;
        if version != self.version {
            self.version = version;
            let peers: Vec<Arc<Node>> = registry
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned()
                .collect();
            match node.tls(&peers) {
                Ok(cfg) => self.acceptor = TlsAcceptor::from(Arc::new(cfg)),
                Err(e) => eprintln!(
                    "sim {}: keeping the previous certificates: {e:#}",
                    node.name()
                ),
            }
        }
        self.acceptor.clone()
    }
}
