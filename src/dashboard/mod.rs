//! `talm dashboard`: a terminal UI over one or more Talos nodes, as talosctl's dashboard: the
//! header (hostname, version, uptime, CPUs, RAM, PROCS, CPU and RAM use), the Summary screen
//! (Talos, Kubernetes and network panels over the node's kernel log), the Monitor screen and
//! the Resources screen (the node's COSI resources, type by type), polled live; keys switch
//! node and screen, `q` quits.
//!
//! Parts: `model` (state and how updates and keys change it), `panels` (the Summary's panels
//! from the node's resources), `metrics` (the Monitor's figures and series), `explorer` (the
//! Resources screen's levels and the lists it asks for), `render` (state → buffer, pure;
//! `summary`, `monitor`, `proctable`, `explorer_view` and `yamlview` draw the screens),
//! `input` (keys → commands), `source` (the node pollers), `term` (the terminal loop),
//! `format` (numbers as talosctl writes them) and `svg` (a buffer as a picture, for the
//! README).

pub mod explorer;
mod explorer_view;
pub mod format;
pub mod input;
pub mod metrics;
pub mod model;
mod monitor;
pub mod panels;
mod proctable;
pub mod render;
pub mod source;
mod summary;
pub mod svg;
mod term;
pub mod yamlview;

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use tokio_util::sync::CancellationToken;

use crate::error::hinted;
use crate::talos::client::Client;

pub use model::State;
pub use render::{frame, render};
pub use svg::to_svg;

/// How the dashboard polls.
#[derive(Debug, Clone)]
pub struct Options {
    /// Time between two polls of a node (talosctl's `--update-interval`, default 3s).
    pub interval: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            interval: Duration::from_secs(3),
        }
    }
}

/// The refusal when stdin is not a terminal, as the Go talm words it.
pub fn check_terminal(stdin_is_tty: bool) -> Result<()> {
    if stdin_is_tty {
        return Ok(());
    }
    Err(hinted(
        "talm dashboard requires an interactive terminal; stdin is not a tty",
        "run it from a terminal; to read nodes from a script or a pipe use `talm get`, `talm service` or `talm logs`",
    ))
}

/// Runs the dashboard over `nodes` (each a name for the footer and a connection) until the
/// user quits; returns the exit code (0). Refuses when stdin is not a terminal. Call it from a
/// plain thread, not from inside talm's async runtime: it polls the nodes on that runtime
/// while this thread runs the terminal.
pub fn run(nodes: Vec<(String, Client)>, opts: Options) -> Result<i32> {
    run_with(nodes, opts, std::io::stdin().is_terminal())
}

fn run_with(nodes: Vec<(String, Client)>, opts: Options, stdin_is_tty: bool) -> Result<i32> {
    check_terminal(stdin_is_tty)?;
    if opts.interval.is_zero() {
        return Err(hinted(
            "the dashboard's update interval must be longer than zero",
            "give an interval such as 1s or 3s",
        ));
    }
    if nodes.is_empty() {
        return Err(hinted(
            "the dashboard has no nodes to show",
            "name them with --nodes, or give node files with -f",
        ));
    }
    let (names, clients): (Vec<String>, Vec<Client>) = nodes.into_iter().unzip();
    let mut state = State::new(names);
    let (tx, rx) = std::sync::mpsc::channel();
    let stop = CancellationToken::new();
    let rt = crate::talos::runtime();
    for (i, c) in clients.iter().enumerate() {
        rt.spawn(source::poll_node(
            i,
            c.clone(),
            opts.interval,
            tx.clone(),
            stop.clone(),
        ));
    }
    // The explorer's requests: each answered by a task on the runtime, through the same
    // channel as the polls.
    let fetch = |f: explorer::Fetch| {
        let tx = tx.clone();
        let (node, client) = match &f {
            explorer::Fetch::Types { node } | explorer::Fetch::Resources { node, .. } => {
                let Some(c) = clients.get(*node) else { return };
                (*node, c.clone())
            }
        };
        let stop = stop.clone();
        rt.spawn(async move {
            let update = match f {
                explorer::Fetch::Types { .. } => model::Update::Types {
                    node,
                    result: tokio::select! {
                        _ = stop.cancelled() => return,
                        r = explorer::types(&client) => r,
                    },
                },
                explorer::Fetch::Resources { def, .. } => model::Update::Resources {
                    node,
                    ty: def.ty.clone(),
                    result: tokio::select! {
                        _ = stop.cancelled() => return,
                        r = explorer::rows(&client, &def) => r,
                    },
                },
            };
            let _ = tx.send(update);
        });
    };
    let outcome = term::run(&mut state, &rx, &fetch);
    stop.cancel();
    outcome.map(|()| 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_without_a_terminal() {
        let err = run_with(Vec::new(), Options::default(), false).unwrap_err();
        assert_eq!(
            crate::error::render(&err),
            "Error: talm dashboard requires an interactive terminal; stdin is not a tty\n\
             hint: run it from a terminal; to read nodes from a script or a pipe use `talm get`, `talm service` or `talm logs`\n"
        );
    }

    /// `run` itself looks at the real stdin: under a test harness without a terminal (CI, a
    /// pipe) it must refuse before touching the terminal or any node.
    #[test]
    fn run_refuses_a_non_terminal_stdin() {
        if std::io::stdin().is_terminal() {
            return; // run by hand from a terminal: covered by the test above
        }
        let err = run(Vec::new(), Options::default()).unwrap_err();
        assert!(err.to_string().contains("requires an interactive terminal"));
    }

    #[test]
    fn refuses_no_nodes_and_a_zero_interval() {
        let err = run_with(Vec::new(), Options::default(), true).unwrap_err();
        assert_eq!(err.to_string(), "the dashboard has no nodes to show");
        let zero = Options {
            interval: Duration::ZERO,
        };
        let err = run_with(Vec::new(), zero, true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the dashboard's update interval must be longer than zero"
        );
    }
}
