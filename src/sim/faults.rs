//! Fault injection for a simulated node: refuse connections, answer late, cut a call's stream or
//! connection mid-way, or fail a named call with a given gRPC status.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Deserialize;
use tonic::{Code, Status};

/// What goes wrong on a node. Call names are the RPC names (`Version`, `ApplyConfiguration`,
/// `Kubeconfig`, `Get`, `List`...), or `*` for every call.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// No listener at all: connections are refused.
    #[serde(default)]
    pub refuse: bool,
    /// Every call waits this long (Go duration text, e.g. `3s`) before it is handled.
    #[serde(default)]
    pub delay: String,
    /// Calls whose connection is cut after the first streamed message (or before a unary reply).
    #[serde(default)]
    pub drop: Vec<String>,
    /// Calls that fail: `Call: "Code: message"`, e.g. `Bootstrap: "Unavailable: etcd is down"`.
    #[serde(default)]
    pub fail: BTreeMap<String, String>,
    /// etcd snapshots carry a damaged database (both meta pages garbled, the SHA-256 trailer
    /// made over the damage): rehearses a backup whose figures cannot be read.
    #[serde(default)]
    pub damaged_etcd_snapshot: bool,
}

fn code(name: &str) -> Option<Code> {
    Some(match name {
        "Canceled" | "Cancelled" => Code::Cancelled,
        "Unknown" => Code::Unknown,
        "InvalidArgument" => Code::InvalidArgument,
        "DeadlineExceeded" => Code::DeadlineExceeded,
        "NotFound" => Code::NotFound,
        "AlreadyExists" => Code::AlreadyExists,
        "PermissionDenied" => Code::PermissionDenied,
        "ResourceExhausted" => Code::ResourceExhausted,
        "FailedPrecondition" => Code::FailedPrecondition,
        "Aborted" => Code::Aborted,
        "OutOfRange" => Code::OutOfRange,
        "Unimplemented" => Code::Unimplemented,
        "Internal" => Code::Internal,
        "Unavailable" => Code::Unavailable,
        "DataLoss" => Code::DataLoss,
        "Unauthenticated" => Code::Unauthenticated,
        _ => return None,
    })
}

fn named(list: &[String], call: &str) -> bool {
    list.iter().any(|c| c == call || c == "*")
}

impl Faults {
    /// Checks the texts (durations, codes) so a bad fault file fails when it is loaded.
    pub fn check(&self) -> Result<()> {
        if !self.delay.is_empty() {
            crate::talos::duration::flag(
                "faults.delay",
                &self.delay,
                crate::talos::duration::Zero::Allowed,
            )?;
        }
        for (call, spec) in &self.fail {
            let (c, _) = spec.split_once(':').unwrap_or((spec, ""));
            if code(c.trim()).is_none() {
                bail!("faults.fail.{call}: {spec:?} does not start with a gRPC code (e.g. \"Unavailable: etcd is down\")");
            }
        }
        Ok(())
    }

    pub fn delay(&self) -> Duration {
        crate::talos::parse_duration(&self.delay).unwrap_or_default()
    }

    pub fn drops(&self, call: &str) -> bool {
        named(&self.drop, call)
    }

    /// The status a failing call answers with.
    pub fn failure(&self, call: &str) -> Option<Status> {
        let spec = self.fail.get(call).or_else(|| self.fail.get("*"))?;
        let (c, msg) = spec.split_once(':').unwrap_or((spec, ""));
        Some(Status::new(
            code(c.trim()).unwrap_or(Code::Unknown),
            msg.trim(),
        ))
    }
}
