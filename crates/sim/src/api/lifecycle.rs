//! LifecycleService of a simulated node: Install and Upgrade stream the installer's output and
//! exit code (`machined::lifecycle`). Routed one-to-one only, as Talos's streaming services;
//! a node older than v1.13 answers as a server without the service.

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::{peer, Route, Stream_, Svc};
use crate::machined::lifecycle::{has_v1_13_apis, unknown_service, Run};
use crate::node::Node;
use machine::lifecycle_service_install_progress::Response as Progress;
use talm_wire::proto::machine;

const SERVICE: &str = "machine.LifecycleService";

/// A run's replies: each output line, then the exit code.
fn progress(run: Run) -> Vec<machine::LifecycleServiceInstallProgress> {
    run.lines
        .into_iter()
        .map(Progress::Message)
        .chain([Progress::ExitCode(run.exit_code)])
        .map(|r| machine::LifecycleServiceInstallProgress { response: Some(r) })
        .collect()
}

impl Svc {
    /// The node a lifecycle call is for, once the call may go on.
    async fn lifecycle_node<T>(
        &self,
        req: &Request<T>,
        method: &str,
    ) -> Result<(Arc<Node>, bool), Status> {
        let drops = self
            .faults(&format!("Lifecycle{method}"), &peer(req))
            .await?;
        let node = match self.route(req, &format!("/{SERVICE}/{method}"), false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        if !has_v1_13_apis(&node) {
            return Err(unknown_service(SERVICE));
        }
        Ok((node, drops))
    }
}

#[tonic::async_trait]
impl machine::lifecycle_service_server::LifecycleService for Svc {
    type InstallStream = Stream_<machine::LifecycleServiceInstallResponse>;
    type UpgradeStream = Stream_<machine::LifecycleServiceUpgradeResponse>;

    async fn install(
        &self,
        req: Request<machine::LifecycleServiceInstallRequest>,
    ) -> Result<Response<Self::InstallStream>, Status> {
        let (node, drops) = self.lifecycle_node(&req, "Install").await?;
        let peer = peer(&req);
        let r = req.get_ref();
        let image = r
            .source
            .as_ref()
            .map(|s| s.image_name.as_str())
            .unwrap_or("");
        let disk = r
            .destination
            .as_ref()
            .map(|d| d.disk.as_str())
            .unwrap_or("");
        let run = node.lifecycle_install(&peer.roles, r.containerd, image, disk)?;
        let items = progress(run)
            .into_iter()
            .map(|p| machine::LifecycleServiceInstallResponse { progress: Some(p) })
            .collect();
        Ok(Response::new(Self::stream(items, drops, peer)))
    }

    async fn upgrade(
        &self,
        req: Request<machine::LifecycleServiceUpgradeRequest>,
    ) -> Result<Response<Self::UpgradeStream>, Status> {
        let (node, drops) = self.lifecycle_node(&req, "Upgrade").await?;
        let peer = peer(&req);
        let r = req.get_ref();
        let image = r
            .source
            .as_ref()
            .map(|s| s.image_name.as_str())
            .unwrap_or("");
        let run = node.lifecycle_upgrade(&peer.roles, r.containerd, image)?;
        let items = progress(run)
            .into_iter()
            .map(|p| machine::LifecycleServiceUpgradeResponse { progress: Some(p) })
            .collect();
        Ok(Response::new(Self::stream(items, drops, peer)))
    }
}
