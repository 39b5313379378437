//! The Kubernetes API a simulated cluster serves on its control planes (port 6443): the
//! cluster's objects (`store`), kept by its own controllers from the simulated nodes' state
//! (`controllers`, with the objects they write in `model` and `workloads`), where a node finds
//! its cluster's API (`cluster`), when a control plane serves it (`apiserver`), the HTTPS server
//! that answers kubectl and client libraries (`api`), and the Kubernetes fault knobs of the sim
//! config file (`faults`).

pub mod api;
pub mod apiserver;
pub mod bootstrap;
pub mod cluster;
pub mod controllers;
pub mod faults;
pub mod health;
pub mod model;
pub mod pdb;
pub mod pods;
pub mod status;
pub mod store;
pub mod workloads;

use std::sync::Mutex;
use std::time::Instant;

/// One cluster's Kubernetes API: what every control plane's server answers from.
pub struct Kube {
    pub objects: store::Objects,
    /// Until when the API answers 503 (the `kube_unavailable` fault).
    pub unavailable_until: Mutex<Option<Instant>>,
    /// The `gitVersion` `/version` reports (`api::DEFAULT_VERSION` unless set).
    pub version: Mutex<String>,
}

impl Default for Kube {
    /// An API with kube-apiserver's own namespaces (`default`, `kube-system`, `kube-public`,
    /// `kube-node-lease`): the server creates them itself at start, before any controller.
    fn default() -> Kube {
        let kube = Kube {
            objects: store::Objects::default(),
            unavailable_until: Mutex::new(None),
            version: Mutex::new(api::DEFAULT_VERSION.to_string()),
        };
        api::system_namespaces(&kube.objects);
        kube
    }
}

impl Kube {
    /// Sets the Kubernetes version `/version` reports (`v1.36.2`).
    pub fn set_version(&self, git_version: &str) {
        *self.version.lock().unwrap_or_else(|e| e.into_inner()) = git_version.to_string();
    }

    /// The Kubernetes version `/version` reports.
    pub fn git_version(&self) -> String {
        self.version
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the API answers 503 now (`unavailable_until` lies ahead).
    pub fn unavailable(&self) -> bool {
        let until = *self
            .unavailable_until
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        until.is_some_and(|t| Instant::now() < t)
    }
}

impl std::fmt::Debug for Kube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kube(version {})", self.objects.version())
    }
}

#[cfg(test)]
mod tests;
