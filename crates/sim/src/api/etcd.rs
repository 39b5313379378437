//! The etcd calls of a simulated node's MachineService, routed as apid does (`nodes`
//! one-to-many with hostnames and in-band errors): unary calls through `Svc::unary`, the
//! snapshot as a stream of 1024-byte chunks, the recovery upload read whole and then handed to
//! its target. What each call does lives in `crate::etcd::calls`.

use tokio_stream::StreamExt;
use tonic::{Request, Response, Status, Streaming};

use super::{error_meta, peer, Route, Routed, Stream_, Svc};
use crate::etcd::calls::{self as calls, Downgrade};
use talm_wire::proto::common;
use talm_wire::proto::machine;

routed!(
    machine::EtcdMembers,
    machine::EtcdStatus,
    machine::EtcdRemoveMemberById,
    machine::EtcdLeaveCluster,
    machine::EtcdForfeitLeadership,
    machine::EtcdDefragment,
    machine::EtcdAlarm,
    machine::EtcdAlarmDisarm,
    machine::EtcdRecover,
    machine::EtcdDowngradeValidate,
    machine::EtcdDowngradeEnable,
    machine::EtcdDowngradeCancel
);

/// Chunks of at most 1024 bytes, as machined forwards etcd's snapshot stream.
fn chunks(bytes: &[u8], meta: Option<common::Metadata>) -> Vec<common::Data> {
    bytes
        .chunks(1024)
        .map(|c| common::Data {
            metadata: meta.clone(),
            bytes: c.to_vec(),
        })
        .collect()
}

impl Svc {
    pub(super) async fn etcd_members(
        &self,
        req: Request<machine::EtcdMemberListRequest>,
    ) -> Result<Response<machine::EtcdMemberListResponse>, Status> {
        let local = req.get_ref().query_local;
        let reg = self.registry.clone();
        let messages = self
            .unary(&req, "EtcdMemberList", |n, roles| {
                calls::member_list(n, roles, &reg, local)
            })
            .await?;
        Ok(Response::new(machine::EtcdMemberListResponse { messages }))
    }

    pub(super) async fn etcd_status_(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdStatusResponse>, Status> {
        let reg = self.registry.clone();
        let messages = self
            .unary(&req, "EtcdStatus", |n, roles| calls::status(n, roles, &reg))
            .await?;
        Ok(Response::new(machine::EtcdStatusResponse { messages }))
    }

    pub(super) async fn etcd_remove(
        &self,
        req: Request<machine::EtcdRemoveMemberByIdRequest>,
    ) -> Result<Response<machine::EtcdRemoveMemberByIdResponse>, Status> {
        let id = req.get_ref().member_id;
        let reg = self.registry.clone();
        let messages = self
            .unary(&req, "EtcdRemoveMemberByID", |n, roles| {
                calls::remove_member(n, roles, &reg, id)
            })
            .await?;
        Ok(Response::new(machine::EtcdRemoveMemberByIdResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_leave(
        &self,
        req: Request<machine::EtcdLeaveClusterRequest>,
    ) -> Result<Response<machine::EtcdLeaveClusterResponse>, Status> {
        let reg = self.registry.clone();
        let messages = self
            .unary(&req, "EtcdLeaveCluster", |n, roles| {
                calls::leave(n, roles, &reg)
            })
            .await?;
        Ok(Response::new(machine::EtcdLeaveClusterResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_forfeit(
        &self,
        req: Request<machine::EtcdForfeitLeadershipRequest>,
    ) -> Result<Response<machine::EtcdForfeitLeadershipResponse>, Status> {
        let reg = self.registry.clone();
        let messages = self
            .unary(&req, "EtcdForfeitLeadership", |n, roles| {
                calls::forfeit(n, roles, &reg)
            })
            .await?;
        Ok(Response::new(machine::EtcdForfeitLeadershipResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_defrag(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdDefragmentResponse>, Status> {
        let messages = self
            .unary(&req, "EtcdDefragment", |n, roles| {
                calls::defragment(n, roles)
            })
            .await?;
        Ok(Response::new(machine::EtcdDefragmentResponse { messages }))
    }

    pub(super) async fn etcd_alarms(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdAlarmListResponse>, Status> {
        let messages = self
            .unary(&req, "EtcdAlarmList", |n, roles| {
                calls::alarm_list(n, roles)
            })
            .await?;
        Ok(Response::new(machine::EtcdAlarmListResponse { messages }))
    }

    pub(super) async fn etcd_disarm(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdAlarmDisarmResponse>, Status> {
        let messages = self
            .unary(&req, "EtcdAlarmDisarm", |n, roles| {
                calls::alarm_disarm(n, roles)
            })
            .await?;
        Ok(Response::new(machine::EtcdAlarmDisarmResponse { messages }))
    }

    pub(super) async fn etcd_downgrade_validate_(
        &self,
        req: Request<machine::EtcdDowngradeValidateRequest>,
    ) -> Result<Response<machine::EtcdDowngradeValidateResponse>, Status> {
        let v = req.get_ref().version.clone();
        let messages = self
            .unary(&req, "EtcdDowngradeValidate", |n, roles| {
                let d = calls::downgrade(n, roles, Downgrade::Validate, &v)?;
                Ok(machine::EtcdDowngradeValidate {
                    metadata: None,
                    cluster_downgrade: Some(d),
                })
            })
            .await?;
        Ok(Response::new(machine::EtcdDowngradeValidateResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_downgrade_enable_(
        &self,
        req: Request<machine::EtcdDowngradeEnableRequest>,
    ) -> Result<Response<machine::EtcdDowngradeEnableResponse>, Status> {
        let v = req.get_ref().version.clone();
        let messages = self
            .unary(&req, "EtcdDowngradeEnable", |n, roles| {
                let d = calls::downgrade(n, roles, Downgrade::Enable, &v)?;
                Ok(machine::EtcdDowngradeEnable {
                    metadata: None,
                    cluster_downgrade: Some(d),
                })
            })
            .await?;
        Ok(Response::new(machine::EtcdDowngradeEnableResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_downgrade_cancel_(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::EtcdDowngradeCancelResponse>, Status> {
        let messages = self
            .unary(&req, "EtcdDowngradeCancel", |n, roles| {
                let d = calls::downgrade(n, roles, Downgrade::Cancel, "")?;
                Ok(machine::EtcdDowngradeCancel {
                    metadata: None,
                    cluster_downgrade: Some(d),
                })
            })
            .await?;
        Ok(Response::new(machine::EtcdDowngradeCancelResponse {
            messages,
        }))
    }

    pub(super) async fn etcd_snapshot_(
        &self,
        req: Request<machine::EtcdSnapshotRequest>,
    ) -> Result<Response<Stream_<common::Data>>, Status> {
        let peer = peer(&req);
        let drops = self.faults("EtcdSnapshot", &peer).await?;
        let call = "/machine.MachineService/EtcdSnapshot";
        let items = match self.route(&req, call, true)? {
            Route::Local => chunks(&calls::snapshot(&self.node, &peer.roles)?, None),
            Route::One(n) => chunks(&calls::snapshot(&*self.target(&n)?, &peer.roles)?, None),
            Route::Many(ns) => ns
                .iter()
                .flat_map(|n| {
                    match self
                        .target(n)
                        .and_then(|node| calls::snapshot(&node, &peer.roles))
                    {
                        Ok(bytes) => chunks(
                            &bytes,
                            Some(common::Metadata {
                                hostname: n.clone(),
                                ..Default::default()
                            }),
                        ),
                        Err(st) => vec![common::Data {
                            metadata: Some(error_meta(n, &st)),
                            bytes: vec![],
                        }],
                    }
                })
                .collect(),
        };
        Ok(Response::new(Self::stream(items, drops, peer)))
    }

    pub(super) async fn etcd_recover_(
        &self,
        req: Request<Streaming<common::Data>>,
    ) -> Result<Response<machine::EtcdRecoverResponse>, Status> {
        let peer = peer(&req);
        if self.faults("EtcdRecover", &peer).await? {
            peer.kill.cancel();
            return Err(Status::unavailable("connection cut"));
        }
        let route = self.route(&req, "/machine.MachineService/EtcdRecover", true)?;
        let mut stream = req.into_inner();
        let mut bytes = Vec::new();
        while let Some(d) = stream.next().await {
            bytes.extend_from_slice(&d?.bytes);
        }
        let messages = match route {
            Route::Local => vec![calls::recover(&self.node, &peer.roles, bytes)?],
            Route::One(n) => vec![calls::recover(&*self.target(&n)?, &peer.roles, bytes)?],
            Route::Many(ns) => ns
                .iter()
                .map(|n| {
                    match self
                        .target(n)
                        .and_then(|node| calls::recover(&node, &peer.roles, bytes.clone()))
                    {
                        Ok(mut m) => {
                            m.set_meta(common::Metadata {
                                hostname: n.clone(),
                                ..Default::default()
                            });
                            m
                        }
                        Err(st) => {
                            let mut m = machine::EtcdRecover::default();
                            m.set_meta(error_meta(n, &st));
                            m
                        }
                    }
                })
                .collect(),
        };
        Ok(Response::new(machine::EtcdRecoverResponse { messages }))
    }
}
