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
