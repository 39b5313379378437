//! `talm sim`: starts simulated nodes from `--node` addresses, `--node-range` ranges or a
//! config file and serves them in the foreground until interrupted; SIGUSR1 powers on the nodes
//! switched off (a shutdown, a reset without `--reboot`).

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::net::range::NodeRange;
use crate::{check_loopback, check_unique, parse_file, NodeSpec, Sim};
use talm_base::error::hinted;

/// What to serve: `--node` addresses, `--node-range` ranges and/or a config file, the port, the
/// reboot delay.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    pub nodes: Vec<String>,
    /// `--node-range FIRST-LAST` or `--node-range CIDR`: one node per address.
    pub ranges: Vec<String>,
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
        let text = talm_base::input::read_text(Path::new(file), talm_base::input::Kind::Text)?;
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
    for text in &args.ranges {
        let range = NodeRange::parse("--node-range", text)?;
        for ip in range.addrs() {
            given.push((IpAddr::V4(ip), format!("--node-range {text}")));
            let mut spec = NodeSpec::new(IpAddr::V4(ip), args.port);
            spec.reboot_delay = delay;
            out.push(spec);
        }
    }
    check_unique(&given)?;
    if out.is_empty() {
        return Err(hinted(
            "no nodes to simulate",
            "pass --node 127.0.0.11 (repeatable), --node-range 127.0.0.11-127.0.0.20, or --config FILE",
        ));
    }
    Ok(out)
}

/// Nodes listed one line each; beyond this many, one summary line.
const LISTED: usize = 20;

/// What the simulator says it serves: a line per node, or a summary for many.
fn started(sim: &Sim) {
    if sim.nodes.len() <= LISTED {
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
        return;
    }
    let (first, last) = (&sim.nodes[0].spec, &sim.nodes[sim.nodes.len() - 1].spec);
    eprintln!(
        "{} simulated Talos nodes from {}:{} to {}:{} (maintenance mode)",
        sim.nodes.len(),
        first.addr,
        first.port,
        last.addr,
        last.port
    );
}

/// Runs the simulator until Ctrl-C (or SIGTERM); SIGUSR1 powers the switched-off nodes back on.
/// Returns the exit code.
pub fn run(args: &Options) -> Result<i32> {
    let specs = specs(args)?;
    crate::net::fdlimit::raise_for(specs.len())?;
    talm_base::rt::block_on(async move {
        let sim = Sim::start(specs).await?;
        started(&sim);
        eprintln!("serving until interrupted (Ctrl-C)");
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate())?;
        let mut power = signal(SignalKind::user_defined1())?;
        let ctrl_c = tokio::signal::ctrl_c();
        tokio::pin!(ctrl_c);
        loop {
            tokio::select! {
                _ = &mut ctrl_c => break,
                _ = term.recv() => break,
                _ = power.recv() => {
                    let on = sim.power_on_all();
                    if on.is_empty() {
                        eprintln!("sim: SIGUSR1: no node is switched off");
                    }
                    for n in on {
                        eprintln!("sim {n}: powered on");
                    }
                }
            }
        }
        sim.stop().await;
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(nodes: &[&str], ranges: &[&str]) -> Options {
        Options {
            nodes: nodes.iter().map(|s| s.to_string()).collect(),
            ranges: ranges.iter().map(|s| s.to_string()).collect(),
            port: 50000,
            ..Options::default()
        }
    }

    #[test]
    fn ranges_start_one_node_per_address_after_the_listed_ones() {
        let specs = specs(&options(
            &["127.0.0.11"],
            &["127.200.0.254-127.200.1.1", "127.201.0.0/30"],
        ))
        .unwrap();
        let addrs: Vec<String> = specs.iter().map(|s| s.addr.to_string()).collect();
        assert_eq!(
            addrs,
            [
                "127.0.0.11",
                "127.200.0.254",
                "127.200.0.255",
                "127.200.1.0",
                "127.200.1.1",
                "127.201.0.0",
                "127.201.0.1",
                "127.201.0.2",
                "127.201.0.3"
            ]
        );
        assert!(specs.iter().all(|s| s.port == 50000));
    }

    #[test]
    fn an_address_given_twice_names_both_origins() {
        let e = specs(&options(&["127.0.0.12"], &["127.0.0.10-127.0.0.20"])).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "127.0.0.12 is given twice: --node #1 and --node-range 127.0.0.10-127.0.0.20"
        );
        let e = specs(&options(&[], &["127.0.0.1-127.0.0.4", "127.0.0.0/30"])).unwrap_err();
        assert!(
            format!("{e:#}").starts_with(
                "127.0.0.1 is given twice: --node-range 127.0.0.1-127.0.0.4 and --node-range 127.0.0.0/30"
            ),
            "{e:#}"
        );
        let e = specs(&options(&[], &["10.1.0.0/24"])).unwrap_err();
        assert!(
            format!("{e:#}")
                .starts_with("--node-range \"10.1.0.0/24\": 10.1.0.0 is not a loopback"),
            "{e:#}"
        );
    }
}
