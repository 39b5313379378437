//! Talos machine config documents: schema-derived field knowledge, the Talos encoder and the
//! config patcher.

mod decode;
pub mod encode;
mod jsonpatch;
mod merge;
pub mod patch;
pub mod schema;
