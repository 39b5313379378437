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
    /// A lifecycle call: the node it is for (a node before v1.13 has no such service), the
    /// installer run `run` makes there, its replies wrapped by `reply`.
    async fn lifecycle<T, R: Send + 'static>(
        &self,
        req: &Request<T>,
        method: &str,
        run: impl FnOnce(&Node, &[String], &T) -> Result<Run, Status>,
        reply: fn(machine::LifecycleServiceInstallProgress) -> R,
    ) -> Result<Response<Stream_<R>>, Status> {
        let peer = peer(req);
        let drops = self.faults(&format!("Lifecycle{method}"), &peer).await?;
        let node = match self.route(req, &format!("/{SERVICE}/{method}"), false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        if !has_v1_13_apis(&node) {
            return Err(unknown_service(SERVICE));
        }
        let items = progress(run(&node, &peer.roles, req.get_ref())?)
            .into_iter()
            .map(reply)
            .collect();
        Ok(Response::new(Self::stream(items, drops, peer)))
    }
}

/// The installer image a request names ("" when none).
fn image(source: &Option<machine::InstallArtifactsSource>) -> &str {
    source.as_ref().map_or("", |s| s.image_name.as_str())
}

#[tonic::async_trait]
impl machine::lifecycle_service_server::LifecycleService for Svc {
    type InstallStream = Stream_<machine::LifecycleServiceInstallResponse>;
    type UpgradeStream = Stream_<machine::LifecycleServiceUpgradeResponse>;

    async fn install(
        &self,
        req: Request<machine::LifecycleServiceInstallRequest>,
    ) -> Result<Response<Self::InstallStream>, Status> {
        let run = |n: &Node, roles: &[String], r: &machine::LifecycleServiceInstallRequest| {
            let disk = r.destination.as_ref().map_or("", |d| d.disk.as_str());
            n.lifecycle_install(roles, r.containerd, image(&r.source), disk)
        };
        self.lifecycle(&req, "Install", run, |p| {
            machine::LifecycleServiceInstallResponse { progress: Some(p) }
        })
        .await
    }

    async fn upgrade(
        &self,
        req: Request<machine::LifecycleServiceUpgradeRequest>,
    ) -> Result<Response<Self::UpgradeStream>, Status> {
        let run = |n: &Node, roles: &[String], r: &machine::LifecycleServiceUpgradeRequest| {
            n.lifecycle_upgrade(roles, r.containerd, image(&r.source))
        };
        self.lifecycle(&req, "Upgrade", run, |p| {
            machine::LifecycleServiceUpgradeResponse { progress: Some(p) }
        })
        .await
    }
}
