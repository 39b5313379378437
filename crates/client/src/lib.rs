//! Talking to Talos nodes: credentials and TLS, node targeting, machine and COSI calls, the
//! kubeconfig archive and the discovery snapshot. Reads only base and wire: nothing here knows
//! about projects.

/// This crate's tests run on the binary's heap.
#[cfg(test)]
#[global_allocator]
static HEAP: talm_base::heap::Split = talm_base::heap::Split;

pub mod client;
pub mod clock;
pub mod creds;
pub mod diagnose;
pub mod discovery;
pub mod errors;
pub mod events;
pub mod failover;
pub mod k8s;
pub mod resources;
pub mod scan;
pub mod stats;
pub mod streams;
pub mod tracker;
pub mod transport;
pub mod verify;

use std::time::Duration;

/// Default deadline of a connection and of each call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub use talm_base::rt::{block_on, runtime};
