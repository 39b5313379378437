//! Flags of `image k8s-bundle` and `image talos-bundle`: the image lists of a Kubernetes and a
//! Talos version, worked out locally (no node is asked).

use clap::Args;
use serde::Serialize;

use super::common::ProjectFlags;

#[derive(Debug, Args, Serialize)]
pub struct K8sBundleArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    /// Kubernetes version (default: the project's templateOptions.kubernetesVersion, else
    /// Talos's default)
    #[arg(long, value_name = "VERSION")]
    pub k8s_version: Option<String>,
    /// Flannel version
    #[arg(long, value_name = "VERSION")]
    pub flannel_version: Option<String>,
    /// CoreDNS version
    #[arg(long, value_name = "VERSION")]
    pub coredns_version: Option<String>,
    /// etcd version
    #[arg(long, value_name = "VERSION")]
    pub etcd_version: Option<String>,
    /// kube-network-policies version
    #[arg(long, value_name = "VERSION")]
    pub kube_network_policies_version: Option<String>,
}

#[derive(Debug, Args, Serialize)]
pub struct TalosBundleArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    /// Talos version (default: the tag of the project's values.yaml image, else talm's Talos)
    #[arg(value_name = "TALOS_VERSION")]
    pub talos_version: Option<String>,
}
