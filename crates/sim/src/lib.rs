//! Simulated Talos nodes (`talm sim`): each node speaks the Talos gRPC API on its own loopback
//! address, from maintenance mode through configuration, bootstrap, kubeconfig, upgrade,
//! reboot and reset, following the semantics in `talos-api.md`. Usable from tests in-process.

/// This crate's tests run on the binary's heap.
#[cfg(test)]
#[global_allocator]
static HEAP: talm_base::heap::Split = talm_base::heap::Split;

pub mod api;
pub mod cosi;
pub mod etcd;
pub mod kube;
pub mod machined;
pub mod net;
pub mod node;
pub mod serve;
pub mod world;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

pub use node::{Node, NodeSpec};

use talm_base::error::hinted;

/// Running simulated nodes.
pub struct Sim {
    pub nodes: Vec<Arc<Node>>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Sim {
    /// Starts every node on the current runtime and waits until each listens (or, with the
    /// refuse fault, is "up" without a listener).
    pub async fn start(specs: Vec<NodeSpec>) -> Result<Sim> {
        let given: Vec<(IpAddr, String)> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.addr, format!("node #{}", i + 1)))
            .collect();
        check_unique(&given)?;
        let stop = CancellationToken::new();
        let registry: Arc<api::Registry> = Arc::new(RwLock::new(HashMap::new()));
        let mut nodes = Vec::new();
        for spec in specs {
            let node = Arc::new(Node::new(spec, stop.clone()));
            registry
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(node.name(), Arc::clone(&node));
            nodes.push(node);
        }
        for node in &nodes {
            node.set_world(Arc::downgrade(&registry));
        }
        let tasks = nodes
            .iter()
            .map(|n| tokio::spawn(net::server::run(Arc::clone(n), Arc::clone(&registry))))
            .collect();
        let mut tasks: Vec<_> = tasks;
        tasks.push(tokio::spawn(kube::controllers::run(
            Arc::clone(&registry),
            stop.clone(),
        )));
        tasks.push(tokio::spawn(etcd::keep_joining(registry, stop.clone())));
        let sim = Sim { nodes, stop, tasks };
        for n in &sim.nodes {
            if let Err(e) = sim.wait_up(n, Duration::from_secs(10)).await {
                // One node that cannot listen stops them all: name it, whichever was awaited.
                return Err(sim
                    .nodes
                    .iter()
                    .find_map(|n| n.listen_failure())
                    .unwrap_or(e));
            }
        }
        Ok(sim)
    }

    /// Waits until `node` serves (after a boot).
    pub async fn wait_up(&self, node: &Node, timeout: Duration) -> Result<()> {
        let mut rx = node.up.subscribe();
        let up = async {
            tokio::select! {
                r = rx.wait_for(|b| *b > 0) => r.is_ok(),
                _ = node.stop.cancelled() => false,
            }
        };
        match tokio::time::timeout(timeout, up).await {
            Ok(true) => Ok(()),
            _ if node.stop.is_cancelled() => bail!(
                "simulated node {}:{} could not start",
                node.spec.addr,
                node.spec.port
            ),
            _ => bail!(
                "simulated node {}:{} did not come up within {timeout:?}",
                node.spec.addr,
                node.spec.port
            ),
        }
    }

    /// The node at `addr`.
    pub fn node(&self, addr: &str) -> Option<&Arc<Node>> {
        self.nodes.iter().find(|n| n.name() == addr)
    }

    /// Powers every switched-off node back on (`talm sim` on SIGUSR1); their names.
    pub fn power_on_all(&self) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|n| n.is_off())
            .map(|n| {
                n.power_on();
                n.name()
            })
            .collect()
    }

    /// Stops every node and waits for them.
    pub async fn stop(self) {
        self.stop.cancel();
        for t in self.tasks {
            let _ = t.await;
        }
    }
}

/// The `talm sim --config` file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimFile {
    /// How long a rebooting node stays down (Go duration, default 500ms).
    #[serde(default)]
    pub reboot_delay: String,
    #[serde(default)]
    pub port: Option<u16>,
    pub nodes: Vec<NodeEntry>,
}

/// One node of the config file: its address and, optionally, its hardware and faults.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    pub address: IpAddr,
    #[serde(default)]
    pub port: Option<u16>,
    #[serde(default)]
    pub talos_version: Option<String>,
    #[serde(default)]
    pub hardware: Option<node::hardware::Hardware>,
    #[serde(default)]
    pub faults: net::faults::Faults,
}

/// Checks that no address is given twice (a node is known by its address); `given` pairs each
/// address with where it came from, for the message.
pub fn check_unique(given: &[(IpAddr, String)]) -> Result<()> {
    let mut seen: HashMap<IpAddr, &str> = HashMap::with_capacity(given.len());
    for (addr, origin) in given {
        if let Some(first) = seen.insert(*addr, origin) {
            return Err(hinted(
                format!("{addr} is given twice: {first} and {origin}"),
                "each simulated node needs an address of its own: drop one, or give it another loopback address",
            ));
        }
    }
    Ok(())
}

/// Checks that a simulated node binds only to loopback.
pub fn check_loopback(addr: IpAddr) -> Result<()> {
    if !addr.is_loopback() {
        return Err(hinted(
            format!("{addr} is not a loopback address"),
            "simulated nodes listen on 127.0.0.0/8 (or ::1) only, e.g. --node 127.0.0.11",
        ));
    }
    Ok(())
}

/// Node specs from a config file's text (`file` names it in errors).
pub fn parse_file(
    text: &str,
    file: &str,
    default_port: u16,
    reboot_delay: Duration,
) -> Result<Vec<NodeSpec>> {
    let f: SimFile = serde_yaml_ng::from_str(text).map_err(|e| {
        hinted(
            format!("{file}: {e}"),
            "see `talm sim --help` for the format: nodes: [{address: 127.0.0.11, hardware: {disks: [...], links: [...]}, faults: {...}}]",
        )
    })?;
    let delay = if f.reboot_delay.is_empty() {
        reboot_delay
    } else {
        talm_base::duration::flag(
            &format!("{file}: reboot_delay"),
            &f.reboot_delay,
            talm_base::duration::Zero::Allowed,
        )?
    };
    let mut out = Vec::new();
    for (i, n) in f.nodes.into_iter().enumerate() {
        check_loopback(n.address).with_context(|| format!("{file}: nodes[{i}].address"))?;
        n.faults
            .check()
            .with_context(|| format!("{file}: nodes[{i}]"))?;
        let mut spec = NodeSpec::new(n.address, n.port.or(f.port).unwrap_or(default_port));
        spec.reboot_delay = delay;
        if let Some(hw) = n.hardware {
            spec.hardware = hw;
        }
        if let Some(v) = n.talos_version {
            spec.version = v;
        }
        spec.faults = n.faults;
        out.push(spec);
    }
    if out.is_empty() {
        return Err(hinted(
            format!("{file}: no nodes"),
            "list at least one node under `nodes:`",
        ));
    }
    Ok(out)
}
