//! Secrets: the Talos secrets bundle and its PKI, the talosconfig, and age encryption.

pub use talm_wire::{contract, der, pki};

pub mod bundle;
pub mod crypt;
pub mod envelope;
pub mod talosconfig;
pub mod twins;
