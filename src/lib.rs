//! talm: takes bare Talos Linux machines to a running Kubernetes cluster, declaratively and from
//! git. The library behind the `talm` binary: CLI → runtime/scripts → project/secrets → Talos.

pub mod cli;
pub mod config;
pub mod dashboard;
pub mod demo;
pub mod dispatch;
pub mod embedded;
pub mod error;
pub mod mask;
pub mod project;
pub mod proto;
pub mod render;
pub mod runtime;
pub mod sandbox;
pub mod secrets;
pub mod sim;
pub mod talos;
pub mod version;
pub mod yaml;

use std::ffi::OsString;

/// Runs the CLI with the given process arguments and returns the process exit code (130 when
/// Ctrl-C stopped a script).
pub fn run(args: impl IntoIterator<Item = OsString>) -> i32 {
    match dispatch::dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            eprint!("{}", error::render(&err));
            if sandbox::interrupt::is_interrupted(&err) {
                sandbox::interrupt::EXIT_CODE
            } else {
                1
            }
        }
    }
}
