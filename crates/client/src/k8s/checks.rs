//! The Kubernetes checks of the cluster health check run from this client (`health
//! --server=false`): what each lists through the API, judged by the very functions the
//! simulated node's server-side health uses (`talm_wire::k8s::checks`), so a check fails with
//! Talos's message either way.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use talm_wire::k8s::checks::{self, Outcome};

use super::Cluster;

/// The Kubernetes checks of Talos's list that run through the API, in Talos's order (the
/// static pods one reads each control plane's Talos API instead: [`checks::static_pods`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    NodesReport,
    Components,
    NodesReady,
    KubeProxy,
    CoreDns,
    Schedulable,
}

impl Check {
    /// The check of Talos's reporter line (`all k8s nodes to report`...).
    pub fn named(what: &str) -> Option<Check> {
        Some(match what {
            "all k8s nodes to report" => Check::NodesReport,
            "all control plane components to be ready" => Check::Components,
            "all k8s nodes to report ready" => Check::NodesReady,
            "kube-proxy to report ready" => Check::KubeProxy,
            "coredns to report ready" => Check::CoreDns,
            "all k8s nodes to report schedulable" => Check::Schedulable,
            _ => return None,
        })
    }
}

/// The nodes the cluster is expected to have, by address.
pub struct Expected<'a> {
    pub control_planes: &'a [String],
    pub workers: &'a [String],
    /// The CNI is `none` (no node turns Ready without one).
    pub cni_none: bool,
}

fn ips(list: &[String]) -> Vec<Vec<String>> {
    list.iter().map(|n| vec![n.clone()]).collect()
}

impl Cluster {
    async fn json<K>(&self, api: Api<K>, path: &str) -> Result<Vec<Value>, String>
    where
        K: kube::Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
    {
        let list = api
            .list(&ListParams::default())
            .await
            .map_err(|e| self.failed(&format!("Get \"{}{path}\"", self.server), e))
            .map_err(|e| format!("{e:#}"))?;
        Ok(list
            .items
            .iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect())
    }

    async fn nodes_json(&self) -> Result<Vec<Value>, String> {
        self.json(Api::<Node>::all(self.client()), "/api/v1/nodes")
            .await
    }

    async fn system<K>(&self, plural: &str, group: &str) -> Result<Vec<Value>, String>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + Serialize
            + std::fmt::Debug,
        K::DynamicType: Default,
    {
        let path = match group {
            "" => format!("/api/v1/namespaces/kube-system/{plural}"),
            g => format!("/apis/{g}/namespaces/kube-system/{plural}"),
        };
        self.json(Api::<K>::namespaced(self.client(), "kube-system"), &path)
            .await
    }

    /// Runs one check; `Err` holds the message the reporter prints.
    pub async fn check(&self, check: Check, expected: &Expected<'_>) -> Result<Outcome, String> {
        if expected.cni_none && check == Check::NodesReady {
            return Ok(Outcome::Skip);
        }
        match check {
            Check::NodesReport => {
                let all: Vec<String> = expected
                    .control_planes
                    .iter()
                    .chain(expected.workers)
                    .cloned()
                    .collect();
                checks::nodes_reported(&ips(&all), &self.nodes_json().await?)
            }
            Check::Components => checks::control_plane_components(
                &ips(expected.control_planes),
                &self.nodes_json().await?,
                &self.system::<DaemonSet>("daemonsets", "apps/v1").await?,
                &self.system::<Pod>("pods", "").await?,
            ),
            Check::NodesReady => checks::nodes_ready(&self.nodes_json().await?),
            Check::KubeProxy => checks::kube_proxy(
                &self.system::<DaemonSet>("daemonsets", "apps/v1").await?,
                &self.system::<Pod>("pods", "").await?,
            ),
            Check::CoreDns => checks::coredns(
                false,
                &self.system::<Deployment>("deployments", "apps/v1").await?,
                &self.system::<Pod>("pods", "").await?,
            ),
            Check::Schedulable => checks::nodes_schedulable(&self.nodes_json().await?),
        }
    }
}
