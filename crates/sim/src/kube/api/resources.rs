//! The one table of resource types the simulated API serves: it drives discovery, routing,
//! the OpenAPI stub and the store's resource names (`pods`, `deployments.apps`).

/// A subresource a type offers, as discovery lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sub {
    /// `<plural>/status`: get, patch, update of the status alone.
    Status,
    /// `<plural>/scale`: an `autoscaling/v1 Scale` view of `spec.replicas`.
    Scale,
    /// `pods/eviction`: create a `policy/v1 Eviction`.
    Eviction,
}

impl Sub {
    pub fn name(self) -> &'static str {
        match self {
            Sub::Status => "status",
            Sub::Scale => "scale",
            Sub::Eviction => "eviction",
        }
    }

    pub fn parse(s: &str) -> Option<Sub> {
        [Sub::Status, Sub::Scale, Sub::Eviction]
            .into_iter()
            .find(|x| x.name() == s)
    }
}

/// One resource type.
#[derive(Debug, PartialEq, Eq)]
pub struct Kind {
    /// The API group; empty for the core group.
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short: &'static [&'static str],
    pub subs: &'static [Sub],
    /// In `kubectl get all`.
    pub all: bool,
}

impl Kind {
    /// The store's resource name: the plural, then `.group` for a grouped type.
    pub fn resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// The objects' `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn has(&self, sub: Sub) -> bool {
        self.subs.contains(&sub)
    }
}

#[allow(clippy::too_many_arguments)]
const fn k(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    subs: &'static [Sub],
    all: bool,
) -> Kind {
    Kind {
        group,
        version,
        plural,
        singular,
        kind,
        namespaced,
        short,
        subs,
        all,
    }
}

use Sub::{Eviction, Scale, Status};

/// Every type served, grouped by API group in discovery order.
#[rustfmt::skip]
pub static KINDS: &[Kind] = &[
    k("", "v1", "configmaps", "configmap", "ConfigMap", true, &["cm"], &[], false),
    k("", "v1", "events", "event", "Event", true, &["ev"], &[], false),
    k("", "v1", "namespaces", "namespace", "Namespace", false, &["ns"], &[Status], false),
    k("", "v1", "nodes", "node", "Node", false, &["no"], &[Status], false),
    k("", "v1", "pods", "pod", "Pod", true, &["po"], &[Eviction, Status], true),
    k("", "v1", "secrets", "secret", "Secret", true, &[], &[], false),
    k("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true, &["sa"], &[], false),
    k("", "v1", "services", "service", "Service", true, &["svc"], &[Status], true),
    k("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true, &["ds"], &[Status], true),
    k("apps", "v1", "deployments", "deployment", "Deployment", true, &["deploy"], &[Scale, Status], true),
    k("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, &["rs"], &[Scale, Status], true),
    k("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget", "PodDisruptionBudget", true, &["pdb"], &[Status], false),
    k("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false, &[], &[], false),
    k("rbac.authorization.k8s.io", "v1", "clusterroles", "clusterrole", "ClusterRole", false, &[], &[], false),
    k("rbac.authorization.k8s.io", "v1", "rolebindings", "rolebinding", "RoleBinding", true, &[], &[], false),
    k("rbac.authorization.k8s.io", "v1", "roles", "role", "Role", true, &[], &[], false),
    k("coordination.k8s.io", "v1", "leases", "lease", "Lease", true, &[], &[], false),
    k("apiextensions.k8s.io", "v1", "customresourcedefinitions", "customresourcedefinition", "CustomResourceDefinition", false, &["crd", "crds"], &[Status], false),
];

/// The groups in discovery order (the core group first, as `""`).
pub fn groups() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in KINDS {
        if !out.contains(&k.group) {
            out.push(k.group);
        }
    }
    out
}

/// The types of one group version.
pub fn of<'a>(group: &'a str, version: &'a str) -> impl Iterator<Item = &'static Kind> + 'a {
    KINDS
        .iter()
        .filter(move |k| k.group == group && k.version == version)
}

/// The type served at `plural` in a group version.
pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Kind> {
    of(group, version).find(|k| k.plural == plural)
}

/// The type whose objects the store keeps under `resource`.
pub fn by_resource(resource: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.resource() == resource)
}

/// The type of an object's `apiVersion` and `kind`.
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.kind == kind && k.api_version() == api_version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_names_carry_the_group() {
        assert_eq!(find("", "v1", "pods").unwrap().resource(), "pods");
        assert_eq!(
            find("apps", "v1", "deployments").unwrap().resource(),
            "deployments.apps"
        );
        assert_eq!(
            by_resource("poddisruptionbudgets.policy").unwrap().kind,
            "PodDisruptionBudget"
        );
        assert_eq!(
            by_kind("apps/v1", "DaemonSet").unwrap().plural,
            "daemonsets"
        );
        assert!(find("apps", "v1", "pods").is_none());
    }

    #[test]
    fn groups_in_discovery_order() {
        assert_eq!(
            groups(),
            [
                "",
                "apps",
                "policy",
                "rbac.authorization.k8s.io",
                "coordination.k8s.io",
                "apiextensions.k8s.io"
            ]
        );
    }
}
