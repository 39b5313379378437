//! The gRPC face of a simulated node: MachineService, with apid's node routing (`node`
//! one-to-one, `nodes` one-to-many with metadata and in-band errors; ignored in maintenance) and
//! the node's injected faults. One file per service family: MachineService's methods in
//! `machine_service.rs` over `inspect`, `change` and `etcd`; ImageService in `images.rs`, LifecycleService in `lifecycle.rs`, DebugService in `debug.rs`,
//! TimeService in `time.rs`, InspectService in `deps.rs` (its graph in `controllers.rs`), COSI in `cosi.rs`; logs and events in `logs.rs` and `events.rs`; the
//! routing they all share in `routing.rs`.

pub mod cluster;
pub mod cosi;
pub mod events;
pub mod logs;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, RwLock};

use tokio_stream::Stream;
use tonic::Status;

use crate::node::Node;
use talm_wire::proto::common;
use talm_wire::proto::machine;

/// The nodes of one simulator, by the name metadata uses (their address).
pub type Registry = RwLock<HashMap<String, Arc<Node>>>;

#[derive(Clone)]
pub struct Svc {
    pub node: Arc<Node>,
    pub registry: Arc<Registry>,
}

pub(super) type Stream_<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// Reply messages that carry `common.Metadata` in field 1.
trait Routed: Default {
    fn set_meta(&mut self, m: common::Metadata);
}

macro_rules! routed {
    ($($t:ty),*) => { $(impl Routed for $t { fn set_meta(&mut self, m: common::Metadata) { self.metadata = Some(m); } })* };
}
routed!(
    machine::Version,
    machine::Hostname,
    machine::ApplyConfiguration,
    machine::Bootstrap,
    machine::Upgrade,
    machine::Reboot,
    machine::Reset,
    machine::ServiceList,
    machine::GenerateClientConfiguration,
    common::Data
);
routed!(
    machine::SystemStat,
    machine::CpUsInfo,
    machine::LoadAvg,
    machine::NetworkDeviceStats,
    machine::DiskStats
);
routed!(
    machine::ServiceStart,
    machine::Restart,
    machine::Rollback,
    machine::Shutdown,
    machine::MetaWrite,
    machine::MetaDelete,
    talm_wire::proto::storage::BlockDeviceWipe
);

mod change;
mod controllers;
mod debug;
mod deps;
mod etcd;
mod images;
mod inspect;
mod lifecycle;
mod machine_service;
mod routing;
mod time;

use routing::{error_meta, peer, Route};
