//! What a new cluster's API holds once its first kube-apiserver runs: the four namespaces
//! kube-apiserver creates, the `kubernetes` Service, and the bootstrap manifests Talos's
//! manifest controller applies from the control plane's config (the same renders its
//! `Manifests` resources carry; objects already present are kept, as Talos does).

use base64::Engine as _;
use serde_json::{json, Value};

use super::store::{Key, Objects};
use crate::cosi::content::{manifests, Ctx};
use crate::node::Node;

/// The namespaces every cluster starts with.
pub const NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The resource (`plural[.group]`) an object of `apiVersion` and `kind` is stored under.
pub fn resource_of(api_version: &str, kind: &str) -> String {
    let lower = kind.to_lowercase();
    let consonant_y = lower.ends_with('y')
        && !matches!(
            lower.chars().rev().nth(1),
            Some('a' | 'e' | 'i' | 'o' | 'u')
        );
    let plural = if lower == "endpoints" {
        lower.clone()
    } else if consonant_y {
        format!("{}ies", &lower[..lower.len() - 1])
    } else if lower.ends_with('s') {
        format!("{lower}es")
    } else {
        format!("{lower}s")
    };
    match api_version.split_once('/') {
        Some((group, _)) => format!("{plural}.{group}"),
        None => plural,
    }
}

/// A namespace as kube-apiserver creates it.
pub fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

/// A Secret's `stringData` as the API stores it: base64 under `data`.
fn store_form(mut obj: Value) -> Value {
    if obj["kind"] == "Secret" {
        if let Some(m) = obj.as_object_mut().and_then(|o| o.remove("stringData")) {
            let data: serde_json::Map<String, Value> = m
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| {
                            let text = v.as_str().unwrap_or("");
                            let enc = base64::engine::general_purpose::STANDARD.encode(text);
                            (k.clone(), Value::from(enc))
                        })
                        .collect()
                })
                .unwrap_or_default();
            obj["data"] = Value::Object(data);
        }
    }
    obj
}

/// Creates what is missing of `obj` (kept when present).
fn keep_or_create(objects: &Objects, obj: Value) {
    let resource = resource_of(
        obj["apiVersion"].as_str().unwrap_or(""),
        obj["kind"].as_str().unwrap_or(""),
    );
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let _ = objects.create(&Key::new(&resource, &ns, &name), store_form(obj));
}

/// The objects of the bootstrap manifests `node` (a control plane) renders.
pub fn manifest_objects(node: &Node) -> Vec<Value> {
    let st = node.state();
    let ctx = Ctx {
        hw: &node.spec.hardware,
        st: &st,
        peers: &[],
        unhealthy: &[],
        api: None,
    };
    manifests::resources(&ctx)
        .into_iter()
        .flat_map(|r| r.spec.as_sequence().cloned().unwrap_or_default())
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect()
}

/// Seeds a new cluster's objects from its first serving control plane.
pub fn seed(objects: &Objects, node: &Node) {
    for ns in NAMESPACES {
        let _ = objects.create(&Key::new("namespaces", "", ns), namespace(ns));
    }
    let service = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {"clusterIP": "10.96.0.1", "clusterIPs": ["10.96.0.1"], "type": "ClusterIP",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
    });
    keep_or_create(objects, service);
    for obj in manifest_objects(node) {
        keep_or_create(objects, obj);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_their_resources() {
        assert_eq!(resource_of("v1", "ConfigMap"), "configmaps");
        assert_eq!(resource_of("apps/v1", "DaemonSet"), "daemonsets.apps");
        assert_eq!(
            resource_of("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
            "clusterrolebindings.rbac.authorization.k8s.io"
        );
        assert_eq!(
            resource_of("policy/v1", "PodDisruptionBudget"),
            "poddisruptionbudgets.policy"
        );
        assert_eq!(
            resource_of("networking.k8s.io/v1", "NetworkPolicy"),
            "networkpolicies.networking.k8s.io"
        );
        assert_eq!(resource_of("v1", "Ingress"), "ingresses");
        assert_eq!(resource_of("v1", "Endpoints"), "endpoints");
        assert_eq!(
            resource_of("gateway.networking.k8s.io/v1", "Gateway"),
            "gateways.gateway.networking.k8s.io"
        );
    }
}
