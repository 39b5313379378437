//! The process's async runtime: two threads for node I/O (the client's calls and the
//! simulator's servers), which scripts and commands call into from plain threads.

use std::future::Future;
use std::sync::OnceLock;

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
