//! The Kubernetes API a simulated cluster serves on its control planes (port 6443): the
//! cluster's objects (`store`), kept by its own controllers from the simulated nodes' state.

pub mod store;
