//! `talm sim`: starts simulated nodes from `--node` addresses or a config file and serves them
//! in the foreground until interrupted.

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use super::{check_loopback, check_unique, parse_file, NodeSpec, Sim};
use crate::error::hinted;

/// What to serve: `--node` addresses and/or a config file, the port, the reboot delay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub nodes: Vec<String>,
    pub port: u16,
    pub config: Option<String>,
    pub reboot_delay: Duration,
}

/// The node specs the options describe.
pub fn specs(args: &Options) -> Result<Vec<NodeSpec>> {
    let delay = args.reboot_delay;
    let mut out = Vec::new();
    let mut given = Vec::new();
    if let Some(file) = &args.config {
        let text = crate::project::fsutil::read_text(Path::new(file))?;
        out = parse_file(&text, file, args.port, delay)?;
        for (i, spec) in out.iter().enumerate() {
            given.push((spec.addr, format!("{file}: nodes[{i}].address")));
        }
    }
    for (i, n) in args.nodes.iter().enumerate() {
        let ip: IpAddr = n.parse().map_err(|_| {
            hinted(
                format!("--node {n:?} is not an IP address"),
                "give loopback addresses, e.g. --node 127.0.0.11",
            )
        })?;
        check_loopback(ip)?;
        given.push((ip, format!("--node #{}", i + 1)));
        let mut spec = NodeSpec::new(ip, args.port);
        spec.reboot_delay = delay;
        out.push(spec);
    }
    check_unique(&given)?;
    if out.is_empty() {
        return Err(hinted(
            "no nodes to simulate",
            "pass --node 127.0.0.11 (repeatable) or --config FILE",
        ));
    }
    Ok(out)
}

/// Runs the simulator until Ctrl-C (or SIGTERM); returns the exit code.
pub fn run(args: &Options) -> Result<i32> {
    let specs = specs(args)?;
    crate::talos::block_on(async move {
        let sim = Sim::start(specs).await?;
        for n in &sim.nodes {
            eprintln!(
                "simulated Talos {} node at {}:{} (maintenance mode, {} disk(s), {} link(s))",
                n.spec.version,
                n.spec.addr,
                n.spec.port,
                n.spec.hardware.disks.len(),
                n.spec.hardware.links.len()
            );
        }
        eprintln!("serving until interrupted (Ctrl-C)");
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        sim.stop().await;
        Ok(0)
    })
}
