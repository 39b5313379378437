//! The integration tests: one crate that drives the real `talm` binary, and the library, against
//! simulated Talos nodes on loopback. One module per subject; `common` holds the builders.
//!
//! Every address a test listens on or dials comes from `common::net`, so tests never collide
//! however they are scheduled. Fixed addresses remain only where they are written into files and
//! never dialled (offline renders, generated talosconfigs, golden fixtures); `talm demo` is
//! given its nodes' addresses with `--nodes`.

/// The tests that call the library run on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

mod common;

mod apply;
mod change_nodes;
mod config_generate;
mod config_patch;
mod config_schema;
mod dashboard;
mod dashboard_resources;
mod day2;
mod day2_gaps;
mod debug;
mod drift;
mod error_texts;
mod fleet;
mod follow;
mod gen_config;
mod guide;
mod health_etcd;
mod image_bundles;
mod init_create;
mod init_crypt;
mod init_update;
mod inspect;
mod kubeconfig_fetch;
mod kubernetes;
mod local_writes;
mod migrate;
mod node_commands;
mod node_faults;
mod output_shapes;
mod pcap;
mod playbooks;
mod presets_golden;
mod presets_values;
mod presets_values_links;
mod progress;
mod readme;
mod refusals;
mod repl;
mod rotate;
mod rotate_resume;
mod secrets_bundle;
mod sim_command;
mod sim_content;
mod sim_fidelity;
mod sim_lifecycle;
mod sim_logs;
mod sim_node;
mod sim_registry;
mod sim_resources;
mod sim_scale;
mod stdlib_links;
mod stdlib_net;
mod stream_limits;
mod support;
mod talk;
mod talosconfig;
mod template;
mod trust;
mod upgrade_apply;
mod upgrade_lifecycle;
