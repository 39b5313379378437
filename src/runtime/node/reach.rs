//! How a script's nodes are reached: the credentials (a talosconfig context with its client
//! certificate, or maintenance mode with optional certificate pins), the endpoints (given, from
//! node files' modelines, or the context's) and the deadline, for `node(addr)` and
//! `talos::targets`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic};

use super::Node;
use crate::error::hinted;
use crate::runtime::node::opts::{NodeOpts, TargetsOpts};
use crate::runtime::session::Session;
use crate::talos::client;
use crate::talos::creds::{self, Auth};

fn auth(
    session: &Session,
    talosconfig: &str,
    context: &str,
    insecure: bool,
    skip_verify: bool,
    pins: &[String],
) -> Result<(Auth, Option<creds::Context>)> {
    if insecure {
        let pins = talm_wire::fingerprint::parse_all(pins)?;
        return Ok((
            if pins.is_empty() {
                Auth::Insecure
            } else {
                Auth::Pinned(pins)
            },
            None,
        ));
    }
    let d = session.settings();
    let skip_verify = skip_verify || d.skip_verify;
    let path = match talosconfig {
        p if !p.is_empty() => PathBuf::from(p),
        _ if d.talosconfig.as_os_str().is_empty() => PathBuf::from("talosconfig"),
        _ => d.talosconfig.clone(),
    };
    let context = match context {
        c if !c.is_empty() => c.to_string(),
        _ => d.context.clone(),
    };
    let ctx = creds::load_context(&path, &context)?;
    let auth = if skip_verify {
        ctx.auth.clone().unverified()
    } else {
        ctx.auth.clone()
    };
    Ok((auth, Some(ctx)))
}

/// The endpoints of the session's talosconfig context (`--talosconfig`, `--context`), none when
/// there is no talosconfig: what a render records in a modeline when neither `-e` nor the node
/// file names any.
pub(super) fn context_endpoints(session: &Session) -> Result<Vec<String>> {
    let d = session.settings();
    let path = match &d.talosconfig {
        p if p.as_os_str().is_empty() => PathBuf::from("talosconfig"),
        p => p.clone(),
    };
    let file = path.display().to_string();
    match std::fs::read_to_string(&path) {
        Ok(text) => creds::context_endpoints(&text, &file, &d.context),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(hinted(
            format!("failed to read talosconfig {file}: {e}"),
            "pass the endpoints with -e, or fix the file's permissions",
        )),
    }
}

/// A node reached through `endpoints` (tried in order; at least one).
fn make(name: &str, endpoints: Vec<String>, insecure: bool, auth: Auth, timeout: Duration) -> Node {
    let direct = endpoints.len() == 1 && client::host(&endpoints[0]) == name;
    let target = (!insecure && !direct).then(|| name.to_string());
    Node {
        name: name.to_string(),
        endpoints,
        target,
        opts: client::Options { auth, timeout },
        conn: Arc::new(Mutex::new(None)),
    }
}

/// `node(addr, #{insecure, endpoint, talosconfig, context, timeout})`.
pub(super) fn node_with(session: &Session, addr: &str, o: &NodeOpts) -> Result<Node> {
    crate::progress::dialled(addr);
    let (auth, _) = auth(
        session,
        &o.talosconfig,
        &o.context,
        o.insecure,
        o.skip_verify,
        &[],
    )?;
    let endpoints = match (&o.endpoint, &o.endpoints) {
        _ if o.insecure => vec![addr.to_string()],
        (e, _) if !e.is_empty() => vec![e.clone()],
        (_, list) if !list.is_empty() => list.clone(),
        _ => vec![addr.to_string()],
    };
    Ok(make(
        addr,
        endpoints,
        o.insecure,
        auth,
        session.timeout(o.timeout),
    ))
}

/// The nodes a command acts on: `nodes` (else the talosconfig context's), each reached through
/// `endpoints` (else the context's), the first that answers, or directly in maintenance mode.
pub(crate) fn targets(session: &Session, o: &TargetsOpts) -> Result<Array> {
    let insecure = o.insecure;
    let (auth, ctx) = auth(
        session,
        &o.talosconfig,
        &o.context,
        insecure,
        false,
        &o.cert_fingerprints,
    )?;
    let mut nodes = o.nodes.clone();
    let mut endpoints = o.endpoints.clone();
    let (nodes_cli, endpoints_cli) = (!nodes.is_empty(), !endpoints.is_empty());
    for f in crate::runtime::local::project::expand_files(&o.files)? {
        let text = crate::project::fsutil::read_text(std::path::Path::new(&f))
            .map_err(|e| anyhow::anyhow!("error opening config file: {e}"))?;
        let nf = crate::project::modeline::find(&text, &f)?;
        if !nodes_cli {
            nodes.extend(nf.modeline.nodes);
        }
        if !endpoints_cli {
            endpoints.extend(nf.modeline.endpoints);
        }
    }
    if let Some(ctx) = &ctx {
        if nodes.is_empty() {
            nodes = ctx.nodes.clone();
        }
        if endpoints.is_empty() {
            endpoints = ctx.endpoints.clone();
        }
    }
    if nodes.is_empty() {
        return Err(hinted(
            "nodes are not set for the command",
            "use --nodes, a node file's modeline (-f), or set nodes in the talosconfig context",
        ));
    }
    crate::progress::dialled(&nodes[0]);
    let t = session.timeout(o.timeout);
    Ok(nodes
        .iter()
        .map(|n| {
            let eps = if insecure || endpoints.is_empty() {
                vec![n.clone()]
            } else {
                endpoints.clone()
            };
            Dynamic::from(make(n, eps, insecure, auth.clone(), t))
        })
        .collect())
}
