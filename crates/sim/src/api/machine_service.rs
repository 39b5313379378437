//! MachineService's methods of a simulated node, each handed to the family that serves it
//! (inspection, changes, etcd, logs, events) or answered here through the node's lifecycle.

use tonic::{Request, Response, Status};

use super::{Stream_, Svc};
use talm_wire::proto::common;
use talm_wire::proto::machine;

#[tonic::async_trait]
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

    type PacketCaptureStream = Stream_<common::Data>;

    async fn packet_capture(
        &self,
        req: Request<machine::PacketCaptureRequest>,
    ) -> Result<Response<Self::PacketCaptureStream>, Status> {
        let body = req.get_ref().clone();
        self.data(&req, "PacketCapture", |n, roles| {
            super::inspect::allow(roles, &super::inspect::OPERATORS)?;
            n.packet_capture(&body)
        })
        .await
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

    async fn network_device_stats(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::NetworkDeviceStatsResponse>, Status> {
        let messages = self
            .unary(&req, "NetworkDeviceStats", |n, _| {
                Ok(crate::node::io::network_device_stats(n))
            })
            .await?;
        Ok(Response::new(machine::NetworkDeviceStatsResponse {
            messages,
        }))
    }

    async fn disk_stats(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::DiskStatsResponse>, Status> {
        let messages = self
            .unary(&req, "DiskStats", |n, _| Ok(crate::node::io::disk_stats(n)))
            .await?;
        Ok(Response::new(machine::DiskStatsResponse { messages }))
    }

    // etcd (etcd.rs).
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

    // Changing a node (change.rs).
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
