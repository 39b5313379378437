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
    /// Every call waits this long before it is handled (Go duration text in a config file,
    /// e.g. `3s`; text that is not one is refused when the file is read).
    #[serde(default, deserialize_with = "go_duration")]
    pub delay: Option<Duration>,
    /// Calls whose connection is cut after the first streamed message (or before a unary reply).
    #[serde(default)]
    pub drop: Vec<String>,
    /// Calls that fail: `Call: "Code: message"`, e.g. `Bootstrap: "Unavailable: etcd is down"`.
    #[serde(default)]
    pub fail: BTreeMap<String, String>,
    /// A config applied without a reboot is acknowledged, but the node keeps running its
    /// previous one (a controller reverting it): what talm's post-apply verification catches.
    #[serde(default)]
    pub keep_config: bool,
    /// etcd snapshots carry a damaged database (both meta pages garbled, the SHA-256 trailer
    /// made over the damage): rehearses a backup whose figures cannot be read.
    #[serde(default)]
    pub damaged_etcd_snapshot: bool,
    /// The admin kubeconfig's user carries an `exec` credential plugin: a node that would have
    /// its clients' kubectl run a program.
    #[serde(default)]
    pub exec_kubeconfig: bool,
    /// Services that run but fail their health check (`crate::net::unhealthy`).
    #[serde(default)]
    pub unhealthy: Option<crate::net::unhealthy::Unhealthy>,
    /// A data stream replaced by a made-up one: endless, slow, or silent (`crate::net::flood`).
    #[serde(default)]
    pub flood: Option<crate::net::flood::Flood>,
    /// The node's clock is off by this much (`-48h`, `+10y`): its server certificate is issued
    /// for its time, and it refuses client certificates outside it (`crate::net::skew`). Takes
    /// effect at the node's next boot.
    #[serde(default)]
    pub clock_skew: Option<crate::net::skew::Skew>,
    /// Kubernetes, set on a control plane for its whole cluster (`crate::kube::faults`): the
    /// API answers 503 for this long after it first comes up (Go duration text, `10s`).
    #[serde(default, deserialize_with = "go_duration")]
    pub kube_unavailable: Option<Duration>,
    /// Kubernetes: pods (`namespace/name-prefix`, e.g. `kube-system/coredns`) that run but
    /// never become Ready.
    #[serde(default)]
    pub pod_never_ready: Vec<String>,
    /// Kubernetes: PodDisruptionBudgets the cluster holds, `namespace/name: selector`
    /// (`workload/web-pdb: app=web`), whose `minAvailable` is kept equal to the number of pods
    /// they select: every eviction of such a pod is refused.
    #[serde(default)]
    pub blocking_pdb: BTreeMap<String, String>,
}

/// A Go duration read from its text; bad text is an error serde places at its key and line.
pub(crate) fn go_duration<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    struct GoText;
    impl serde::de::Visitor<'_> for GoText {
        type Value = Option<Duration>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("Go duration text such as 3s or 500ms")
        }
        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
            talm_base::duration::flag("the delay", text, talm_base::duration::Zero::Allowed)
                .map(Some)
                .map_err(|e| E::custom(format!("{e} (give Go duration text such as 3s or 500ms)")))
        }
    }
    d.deserialize_str(GoText)
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
    /// Checks the failure texts (gRPC codes) so a bad fault file fails when it is loaded.
    pub fn check(&self) -> Result<()> {
        for (call, spec) in &self.fail {
            let (c, _) = spec.split_once(':').unwrap_or((spec, ""));
            if code(c.trim()).is_none() {
                bail!("faults.fail.{call}: {spec:?} does not start with a gRPC code (e.g. \"Unavailable: etcd is down\")");
            }
        }
        crate::kube::faults::check(self)
    }

    /// How far the node's clock is off (zero without the fault).
    pub fn skew(&self) -> crate::net::skew::Skew {
        self.clock_skew.unwrap_or_default()
    }

    pub fn delay(&self) -> Duration {
        self.delay.unwrap_or_default()
    }

    /// The made-up stream that replaces `call`'s, if any.
    pub fn flood(&self, call: &str) -> Option<&crate::net::flood::Flood> {
        self.flood.as_ref().filter(|f| f.covers(call))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_delay_is_refused_where_it_is_written() {
        let f: Faults = serde_yaml_ng::from_str("delay: 1m30s\n").unwrap();
        assert_eq!(f.delay(), Duration::from_secs(90));
        let err = serde_yaml_ng::from_str::<Faults>("drop: []\ndelay: soon\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("delay: the delay \"soon\" is not a duration"),
            "{err}"
        );
        assert!(err.contains("line 2"), "{err}");
        assert_eq!(Faults::default().delay(), Duration::ZERO);
    }
}
