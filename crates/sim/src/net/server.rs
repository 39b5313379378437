//! A simulated node's transport: one listener per boot on its address, TLS per mode, the
//! connection wrapper that carries the peer's roles and is cut when the node "reboots", and the
//! boot loop (serve, power off, wait, boot again).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::server::TlsStream;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tonic::transport::server::Connected;
use tonic::transport::Server;

use crate::api::{Registry, Svc};
use crate::net::certs;
use crate::node::Node;
use talm_wire::proto::cluster::cluster_service_server::ClusterServiceServer;
use talm_wire::proto::cosi::resource::state_server::StateServer;
use talm_wire::proto::inspect::inspect_service_server::InspectServiceServer;
use talm_wire::proto::machine::debug_service_server::DebugServiceServer;
use talm_wire::proto::machine::image_service_server::ImageServiceServer;
use talm_wire::proto::machine::lifecycle_service_server::LifecycleServiceServer;
use talm_wire::proto::machine::machine_service_server::MachineServiceServer;
use talm_wire::proto::storage::storage_service_server::StorageServiceServer;
use talm_wire::proto::time::time_service_server::TimeServiceServer;

/// Who is on the other end of a connection.
#[derive(Clone, Debug)]
pub struct Peer {
    pub roles: Arc<Vec<String>>,
    /// Cancelling it cuts this connection.
    pub kill: CancellationToken,
}

/// A TLS connection that fails as soon as its kill token is cancelled. The stream is boxed: a
/// connection waits in a channel whose slots are allocated in blocks of 32, and a TLS stream
/// inline made that block 40 KiB for every node (measured with heaptrack).
pub struct Conn {
    io: Box<TlsStream<TcpStream>>,
    killed: Pin<Box<WaitForCancellationFutureOwned>>,
    peer: Peer,
}

impl Conn {
    fn cut(&mut self, cx: &mut Context<'_>) -> bool {
        self.killed.as_mut().poll(cx).is_ready()
    }
}

fn reset() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionReset,
        "the simulated node went down",
    )
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.cut(cx) {
            return Poll::Ready(Err(reset()));
        }
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl Connected for Conn {
    type ConnectInfo = Peer;

    fn connect_info(&self) -> Peer {
        self.peer.clone()
    }
}

use std::future::Future;

/// Binds `addr`; after a reboot (`again`), retries briefly while the previous boot's socket is
/// released. On the first boot an address in use is someone else's: no retry.
async fn bind(addr: SocketAddr, again: bool) -> io::Result<TcpListener> {
    let mut tries = 0;
    loop {
        match TcpListener::bind(addr).await {
            Ok(l) => return Ok(l),
            Err(e) if again && e.kind() == io::ErrorKind::AddrInUse && tries < 50 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Serves one boot until it is powered off.
async fn serve_boot(
    node: &Arc<Node>,
    registry: &Arc<Registry>,
    listener: TcpListener,
    tls: rustls::ServerConfig,
    boot: &CancellationToken,
) -> anyhow::Result<()> {
    let maintenance = node.state().in_maintenance();
    let mut tls_now = crate::net::reload::Tls::new(node, tls);
    let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Conn>>(64);
    let accepting = boot.clone();
    let (reloading, peers_of) = (Arc::clone(node), Arc::clone(registry));
    tokio::spawn(async move {
        loop {
            let (tcp, _) = tokio::select! {
                _ = accepting.cancelled() => break,
                r = listener.accept() => match r { Ok(c) => c, Err(_) => continue },
            };
            // A configured node takes a changed machine CA without a reboot (apid reloads).
            let acceptor = if maintenance {
                tls_now.acceptor()
            } else {
                tls_now.current(&reloading, &peers_of)
            };
            let (tx, kill) = (tx.clone(), accepting.child_token());
            tokio::spawn(async move {
                let Ok(Ok(tls)) =
                    tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
                else {
                    return;
                };
                // grpc-go enforces ALPN: a client that negotiated none is dropped after the
                // handshake ("missing selected ALPN property").
                if tls.get_ref().1.alpn_protocol().is_none() {
                    return;
                }
                let roles = if maintenance {
                    vec!["os:reader".to_string()]
                } else {
                    tls.get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(certs::roles_of)
                        .unwrap_or_default()
                };
                let peer = Peer {
                    roles: Arc::new(roles),
                    kill: kill.clone(),
                };
                let conn = Conn {
                    io: Box::new(tls),
                    killed: Box::pin(kill.cancelled_owned()),
                    peer,
                };
                let _ = tx.send(Ok(conn)).await;
            });
        }
    });
    let svc = Svc {
        node: Arc::clone(node),
        registry: Arc::clone(registry),
    };
    let max = talm_wire::api::MAX_MESSAGE;
    node.up.send_replace(node.state().boots);
    // Incoming sizes are checked by the layer, with grpc-go's code and text.
    Server::builder()
        .layer(crate::net::limit::MaxReceive(max))
        .add_service(
            MachineServiceServer::new(svc.clone())
                .max_decoding_message_size(usize::MAX)
                .max_encoding_message_size(max),
        )
        .add_service(TimeServiceServer::new(svc.clone()))
        .add_service(InspectServiceServer::new(svc.clone()))
        .add_service(ClusterServiceServer::new(svc.clone()))
        .add_service(ImageServiceServer::new(svc.clone()))
        .add_service(LifecycleServiceServer::new(svc.clone()))
        .add_service(DebugServiceServer::new(svc.clone()))
        .add_service(StorageServiceServer::new(svc.clone()))
        .add_service(
            StateServer::new(svc)
                .max_decoding_message_size(usize::MAX)
                .max_encoding_message_size(max),
        )
        .serve_with_incoming_shutdown(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            boot.clone().cancelled_owned(),
        )
        .await?;
    Ok(())
}

/// The boot's TLS, retried every second while it cannot be made (a worker waiting for a
/// control plane to sign its certificate); `None` when the boot ends first.
async fn certificates(
    node: &Arc<Node>,
    registry: &Arc<Registry>,
    boot: &CancellationToken,
) -> Option<rustls::ServerConfig> {
    let mut said = false;
    loop {
        // Only a configured worker asks its peers (for a signer): a node in maintenance mode
        // does not copy the whole registry (thousands of nodes start at once).
        let peers: Vec<Arc<Node>> = if node.state().in_maintenance() {
            Vec::new()
        } else {
            registry
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .cloned()
                .collect()
        };
        match node.tls(&peers) {
            Ok(cfg) => return Some(cfg),
            Err(e) if !said => {
                eprintln!("sim {}: {e:#}; retrying", node.name());
                said = true;
            }
            Err(_) => {}
        }
        tokio::select! {
            _ = boot.cancelled() => return None,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// The node's life: serve a boot, stay down for the reboot delay and boot again, until the
/// simulator stops; a node switched off waits to be powered on first.
pub async fn run(node: Arc<Node>, registry: Arc<Registry>) {
    let addr = SocketAddr::new(node.spec.addr, node.spec.port);
    let mut first = true;
    loop {
        let boot = node.new_boot();
        if node.faults().refuse {
            node.up.send_replace(node.state().boots);
            boot.cancelled().await;
        } else {
            if let Some(tls) = certificates(&node, &registry, &boot).await {
                match bind(addr, !first).await {
                    Ok(listener) => {
                        if let Err(e) = serve_boot(&node, &registry, listener, tls, &boot).await {
                            eprintln!("sim {addr}: {e:#}");
                            boot.cancelled().await;
                        }
                    }
                    Err(e) => {
                        if !first {
                            eprintln!("sim {addr}: cannot listen: {e}");
                        }
                        node.set_listen_failure(e);
                        node.stop.cancel();
                    }
                }
            }
        }
        first = false;
        node.up.send_replace(0);
        if node.stop.is_cancelled() {
            break;
        }
        if node.state().changes.powered_off {
            // Shut down (a shutdown, a reset without reboot): down until powered on again
            // (`power_on`; SIGUSR1 to `talm sim`).
            node.halted.send_replace(true);
        }
        tokio::select! {
            _ = node.stop.cancelled() => break,
            _ = tokio::time::sleep(node.spec.reboot_delay) => {}
        }
        // A node that was powered off waits for its power.
        let mut power = node.halted.subscribe();
        tokio::select! {
            _ = node.stop.cancelled() => break,
            _ = power.wait_for(|off| !*off) => {}
        }
        node.state().boot();
        node.booted();
    }
}
