//! Talos machine config documents: base generation per version contract, schema-derived field
//! knowledge, the Talos encoder, the config patcher and secret redaction.

pub use talm_wire::config::{decode, encode, schema};

pub mod assemble;
pub mod declared;
pub mod drift;
pub mod gen_debug;
pub mod generate;
mod jsonpatch;
mod merge;
pub mod nodebody;
pub mod patch;
pub mod preflight;
pub mod redact;
