//! Server-side apply of Kubernetes objects written as YAML documents (`kubectl apply
//! --server-side`): each object's resource found through discovery, applied with talm's field
//! manager, and what the server made of it reported.

use anyhow::{anyhow, Result};
use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::Value;

use super::Cluster;

/// The field manager talm applies as.
pub const MANAGER: &str = "talm";

/// One object applied: `kind/name` (with the namespace when it has one) and whether the
/// server changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The object's resourceVersion moved (it was created or changed).
    pub changed: bool,
}

/// The objects of a multi-document YAML text (empty documents skipped); `source` names the
/// text in errors.
pub fn objects(yaml: &str, source: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(yaml).enumerate() {
        let v: Value = serde::Deserialize::deserialize(doc)
            .map_err(|e| anyhow!("{source}: document {}: {e}", i + 1))?;
        if v.is_null() {
            continue;
        }
        for key in ["apiVersion", "kind"] {
            if v.get(key).and_then(Value::as_str).is_none_or(str::is_empty) {
                return Err(anyhow!("{source}: document {}: no {key}", i + 1));
            }
        }
        if v["metadata"]["name"].as_str().is_none_or(str::is_empty) {
            return Err(anyhow!("{source}: document {}: no metadata.name", i + 1));
        }
        out.push(v);
    }
    Ok(out)
}

impl Cluster {
    /// Applies each object server side (forcing talm's ownership of the fields it sets).
    pub async fn apply(&self, objects: &[Value], dry_run: bool) -> Result<Vec<Applied>> {
        let mut done = Vec::with_capacity(objects.len());
        for obj in objects {
            let api_version = obj["apiVersion"].as_str().unwrap_or_default();
            let kind = obj["kind"].as_str().unwrap_or_default();
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let gvk = GroupVersionKind::gvk(group, version, kind);
            let (ar, caps) = kube::discovery::pinned_kind(&self.client(), &gvk)
                .await
                .map_err(|e| {
                    self.failed(&format!("find the resource of {api_version} {kind}"), e)
                })?;
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            let namespace = match caps.scope {
                kube::discovery::Scope::Namespaced => obj["metadata"]["namespace"]
                    .as_str()
                    .filter(|n| !n.is_empty())
                    .unwrap_or("default")
                    .to_string(),
                kube::discovery::Scope::Cluster => String::new(),
            };
            let api: Api<DynamicObject> = if namespace.is_empty() {
                Api::all_with(self.client(), &ar)
            } else {
                Api::namespaced_with(self.client(), &namespace, &ar)
            };
            let before = api
                .get_opt(name)
                .await
                .map_err(|e| self.failed(&format!("get {kind} {name:?}"), e))?
                .and_then(|o| o.metadata.resource_version);
            let mut params = PatchParams::apply(MANAGER).force();
            params.dry_run = dry_run;
            let after = api
                .patch(name, &params, &Patch::Apply(obj))
                .await
                .map_err(|e| self.failed(&format!("apply {kind} {name:?}"), e))?;
            done.push(Applied {
                kind: kind.to_string(),
                namespace,
                name: name.to_string(),
                changed: before != after.metadata.resource_version,
            });
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_need_a_kind_and_a_name() {
        let ok = objects("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n", "x.yaml").unwrap();
        assert_eq!(ok.len(), 2);
        let e = objects("apiVersion: v1\nmetadata: {name: a}\n", "x.yaml").unwrap_err();
        assert_eq!(e.to_string(), "x.yaml: document 1: no kind");
        let e = objects("apiVersion: v1\nkind: Pod\nmetadata: {}\n", "x.yaml").unwrap_err();
        assert_eq!(e.to_string(), "x.yaml: document 1: no metadata.name");
    }
}
