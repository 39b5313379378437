//! A failure talking to a node, as data every layer can read: its [`Kind`] (what code matches
//! on), the node it names and what to do. The client makes them from what the node answered.

use std::error::Error as StdError;
use std::fmt;

/// Why a server is not a Talos API, from what it showed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotTalos {
    /// It does not answer TLS.
    NoTls,
    /// It speaks TLS but not HTTP/2 (ALPN).
    NoHttp2,
    /// In maintenance mode: its certificate is not a maintenance node's, and it does not ask
    /// for a client certificate as a configured node does.
    NeitherMode,
    /// Its certificate is not from the talosconfig's CA, and it does not ask for a client
    /// certificate as every configured node does.
    ForeignNoClientAuth,
    /// It answered HTTP that is not gRPC.
    NotGrpc,
    /// It answers gRPC without Talos's services.
    NoService,
}

/// What went wrong talking to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Refused,
    Unreachable,
    Timeout,
    /// An authenticated connection met a node in maintenance mode.
    InMaintenance,
    /// A maintenance-mode (`-i`) connection met a configured node.
    NotMaintenance,
    /// The node's certificate is not signed by the talosconfig's CA.
    ForeignCa,
    /// The node's certificate does not list the address.
    WrongName,
    /// The node's certificate is unusable otherwise.
    BadServerCert,
    /// In maintenance mode: the node's certificate matches none of `--cert-fingerprint`.
    FingerprintMismatch,
    /// The node refused the client certificate.
    ClientCertRejected,
    /// Another TLS handshake failure.
    Handshake,
    NotTalos(NotTalos),
    /// The connection (or the call's stream) was cut after the handshake.
    Cut,
    /// The node refused the call for the client's role or mode.
    Denied,
    /// The node is in maintenance mode, where this call is not implemented.
    MaintenanceUnimplemented,
    /// Another status the node answered with (its gRPC status code).
    Status(i32),
}

impl Kind {
    /// The kind's name as scripts see it (`error_kind(e)`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Refused => "refused",
            Kind::Unreachable => "unreachable",
            Kind::Timeout => "timeout",
            Kind::InMaintenance => "in-maintenance",
            Kind::NotMaintenance => "not-maintenance",
            Kind::ForeignCa => "foreign-ca",
            Kind::WrongName => "wrong-name",
            Kind::BadServerCert => "bad-server-cert",
            Kind::FingerprintMismatch => "fingerprint-mismatch",
            Kind::ClientCertRejected => "client-cert-rejected",
            Kind::Handshake => "handshake",
            Kind::NotTalos(_) => "not-talos",
            Kind::Cut => "cut",
            Kind::Denied => "denied",
            Kind::MaintenanceUnimplemented => "maintenance-unimplemented",
            Kind::Status(_) => "status",
        }
    }
}

/// A failure talking to a node: its kind, the message (which names the node) and what to do.
#[derive(Clone, Debug)]
pub struct NodeError {
    pub kind: Kind,
    /// The node the message names (`node X: ...`, `node X (via E): ...`), as the user named it,
    /// so what reports the error does not name the node again.
    pub node: String,
    pub message: String,
    /// What went wrong (the node's status, or what talm saw) without the node and the call
    /// the message starts with, for a message that names them its own way.
    pub said: String,
    pub hints: Vec<String>,
    /// How talosctl's Go client words the failure, when talm knows it.
    pub go: Option<Go>,
}

/// A node failure in the words of talosctl's Go client (grpc-go's `rpc error: code = C desc =
/// M`), by where it happened: talosctl always targets nodes through apid's one-to-many proxy,
/// which hands a node's own refusal back inside the reply, named by the node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Go {
    /// The node's handler refused the call: in a unary reply talosctl's client names the node
    /// (`NODE: rpc error: ...`, in a go-multierror list); in a stream only the status is said.
    Node { node: String, status: String },
    /// The endpoint refused the call itself (authorization), or the connection failed: the
    /// error alone, for the whole call.
    Direct(String),
}

impl Go {
    /// The text in a unary reply's list of node errors (`NODE: rpc error: ...`), or alone.
    pub fn unary(&self) -> String {
        match self {
            Go::Node { node, status } => format!("{node}: {status}"),
            Go::Direct(text) => text.clone(),
        }
    }

    /// The text a stream reports (the status without the node).
    pub fn stream(&self) -> &str {
        match self {
            Go::Node { status, .. } => status,
            Go::Direct(text) => text,
        }
    }

    pub fn is_direct(&self) -> bool {
        matches!(self, Go::Direct(_))
    }
}

/// A node failure said as talosctl says it: `f` of its Go words, the failure's kind and every
/// hint in the chain kept; an error talm has no Go words for stays as it is.
pub fn reword(err: anyhow::Error, f: impl FnOnce(&Go, Kind) -> String) -> anyhow::Error {
    let Some(found) = err.chain().find_map(|c| c.downcast_ref::<NodeError>()) else {
        return err;
    };
    let Some(go) = &found.go else { return err };
    let message = f(go, found.kind);
    let hints = err
        .chain()
        .flat_map(|c| super::hints_of(c).iter().cloned())
        .collect();
    NodeError {
        kind: found.kind,
        node: String::new(),
        said: message.clone(),
        message,
        hints,
        go: None,
    }
    .into()
}

/// How talosctl's Go client words the first node failure in an error's chain, when known.
pub fn go(err: &anyhow::Error) -> Option<Go> {
    err.chain()
        .find_map(|c| c.downcast_ref::<NodeError>())
        .and_then(|n| n.go.clone())
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for NodeError {}

/// The kind of a node failure anywhere in an error's chain.
pub fn kind(err: &anyhow::Error) -> Option<Kind> {
    err.chain()
        .find_map(|c| c.downcast_ref::<NodeError>())
        .map(|n| n.kind)
}

/// The node a node failure in an error's chain names, when its message names one.
pub fn named_node(err: &anyhow::Error) -> Option<String> {
    err.chain()
        .find_map(|c| c.downcast_ref::<NodeError>())
        .map(|n| n.node.clone())
        .filter(|n| !n.is_empty())
}
