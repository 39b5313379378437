//! Talos machine configuration: base generation per version contract.

pub mod generate;
