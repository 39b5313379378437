//! Talking to Talos nodes: credentials and TLS, node targeting, machine and COSI calls, the
//! kubeconfig archive and the discovery snapshot. Nothing here knows about projects.

pub mod address;
pub mod archive;
pub mod bbolt;
pub mod cgroups;
pub mod client;
pub mod clock;
pub mod creds;
pub mod diagnose;
pub mod discovery;
pub mod duration;
pub mod errors;
pub mod etcd_db;
pub mod events;
pub mod extract;
pub mod failover;
pub mod fingerprint;
pub mod humanize;
pub mod jsonpath;
pub mod resources;
pub mod scan;
pub mod snapshot;
pub mod stats;
pub mod streams;
pub mod tabwriter;
pub mod tracker;
pub mod verify;
pub mod wire;

pub use duration::{parse as parse_duration, text as duration_text};

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

/// Default deadline of a connection and of each call.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The process's async runtime for node I/O; scripts call into it from plain threads.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("talm-io")
            .enable_all()
            .build()
            .unwrap_or_else(|e| {
                // No threads for node I/O (a process or memory limit): nothing can go on.
                eprintln!("Error: cannot start talm's I/O threads: {e}\nhint: the system refused new threads (ulimit -u, cgroup pids.max, memory); free some and retry");
                std::process::exit(1)
            })
    })
}

/// Runs a future to completion from synchronous code (not from inside the runtime).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}
