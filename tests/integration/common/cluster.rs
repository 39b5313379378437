//! A bootstrapped cluster for tests: control planes and workers configured from a generic
//! project's node files (`nodes/cpN.yaml`, `nodes/wN.yaml`, rendered against each node),
//! etcd bootstrapped on the first control plane and joined by the others.

use std::time::Duration;

use super::sim::{template_node, Nodes};
use super::Dir;

/// Waits until `ok` holds (10 s at most).
pub fn until(what: &str, ok: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The node file of the `i`-th (from 1) control plane or worker.
pub fn cp_file(i: usize) -> String {
    format!("nodes/cp{i}.yaml")
}

pub fn worker_file(i: usize) -> String {
    format!("nodes/w{i}.yaml")
}

/// A generic project whose control planes `cps` and workers `workers` are configured from
/// `nodes/cpN.yaml` and `nodes/wN.yaml`, with etcd bootstrapped on the first control plane and
/// running on every one.
pub fn cluster<S: AsRef<str>>(nodes: &Nodes, cps: &[S], workers: &[S]) -> Dir {
    let d = Dir::project("generic");
    let install = |file: &str, ip: &str| {
        let boots = nodes.boots(ip);
        d.talm(["apply", "-f", file, "-i"]).ok();
        nodes.wait_reboot(ip, boots);
    };
    for (i, ip) in cps.iter().enumerate() {
        let file = cp_file(i + 1);
        d.write(&file, &template_node(&d, ip.as_ref()));
        install(&file, ip.as_ref());
    }
    for (i, ip) in workers.iter().enumerate() {
        let ip = ip.as_ref();
        let out = d
            .talm([
                "template",
                "-e",
                ip,
                "--nodes",
                ip,
                "-t",
                "templates/worker.yaml",
                "-i",
            ])
            .ok()
            .stdout;
        let file = worker_file(i + 1);
        d.write(&file, &out);
        install(&file, ip);
    }
    d.talm(["bootstrap", "-f", &cp_file(1)]).ok();
    until("every control plane runs etcd", || {
        cps.iter()
            .all(|ip| nodes.node(ip.as_ref()).state().etcd.is_some())
    });
    d
}
