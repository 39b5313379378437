//! Talking to Talos nodes: credentials and TLS, node targeting, machine and COSI calls, the
//! kubeconfig archive and the discovery snapshot. Nothing here knows about projects.

pub use talm_base::{address, duration, humanize, jsonpath, tabwriter};
pub use talm_wire::{archive, bbolt, cgroups, etcd_db, extract, fingerprint, snapshot};

pub mod client;
pub mod clock;
pub mod creds;
pub mod diagnose;
pub mod discovery;
pub mod errors;
pub mod events;
pub mod failover;
pub mod resources;
pub mod scan;
pub mod stats;
pub mod streams;
pub mod tracker;
pub mod verify;
pub mod wire;

pub use duration::{parse as parse_duration, text as duration_text};

use std::time::Duration;

/// Default deadline of a connection and of each call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

pub use talm_base::rt::{block_on, runtime};
