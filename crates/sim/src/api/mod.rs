//! The gRPC face of a simulated node: MachineService, with apid's node routing (`node`
//! one-to-one, `nodes` one-to-many with metadata and in-band errors; ignored in maintenance) and
//! the node's injected faults. COSI lives in `cosi.rs`, log streams in `follow.rs`.

pub mod cluster;
pub mod cosi;
pub mod events;
pub mod logs;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::net::server::Peer;
use crate::node::Node;
use talm_wire::proto::common;
use talm_wire::proto::google::rpc;
use talm_wire::proto::machine;

/// The nodes of one simulator, by the name metadata uses (their address).
pub type Registry = RwLock<HashMap<String, Arc<Node>>>;

#[derive(Clone)]
pub struct Svc {
    pub node: Arc<Node>,
    pub registry: Arc<Registry>,
}

pub(super) type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Where a call goes, from its metadata.
pub(super) enum Route {
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
    machine::GenerateClientConfiguration,
    common::Data
);
// --- begin: node statistics (talm dashboard) ---
routed!(machine::SystemStat, machine::CpUsInfo, machine::LoadAvg);
// --- end: node statistics ---
routed!(
    machine::ServiceStart,
    machine::Restart,
    machine::Rollback,
    machine::Shutdown,
    machine::MetaWrite,
    machine::MetaDelete,
    talm_wire::proto::storage::BlockDeviceWipe
);

mod change;
mod etcd;
mod inspect;

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
}

#[tonic::async_trait]
impl machine::machine_service_server::MachineService for Svc {
    type DmesgStream = Stream_<common::Data>;
    type KubeconfigStream = Stream_<common::Data>;
    type LogsStream = Stream_<common::Data>;
    type CopyStream = Stream_<common::Data>;
    type DiskUsageStream = Stream_<machine::DiskUsageInfo>;
    type ListStream = Stream_<machine::FileInfo>;
    type ReadStream = Stream_<common::Data>;

    async fn containers(
        &self,
        req: Request<machine::ContainersRequest>,
    ) -> Result<Response<machine::ContainersResponse>, Status> {
        self.inspect_containers(req).await
    }

    async fn copy(
        &self,
        req: Request<machine::CopyRequest>,
    ) -> Result<Response<Self::CopyStream>, Status> {
        if let Some(f) = self.node.faults().flood("Copy") {
            return Ok(Response::new(f.stream()));
        }
        self.inspect_copy(req).await
    }

    async fn disk_usage(
        &self,
        req: Request<machine::DiskUsageRequest>,
    ) -> Result<Response<Self::DiskUsageStream>, Status> {
        self.inspect_disk_usage(req).await
    }

    async fn list(
        &self,
        req: Request<machine::ListRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        self.inspect_list(req).await
    }

    async fn memory(&self, req: Request<()>) -> Result<Response<machine::MemoryResponse>, Status> {
        self.inspect_memory(req).await
    }

    async fn mounts(&self, req: Request<()>) -> Result<Response<machine::MountsResponse>, Status> {
        self.inspect_mounts(req).await
    }

    async fn netstat(
        &self,
        req: Request<machine::NetstatRequest>,
    ) -> Result<Response<machine::NetstatResponse>, Status> {
        self.inspect_netstat(req).await
    }

    async fn processes(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::ProcessesResponse>, Status> {
        self.inspect_processes(req).await
    }

    async fn read(
        &self,
        req: Request<machine::ReadRequest>,
    ) -> Result<Response<Self::ReadStream>, Status> {
        if let Some(f) = self.node.faults().flood("Read") {
            return Ok(Response::new(f.stream()));
        }
        self.inspect_read(req).await
    }

    async fn stats(
        &self,
        req: Request<machine::StatsRequest>,
    ) -> Result<Response<machine::StatsResponse>, Status> {
        self.inspect_stats(req).await
    }

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
        let body = *req.get_ref();
        let messages = self
            .unary(&req, "Bootstrap", |n, roles| n.bootstrap(&body, roles))
            .await?;
        Ok(Response::new(machine::BootstrapResponse { messages }))
    }

    async fn dmesg(
        &self,
        req: Request<machine::DmesgRequest>,
    ) -> Result<Response<Self::DmesgStream>, Status> {
        if let Some(f) = self.node.faults().flood("Dmesg") {
            return Ok(Response::new(f.stream()));
        }
        crate::api::logs::dmesg(self, req).await
    }

    type EventsStream = Stream_<machine::Event>;

    async fn events(
        &self,
        req: Request<machine::EventsRequest>,
    ) -> Result<Response<Self::EventsStream>, Status> {
        crate::api::events::events(self, req).await
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
        if let Some(f) = self.node.faults().flood("Logs") {
            return Ok(Response::new(f.stream()));
        }
        crate::api::logs::logs(self, req).await
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
            .unary(&req, "Reset", |n, roles| {
                let r = n.reset(&body, roles)?;
                crate::etcd::calls::leave_on_reset(n, body.graceful, &self.registry);
                Ok(r)
            })
            .await?;
        Ok(Response::new(machine::ResetResponse { messages }))
    }

    async fn service_list(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::ServiceListResponse>, Status> {
        self.inspect_service_list(req).await
    }

    async fn upgrade(
        &self,
        req: Request<machine::UpgradeRequest>,
    ) -> Result<Response<machine::UpgradeResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Upgrade", |n, roles| {
                n.upgrade(&body, roles, |n| {
                    crate::etcd::upgrade::validate(n, body.force, body.preserve, &self.registry)
                })
            })
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
        req: Request<machine::GenerateClientConfigurationRequest>,
    ) -> Result<Response<machine::GenerateClientConfigurationResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "GenerateClientConfiguration", |n, roles| {
                crate::machined::clientconfig::generate(n, &body, roles)
            })
            .await?;
        Ok(Response::new(
            machine::GenerateClientConfigurationResponse { messages },
        ))
    }

    // --- begin: node statistics (talm dashboard) ---
    async fn system_stat(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::SystemStatResponse>, Status> {
        let messages = self
            .unary(&req, "SystemStat", |n, _| {
                Ok(crate::node::load::system_stat(n))
            })
            .await?;
        Ok(Response::new(machine::SystemStatResponse { messages }))
    }

    async fn cpu_info(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::CpuInfoResponse>, Status> {
        let messages = self
            .unary(&req, "CPUInfo", |n, _| Ok(crate::node::load::cpu_info(n)))
            .await?;
        Ok(Response::new(machine::CpuInfoResponse { messages }))
    }

    async fn load_avg(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::LoadAvgResponse>, Status> {
        let messages = self
            .unary(&req, "LoadAvg", |n, _| Ok(crate::node::load::load_avg(n)))
            .await?;
        Ok(Response::new(machine::LoadAvgResponse { messages }))
    }
    // Memory: served by the inspection calls (one picture of the node).
    // --- end: node statistics ---

    // --- begin: etcd (service/etcd.rs) ---
    type EtcdSnapshotStream = Stream_<common::Data>;

    async fn etcd_member_list(
        &self,
        req: Request<machine::EtcdMemberListRequest>,
    ) -> Result<Response<machine::EtcdMemberListResponse>, Status> {
        self.etcd_members(req).await
    }

    async fn etcd_remove_member_by_id(
        &self,
        req: Request<machine::EtcdRemoveMemberByIdRequest>,
    ) -> Result<Response<machine::EtcdRemoveMemberByIdResponse>, Status> {
        self.etcd_remove(req).await
    }

    async fn etcd_leave_cluster(
        &self,
        req: Request<machine::EtcdLeaveClusterRequest>,
    ) -> Result<Response<machine::EtcdLeaveClusterResponse>, Status> {
        self.etcd_leave(req).await
    }

    async fn etcd_forfeit_leadership(
        &self,
        req: Request<machine::EtcdForfeitLeadershipRequest>,
    ) -> Result<Response<machine::EtcdForfeitLeadershipResponse>, Status> {
        self.etcd_forfeit(req).await
    }

    async fn etcd_recover(
        &self,
        req: Request<tonic::Streaming<common::Data>>,
    ) -> Result<Response<machine::EtcdRecoverResponse>, Status> {
        self.etcd_recover_(req).await
    }

    async fn etcd_snapshot(
        &self,
        req: Request<machine::EtcdSnapshotRequest>,
    ) -> Result<Response<Self::EtcdSnapshotStream>, Status> {
        if let Some(f) = self.node.faults().flood("EtcdSnapshot") {
            return Ok(Response::new(f.stream()));
        }
        self.etcd_snapshot_(req).await
    }

    async fn etcd_alarm_list(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdAlarmListResponse>, Status> {
        self.etcd_alarms(req).await
    }

    async fn etcd_alarm_disarm(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdAlarmDisarmResponse>, Status> {
        self.etcd_disarm(req).await
    }

    async fn etcd_defragment(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdDefragmentResponse>, Status> {
        self.etcd_defrag(req).await
    }

    async fn etcd_status(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdStatusResponse>, Status> {
        self.etcd_status_(req).await
    }

    async fn etcd_downgrade_validate(
        &self,
        req: Request<machine::EtcdDowngradeValidateRequest>,
    ) -> Result<Response<machine::EtcdDowngradeValidateResponse>, Status> {
        self.etcd_downgrade_validate_(req).await
    }

    async fn etcd_downgrade_enable(
        &self,
        req: Request<machine::EtcdDowngradeEnableRequest>,
    ) -> Result<Response<machine::EtcdDowngradeEnableResponse>, Status> {
        self.etcd_downgrade_enable_(req).await
    }

    async fn etcd_downgrade_cancel(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdDowngradeCancelResponse>, Status> {
        self.etcd_downgrade_cancel_(req).await
    }
    // --- end: etcd ---
    // Changing a node (service/change.rs).
    async fn service_start(
        &self,
        req: Request<machine::ServiceStartRequest>,
    ) -> Result<Response<machine::ServiceStartResponse>, Status> {
        self.change_service_start(req).await
    }

    async fn service_stop(
        &self,
        req: Request<machine::ServiceStopRequest>,
    ) -> Result<Response<machine::ServiceStopResponse>, Status> {
        self.change_service_stop(req).await
    }

    async fn service_restart(
        &self,
        req: Request<machine::ServiceRestartRequest>,
    ) -> Result<Response<machine::ServiceRestartResponse>, Status> {
        self.change_service_restart(req).await
    }

    async fn restart(
        &self,
        req: Request<machine::RestartRequest>,
    ) -> Result<Response<machine::RestartResponse>, Status> {
        self.change_restart(req).await
    }

    async fn rollback(
        &self,
        req: Request<machine::RollbackRequest>,
    ) -> Result<Response<machine::RollbackResponse>, Status> {
        self.change_rollback(req).await
    }

    async fn shutdown(
        &self,
        req: Request<machine::ShutdownRequest>,
    ) -> Result<Response<machine::ShutdownResponse>, Status> {
        self.change_shutdown(req).await
    }

    async fn meta_write(
        &self,
        req: Request<machine::MetaWriteRequest>,
    ) -> Result<Response<machine::MetaWriteResponse>, Status> {
        self.change_meta_write(req).await
    }

    async fn meta_delete(
        &self,
        req: Request<machine::MetaDeleteRequest>,
    ) -> Result<Response<machine::MetaDeleteResponse>, Status> {
        self.change_meta_delete(req).await
    }
}
