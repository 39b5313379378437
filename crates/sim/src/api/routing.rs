//! How a call reaches its node, as apid routes it: `node` one-to-one, `nodes` one-to-many with
//! metadata and in-band errors (ignored in maintenance), the node's injected faults, and the
//! shapes every service family answers in (unary replies, server streams, data streams).

use std::sync::Arc;
use std::time::Duration;

use tonic::{Request, Response, Status};

use super::{Routed, Stream_, Svc};
use crate::net::server::Peer;
use crate::node::Node;
use talm_wire::proto::common;
use talm_wire::proto::google::rpc;

/// Where a call goes, from its metadata.
pub(super) enum Route {
    Local,
    One(String),
    Many(Vec<String>),
}

/// Go's text of a gRPC error, as apid puts it in `metadata.error`.
pub(super) fn error_meta(host: &str, st: &Status) -> common::Metadata {
    common::Metadata {
        hostname: host.to_string(),
        error: talm_wire::api::describe(st),
        status: Some(rpc::Status {
            code: st.code() as i32,
            message: st.message().to_string(),
            details: vec![],
        }),
    }
}

pub(super) fn peer<T>(req: &Request<T>) -> Peer {
    req.extensions()
        .get::<Peer>()
        .cloned()
        .unwrap_or_else(|| Peer {
            roles: Arc::new(Vec::new()),
            kill: tokio_util::sync::CancellationToken::new(),
        })
}

impl Svc {
    pub(super) fn route<T>(
        &self,
        req: &Request<T>,
        method: &str,
        many_ok: bool,
    ) -> Result<Route, Status> {
        if self.node.state().in_maintenance() {
            return Ok(Route::Local);
        }
        let md = req.metadata();
        let node: Vec<String> = md
            .get_all("node")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect();
        let nodes: Vec<String> = md
            .get_all("nodes")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(',').map(|s| s.trim().to_string()))
            .filter(|s| !s.is_empty())
            .collect();
        if node.len() > 1 {
            return Err(Status::invalid_argument(
                "node metadata must be single-valued",
            ));
        }
        if !nodes.is_empty() {
            if !many_ok {
                return Err(Status::invalid_argument(format!(
                    "one-2-many proxying is not supported for method {method}"
                )));
            }
            return Ok(Route::Many(nodes));
        }
        match node.into_iter().next() {
            Some(n) if n.is_empty() || n.contains(':') && !n.contains("::") => {
                Err(Status::internal(format!("invalid target {n:?}")))
            }
            Some(n) => Ok(Route::One(n)),
            None => Ok(Route::Local),
        }
    }

    /// The node a routed call is for. Another node is reached the way apid forwards: over
    /// mTLS, so it must be configured (a maintenance node fails the handshake).
    pub(super) fn target(&self, name: &str) -> Result<Arc<Node>, Status> {
        if name == self.node.name() {
            return Ok(Arc::clone(&self.node));
        }
        let reg = self.registry.read().unwrap_or_else(|e| e.into_inner());
        let dial = |why: &str| {
            Status::unavailable(format!(
                "connection error: desc = \"transport: Error while dialing: dial tcp {name}:50000: {why}\""
            ))
        };
        match reg.get(name) {
            None => Err(dial("connect: connection refused")),
            Some(n) if *n.up.borrow() == 0 => Err(dial("connect: connection refused")),
            Some(n) if n.state().in_maintenance() => Err(dial("authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority")),
            Some(n) => Ok(Arc::clone(n)),
        }
    }

    /// Faults of this node for `call`: fail, drop (cut the connection) and delay.
    pub(super) async fn faults(&self, call: &str, peer: &Peer) -> Result<bool, Status> {
        let f = self.node.faults();
        let delay = f.delay();
        if delay > Duration::ZERO {
            tokio::time::sleep(delay).await;
        }
        if let Some(st) = f.failure(call) {
            return Err(st);
        }
        let drops = f.drops(call);
        let _ = peer;
        Ok(drops)
    }

    /// Runs a unary machine call on every target and assembles the reply messages.
    pub(super) async fn unary<T: Routed>(
        &self,
        req: &Request<impl Sized>,
        call: &str,
        f: impl Fn(&Arc<Node>, &[String]) -> Result<T, Status>,
    ) -> Result<Vec<T>, Status> {
        let peer = peer(req);
        if self.faults(call, &peer).await? {
            peer.kill.cancel();
            return Err(Status::unavailable("connection cut"));
        }
        match self.route(req, &format!("/machine.MachineService/{call}"), true)? {
            Route::Local => Ok(vec![f(&self.node, &peer.roles)?]),
            Route::One(n) => Ok(vec![f(&self.target(&n)?, &peer.roles)?]),
            Route::Many(ns) => Ok(ns
                .iter()
                .map(|n| {
                    let mut msg = match self.target(n).and_then(|node| f(&node, &peer.roles)) {
                        Ok(m) => m,
                        Err(st) => {
                            let mut m = T::default();
                            m.set_meta(error_meta(n, &st));
                            return m;
                        }
                    };
                    msg.set_meta(common::Metadata {
                        hostname: n.clone(),
                        ..Default::default()
                    });
                    msg
                })
                .collect()),
        }
    }

    /// A server stream of `items`; with the drop fault the connection is cut after the first.
    pub(super) fn stream<T: Send + 'static>(
        items: Vec<T>,
        drop_after_first: bool,
        peer: Peer,
    ) -> Stream_<T> {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(async move {
            for (i, item) in items.into_iter().enumerate() {
                if drop_after_first && i == 1 {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    peer.kill.cancel();
                    return;
                }
                if tx.send(Ok(item)).await.is_err() {
                    return;
                }
            }
            if drop_after_first {
                tokio::time::sleep(Duration::from_millis(50)).await;
                peer.kill.cancel();
            }
        });
        Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
    }

    /// A data stream (kubeconfig, logs, dmesg) from every target.
    pub(super) async fn data(
        &self,
        req: &Request<impl Sized>,
        call: &str,
        f: impl Fn(&Arc<Node>, &[String]) -> Result<Vec<u8>, Status>,
    ) -> Result<Response<Stream_<common::Data>>, Status> {
        let peer = peer(req);
        let drops = self.faults(call, &peer).await?;
        let split = |bytes: Vec<u8>, meta: Option<common::Metadata>| -> Vec<common::Data> {
            if drops && bytes.len() > 1 {
                let (a, b) = bytes.split_at(bytes.len() / 2);
                vec![
                    common::Data {
                        metadata: meta.clone(),
                        bytes: a.to_vec(),
                    },
                    common::Data {
                        metadata: meta,
                        bytes: b.to_vec(),
                    },
                ]
            } else {
                vec![common::Data {
                    metadata: meta,
                    bytes,
                }]
            }
        };
        let items = match self.route(req, &format!("/machine.MachineService/{call}"), true)? {
            Route::Local => split(f(&self.node, &peer.roles)?, None),
            Route::One(n) => split(f(&self.target(&n)?, &peer.roles)?, None),
            Route::Many(ns) => ns
                .iter()
                .flat_map(
                    |n| match self.target(n).and_then(|node| f(&node, &peer.roles)) {
                        Ok(bytes) => split(
                            bytes,
                            Some(common::Metadata {
                                hostname: n.clone(),
                                ..Default::default()
                            }),
                        ),
                        Err(st) => vec![common::Data {
                            metadata: Some(error_meta(n, &st)),
                            bytes: vec![],
                        }],
                    },
                )
                .collect(),
        };
        Ok(Response::new(Self::stream(items, drops, peer)))
    }
}
