//! Talos's formats that talm's client and simulator share, read by both and reading neither:
//! the generated Talos API (`proto/`), node facts, etcd's bbolt database and snapshots, the
//! archives nodes stream (kubeconfig, Copy, support zips), cgroups, version contracts, the
//! resource types and namespaces a node registers, and the keys and certificates in the forms
//! Talos writes them.

pub mod api;
pub mod archive;
pub mod bbolt;
pub mod cgroups;
pub mod config;
pub mod contract;
pub mod der;
pub mod etcd_db;
pub mod extract;
pub mod facts;
pub mod fingerprint;
pub mod k8s;
pub mod pki;
pub mod proto;
pub mod registry;
pub mod snapshot;
pub mod talosconfig;
pub mod version;
pub mod zip;
