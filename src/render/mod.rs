//! Rendering: node facts and their lookup, and the Tera environment that turns a project's
//! templates plus values and facts into Talos config patches.

pub mod cache;
pub mod context;
pub mod engine;
pub mod facts;
pub mod gate;
pub mod pipeline;
pub mod seal;
pub mod verify;
