//! What machined does with a simulated node's config and lifecycle: apply (and what applies
//! without a reboot), upgrade (legacy and LifecycleService), the admin kubeconfig, client configurations, and the changes
//! day-two calls make (disks, images, META, services).

pub mod apply;
pub mod changes;
pub mod clientconfig;
pub mod debug;
pub mod immediate;
pub mod kubeconfig;
pub mod lifecycle;
pub mod sequences;
pub mod upgrade;
