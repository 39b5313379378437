//! The gRPC face of a simulated node: MachineService and cosi.resource.State, with apid's node
//! routing (`node` one-to-one, `nodes` one-to-many with metadata and in-band errors; ignored in
//! maintenance), Talos's COSI access rules, and the node's injected faults.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::facts::{self, Res};
use super::node::{is_admin, Node};
use super::server::Peer;
use crate::proto::common;
use crate::proto::cosi::resource as cosi;
use crate::proto::google::rpc;
use crate::proto::machine;

/// The nodes of one simulator, by the name metadata uses (their address).
pub type Registry = RwLock<HashMap<String, Arc<Node>>>;

#[derive(Clone)]
pub struct Svc {
    pub node: Arc<Node>,
    pub registry: Arc<Registry>,
}

type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Where a call goes, from its metadata.
enum Route {
    Local,
    One(String),
    Many(Vec<String>),
}

/// Reply messages that carry `common.Metadata` in field 1.
trait Routed: Default {
    fn set_meta(&mut self, m: common::Metadata);
}

macro_rules! routed {
    ($($t:ty),*) => { $(impl Routed for $t { fn set_meta(&mut self, m: common::Metadata) { self.metadata = Some(m); } })* };
}
routed!(
    machine::Version,
    machine::Hostname,
    machine::ApplyConfiguration,
    machine::Bootstrap,
    machine::Upgrade,
    machine::Reboot,
    machine::Reset,
    machine::ServiceList,
    common::Data
);
// --- begin: node statistics (talm dashboard) ---
routed!(
    machine::SystemStat,
    machine::CpUsInfo,
    machine::LoadAvg,
    machine::Memory
);
// --- end: node statistics ---

/// Go's text of a gRPC error, as apid puts it in `metadata.error`.
fn error_meta(host: &str, st: &Status) -> common::Metadata {
    common::Metadata {
        hostname: host.to_string(),
        error: crate::talos::errors::describe(st),
        status: Some(rpc::Status {
            code: st.code() as i32,
            message: st.message().to_string(),
            details: vec![],
        }),
    }
}

fn peer<T>(req: &Request<T>) -> Peer {
    req.extensions()
        .get::<Peer>()
        .cloned()
        .unwrap_or_else(|| Peer {
            roles: Arc::new(Vec::new()),
            kill: tokio_util::sync::CancellationToken::new(),
        })
}

impl Svc {
    fn route<T>(&self, req: &Request<T>, method: &str, many_ok: bool) -> Result<Route, Status> {
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
    fn target(&self, name: &str) -> Result<Arc<Node>, Status> {
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
    async fn faults(&self, call: &str, peer: &Peer) -> Result<bool, Status> {
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
    async fn unary<T: Routed>(
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
    fn stream<T: Send + 'static>(items: Vec<T>, drop_after_first: bool, peer: Peer) -> Stream_<T> {
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
    async fn data(
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

    /// The node a COSI call reads, after the access rules for `ty`/`namespace`.
    fn cosi_target<T>(
        &self,
        req: &Request<T>,
        method: &str,
        ty: &str,
        namespace: &str,
    ) -> Result<(Arc<Node>, String), Status> {
        let node = match self.route(req, method, false)? {
            Route::Local => Arc::clone(&self.node),
            Route::One(n) => self.target(&n)?,
            Route::Many(_) => unreachable!("refused by route"),
        };
        let def = facts::find_def(ty).ok_or_else(|| {
            Status::permission_denied(format!("resource type {ty:?} is not supported"))
        })?;
        let ns = if namespace.is_empty() {
            def.namespace
        } else {
            namespace
        };
        if ns != def.namespace {
            return Err(Status::permission_denied(format!(
                "namespace {ns:?} is not supported"
            )));
        }
        if def.sensitive && !is_admin(&peer(req).roles) {
            return Err(Status::permission_denied("not authorized"));
        }
        Ok((node, ns.to_string()))
    }
}

fn to_proto(r: &Res, created: &prost_types::Timestamp) -> cosi::Resource {
    cosi::Resource {
        metadata: Some(cosi::Metadata {
            namespace: r.namespace.into(),
            r#type: r.ty.into(),
            id: r.id.clone(),
            version: r.version.to_string(),
            owner: r.owner.into(),
            phase: "running".into(),
            created: Some(*created),
            updated: Some(*created),
            finalizers: vec![],
            labels: HashMap::new(),
            annotations: r.annotations.iter().cloned().collect(),
        }),
        spec: Some(cosi::Spec {
            proto_spec: vec![],
            yaml_spec: serde_yaml_ng::to_string(&r.spec).unwrap_or_default(),
        }),
    }
}

fn resources(node: &Node, ty: &str) -> Vec<cosi::Resource> {
    let st = node.state();
    let created = prost_types::Timestamp {
        seconds: st.started,
        nanos: 0,
    };
    facts::all(&node.spec.hardware, &st)
        .iter()
        .filter(|r| r.ty == ty)
        .map(|r| to_proto(r, &created))
        .collect()
}

#[tonic::async_trait]
impl machine::machine_service_server::MachineService for Svc {
    type DmesgStream = Stream_<common::Data>;
    type KubeconfigStream = Stream_<common::Data>;
    type LogsStream = Stream_<common::Data>;

    async fn apply_configuration(
        &self,
        req: Request<machine::ApplyConfigurationRequest>,
    ) -> Result<Response<machine::ApplyConfigurationResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "ApplyConfiguration", |n, roles| n.apply(&body, roles))
            .await?;
        Ok(Response::new(machine::ApplyConfigurationResponse {
            messages,
        }))
    }

    async fn bootstrap(
        &self,
        req: Request<machine::BootstrapRequest>,
    ) -> Result<Response<machine::BootstrapResponse>, Status> {
        let messages = self
            .unary(&req, "Bootstrap", |n, roles| n.bootstrap(roles))
            .await?;
        Ok(Response::new(machine::BootstrapResponse { messages }))
    }

    async fn dmesg(
        &self,
        req: Request<machine::DmesgRequest>,
    ) -> Result<Response<Self::DmesgStream>, Status> {
        self.data(&req, "Dmesg", |n, roles| {
            if !roles.iter().any(|r| r == "os:admin" || r == "os:operator") {
                return Err(Status::permission_denied("not authorized"));
            }
            let st = n.state();
            Ok(format!(
                "[    0.000000] Linux version 6.12.0-talos (simulated)\n[    0.100000] talos: booting {} (boot {})\n[    1.200000] virtio_net virtio0 eth0: link up\n",
                st.version, st.boots
            )
            .into_bytes())
        })
        .await
    }

    async fn hostname(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::HostnameResponse>, Status> {
        let messages = self
            .unary(&req, "Hostname", |n, _| Ok(n.hostname()))
            .await?;
        Ok(Response::new(machine::HostnameResponse { messages }))
    }

    async fn kubeconfig(
        &self,
        req: Request<()>,
    ) -> Result<Response<Self::KubeconfigStream>, Status> {
        self.data(&req, "Kubeconfig", |n, roles| n.kubeconfig(roles))
            .await
    }

    async fn logs(
        &self,
        req: Request<machine::LogsRequest>,
    ) -> Result<Response<Self::LogsStream>, Status> {
        let body = req.get_ref().clone();
        self.data(&req, "Logs", move |n, roles| {
            if !roles.iter().any(|r| r == "os:admin" || r == "os:operator") {
                return Err(Status::permission_denied("not authorized"));
            }
            let svc = body.id.clone();
            let known = super::node::services(&n.state())
                .iter()
                .any(|(id, _)| *id == svc);
            if !known {
                return Err(Status::not_found(format!("log {svc:?} was not registered")));
            }
            let mut lines: Vec<String> = (1..=20)
                .map(|i| format!("{svc}: simulated log line {i}"))
                .collect();
            if body.tail_lines > 0 {
                let keep = lines.len().saturating_sub(body.tail_lines as usize);
                lines.drain(..keep);
            }
            Ok((lines.join("\n") + "\n").into_bytes())
        })
        .await
    }

    async fn reboot(
        &self,
        req: Request<machine::RebootRequest>,
    ) -> Result<Response<machine::RebootResponse>, Status> {
        let messages = self
            .unary(&req, "Reboot", |n, roles| n.reboot(roles))
            .await?;
        Ok(Response::new(machine::RebootResponse { messages }))
    }

    async fn reset(
        &self,
        req: Request<machine::ResetRequest>,
    ) -> Result<Response<machine::ResetResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Reset", |n, roles| n.reset(&body, roles))
            .await?;
        Ok(Response::new(machine::ResetResponse { messages }))
    }

    async fn service_list(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::ServiceListResponse>, Status> {
        let messages = self
            .unary(&req, "ServiceList", |n, _| {
                let services = super::node::services(&n.state())
                    .into_iter()
                    .map(|(id, state)| machine::ServiceInfo {
                        id: id.into(),
                        state: state.into(),
                        events: Some(machine::ServiceEvents::default()),
                        health: Some(machine::ServiceHealth {
                            unknown: false,
                            healthy: state == "Running",
                            last_message: String::new(),
                            last_change: None,
                        }),
                    })
                    .collect();
                Ok(machine::ServiceList {
                    metadata: None,
                    services,
                })
            })
            .await?;
        Ok(Response::new(machine::ServiceListResponse { messages }))
    }

    async fn upgrade(
        &self,
        req: Request<machine::UpgradeRequest>,
    ) -> Result<Response<machine::UpgradeResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Upgrade", |n, roles| n.upgrade(&body, roles))
            .await?;
        Ok(Response::new(machine::UpgradeResponse { messages }))
    }

    async fn version(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::VersionResponse>, Status> {
        let messages = self
            .unary(&req, "Version", |n, _| n.version_reply())
            .await?;
        Ok(Response::new(machine::VersionResponse { messages }))
    }

    async fn generate_client_configuration(
        &self,
        _req: Request<machine::GenerateClientConfigurationRequest>,
    ) -> Result<Response<machine::GenerateClientConfigurationResponse>, Status> {
        Err(Status::unimplemented(
            "method GenerateClientConfiguration not implemented",
        ))
    }

    // --- begin: node statistics (talm dashboard) ---
    async fn system_stat(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::SystemStatResponse>, Status> {
        let messages = self
            .unary(&req, "SystemStat", |n, _| Ok(super::load::system_stat(n)))
            .await?;
        Ok(Response::new(machine::SystemStatResponse { messages }))
    }

    async fn cpu_info(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::CpuInfoResponse>, Status> {
        let messages = self
            .unary(&req, "CPUInfo", |n, _| Ok(super::load::cpu_info(n)))
            .await?;
        Ok(Response::new(machine::CpuInfoResponse { messages }))
    }

    async fn load_avg(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::LoadAvgResponse>, Status> {
        let messages = self
            .unary(&req, "LoadAvg", |n, _| Ok(super::load::load_avg(n)))
            .await?;
        Ok(Response::new(machine::LoadAvgResponse { messages }))
    }

    async fn memory(&self, req: Request<()>) -> Result<Response<machine::MemoryResponse>, Status> {
        let messages = self
            .unary(&req, "Memory", |n, _| Ok(super::load::memory(n)))
            .await?;
        Ok(Response::new(machine::MemoryResponse { messages }))
    }
    // --- end: node statistics ---
}

#[tonic::async_trait]
impl cosi::state_server::State for Svc {
    type ListStream = Stream_<cosi::ListResponse>;
    type WatchStream = Stream_<cosi::WatchResponse>;

    async fn get(
        &self,
        req: Request<cosi::GetRequest>,
    ) -> Result<Response<cosi::GetResponse>, Status> {
        let peer = peer(&req);
        if self.faults("Get", &peer).await? {
            peer.kill.cancel();
            return Err(Status::unavailable("connection cut"));
        }
        let r = req.get_ref();
        let (node, ns) =
            self.cosi_target(&req, "/cosi.resource.State/Get", &r.r#type, &r.namespace)?;
        resources(&node, &r.r#type)
            .into_iter()
            .find(|x| x.metadata.as_ref().is_some_and(|m| m.id == r.id))
            .map(|res| {
                Response::new(cosi::GetResponse {
                    resource: Some(res),
                })
            })
            .ok_or_else(|| {
                Status::not_found(format!(
                    "resource {}({ns}/{}@undefined) doesn't exist",
                    r.r#type, r.id
                ))
            })
    }

    async fn list(
        &self,
        req: Request<cosi::ListRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        let peer = peer(&req);
        let drops = self.faults("List", &peer).await?;
        let r = req.get_ref();
        let (node, _) =
            self.cosi_target(&req, "/cosi.resource.State/List", &r.r#type, &r.namespace)?;
        let items: Vec<_> = resources(&node, &r.r#type)
            .into_iter()
            .map(|res| cosi::ListResponse {
                resource: Some(res),
            })
            .collect();
        Ok(Response::new(Self::stream(items, drops, peer)))
    }

    async fn watch(
        &self,
        req: Request<cosi::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let peer = peer(&req);
        self.faults("Watch", &peer).await?;
        let r = req.get_ref();
        let (node, _) =
            self.cosi_target(&req, "/cosi.resource.State/Watch", &r.r#type, &r.namespace)?;
        let mut events: Vec<cosi::Event> = resources(&node, &r.r#type)
            .into_iter()
            .filter(|res| {
                r.id.as_ref()
                    .is_none_or(|id| res.metadata.as_ref().is_some_and(|m| &m.id == id))
            })
            .map(|res| cosi::Event {
                resource: Some(res),
                event_type: cosi::EventType::Created as i32,
                ..Default::default()
            })
            .collect();
        events.push(cosi::Event {
            event_type: cosi::EventType::Bootstrapped as i32,
            ..Default::default()
        });
        let first = tokio_stream::iter(vec![Ok(cosi::WatchResponse { event: events })]);
        let rest = tokio_stream::pending();
        Ok(Response::new(Box::pin(tokio_stream::StreamExt::chain(
            first, rest,
        ))))
    }
}
