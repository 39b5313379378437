//! The Kubernetes API a simulated cluster serves on its control planes (port 6443): the
//! cluster's objects (`store`), kept by its own controllers from the simulated nodes' state
//! (`controllers`, with the objects they write in `model` and `workloads`), where a node finds
//! its cluster's API (`cluster`), when a control plane serves it (`apiserver`), and the
//! Kubernetes fault knobs of the sim config file (`faults`).

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

/// One simulated cluster's Kubernetes API: its objects, and until when it answers 503 (the
/// `kube_unavailable` fault).
#[derive(Default)]
pub struct Kube {
    pub objects: store::Objects,
    pub unavailable_until: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Kube {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kube(version {})", self.objects.version())
    }
}

#[cfg(test)]
mod tests;
