//! Secrets: the Talos secrets bundle and its PKI, the talosconfig, and age encryption.

pub mod bundle;
pub mod contract;
pub mod crypt;
pub mod der;
pub mod envelope;
pub mod pki;
pub mod talosconfig;
pub mod twins;
