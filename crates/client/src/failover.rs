//! Several endpoints for one node, as talosctl takes them (`-e a,b`, a context's endpoint list):
//! the first that answers carries the calls; when none does, the error names every endpoint
//! with what went wrong there.

use anyhow::Result;

use super::client::{with_port, Client, Options};
use super::errors::{self, Kind, NodeError};

/// Connects to the first of `endpoints` that answers, in order; `target` is the node the calls
/// are for. A failure that is not the endpoint's (an unusable client certificate) ends the
/// search at once.
pub async fn connect(endpoints: &[String], target: Option<&str>, opts: &Options) -> Result<Client> {
    let mut failures = Vec::new();
    for ep in endpoints {
        match Client::connect(ep, target, opts).await {
            Ok(c) => return Ok(c),
            Err(e) if endpoints.len() > 1 && errors::kind(&e).is_some() => failures.push((ep, e)),
            Err(e) => return Err(e),
        }
    }
    Err(match failures.len() {
        0 => talm_base::error::hinted(
            format!(
                "node {}: no endpoint to connect through",
                target.unwrap_or("?")
            ),
            "give endpoints with -e, in a node file's modeline, or in the talosconfig context",
        ),
        _ => all_failed(target, &failures),
    })
}

/// One error for every endpoint having failed: each named with what it showed.
fn all_failed(target: Option<&str>, failures: &[(&String, anyhow::Error)]) -> anyhow::Error {
    let node = target
        .map(str::to_string)
        .unwrap_or_else(|| super::client::host(failures[0].0));
    let mut parts = Vec::new();
    let mut hints: Vec<String> = Vec::new();
    let mut kinds = Vec::new();
    for (ep, e) in failures {
        let addr = with_port(ep);
        let ne = e.chain().find_map(|c| c.downcast_ref::<NodeError>());
        let what = match ne {
            Some(n) => n
                .message
                .split_once(": connect: ")
                .map(|(_, w)| w.to_string())
                .unwrap_or_else(|| n.message.clone()),
            None => e.to_string(),
        };
        parts.push(format!("{addr}: {what}"));
        if let Some(n) = ne {
            kinds.push(n.kind);
            for h in &n.hints {
                if !hints.contains(h) {
                    hints.push(h.clone());
                }
            }
        }
    }
    let kind = match kinds.first() {
        Some(k) if kinds.iter().all(|x| x == k) => *k,
        _ => Kind::Unreachable,
    };
    hints.push("each endpoint was tried in order; remove the ones that are gone with -e or in the talosconfig context".into());
    let said = format!("no endpoint answered: {}", parts.join("; "));
    NodeError {
        kind,
        node: node.to_string(),
        message: format!("node {node}: {}: {said}", errors::CONNECT),
        said,
        hints,
        go: None,
    }
    .into()
}
