//! The etcd and cluster-health calls of the client. Like talosctl, they always name the node in
//! `nodes` metadata (one-to-many proxying, even for the endpoint itself), so replies carry the
//! node's hostname and failures arrive in-band; the health check and the snapshot are streams
//! handed to the caller as they arrive.

use std::time::Duration;

use anyhow::Result;
use tokio_stream::StreamExt;
use tonic::{Code, Request};

use super::Client;
use crate::errors::{self, MACHINE};
use crate::transport::Checked;
use talm_wire::proto::cluster;
use talm_wire::proto::common;
use talm_wire::proto::machine;

/// The Talos cluster service.
const CLUSTER: &str = "cluster.ClusterService";

/// Which downgrade call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Downgrade {
    Validate,
    Enable,
    Cancel,
}

impl Client {
    /// `msg` with `nodes` naming the target, as talosctl's one-to-many calls always send it.
    fn proxied<T>(&self, msg: T, deadline: bool) -> Request<T> {
        let mut r = if deadline {
            self.request(msg, true)
        } else {
            self.stream_request(msg, true)
        };
        if !self.insecure && r.metadata().get("nodes").is_none() {
            if let Ok(v) = self.node.parse() {
                r.metadata_mut().insert("nodes", v);
            }
        }
        r
    }

    fn clusters(&self) -> cluster::cluster_service_client::ClusterServiceClient<Checked> {
        cluster::cluster_service_client::ClusterServiceClient::new(self.channel.clone())
    }

    pub async fn etcd_members(&self, query_local: bool) -> Result<Vec<machine::EtcdMember>> {
        let mut c = self.machine();
        let req = machine::EtcdMemberListRequest { query_local };
        let call = "EtcdMemberList";
        let r = self
            .call(call, MACHINE, c.etcd_member_list(self.proxied(req, true)))
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .members)
    }

    pub async fn etcd_status(&self) -> Result<machine::EtcdMemberStatus> {
        let mut c = self.machine();
        let call = "EtcdStatus";
        let r = self
            .call(call, MACHINE, c.etcd_status(self.proxied((), true)))
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .member_status
            .unwrap_or_default())
    }

    pub async fn etcd_remove_member(&self, member_id: u64) -> Result<()> {
        let mut c = self.machine();
        let req = machine::EtcdRemoveMemberByIdRequest { member_id };
        let call = "EtcdRemoveMemberByID";
        let r = self
            .call(
                call,
                MACHINE,
                c.etcd_remove_member_by_id(self.proxied(req, true)),
            )
            .await?;
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    pub async fn etcd_leave(&self) -> Result<()> {
        let mut c = self.machine();
        let call = "EtcdLeaveCluster";
        let req = machine::EtcdLeaveClusterRequest {};
        let r = self
            .call(call, MACHINE, c.etcd_leave_cluster(self.proxied(req, true)))
            .await?;
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    /// Moves leadership away from the node; the new leader's name, empty when it did not lead.
    pub async fn etcd_forfeit_leadership(&self) -> Result<String> {
        let mut c = self.machine();
        let call = "EtcdForfeitLeadership";
        let req = machine::EtcdForfeitLeadershipRequest {};
        let r = self
            .call(
                call,
                MACHINE,
                c.etcd_forfeit_leadership(self.proxied(req, true)),
            )
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .member)
    }

    pub async fn etcd_defragment(&self) -> Result<()> {
        let mut c = self.machine();
        let call = "EtcdDefragment";
        let r = self
            .call(call, MACHINE, c.etcd_defragment(self.proxied((), true)))
            .await?;
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    pub async fn etcd_alarms(&self) -> Result<Vec<machine::EtcdMemberAlarm>> {
        let mut c = self.machine();
        let call = "EtcdAlarmList";
        let r = self
            .call(call, MACHINE, c.etcd_alarm_list(self.proxied((), true)))
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .member_alarms)
    }

    /// Disarms every alarm; the alarms that were disarmed.
    pub async fn etcd_disarm(&self) -> Result<Vec<machine::EtcdMemberAlarm>> {
        let mut c = self.machine();
        let call = "EtcdAlarmDisarm";
        let r = self
            .call(call, MACHINE, c.etcd_alarm_disarm(self.proxied((), true)))
            .await?;
        Ok(self
            .first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
            .member_alarms)
    }

    /// A downgrade call; the cluster version etcd reports.
    pub async fn etcd_downgrade(&self, what: Downgrade, version: &str) -> Result<String> {
        let mut c = self.machine();
        let v = version.to_string();
        let d = match what {
            Downgrade::Validate => {
                let call = "EtcdDowngradeValidate";
                let req = machine::EtcdDowngradeValidateRequest { version: v };
                let r = self
                    .call(
                        call,
                        MACHINE,
                        c.etcd_downgrade_validate(self.proxied(req, true)),
                    )
                    .await?;
                self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
                    .cluster_downgrade
            }
            Downgrade::Enable => {
                let call = "EtcdDowngradeEnable";
                let req = machine::EtcdDowngradeEnableRequest { version: v };
                let r = self
                    .call(
                        call,
                        MACHINE,
                        c.etcd_downgrade_enable(self.proxied(req, true)),
                    )
                    .await?;
                self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
                    .cluster_downgrade
            }
            Downgrade::Cancel => {
                let call = "EtcdDowngradeCancel";
                let r = self
                    .call(
                        call,
                        MACHINE,
                        c.etcd_downgrade_cancel(self.proxied((), true)),
                    )
                    .await?;
                self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?
                    .cluster_downgrade
            }
        };
        Ok(d.unwrap_or_default().cluster_version)
    }

    /// The node's etcd snapshot, each chunk handed to `each` as it arrives.
    pub async fn etcd_snapshot(&self, mut each: impl FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let mut c = self.machine();
        let call = "EtcdSnapshot";
        let req = machine::EtcdSnapshotRequest {};
        let mut stream = self
            .call(call, MACHINE, c.etcd_snapshot(self.proxied(req, false)))
            .await?
            .into_inner();
        while let Some(d) = self.next_within(call, MACHINE, &mut stream).await? {
            self.in_band(call, d.metadata.as_ref())?;
            each(&d.bytes)?;
        }
        Ok(())
    }

    /// Uploads a recovery snapshot in 4096-byte chunks (EtcdRecover).
    pub async fn etcd_recover(&self, data: &[u8]) -> Result<()> {
        let mut c = self.machine();
        let call = "EtcdRecover";
        let chunks: Vec<common::Data> = data
            .chunks(4096)
            .map(|b| common::Data {
                metadata: None,
                bytes: b.to_vec(),
            })
            .collect();
        let req = self.proxied(tokio_stream::iter(chunks), true);
        let r = self.call(call, MACHINE, c.etcd_recover(req)).await?;
        self.first(call, r.into_inner().messages, |m| m.metadata.as_ref())?;
        Ok(())
    }

    /// Runs the cluster health check on the node, handing each progress line to `each`; the
    /// error is talosctl's `healthcheck error: ...`.
    pub async fn health_check(
        &self,
        wait: Duration,
        control_planes: Vec<String>,
        workers: Vec<String>,
        mut each: impl FnMut(&str),
    ) -> Result<()> {
        let mut c = self.clusters();
        let call = "HealthCheck";
        let req = cluster::HealthCheckRequest {
            wait_timeout: Some(prost_types::Duration {
                seconds: i64::try_from(wait.as_secs()).unwrap_or(i64::MAX),
                nanos: wait.subsec_nanos() as i32,
            }),
            cluster_info: Some(cluster::ClusterInfo {
                control_plane_nodes: control_planes,
                worker_nodes: workers,
                force_endpoint: String::new(),
            }),
        };
        let healthcheck =
            |text: String| talm_base::error::plain(format!("healthcheck error: {text}"));
        let mut stream = self
            .call(call, CLUSTER, c.health_check(self.proxied(req, false)))
            .await?
            .into_inner();
        loop {
            match stream.next().await {
                None => return Ok(()),
                Some(Err(st)) if st.code() == Code::Cancelled => return Ok(()),
                Some(Err(st)) => return Err(healthcheck(errors::describe(&st))),
                Some(Ok(p)) => {
                    if let Some(md) = p.metadata.as_ref().filter(|m| !m.error.is_empty()) {
                        return Err(healthcheck(md.error.clone()));
                    }
                    each(&p.message);
                }
            }
        }
    }
}
