//! What machined's DebugService does with a ContainerRun's spec on a simulated node, in Talos's
//! order and words: the privileged profile only, a containerd instance the node has, an image
//! that instance holds (by any of the names a pull gives it), a process the image has. The
//! container then runs the built-in mini shell (`shell`), over the node's files.

pub mod shell;

use tonic::Status;

use crate::node::Node;
use crate::world::images::Store;
use crate::world::rootfs;
use crate::world::workload::Workload;
use crate::world::World;
use shell::{Host, Shell, Start};
use talm_wire::proto::machine::debug_container_run_request_spec::Profile;
use talm_wire::proto::machine::DebugContainerRunRequestSpec;

/// A container ready to run: its shell and what it was started with.
pub struct Container {
    pub shell: Shell,
    pub start: Start,
}

/// Talos's first check of a spec: the privileged profile is the only one.
pub fn check_profile(spec: &DebugContainerRunRequestSpec) -> Result<(), Status> {
    if spec.profile == Profile::Privileged as i32 {
        return Ok(());
    }
    let name = Profile::try_from(spec.profile)
        .map(|p| p.as_str_name().to_string())
        .unwrap_or_else(|_| spec.profile.to_string());
    Err(Status::invalid_argument(format!(
        "unsupported debug container profile: {name}"
    )))
}

impl Node {
    /// The container `spec` asks for in `store` (checked and reachable), or Talos's refusal.
    pub fn debug_container(
        &self,
        store: Store,
        spec: &DebugContainerRunRequestSpec,
    ) -> Result<Container, Status> {
        let w = World::of(self);
        let name = &spec.image_name;
        if !self.answers_to(store, name) {
            return Err(Status::not_found(format!(
                "image {name} not found: image \"{name}\": not found"
            )));
        }
        let start = shell::start_of(&spec.args);
        if let Start::NotFound(program) = &start {
            return Err(Status::unknown(format!(
                "failed to create task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: \"{program}\": executable file not found in $PATH: unknown"
            )));
        }
        let host = Host {
            hostname: w.hostname.clone(),
            fs: rootfs::build(&w, &Workload::of(&w)),
        };
        Ok(Container {
            shell: Shell::new(host, spec.tty),
            start,
        })
    }
}
