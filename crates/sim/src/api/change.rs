//! The calls that change a simulated node: service start/stop/restart, container restart,
//! rollback, shutdown, META, StorageService (BlockDeviceWipe) and ImageService.Pull, each
//! routed as apid routes it; the behaviour lives in `crate::machined::changes`.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::inspect::{allow, containers, cri_down, OPERATORS};
use super::{peer, Route, Stream_, Svc};
use crate::machined::changes::ops::ServiceOp;
use crate::world::{images, World};
use talm_wire::proto::machine;
use talm_wire::proto::storage;

impl Svc {
    /// ServiceStart/Stop/Restart on every target: the answers with their metadata.
    async fn change_service(
        &self,
        req: &Request<impl Sized>,
        call: &str,
        id: &str,
        op: ServiceOp,
    ) -> Result<Vec<(Option<talm_wire::proto::common::Metadata>, String)>, Status> {
        let msgs = self
            .unary(req, call, |n, roles| {
                n.service_op(id, op, roles)
                    .map(|resp| machine::ServiceStart {
                        metadata: None,
                        resp,
                    })
            })
            .await?;
        Ok(msgs.into_iter().map(|m| (m.metadata, m.resp)).collect())
    }

    pub(super) async fn change_service_start(
        &self,
        req: Request<machine::ServiceStartRequest>,
    ) -> Result<Response<machine::ServiceStartResponse>, Status> {
        let id = req.get_ref().id.clone();
        let r = self
            .change_service(&req, "ServiceStart", &id, ServiceOp::Start)
            .await?;
        let messages = r
            .into_iter()
            .map(|(metadata, resp)| machine::ServiceStart { metadata, resp })
            .collect();
        Ok(Response::new(machine::ServiceStartResponse { messages }))
    }

    pub(super) async fn change_service_stop(
        &self,
        req: Request<machine::ServiceStopRequest>,
    ) -> Result<Response<machine::ServiceStopResponse>, Status> {
        let id = req.get_ref().id.clone();
        let r = self
            .change_service(&req, "ServiceStop", &id, ServiceOp::Stop)
            .await?;
        let messages = r
            .into_iter()
            .map(|(metadata, resp)| machine::ServiceStop { metadata, resp })
            .collect();
        Ok(Response::new(machine::ServiceStopResponse { messages }))
    }

    pub(super) async fn change_service_restart(
        &self,
        req: Request<machine::ServiceRestartRequest>,
    ) -> Result<Response<machine::ServiceRestartResponse>, Status> {
        let id = req.get_ref().id.clone();
        let r = self
            .change_service(&req, "ServiceRestart", &id, ServiceOp::Restart)
            .await?;
        let messages = r
            .into_iter()
            .map(|(metadata, resp)| machine::ServiceRestart { metadata, resp })
            .collect();
        Ok(Response::new(machine::ServiceRestartResponse { messages }))
    }

    pub(super) async fn change_restart(
        &self,
        req: Request<machine::RestartRequest>,
    ) -> Result<Response<machine::RestartResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Restart", |n, roles| {
                allow(roles, &OPERATORS)?;
                let listed = containers(n, &body.namespace, body.driver)?;
                let exists = listed.iter().any(|(c, _)| c.id == body.id);
                let cri = body.driver == talm_wire::proto::common::ContainerDriver::Cri as i32;
                n.restart_container(&body.id, cri, exists)?;
                Ok(machine::Restart { metadata: None })
            })
            .await?;
        Ok(Response::new(machine::RestartResponse { messages }))
    }

    pub(super) async fn change_rollback(
        &self,
        req: Request<machine::RollbackRequest>,
    ) -> Result<Response<machine::RollbackResponse>, Status> {
        let messages = self
            .unary(&req, "Rollback", |n, roles| {
                n.rollback(roles)?;
                Ok(machine::Rollback { metadata: None })
            })
            .await?;
        Ok(Response::new(machine::RollbackResponse { messages }))
    }

    pub(super) async fn change_shutdown(
        &self,
        req: Request<machine::ShutdownRequest>,
    ) -> Result<Response<machine::ShutdownResponse>, Status> {
        let force = req.get_ref().force;
        let messages = self
            .unary(&req, "Shutdown", |n, roles| {
                let actor_id = n.shutdown(force, roles)?;
                Ok(machine::Shutdown {
                    metadata: None,
                    actor_id,
                })
            })
            .await?;
        Ok(Response::new(machine::ShutdownResponse { messages }))
    }

    pub(super) async fn change_meta_write(
        &self,
        req: Request<machine::MetaWriteRequest>,
    ) -> Result<Response<machine::MetaWriteResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "MetaWrite", |n, roles| {
                n.meta_write(body.key, &body.value, roles)?;
                Ok(machine::MetaWrite { metadata: None })
            })
            .await?;
        Ok(Response::new(machine::MetaWriteResponse { messages }))
    }

    pub(super) async fn change_meta_delete(
        &self,
        req: Request<machine::MetaDeleteRequest>,
    ) -> Result<Response<machine::MetaDeleteResponse>, Status> {
        let key = req.get_ref().key;
        let messages = self
            .unary(&req, "MetaDelete", |n, roles| {
                n.meta_delete(key, roles)?;
                Ok(machine::MetaDelete { metadata: None })
            })
            .await?;
        Ok(Response::new(machine::MetaDeleteResponse { messages }))
    }

    /// ImageService.Pull: one-to-one only (its replies carry no metadata).
    pub(super) async fn change_pull(
        &self,
        req: Request<machine::ImageServicePullRequest>,
    ) -> Result<Response<Stream_<machine::ImageServicePullResponse>>, Status> {
        use machine::image_service_pull_layer_progress::Status as Layer;
        use machine::image_service_pull_response::Response as R;
        let peer = peer(&req);
        let drops = self.faults("ImagePull", &peer).await?;
        let node = match self.route(&req, "/machine.ImageService/Pull", false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        allow(&peer.roles, &OPERATORS)?;
        let instance = req.get_ref().containerd.unwrap_or_default();
        let store = images::store(&instance)?;
        let w = World::of(&node);
        if store != images::Store::InMem && !w.running("cri") {
            return Err(cri_down("error connecting to containerd: "));
        }
        let pulled = node.pull(store, &req.get_ref().image_ref)?;
        let progress = |layer: &str, status: Layer, offset: i64, total: i64, ms: i32| {
            machine::ImageServicePullResponse {
                response: Some(R::PullProgress(machine::ImageServicePullProgress {
                    layer_id: layer.to_string(),
                    progress: Some(machine::ImageServicePullLayerProgress {
                        status: status as i32,
                        elapsed: Some(prost_types::Duration {
                            seconds: 0,
                            nanos: ms * 1_000_000,
                        }),
                        offset,
                        total,
                    }),
                })),
            }
        };
        let mut items = Vec::new();
        for (layer, size) in &pulled.layers {
            let id = format!("sha256:{}", &layer[..12]);
            items.push(progress(&id, Layer::Downloading, size / 2, *size, 120));
            items.push(progress(&id, Layer::DownloadComplete, *size, *size, 240));
            items.push(progress(&id, Layer::Extracting, 0, 0, 300));
            items.push(progress(&id, Layer::ExtractComplete, 0, 0, 420));
        }
        items.push(machine::ImageServicePullResponse {
            response: Some(R::Name(pulled.name)),
        });
        Ok(Response::new(Self::stream(items, drops, peer)))
    }
}

#[tonic::async_trait]
impl storage::storage_service_server::StorageService for Svc {
    async fn block_device_wipe(
        &self,
        req: Request<storage::BlockDeviceWipeRequest>,
    ) -> Result<Response<storage::BlockDeviceWipeResponse>, Status> {
        let devices = req.get_ref().devices.clone();
        let messages = self
            .unary(&req, "BlockDeviceWipe", |n, roles| {
                n.wipe(&devices, roles)?;
                Ok(storage::BlockDeviceWipe { metadata: None })
            })
            .await?;
        Ok(Response::new(storage::BlockDeviceWipeResponse { messages }))
    }
}
