//! Kubernetes facts shared by talm's client and the simulator: the cluster health checks
//! Talos runs against the Kubernetes API (`checks`), computed from the listed objects.

pub mod checks;
