//! Looking at nodes (one module per subject below): the bundled inspection scripts (containers, stats, processes, memory,
//! mounts, netstat, read, list, copy, usage, time, cgroups, service, image list) run through a
//! playbook with their `ARGS`, against a simulated control plane and worker over real mTLS
//! (every node reached through the first as its endpoint, as apid proxies), with output checked
//! as talosctl prints it; and the simulator's answers to those calls (roles, maintenance
//! refusals, in-band errors of a node that is down) through the client.

use talm::config::generate::MachineType;
use talm::proto::machine;

use crate::common::sim::{admin, config, Nodes};
use crate::common::Dir;

/// A running control plane (bootstrapped) and worker of the project's cluster.
pub fn cluster(cp: &str, worker: &str) -> (Nodes, Dir) {
    let nodes = Nodes::start(&[cp, worker], |_| {});
    nodes.install_control_plane(cp);
    let c = nodes.connect(cp, admin()).unwrap();
    talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap();
    nodes.install(worker, &config(MachineType::Worker, Some("/dev/nvme0n1")));
    (nodes, Dir::project("generic"))
}

/// Runs bundled script `name` as its command would: `ARGS` holds the node flags (`nodes`, the
/// first of them as the endpoint) and `extra` (Rhai map entries for the command's flags).
pub fn play(d: &Dir, name: &str, nodes: &[&str], extra: &str) -> crate::common::Run {
    let script = std::fs::read_to_string(format!(
        "{}/scripts/{name}.rhai",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let list: Vec<String> = nodes.iter().map(|n| format!("{n:?}")).collect();
    let args = format!(
        "let ARGS = #{{ nodes: [{}], endpoints: [{:?}], files: [], insecure: false, {extra} }};\n",
        list.join(", "),
        nodes[0]
    );
    d.write(&format!("{name}.rhai"), &format!("{args}{script}"));
    d.talm(["run", &format!("{name}.rhai")])
}

/// The lines of a table, each split into its whitespace-separated words.
pub fn words(s: &str) -> Vec<Vec<&str>> {
    s.lines().map(|l| l.split_whitespace().collect()).collect()
}

mod access;
mod cli;
mod dependencies;
mod files;
mod tables;
