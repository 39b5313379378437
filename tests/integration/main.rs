//! The integration tests: one crate that drives the real `talm` binary, and the library, against
//! simulated Talos nodes on loopback. One module per subject; `common` holds the builders.

mod common;

mod apply;
mod config_generate;
mod config_patch;
mod config_schema;
mod dashboard;
mod day2;
mod drift;
mod gen_config;
mod guide;
mod init_create;
mod init_crypt;
mod init_update;
mod node_commands;
mod node_faults;
mod playbooks;
mod presets_golden;
mod presets_values;
mod presets_values_links;
mod repl;
mod secrets_bundle;
mod sim_lifecycle;
mod sim_node;
mod stdlib_links;
mod stdlib_net;
mod talosconfig;
mod template;
mod trust;
