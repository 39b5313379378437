//! Work over many nodes from one script: `talos::each` (a command's fan-out over its nodes),
//! `parallel()` on the kept worker threads, `rolling()` upgrades in turns with health checks
//! between them, and writing each node file back as its nodes finish.

pub(crate) mod each;
pub(crate) mod hook;
pub(crate) mod parallel;
pub(crate) mod rolling;
pub(crate) mod workers;
pub(crate) mod writeback;
