//! Talos machine config documents as Talos reads and writes them: the field knowledge of each
//! document kind (from Talos's JSON schemas), the strict decoder and the encoder, shared by the
//! patcher and the simulator that accepts configs as a node does.

pub mod decode;
pub mod encode;
pub mod schema;
