//! Actions followed the way talosctl's action tracker follows them (`--wait`, the default):
//! `n.reboot`, `n.reset` and `n.shutdown` with `wait`, and the reboot that ends an upgrade.
//! Progress lines go to stderr as `"<node>": <message>`; Ctrl-C ends the wait.

use std::future::Future;
use std::time::Duration;

use anyhow::Result;

use crate::runtime::node::Node;
use crate::talos::block_on;
use crate::talos::client::Client;
use crate::talos::creds::Auth;
use crate::talos::errors::{kind, Kind};
use crate::talos::tracker::{self, Goal};
use talm_base::output;

/// talosctl's default `--timeout` of waiting commands.
pub const WAIT: Duration = Duration::from_secs(30 * 60);

/// How a followed action is followed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Follow {
    pub goal: Goal,
    pub limit: Duration,
    /// On a failure, print the node's kernel log as talosctl's `--debug` does.
    pub debug: bool,
}

impl Follow {
    pub fn new(goal: Goal, limit: Option<Duration>, debug: bool) -> Follow {
        Follow {
            goal,
            limit: limit.unwrap_or(WAIT),
            debug,
        }
    }
}

/// Runs `action` on `n` (it returns the actor ID) and follows it as `how` says.
pub(crate) fn follow<A, AF>(n: &Node, how: Follow, action: A) -> Result<String>
where
    A: FnOnce(Client) -> AF,
    AF: Future<Output = Result<String>>,
{
    let insecure = n.with_auth(Auth::Insecure).direct().dialer();
    // A reset node is back when it answers in maintenance mode (an older Talos answers there
    // with Unimplemented, which is an answer too), at its own address: the endpoint that
    // proxied to it cannot reach it any more.
    let probe = move || {
        let dial = insecure();
        Box::pin(async move {
            match dial.await {
                Ok(c) => match c.version().await {
                    Ok(_) => true,
                    Err(e) => kind(&e) == Some(Kind::MaintenanceUnimplemented),
                },
                Err(_) => false,
            }
        }) as std::pin::Pin<Box<dyn Future<Output = bool> + Send>>
    };
    let maintenance: Option<tracker::Probe<'_>> = match how.goal {
        Goal::ServicesStopped { then_back: true } => Some(&probe),
        _ => None,
    };
    // talosctl's `--debug` reads the kernel log from the start of the wait: what the node said
    // before it went away is kept in case it does not come back.
    let before = if how.debug { kernel_log(n) } else { None };
    let tracked = block_on(crate::sandbox::interrupt::or_interrupted(tracker::track(
        &n.name,
        n.dialer(),
        action,
        how.goal,
        maintenance,
        how.limit,
        &mut tracker::Plain,
    )));
    n.forget();
    if tracked.is_err() && how.debug {
        if let Some(text) = kernel_log(n).or(before) {
            output::err(&format!(
                "console logs for nodes [{}]:",
                tracker::quoted(&n.name)
            ));
            for line in text.lines() {
                output::err(&format!("{}: {line}", n.name));
            }
        }
    }
    tracked
}

/// The node's kernel log as it is now, if the node answers.
fn kernel_log(n: &Node) -> Option<String> {
    let req = crate::proto::machine::DmesgRequest::default();
    let bytes = n.fresh().with(|c| block_on(c.dmesg(req))).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// `wait: true` on a maintenance-mode handle: talosctl's refusal.
pub(crate) fn refuse_insecure(n: &Node) -> Result<()> {
    if n.insecure() {
        return Err(crate::error::hinted(
            "cannot use --wait and --insecure together",
            "a node in maintenance mode cannot be followed; pass --wait=false",
        ));
    }
    Ok(())
}
