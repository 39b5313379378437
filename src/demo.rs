//! `talm demo`: the whole bring-up guide against three simulated nodes started in this process
//! (127.0.0.11–13, port 50000), run by the bundled playbook `scripts/bringup.rhai`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Map};

use crate::error::hinted;
use crate::sim::{NodeSpec, Sim};

/// The simulated control planes of the demo.
pub const NODES: [&str; 3] = ["127.0.0.11", "127.0.0.12", "127.0.0.13"];

/// Runs the demo into `dir` (a fresh temporary folder when `None`); returns the exit code.
pub fn run(dir: Option<&str>) -> Result<i32> {
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
    std::fs::create_dir_all(&root)?;
    let specs: Vec<NodeSpec> = NODES
        .iter()
        .map(|ip| {
            // Cannot fail: the demo addresses are IPv4 literals in this file.
            let mut s = NodeSpec::new(ip.parse().expect("loopback literal"), 50000);
            s.reboot_delay = Duration::from_millis(500);
            s
        })
        .collect();
    let sim = crate::talos::block_on(Sim::start(specs)).map_err(|e| {
        hinted(
            format!("cannot start the simulated nodes: {e:#}"),
            "another process (a `talm sim`?) may hold 127.0.0.11–13 port 50000; stop it and retry",
        )
    })?;
    eprintln!(
        "talm demo: 3 simulated Talos {} nodes in maintenance mode at {}",
        crate::sim::node::DEFAULT_VERSION,
        NODES.join(", ")
    );
    let session = crate::runtime::Session::default();
    session.use_project(root.clone());
    let mut args = Map::new();
    args.insert("root".into(), root.display().to_string().into());
    let nodes: Array = NODES.iter().map(|n| Dynamic::from(n.to_string())).collect();
    args.insert("nodes".into(), nodes.into());
    args.insert("args".into(), Array::new().into());
    let outcome = crate::runtime::run_bundled("bringup", args, &session);
    crate::talos::block_on(sim.stop());
    let _ = outcome?;
    crate::output::write(format!("{}\n", PathBuf::from(&root).display()).as_bytes())?;
    Ok(0)
}
