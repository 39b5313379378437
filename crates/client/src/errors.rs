//! Errors from talking to a node: each carries a `Kind` that code matches on, and a message that
//! says which node, which call and what to do. Statuses the node sent are named here; transport
//! failures from the connection's record in `diagnose`.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use tonic::{Code, Status};

pub use talm_base::error::node::{kind, named_node, Go, Kind, NodeError, NotTalos};
pub use talm_wire::api::{code_name, describe};

/// `error` reported about `node`: `NODE: error`, or the error alone when it names the node
/// itself (a node failure's `node X: ...`), so the node is said once.
pub fn about(node: &str, named: Option<&str>, error: &str) -> String {
    if named == Some(node) {
        error.to_string()
    } else {
        format!("{node}: {error}")
    }
}

/// Where a failure happened: the node (as the user named it), the endpoint dialled, the call
/// and the gRPC service it belongs to.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    /// How messages name the node: `node`, or `node (via endpoint)` when proxied.
    pub node: &'a str,
    /// The node as the user named it (what [`NodeError::node`] keeps).
    pub named: &'a str,
    pub endpoint: &'a str,
    pub call: &'a str,
    pub service: &'static str,
    pub insecure: bool,
}

/// The call name of setting up a connection.
pub const CONNECT: &str = "connect";
/// The Talos machine service.
pub const MACHINE: &str = "machine.MachineService";
/// The COSI resource service.
pub const STATE: &str = "cosi.resource.State";

impl Site<'_> {
    pub(super) fn error(
        &self,
        kind: Kind,
        what: impl fmt::Display,
        hint: impl Into<String>,
    ) -> anyhow::Error {
        NodeError {
            kind,
            node: self.named.to_string(),
            message: format!("node {}: {}: {what}", self.node, self.call),
            said: what.to_string(),
            hints: vec![hint.into()],
            go: None,
        }
        .into()
    }

    pub(super) fn plain(&self, kind: Kind, what: impl fmt::Display) -> anyhow::Error {
        NodeError {
            kind,
            node: self.named.to_string(),
            message: format!("node {}: {}: {what}", self.node, self.call),
            said: what.to_string(),
            hints: Vec::new(),
            go: None,
        }
        .into()
    }

    pub(super) fn not_talos(&self, why: NotTalos, what: impl fmt::Display) -> anyhow::Error {
        NodeError {
            kind: Kind::NotTalos(why),
            node: self.endpoint.to_string(),
            message: format!("node {} is not a Talos API: {what}", self.endpoint),
            said: format!("it is not a Talos API: {what}"),
            hints: vec![NOT_TALOS_HINT.into()],
            go: None,
        }
        .into()
    }

    /// Every Talos answers this call (maintenance mode before 1.13 says so in its status).
    fn universal(&self) -> bool {
        self.service == MACHINE && self.call == "Version"
    }
}

/// The whole source chain of an error as one line of text.
pub fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut out = err.to_string();
    let mut cur = err.source();
    while let Some(e) = cur {
        let s = e.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cur = e.source();
    }
    out
}

pub(super) const UNREACHABLE_HINT: &str = "check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment";
pub(super) const REGEN_HINT: &str = "the talosconfig must come from this cluster's secrets: regenerate it with `talm talosconfig`, or pick another with --talosconfig/--context";
const NOT_TALOS_HINT: &str = "check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node";
pub(super) const RETRY_HINT: &str =
    "the node may be rebooting or the network dropped; retry once it answers again";
const SLOW_HINT: &str =
    "the node is slow or unreachable; raise --call-timeout, or check the network";

/// Below this a deadline is too short for any connection and call, whatever the node does.
const TOO_SHORT: Duration = Duration::from_millis(100);

/// A call that ran past its deadline.
pub fn timeout(site: Site, after: Duration) -> anyhow::Error {
    let text = talm_base::duration::text(after);
    if after < TOO_SHORT {
        return site.error(
            Kind::Timeout,
            format!("no answer within {text} (--call-timeout)"),
            format!("a deadline of {text} is shorter than any connection takes: give --call-timeout e.g. 30s (the default is 1m)"),
        );
    }
    site.error(Kind::Timeout, format!("no answer within {text}"), SLOW_HINT)
}

/// Whether an error (or one it wraps) is the client's own deadline firing.
pub fn elapsed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.is::<tonic::TimeoutExpired>() || e.is::<tokio::time::error::Elapsed>() {
            return true;
        }
        cur = e.source();
    }
    false
}

/// Whether a status is the client's own deadline firing.
pub fn is_deadline(st: &Status) -> bool {
    st.source().is_some_and(elapsed) || st.code() == Code::DeadlineExceeded
}

/// `err` (a node failure) with talosctl's words for it.
pub(super) fn worded(mut err: anyhow::Error, go: Go) -> anyhow::Error {
    if let Some(n) = err.downcast_mut::<NodeError>() {
        n.go = Some(go);
    }
    err
}

/// A status the node itself sent (directly, or in a proxied reply's metadata), with talosctl's
/// words for it: a refusal for the client's role comes from the endpoint's apid before it
/// proxies (the error alone); any other from the node's handler, named by the node.
pub fn answered(site: Site, st: &Status) -> anyhow::Error {
    let go = if st.code() == Code::PermissionDenied {
        Go::Direct(describe(st))
    } else {
        Go::Node {
            node: site.named.to_string(),
            status: describe(st),
        }
    };
    worded(status_error(site, st), go)
}

fn status_error(site: Site, st: &Status) -> anyhow::Error {
    let msg = st.message();
    match st.code() {
        Code::PermissionDenied => {
            let hint = if site.insecure {
                "the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)"
            } else {
                "the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`"
            };
            site.error(Kind::Denied, msg, hint)
        }
        Code::Unimplemented if msg.contains("maintenance mode") => site.error(
            Kind::MaintenanceUnimplemented,
            describe(st),
            "the node is in maintenance mode, where this call is not available: apply a config first (`talm apply -f nodes/<node>.yaml -i`)",
        ),
        Code::Unimplemented
            if msg.is_empty() || msg.starts_with("unknown service") || site.universal() =>
        {
            let said = if msg.is_empty() {
                String::new()
            } else {
                format!(" ({msg})")
            };
            site.not_talos(
                NotTalos::NoService,
                format!(
                    "it answers {}/{} with Unimplemented{said}: it serves gRPC, but not Talos's {}",
                    site.service, site.call, site.service
                ),
            )
        }
        Code::InvalidArgument if msg.contains("unknown keys found during decoding") => site.error(
            Kind::Status(Code::InvalidArgument as i32),
            msg,
            "the maintenance Talos parser on the node didn't recognize a field talm injected. this usually means templateOptions.talosVersion / --talos-version is set to a contract newer than the running Talos. reboot the node into a maintenance image matching the configured contract, or lower templateOptions.talosVersion / --talos-version to match what's running.",
        ),
        Code::DeadlineExceeded => site.error(
            Kind::Timeout,
            format!("no answer in time ({msg})"),
            SLOW_HINT,
        ),
        code => site.plain(Kind::Status(code as i32), describe(st)),
    }
}

/// A call site for unit tests of node errors.
#[cfg(test)]
pub(crate) fn test_site(insecure: bool) -> Site<'static> {
    Site {
        node: "10.0.0.1",
        named: "10.0.0.1",
        endpoint: "10.0.0.1:50000",
        call: "Version",
        service: MACHINE,
        insecure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(insecure: bool) -> Site<'static> {
        test_site(insecure)
    }

    #[test]
    fn statuses_name_node_call_and_cause() {
        let e = answered(site(false), &Status::permission_denied("not authorized"));
        assert_eq!(kind(&e), Some(Kind::Denied));
        let text = talm_base::error::render(&e);
        assert!(
            text.contains("node 10.0.0.1: Version: not authorized"),
            "{text}"
        );
        assert!(text.contains("hint: "), "{text}");
        let e = answered(
            site(false),
            &Status::already_exists("etcd data directory is not empty"),
        );
        assert_eq!(
            e.to_string(),
            "node 10.0.0.1: Version: rpc error: code = AlreadyExists desc = etcd data directory is not empty"
        );
        assert_eq!(kind(&e), Some(Kind::Status(Code::AlreadyExists as i32)));
    }

    #[test]
    fn unimplemented_tells_old_maintenance_talos_from_other_servers() {
        let old = Status::unimplemented("API is not implemented in maintenance mode");
        assert_eq!(
            kind(&answered(site(true), &old)),
            Some(Kind::MaintenanceUnimplemented)
        );
        for st in [
            Status::unimplemented(""),
            Status::unimplemented("unknown service machine.MachineService"),
        ] {
            let e = answered(site(true), &st);
            assert_eq!(kind(&e), Some(Kind::NotTalos(NotTalos::NoService)));
            assert!(e
                .to_string()
                .starts_with("node 10.0.0.1:50000 is not a Talos API"));
        }
        let worker = Site {
            call: "Bootstrap",
            ..site(false)
        };
        let st = Status::unimplemented("bootstrap is only available on control plane nodes");
        assert_eq!(
            kind(&answered(worker, &st)),
            Some(Kind::Status(Code::Unimplemented as i32))
        );
    }
}
