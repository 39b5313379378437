//! Facts of the Talos API both ends agree on: its port, the largest message, the name a
//! maintenance-mode node's certificate carries, and how a status reads (`rpc error: ...`).

use tonic::{Code, Status};

/// The Talos API port.
pub const DEFAULT_PORT: u16 = 50000;

/// Largest message Talos sends or accepts (32 MiB).
pub const MAX_MESSAGE: usize = 32 << 20;

/// The common name of the certificate a node in maintenance mode presents.
pub const MAINTENANCE_CN: &str = "maintenance-service.talos.dev";

/// `host` → `host:50000`; a bare IPv6 address gets brackets.
pub fn with_port(endpoint: &str) -> String {
    let e = endpoint.trim();
    if e.starts_with('[') {
        return if e.contains("]:") {
            e.to_string()
        } else {
            format!("{e}:{DEFAULT_PORT}")
        };
    }
    match e.matches(':').count() {
        0 => format!("{e}:{DEFAULT_PORT}"),
        1 => e.to_string(),
        _ => format!("[{e}]:{DEFAULT_PORT}"),
    }
}

/// The host part of an endpoint, without port or brackets.
pub fn host(endpoint: &str) -> String {
    let e = with_port(endpoint);
    let h = e.rsplit_once(':').map(|(h, _)| h).unwrap_or(&e);
    h.trim_start_matches('[').trim_end_matches(']').to_string()
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
