//! Cordon, drain and uncordon a Kubernetes node as talosctl v1.13 does around a reboot
//! (kubectl's drain with `--force --ignore-daemonsets --delete-emptydir-data`): every pod but
//! DaemonSet and mirror pods evicted through policy/v1, a refused eviction retried until the
//! timeout, the pods waited for until gone; progress in talosctl's words.

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, ListParams, Patch, PatchParams};
use serde_json::json;
use tokio::time::Instant;

use super::{describe, is_ready, select, status_code, Cluster};

/// How often a refused eviction is tried again (kubectl's 5 s).
const EVICT_RETRY: Duration = Duration::from_secs(5);
/// How often a pod's deletion and a node's readiness are looked at.
const POLL: Duration = Duration::from_secs(1);

/// A PodDisruptionBudget that refuses an eviction, as its status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub namespace: String,
    pub name: String,
    pub desired_healthy: i32,
    pub current_healthy: i32,
}

/// Why a drain did not finish.
#[derive(Debug)]
pub enum DrainError {
    /// The time ran out while a pod's eviction was still refused.
    Blocked {
        node: String,
        pod: String,
        budget: Option<Budget>,
        timeout: Duration,
    },
    /// The time ran out while pods were still going.
    Timeout {
        node: String,
        pods: Vec<String>,
        timeout: Duration,
    },
    /// A call failed.
    Api(anyhow::Error),
}

impl std::fmt::Display for DrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = |d: &Duration| talm_base::duration::text(*d);
        match self {
            DrainError::Blocked {
                node,
                pod,
                budget,
                timeout,
            } => {
                write!(
                    f,
                    "error draining node {node:?}: pod {pod} could not be evicted within {}",
                    secs(timeout)
                )?;
                match budget {
                    Some(b) => write!(
                        f,
                        ": PodDisruptionBudget {}/{} needs {} healthy pods and has {}",
                        b.namespace, b.name, b.desired_healthy, b.current_healthy
                    ),
                    None => write!(f, ": its eviction was refused"),
                }
            }
            DrainError::Timeout {
                node,
                pods,
                timeout,
            } => write!(
                f,
                "error draining node {node:?}: pods still there after {}: {}",
                secs(timeout),
                pods.join(", ")
            ),
            DrainError::Api(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for DrainError {}

impl From<anyhow::Error> for DrainError {
    fn from(e: anyhow::Error) -> DrainError {
        DrainError::Api(e)
    }
}

/// `namespace/name` of a pod.
fn pod_name(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Whether a drain leaves the pod alone: a mirror pod (the kubelet's static pod), or one a
/// DaemonSet keeps on every node.
fn stays(p: &Pod) -> bool {
    let mirror = p
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    let daemon = p
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true) && o.kind == "DaemonSet");
    mirror || daemon
}

impl Cluster {
    async fn set_unschedulable(&self, name: &str, on: bool) -> Result<()> {
        let api: Api<Node> = Api::all(self.client());
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"unschedulable": on}})),
        )
        .await
        .map_err(|e| {
            let what = if on { "cordoning" } else { "uncordoning" };
            self.failed(&format!("error {what} node {name:?}"), e)
        })?;
        Ok(())
    }

    /// Marks the node unschedulable.
    pub async fn cordon(&self, name: &str, report: &(dyn Fn(&str) + Sync)) -> Result<()> {
        report(&format!("{name}: cordoning node"));
        self.set_unschedulable(name, true).await?;
        report(&format!("{name}: node cordoned"));
        Ok(())
    }

    /// Marks the node schedulable again.
    pub async fn uncordon(&self, name: &str, report: &(dyn Fn(&str) + Sync)) -> Result<()> {
        report(&format!("{name}: uncordoning node"));
        self.set_unschedulable(name, false).await?;
        report(&format!("{name}: node uncordoned"));
        Ok(())
    }

    /// Cordons the node and evicts its pods, waiting until they are gone, all within
    /// `timeout`. The node stays cordoned whatever happens.
    pub async fn drain(
        &self,
        name: &str,
        timeout: Duration,
        report: &(dyn Fn(&str) + Sync),
    ) -> Result<(), DrainError> {
        let deadline = Instant::now() + timeout;
        if self.node(name).await?.is_none() {
            return Err(DrainError::Api(anyhow::anyhow!(
                "error getting node {name:?}: nodes {name:?} not found"
            )));
        }
        self.cordon(name, report).await?;
        report(&format!("{name}: draining node"));
        let pods = self
            .pods("", "", &format!("spec.nodeName={name}"))
            .await?
            .into_iter()
            .filter(|p| !stays(p))
            .collect::<Vec<_>>();
        let runs = pods
            .iter()
            .map(|p| self.evict_one(name, p, deadline, timeout, report));
        for r in futures_util::future::join_all(runs).await {
            r?;
        }
        report(&format!("{name}: node drained"));
        Ok(())
    }

    /// Evicts one pod, retrying while a budget refuses, then waits until it is gone.
    async fn evict_one(
        &self,
        node: &str,
        p: &Pod,
        deadline: Instant,
        timeout: Duration,
        report: &(dyn Fn(&str) + Sync),
    ) -> Result<(), DrainError> {
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let name = p.metadata.name.clone().unwrap_or_default();
        let uid = p.metadata.uid.clone();
        let api: Api<Pod> = Api::namespaced(self.client(), &ns);
        report(&format!("{node}: evicting pod {}", pod_name(p)));
        loop {
            match api.evict(&name, &EvictParams::default()).await {
                Ok(_) => break,
                Err(e) if status_code(&e) == Some(404) => break,
                Err(e) if status_code(&e) == Some(429) => {
                    if Instant::now() + EVICT_RETRY > deadline {
                        return Err(DrainError::Blocked {
                            node: node.to_string(),
                            pod: pod_name(p),
                            budget: self.budget_of(p).await,
                            timeout,
                        });
                    }
                    tokio::time::sleep(EVICT_RETRY).await;
                }
                Err(e) => {
                    report(&format!(
                        "{node}: failed to evict pod {}: {}",
                        pod_name(p),
                        describe(&e, &self.server)
                    ));
                    return Err(DrainError::Api(self.failed(
                        &format!("error draining node {node:?}: evict pod {}", pod_name(p)),
                        e,
                    )));
                }
            }
        }
        loop {
            let now = api
                .get_opt(&name)
                .await
                .map_err(|e| self.failed(&format!("get pod {}", pod_name(p)), e))?;
            if now.is_none_or(|q| q.metadata.uid != uid) {
                report(&format!("{node}: evicted pod {}", pod_name(p)));
                return Ok(());
            }
            if Instant::now() + POLL > deadline {
                return Err(DrainError::Timeout {
                    node: node.to_string(),
                    pods: vec![pod_name(p)],
                    timeout,
                });
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The budget that covers a pod and allows no disruption now, if one does.
    async fn budget_of(&self, p: &Pod) -> Option<Budget> {
        let ns = p.metadata.namespace.clone().unwrap_or_default();
        let api: Api<PodDisruptionBudget> = Api::namespaced(self.client(), &ns);
        let labels = p.metadata.labels.clone().unwrap_or_default();
        let list = api.list(&ListParams::default()).await.ok()?;
        list.items.into_iter().find_map(|b| {
            let sel = b.spec.as_ref()?.selector.as_ref()?;
            if !select::matches(sel, &labels) {
                return None;
            }
            let st = b.status.as_ref();
            Some(Budget {
                namespace: ns.clone(),
                name: b.metadata.name.clone().unwrap_or_default(),
                desired_healthy: st.and_then(|s| s.desired_healthy).unwrap_or(0),
                current_healthy: st.and_then(|s| s.current_healthy).unwrap_or(0),
            })
        })
    }

    /// Waits until the node reports Ready, reading through errors (the node may be the one
    /// serving the API, rebooting).
    pub async fn wait_ready(&self, name: &str, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(n)) = self.node(name).await {
                if is_ready(&n) {
                    return Ok(());
                }
            }
            if Instant::now() + POLL > deadline {
                return Err(anyhow::anyhow!(
                    "error waiting for node {name:?} to become Ready: context deadline exceeded"
                ));
            }
            tokio::time::sleep(POLL).await;
        }
    }
}
