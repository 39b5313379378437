//! talm: takes bare Talos Linux machines to a running Kubernetes cluster, declaratively and from
//! git. The library behind the `talm` binary: CLI → runtime/scripts → project/secrets → Talos.

pub use talm_base::{
    ahead, caches, error, heap, input, mask, netip, output, pcap, printable, progress, yaml,
};
pub use talm_client as talos;
pub use talm_core::{config, embedded, project, render, sandbox, secrets};
pub use talm_sim as sim;
pub use talm_wire::{facts, proto, registry, version, zip};

/// The library's own tests run on the binary's heap.
#[cfg(test)]
#[global_allocator]
static HEAP: heap::Split = heap::Split;

pub mod cli;
pub mod completion;
pub mod dashboard;
pub mod demo;
pub mod dispatch;
pub mod invocation;
pub mod runtime;

use std::ffi::OsString;

/// Runs the CLI with the given process arguments and returns the process exit code (130 when
/// Ctrl-C stopped a script).
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    talm_base::humanize::mark_start();
    let args: Vec<OsString> = args.into_iter().collect();
    if let Some(code) = completion::respond(&args) {
        return code;
    }
    match dispatch::dispatch(args) {
        Ok(code) => code,
        // A reader that went away (`talm get ... | head`) is no failure.
        Err(err) if output::is_closed(&err) => 0,
        Err(err) => {
            eprint!("{}", error::render(&err));
            if let Some(hint) = project::rotation::hint_for(&err) {
                eprintln!("hint: {hint}");
            }
            if let Some(code) = error::exit_code(&err) {
                code
            } else if sandbox::interrupt::is_interrupted(&err) || sandbox::interrupt::absorbed() {
                sandbox::interrupt::signal().exit_code()
            } else {
                1
            }
        }
    }
}
