//! ImageService of a simulated node: List from the node's image stores (containerd's `system`
//! and CRI instances; the CRI's only while it runs) with what was pulled since, and Pull, which
//! changes the node (`change.rs`), and Remove (os:admin only), which takes one name out of a
//! store. Routed one-to-one only: ImageService refuses `nodes`.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::inspect::{allow, cri_down, READERS};
use super::{peer, Route, Stream_, Svc};
use crate::world::{images, World};
use talm_wire::proto::machine;

#[tonic::async_trait]
impl machine::image_service_server::ImageService for Svc {
    type ListStream = Stream_<machine::ImageServiceListResponse>;
    type PullStream = Stream_<machine::ImageServicePullResponse>;

    async fn pull(
        &self,
        req: Request<machine::ImageServicePullRequest>,
    ) -> Result<Response<Self::PullStream>, Status> {
        self.change_pull(req).await
    }

    async fn remove(
        &self,
        req: Request<machine::ImageServiceRemoveRequest>,
    ) -> Result<Response<()>, Status> {
        let peer = peer(&req);
        if self.faults("ImageRemove", &peer).await? {
            peer.kill.cancel();
            return Err(Status::unavailable("connection cut"));
        }
        let node = match self.route(&req, "/machine.ImageService/Remove", false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        allow(&peer.roles, &["os:admin"])?;
        let instance = req.get_ref().containerd.unwrap_or_default();
        let store = images::store(&instance)?;
        if store != images::Store::InMem && !World::of(&node).running("cri") {
            return Err(cri_down("error connecting to containerd: "));
        }
        node.remove_image(store, &req.get_ref().image_ref)?;
        Ok(Response::new(()))
    }

    async fn list(
        &self,
        req: Request<machine::ImageServiceListRequest>,
    ) -> Result<Response<Self::ListStream>, Status> {
        let peer = peer(&req);
        let drops = self.faults("ImageList", &peer).await?;
        let node = match self.route(&req, "/machine.ImageService/List", false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        allow(&peer.roles, &READERS)?;
        let instance = req.get_ref().containerd.unwrap_or_default();
        let store = images::store(&instance)?;
        let w = World::of(&node);
        if store != images::Store::InMem && !w.running("cri") {
            return Err(cri_down("error connecting to containerd: "));
        }
        let listed = images::list(&w, store);
        let items =
            crate::machined::changes::images::with_pulled(listed, store, &node.state().changes)
                .into_iter()
                .map(|i| machine::ImageServiceListResponse {
                    name: i.name,
                    digest: i.digest,
                    size: i.size,
                    created_at: Some(prost_types::Timestamp {
                        seconds: i.created,
                        nanos: 0,
                    }),
                    labels: i.labels.into_iter().collect(),
                })
                .collect();
        Ok(Response::new(Self::stream(items, drops, peer)))
    }
}
