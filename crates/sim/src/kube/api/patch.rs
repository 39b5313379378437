//! The PATCH bodies kube-apiserver takes, by content type: JSON merge patch (RFC 7386),
//! strategic merge patch (merge patch whose lists of containers, conditions, volumes... merge
//! by their key, with `$patch: delete|replace`), JSON patch (RFC 6902), and server-side apply
//! (`fields`, `apply`).

use serde_json::{Map, Value};

/// A PATCH request's kind, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Merge,
    Strategic,
    Json,
    Apply,
}

impl PatchKind {
    pub fn of_content_type(ct: &str) -> Option<PatchKind> {
        let base = ct.split(';').next().unwrap_or("").trim();
        match base {
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::Strategic),
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchKind::Apply)
            }
            _ => None,
        }
    }
}

/// kube-apiserver's answer to a PATCH of another content type.
pub const UNSUPPORTED: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// Applies a JSON merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// Applies a JSON patch (a list of operations); the error reads as kube-apiserver's.
pub fn json(target: &mut Value, patch: &Value) -> Result<(), String> {
    let ops: json_patch::Patch =
        serde_json::from_value(patch.clone()).map_err(|e| format!("invalid JSON Patch: {e}"))?;
    json_patch::patch(target, &ops).map_err(|e| e.to_string())
}

/// The key the items of a list field merge by in a strategic merge patch; `None` for lists
/// replaced whole. `ports` merges by `containerPort` in containers and `port` in services.
pub fn merge_key(field: &str, sample: Option<&Value>) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "volumeDevices"
        | "resourceClaims" => Some("name"),
        "ports" => Some(match sample {
            Some(s) if s.get("containerPort").is_some() => "containerPort",
            _ => "port",
        }),
        "conditions" | "addresses" => Some("type"),
        "volumeMounts" => Some("mountPath"),
        "ownerReferences" => Some("uid"),
        "hostAliases" => Some("ip"),
        "topologySpreadConstraints" => Some("topologyKey"),
        _ => None,
    }
}

/// A value without strategic-merge directives (`$patch`, `$setElementOrder/...`).
pub fn clean(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(clean).collect()),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch.
pub fn strategic(target: &mut Value, patch: &Value) {
    let Some(p) = patch.as_object() else {
        *target = clean(patch);
        return;
    };
    match p.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = clean(patch);
            return;
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("an object");
    for (k, pv) in p {
        if k.starts_with('$') {
            continue;
        }
        if pv.is_null() {
            t.remove(k);
            continue;
        }
        match (t.get_mut(k), pv) {
            (Some(tv @ Value::Object(_)), Value::Object(_)) => strategic(tv, pv),
            (Some(Value::Array(items)), Value::Array(patch_items)) => {
                if let Some(key) = merge_key(k, patch_items.first()) {
                    merge_list(items, patch_items, key);
                } else if k == "finalizers" {
                    for item in patch_items {
                        if !items.contains(item) {
                            items.push(item.clone());
                        }
                    }
                } else {
                    *items = patch_items.iter().map(clean).collect();
                }
            }
            _ => {
                t.insert(k.clone(), clean(pv));
            }
        }
    }
}

fn merge_list(items: &mut Vec<Value>, patch_items: &[Value], key: &str) {
    for pi in patch_items {
        let wanted = &pi[key];
        let at = items.iter().position(|i| &i[key] == wanted);
        let delete = pi.get("$patch").and_then(Value::as_str) == Some("delete");
        match (at, delete) {
            (Some(i), true) => {
                items.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic(&mut items[i], pi),
            (None, false) => items.push(clean(pi)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_types() {
        assert_eq!(
            PatchKind::of_content_type("application/strategic-merge-patch+json; charset=utf-8"),
            Some(PatchKind::Strategic)
        );
        assert_eq!(
            PatchKind::of_content_type("application/apply-patch+yaml"),
            Some(PatchKind::Apply)
        );
        assert_eq!(PatchKind::of_content_type("application/json"), None);
    }

    #[test]
    fn merge_patch_replaces_lists_and_removes_nulls() {
        let mut o = json!({"spec": {"unschedulable": true, "taints": [{"key": "a"}]}, "metadata": {"labels": {"x": "1"}}});
        merge(
            &mut o,
            &json!({"spec": {"unschedulable": null, "taints": []}, "metadata": {"labels": {"y": "2"}}}),
        );
        assert_eq!(
            o,
            json!({"spec": {"taints": []}, "metadata": {"labels": {"x": "1", "y": "2"}}})
        );
    }

    #[test]
    fn strategic_merges_containers_by_name() {
        let mut o = json!({"spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}], "args": ["x"]}});
        strategic(
            &mut o,
            &json!({"$setElementOrder/containers": [{"name": "a"}], "spec": {"containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}, {"name": "a", "$patch": "delete"}], "args": ["y"]}}),
        );
        assert_eq!(
            o,
            json!({"spec": {"containers": [{"name": "b", "image": "b:2"}, {"name": "c", "image": "c:1"}], "args": ["y"]}})
        );
        let mut st = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "True"}]}});
        strategic(
            &mut st,
            &json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
        );
        assert_eq!(
            st,
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "X", "status": "True"}]}})
        );
    }

    #[test]
    fn json_patch_operations() {
        let mut o = json!({"spec": {"replicas": 1}});
        json(&mut o, &json!([{"op": "replace", "path": "/spec/replicas", "value": 3}, {"op": "add", "path": "/spec/paused", "value": true}])).unwrap();
        assert_eq!(o, json!({"spec": {"replicas": 3, "paused": true}}));
        assert!(json(
            &mut o,
            &json!([{"op": "test", "path": "/spec/replicas", "value": 9}])
        )
        .is_err());
    }
}
