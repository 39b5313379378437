//! A simulated node's COSI resources: the definitions Talos declares (from `talm_wire`'s
//! registry), the resources built from the node's state (`facts`, `content`), their protobuf specs, the store, queries and watches.

pub mod content;
pub mod facts;
pub mod protospec;
pub mod query;
pub mod store;
pub mod watch;
