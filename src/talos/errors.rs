//! Errors from talking to a node, turned into messages that say which node, which call and what
//! to do: unreachable, certificate mismatches, missing roles, timeouts, cut streams.

use std::error::Error as StdError;
use std::time::Duration;

use tonic::{Code, Status};

use crate::error::hinted;

/// Where a failure happened: the node (as the user named it) and the call.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    pub node: &'a str,
    pub call: &'a str,
    pub insecure: bool,
    /// No call has succeeded on this authenticated connection yet: a connection closed now is
    /// most likely the node rejecting the client certificate (TLS 1.3 reports that late).
    pub fresh: bool,
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

const UNREACHABLE_HINT: &str = "check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment";
const REGEN_HINT: &str = "the talosconfig must come from this cluster's secrets: regenerate it with `talm talosconfig`, or pick another with --talosconfig/--context";

/// Recognises transport-level failures by their text; `None` when the text is not one of them.
fn transport(site: Site, text: &str) -> Option<anyhow::Error> {
    let lower = text.to_ascii_lowercase();
    let node = site.node;
    let call = site.call;
    let e = |what: String, hint: &str| Some(hinted(format!("node {node}: {call}: {what}"), hint));
    if lower.contains("connection refused") {
        return e("connection refused".into(), UNREACHABLE_HINT);
    }
    if lower.contains("it is in maintenance mode") {
        return e(
            "the node is in maintenance mode (it has no config yet)".into(),
            "use -i/--insecure for maintenance nodes (template, apply); calls such as bootstrap and kubeconfig need the node configured first: `talm apply -f nodes/<node>.yaml -i`",
        );
    }
    if lower.contains("unknownissuer")
        || lower.contains("unknown issuer")
        || lower.contains("badsignature")
    {
        return e(
            "the node's certificate is not signed by the talosconfig's CA".into(),
            "the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context",
        );
    }
    if lower.contains("notvalidforname") || lower.contains("not valid for name") {
        return e(
            "the node's certificate does not list this address".into(),
            "connect through an address among the node's IPs or machine.certSANs",
        );
    }
    if lower.contains("certificaterequired")
        || lower.contains("certificate required")
        || lower.contains("not in maintenance mode")
    {
        return e(
            "the node asks for a client certificate: it is not in maintenance mode".into(),
            "drop -i/--insecure so talm authenticates with the talosconfig",
        );
    }
    if lower.contains("badcertificate")
        || lower.contains("certificateexpired")
        || lower.contains("unknownca")
        || lower.contains("unsupportedcertificate")
        || lower.contains("certificateunknown")
        || lower.contains("decrypterror")
        || (!site.insecure && lower.contains("handshakefailure"))
    {
        return e(
            "the node rejected the client certificate".into(),
            REGEN_HINT,
        );
    }
    if lower.contains("deadline has elapsed")
        || lower.contains("timed out")
        || lower.contains("timeout expired")
    {
        return e(
            "no answer in time".into(),
            "the node is slow or unreachable; raise --call-timeout, or check the network",
        );
    }
    if lower.contains("connection reset")
        || lower.contains("broken pipe")
        || lower.contains("stream closed")
        || lower.contains("stream no longer needed")
        || lower.contains("protocol error")
        || lower.contains("error reading a body")
        || lower.contains("connection closed")
        || lower.contains("unexpected end of file")
        || lower.contains("unexpectedeof")
        || lower.contains("goaway")
    {
        if site.fresh && !site.insecure {
            return e(
                "the node closed the connection right after the TLS handshake: it most likely rejected the client certificate (expired, from another cluster's CA, or not for client auth only)".into(),
                REGEN_HINT,
            );
        }
        return e(
            format!("the connection was cut ({})", first_line(text)),
            "the node may be rebooting or the network dropped; retry once it answers again",
        );
    }
    if lower.contains("no route to host")
        || lower.contains("network is unreachable")
        || lower.contains("host is down")
    {
        return e("the node is unreachable".into(), UNREACHABLE_HINT);
    }
    if lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake") {
        return e(
            format!("TLS handshake failed: {}", first_line(text)),
            REGEN_HINT,
        );
    }
    None
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// A failed connection attempt.
pub fn connect(site: Site, err: &(dyn StdError + 'static)) -> anyhow::Error {
    let text = chain(err);
    transport(site, &text).unwrap_or_else(|| {
        hinted(
            format!("node {}: {}: cannot connect: {text}", site.node, site.call),
            UNREACHABLE_HINT,
        )
    })
}

/// A call that ran past its deadline.
pub fn timeout(site: Site, after: Duration) -> anyhow::Error {
    hinted(
        format!(
            "node {}: {}: no answer within {}",
            site.node,
            site.call,
            crate::talos::duration_text(after)
        ),
        "the node is slow or unreachable; raise --call-timeout, or check the network",
    )
}

/// Whether a status is the client's own deadline firing.
pub fn is_deadline(st: &Status) -> bool {
    let text = match st.source() {
        Some(src) => format!("{}: {}", st.message(), chain(src)),
        None => st.message().to_string(),
    }
    .to_ascii_lowercase();
    st.code() == Code::DeadlineExceeded
        || text.contains("timeout expired")
        || text.contains("deadline has elapsed")
}

/// A gRPC status from a call.
pub fn status(site: Site, st: &Status) -> anyhow::Error {
    let node = site.node;
    let call = site.call;
    let msg = st.message();
    match st.code() {
        Code::PermissionDenied => {
            let hint = if site.insecure {
                "the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)"
            } else {
                "the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`"
            };
            hinted(format!("node {node}: {call}: {msg}"), hint)
        }
        Code::InvalidArgument if msg.contains("unknown keys found during decoding") => hinted(
            format!("node {node}: {call}: {msg}"),
            "the maintenance Talos parser on the node didn't recognize a field talm injected. this usually means templateOptions.talosVersion / --talos-version is set to a contract newer than the running Talos. reboot the node into a maintenance image matching the configured contract, or lower templateOptions.talosVersion / --talos-version to match what's running.",
        ),
        Code::DeadlineExceeded => hinted(
            format!("node {node}: {call}: no answer in time ({msg})"),
            "the node is slow or unreachable; raise --call-timeout, or check the network",
        ),
        Code::Unavailable | Code::Unknown | Code::Internal | Code::Cancelled => {
            let text = match st.source() {
                Some(src) => format!("{msg}: {}", chain(src)),
                None => msg.to_string(),
            };
            transport(site, &text).unwrap_or_else(|| {
                crate::error::plain(format!("node {node}: {call}: {}", describe(st)))
            })
        }
        _ => crate::error::plain(format!("node {node}: {call}: {}", describe(st))),
    }
}

/// `rpc error: code = X desc = msg`, the way Talos and talosctl print statuses.
pub fn describe(st: &Status) -> String {
    format!(
        "rpc error: code = {} desc = {}",
        code_name(st.code()),
        st.message()
    )
}

/// Go's names of gRPC codes.
pub fn code_name(code: Code) -> &'static str {
    match code {
        Code::Ok => "OK",
        Code::Cancelled => "Canceled",
        Code::Unknown => "Unknown",
        Code::InvalidArgument => "InvalidArgument",
        Code::DeadlineExceeded => "DeadlineExceeded",
        Code::NotFound => "NotFound",
        Code::AlreadyExists => "AlreadyExists",
        Code::PermissionDenied => "PermissionDenied",
        Code::ResourceExhausted => "ResourceExhausted",
        Code::FailedPrecondition => "FailedPrecondition",
        Code::Aborted => "Aborted",
        Code::OutOfRange => "OutOfRange",
        Code::Unimplemented => "Unimplemented",
        Code::Internal => "Internal",
        Code::Unavailable => "Unavailable",
        Code::DataLoss => "DataLoss",
        Code::Unauthenticated => "Unauthenticated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site() -> Site<'static> {
        Site {
            node: "10.0.0.1",
            call: "Version",
            insecure: false,
            fresh: false,
        }
    }

    #[test]
    fn names_node_call_and_cause() {
        let e = status(site(), &Status::permission_denied("not authorized"));
        let text = crate::error::render(&e);
        assert!(
            text.contains("node 10.0.0.1: Version: not authorized"),
            "{text}"
        );
        assert!(text.contains("hint: "), "{text}");
        let e = status(
            site(),
            &Status::already_exists("etcd data directory is not empty"),
        );
        assert_eq!(
            e.to_string(),
            "node 10.0.0.1: Version: rpc error: code = AlreadyExists desc = etcd data directory is not empty"
        );
        let e = transport(
            site(),
            "tcp connect error: Connection refused (os error 111)",
        )
        .unwrap();
        assert!(e.to_string().ends_with("connection refused"));
        let e = transport(site(), "invalid peer certificate: UnknownIssuer").unwrap();
        assert!(e.to_string().contains("not signed by the talosconfig's CA"));
        let e = transport(site(), "received fatal alert: CertificateRequired").unwrap();
        assert!(e.to_string().contains("not in maintenance mode"));
    }
}
