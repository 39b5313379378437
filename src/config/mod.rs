//! Talos machine config documents: base generation per version contract, schema-derived field
//! knowledge, the Talos encoder and the config patcher.

pub mod assemble;
pub mod declared;
pub mod decode;
pub mod drift;
pub mod encode;
pub mod generate;
mod jsonpatch;
mod merge;
pub mod nodebody;
pub mod patch;
pub mod schema;
