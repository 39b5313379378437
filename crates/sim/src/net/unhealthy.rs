//! A fault of a simulated node: services that keep running but fail their health check, on
//! every boot or only while the node runs a given Talos version (an upgrade whose kubelet
//! cannot come up). machined reports them as Talos does: the service stays `Running`, its last
//! event is `Health check failed: <why>`, and ServiceList's health says unhealthy; the cluster
//! health check then fails on them (a control plane's `kubelet to be healthy`, any node's
//! `all k8s nodes to report ready`, since a node's Ready condition is its kubelet's).

use serde::Deserialize;

use crate::node::Node;

/// `faults: {unhealthy: {services: [kubelet], version: v1.13.9}}`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Unhealthy {
    /// Service IDs whose health checks fail (kubelet, etcd, apid, trustd...).
    pub services: Vec<String>,
    /// Only while the node runs this version (e.g. v1.13.9); on every boot when absent.
    #[serde(default)]
    pub version: Option<String>,
}

impl Unhealthy {
    /// The services failing their health check on a node running `version`.
    pub fn now(&self, version: &str) -> Vec<String> {
        match &self.version {
            Some(v) if v != version => Vec::new(),
            _ => self.services.clone(),
        }
    }
}

/// The services of `node` failing their health check now (takes the node's state lock: not
/// for callers that hold it).
pub fn failing(node: &Node) -> Vec<String> {
    match node.faults().unhealthy {
        Some(u) => u.now(&node.state().version),
        None => Vec::new(),
    }
}

/// What the failing health check of `service` says, as Talos's checks word it.
pub fn message(service: &str) -> String {
    match service {
        "kubelet" => "Get \"http://127.0.0.1:10248/healthz\": dial tcp 127.0.0.1:10248: connect: connection refused".into(),
        "etcd" => "context deadline exceeded".into(),
        "apid" | "trustd" => format!("dial tcp 127.0.0.1:{}: connect: connection refused", if service == "apid" { 50000 } else { 50001 }),
        other => format!("{other}: health check failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_at_the_named_version() {
        let u: Unhealthy =
            serde_yaml_ng::from_str("services: [kubelet]\nversion: v1.13.9\n").unwrap();
        assert!(u.now("v1.13.7").is_empty());
        assert_eq!(u.now("v1.13.9"), ["kubelet"]);
        let always: Unhealthy = serde_yaml_ng::from_str("services: [etcd]\n").unwrap();
        assert_eq!(always.now("v1.13.7"), ["etcd"]);
        assert!(serde_yaml_ng::from_str::<Unhealthy>("service: [etcd]\n").is_err());
    }
}
