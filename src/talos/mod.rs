//! Talking to Talos nodes: credentials and TLS, node targeting, machine and COSI calls, the
//! kubeconfig archive and the discovery snapshot. Nothing here knows about projects.

pub mod address;
pub mod archive;
pub mod client;
pub mod creds;
pub mod discovery;
pub mod duration;
pub mod errors;
pub mod resources;
pub mod scan;
pub mod verify;

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
            .expect("the async runtime starts")
    })
}

/// Runs a future to completion from synchronous code (not from inside the runtime).
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}
