//! `talm demo`: the whole bring-up guide against simulated nodes started in this process (port
//! 50000 of the loopback addresses `--nodes` gives; 127.0.0.11–13 by default), run by the
//! bundled playbook `scripts/bringup.rhai`.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Map};

use crate::error::hinted;
use crate::sim::{NodeSpec, Sim};

/// The port every simulated node listens on.
const PORT: u16 = 50000;

/// The nodes' addresses from `--nodes`: each a loopback address, none twice.
fn addresses(given: &[String]) -> Result<Vec<IpAddr>> {
    let example = "e.g. talm demo --nodes 127.0.0.21,127.0.0.22,127.0.0.23";
    if given.is_empty() {
        return Err(hinted(
            "talm demo: --nodes names no address",
            format!("give one or more loopback addresses, {example}"),
        ));
    }
    let mut out = Vec::with_capacity(given.len());
    let mut named = Vec::with_capacity(given.len());
    for (i, text) in given.iter().enumerate() {
        let addr: IpAddr = text.trim().parse().map_err(|_| {
            hinted(
                format!("talm demo: --nodes {text:?} is not an IP address"),
                format!("give loopback addresses separated by commas, {example}"),
            )
        })?;
        crate::sim::check_loopback(addr).map_err(|_| {
            hinted(
                format!("talm demo: --nodes {addr} is not a loopback address"),
                format!("the demo's nodes listen on 127.0.0.0/8 (or ::1) only, {example}"),
            )
        })?;
        named.push((addr, format!("--nodes address #{}", i + 1)));
        out.push(addr);
    }
    crate::sim::check_unique(&named)?;
    Ok(out)
}

/// Runs the demo into `dir` (a fresh temporary folder when `None`) on simulated nodes at
/// `nodes`, its bring-up playbook running command lines through `runner`; returns the exit code.
pub fn run(dir: Option<&str>, nodes: &[String], runner: crate::runtime::Runner) -> Result<i32> {
    let addrs = addresses(nodes)?;
    let root = match dir {
        Some(d) => crate::project::root::absolute(std::path::Path::new(d))?,
        None => {
            let stamp = time::OffsetDateTime::now_utc().unix_timestamp();
            std::env::temp_dir().join(format!("talm-demo-{stamp}-{}", std::process::id()))
        }
    };
    if root.exists() && std::fs::read_dir(&root)?.next().is_some() {
        return Err(hinted(
            format!("{} is not empty", root.display()),
            "give the demo a new or empty folder with --dir",
        ));
    }
    let specs: Vec<NodeSpec> = addrs
        .iter()
        .map(|ip| {
            let mut s = NodeSpec::new(*ip, PORT);
            s.reboot_delay = Duration::from_millis(500);
            s
        })
        .collect();
    let shown: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
    let sim = crate::talos::block_on(Sim::start(specs)).map_err(|e| {
        hinted(
            format!("talm demo: cannot start the simulated nodes: {e:#}"),
            format!("another process (a `talm sim`?) may hold port {PORT} there: stop it, or give the demo free loopback addresses with --nodes (e.g. --nodes 127.0.0.21,127.0.0.22,127.0.0.23)"),
        )
    })?;
    // Made once the nodes run: a demo that cannot start leaves no folder behind.
    if let Err(e) = std::fs::create_dir_all(&root) {
        crate::talos::block_on(sim.stop());
        return Err(e.into());
    }
    eprintln!(
        "talm demo: {} simulated Talos {} nodes in maintenance mode at {}",
        addrs.len(),
        crate::sim::node::DEFAULT_VERSION,
        shown.join(", ")
    );
    let session = crate::runtime::Session::new(crate::runtime::Settings {
        runner,
        ..Default::default()
    });
    session.use_project(root.clone());
    let mut args = Map::new();
    args.insert("root".into(), root.display().to_string().into());
    let nodes: Array = shown.into_iter().map(Dynamic::from).collect();
    args.insert("nodes".into(), nodes.into());
    args.insert("args".into(), Array::new().into());
    let outcome = crate::runtime::run_bundled("bringup", args, &session);
    crate::talos::block_on(sim.stop());
    let _ = outcome?;
    crate::output::write(format!("{}\n", PathBuf::from(&root).display()).as_bytes())?;
    Ok(0)
}
