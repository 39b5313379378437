//! The trust suite (issue 9): secrets never lost, writes all-or-nothing, values validated where
//! they enter, scripts bounded, node faults named truly, parsers that never panic. One test
//! binary, one module per subject; simulated nodes use addresses in 127.9.0.0/16 only.

#[path = "../common/mod.rs"]
mod common;
mod sandbox;
