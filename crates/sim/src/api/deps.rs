//! InspectService of a simulated node: the controller runtime's dependency graph (the
//! controllers of `controllers.rs`), for any reader role, one message with all edges as
//! machined sends it.

use tonic::{Request, Response, Status};

use super::inspect::{allow, READERS};
use super::{Routed, Svc};
use talm_wire::proto::common;
use talm_wire::proto::inspect as inspectapi;

routed!(inspectapi::ControllerRuntimeDependency);

#[tonic::async_trait]
impl inspectapi::inspect_service_server::InspectService for Svc {
    async fn controller_runtime_dependencies(
        &self,
        req: Request<()>,
    ) -> Result<Response<inspectapi::ControllerRuntimeDependenciesResponse>, Status> {
        let messages = self
            .unary(&req, "ControllerRuntimeDependencies", |_, roles| {
                allow(roles, &READERS)?;
                Ok(inspectapi::ControllerRuntimeDependency {
                    metadata: None::<common::Metadata>,
                    edges: super::controllers::dependency_edges(),
                })
            })
            .await?;
        Ok(Response::new(
            inspectapi::ControllerRuntimeDependenciesResponse { messages },
        ))
    }
}
