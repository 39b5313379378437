//! The Kubernetes fault knobs of the sim config file, read into what a cluster's controllers
//! act on. Each is set on a control plane node and applies to that node's whole cluster (the
//! union over its control planes):
//! - `kube_unavailable: 10s`: the API answers 503 for that long after it first comes up;
//! - `pod_never_ready: [kube-system/coredns, workload/web-]`: pods whose namespace matches and
//!   whose name starts with the prefix run (phase Running) but never become Ready, the static
//!   pods' mirror pods (`kube-system/kube-scheduler-`) included;
//! - `blocking_pdb: {workload/web-pdb: app=web}`: a PodDisruptionBudget `web-pdb` in namespace
//!   `workload` selecting `app=web` (comma-separated `key=value` terms), with `minAvailable`
//!   kept equal to the number of pods it selects, so that no eviction is ever allowed.

use std::time::Duration;

use anyhow::{bail, Result};

use crate::net::faults::Faults;

/// Pods that never become Ready: a namespace and a name prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NeverReady {
    pub namespace: String,
    pub prefix: String,
}

/// A budget that blocks every eviction of the pods it selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocking {
    pub namespace: String,
    pub name: String,
    pub selector: Vec<(String, String)>,
}

/// The Kubernetes faults of one cluster.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterFaults {
    pub unavailable: Option<Duration>,
    pub never_ready: Vec<NeverReady>,
    pub blocking: Vec<Blocking>,
}

fn split_ns<'a>(what: &str, text: &'a str) -> Result<(&'a str, &'a str)> {
    match text.split_once('/') {
        Some((ns, rest)) if !ns.is_empty() && !rest.is_empty() => Ok((ns, rest)),
        _ => bail!("faults.{what}: {text:?} is not namespace/name (e.g. kube-system/coredns)"),
    }
}

fn never_ready(text: &str) -> Result<NeverReady> {
    let (ns, prefix) = split_ns("pod_never_ready", text)?;
    Ok(NeverReady {
        namespace: ns.into(),
        prefix: prefix.into(),
    })
}

fn blocking(key: &str, selector: &str) -> Result<Blocking> {
    let (ns, name) = split_ns("blocking_pdb", key)?;
    let mut terms = Vec::new();
    for term in selector.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        match term.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                terms.push((k.trim().to_string(), v.trim().to_string()))
            }
            _ => bail!(
                "faults.blocking_pdb.{key}: {term:?} is not a key=value label term (e.g. app=web)"
            ),
        }
    }
    if terms.is_empty() {
        bail!("faults.blocking_pdb.{key}: the selector is empty (give key=value, e.g. app=web)");
    }
    Ok(Blocking {
        namespace: ns.into(),
        name: name.into(),
        selector: terms,
    })
}

/// Checks the Kubernetes knobs of a node's faults (when the config file is read).
pub fn check(f: &Faults) -> Result<()> {
    for p in &f.pod_never_ready {
        never_ready(p)?;
    }
    for (k, v) in &f.blocking_pdb {
        blocking(k, v)?;
    }
    Ok(())
}

impl ClusterFaults {
    /// The union of the faults set on a cluster's control planes (bad entries, which the
    /// config file check refuses, are left out).
    pub fn of<'a>(faults: impl IntoIterator<Item = &'a Faults>) -> ClusterFaults {
        let mut out = ClusterFaults::default();
        for f in faults {
            if let Some(d) = f.kube_unavailable {
                out.unavailable = Some(out.unavailable.map_or(d, |o| o.max(d)));
            }
            out.never_ready
                .extend(f.pod_never_ready.iter().filter_map(|p| never_ready(p).ok()));
            out.blocking.extend(
                f.blocking_pdb
                    .iter()
                    .filter_map(|(k, v)| blocking(k, v).ok()),
            );
        }
        out
    }

    /// Whether pod `namespace/name` never becomes Ready.
    pub fn never_ready(&self, namespace: &str, name: &str) -> bool {
        self.never_ready
            .iter()
            .any(|n| n.namespace == namespace && name.starts_with(&n.prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_read_from_the_config_file() {
        let f: Faults = serde_yaml_ng::from_str(
            "kube_unavailable: 10s\npod_never_ready: [kube-system/coredns]\nblocking_pdb:\n  workload/web-pdb: app=web, tier=front\n",
        )
        .unwrap();
        check(&f).unwrap();
        let c = ClusterFaults::of([&f]);
        assert_eq!(c.unavailable, Some(Duration::from_secs(10)));
        assert!(c.never_ready("kube-system", "coredns-6d4b75cb6d-x2xkp"));
        assert!(!c.never_ready("default", "coredns-6d4b75cb6d-x2xkp"));
        assert_eq!(
            c.blocking,
            [Blocking {
                namespace: "workload".into(),
                name: "web-pdb".into(),
                selector: vec![
                    ("app".into(), "web".into()),
                    ("tier".into(), "front".into())
                ],
            }]
        );
    }

    #[test]
    fn bad_knobs_are_refused_by_name() {
        let f: Faults = serde_yaml_ng::from_str("pod_never_ready: [coredns]\n").unwrap();
        assert_eq!(
            check(&f).unwrap_err().to_string(),
            "faults.pod_never_ready: \"coredns\" is not namespace/name (e.g. kube-system/coredns)"
        );
        let f: Faults = serde_yaml_ng::from_str("blocking_pdb: {workload/p: web}\n").unwrap();
        assert_eq!(
            check(&f).unwrap_err().to_string(),
            "faults.blocking_pdb.workload/p: \"web\" is not a key=value label term (e.g. app=web)"
        );
    }
}
