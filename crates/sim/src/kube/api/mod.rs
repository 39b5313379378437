//! The simulated kube-apiserver: HTTPS on a control plane's port 6443 answering discovery,
//! health, resource reads and writes, watches, Tables and evictions from a cluster's `Kube`.
//! `listen` (or `bind` then `serve`) runs it until its stop token is cancelled.

mod age;
mod apply;
mod auth;
mod discovery;
mod evict;
mod handle;
mod patch;
mod proto;
mod resources;
mod route;
mod select;
mod server;
mod status;
mod table;
mod tls;
mod watch;
mod write;

#[cfg(test)]
mod kubectl_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod watch_tests;
#[cfg(test)]
mod write_tests;

pub use auth::User;
pub use discovery::DEFAULT_VERSION;
pub use evict::{pdb_status, pod_ready, PdbStatus};
pub use resources::{by_kind, by_resource, Kind, KINDS};
pub use select::Selector;
pub use server::{listen, serve};
pub use tls::{server_config, ClusterCa};
pub use write::namespace_object;

use crate::kube::store::Objects;

/// kube-apiserver's own namespaces, made at start (existing ones are left as they are).
pub fn system_namespaces(objects: &Objects) {
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let _ = objects.create(
            &crate::kube::store::Key::new("namespaces", "", ns),
            namespace_object(ns),
        );
    }
}
