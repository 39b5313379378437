//! talm's core, below the runtime and beside the client, reading only base and wire: the
//! cluster's secrets (bundle, envelopes, talosconfig), machine configs (generation, the patcher,
//! drift, redaction), the project (root, values, presets, modelines, transactions), rendering,
//! and the sandbox scripts and templates run in (engine, limits, guards, the stdlib natives).

/// This crate's tests run on the binary's heap.
#[cfg(test)]
#[global_allocator]
static HEAP: talm_base::heap::Split = talm_base::heap::Split;

pub mod config;
pub mod embedded;
pub mod project;
pub mod render;
pub mod sandbox;
pub mod secrets;
