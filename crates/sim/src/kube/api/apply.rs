//! Server-side apply: the field set an applied configuration names (`fieldsV1`), ownership
//! recorded in `metadata.managedFields` per manager, conflicts with other appliers (409
//! unless `force`), removal of fields a manager stopped applying, and the merge itself.
//!
//! Simplified: only `Apply` managers are tracked (writes by PUT/PATCH record no `Update`
//! manager, so they never conflict), and lists other than keyed ones are owned whole.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::patch::{clean, merge_key, strategic};

/// One step into an object: a map field, or a keyed list item.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Step {
    Field(String),
    /// The item of a keyed list whose `key` field is `value` (its JSON text).
    Item {
        key: String,
        value: String,
    },
}

pub type Path = Vec<Step>;

/// Whether a list item's `key` field is the JSON text `value`.
fn keyed(item: &Value, key: &str, value: &str) -> bool {
    serde_json::to_string(&item[key]).is_ok_and(|t| t == value)
}

/// Fields the server owns: never part of a manager's set.
fn server_owned(path: &[Step]) -> bool {
    matches!(path, [Step::Field(a)] if a == "apiVersion" || a == "kind")
        || matches!(path, [Step::Field(m), Step::Field(f)] if m == "metadata" && matches!(f.as_str(),
            "name" | "namespace" | "uid" | "resourceVersion" | "generation" | "creationTimestamp" | "managedFields" | "deletionTimestamp"))
}

/// The leaves an applied configuration sets.
pub fn field_set(obj: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    walk(obj, &mut Vec::new(), None, &mut out);
    out
}

fn walk(v: &Value, at: &mut Path, field: Option<&str>, out: &mut BTreeSet<Path>) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            for (k, child) in m {
                at.push(Step::Field(k.clone()));
                if !server_owned(at) {
                    walk(child, at, Some(k), out);
                }
                at.pop();
            }
        }
        Value::Array(items) if field.and_then(|f| merge_key(f, items.first())).is_some() => {
            let key = field
                .and_then(|f| merge_key(f, items.first()))
                .unwrap_or("name");
            for item in items {
                at.push(Step::Item {
                    key: key.to_string(),
                    value: item[key].to_string(),
                });
                walk(item, at, None, out);
                at.pop();
            }
        }
        _ => {
            out.insert(at.clone());
        }
    }
}

/// `fieldsV1` of a set: `{"f:spec": {"f:replicas": {}}}`, keyed items as `k:{"name":"c"}`.
pub fn to_fields_v1(set: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for step in path {
            let name = match step {
                Step::Field(f) => format!("f:{f}"),
                Step::Item { key, value } => {
                    let v: Value = serde_json::from_str(value).unwrap_or(Value::Null);
                    format!("k:{}", json!({ key.as_str(): v }))
                }
            };
            node = node
                .entry(name)
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("a map");
        }
    }
    Value::Object(root)
}

/// The set a `fieldsV1` names.
pub fn from_fields_v1(v: &Value) -> BTreeSet<Path> {
    let mut out = BTreeSet::new();
    read(v, &mut Vec::new(), &mut out);
    out
}

fn read(v: &Value, at: &mut Path, out: &mut BTreeSet<Path>) {
    let Some(m) = v.as_object().filter(|m| !m.is_empty()) else {
        if !at.is_empty() {
            out.insert(at.clone());
        }
        return;
    };
    for (name, child) in m {
        let step = if let Some(f) = name.strip_prefix("f:") {
            Step::Field(f.to_string())
        } else if let Some(k) = name.strip_prefix("k:") {
            let Ok(Value::Object(km)) = serde_json::from_str::<Value>(k) else {
                continue;
            };
            let Some((key, value)) = km.into_iter().next() else {
                continue;
            };
            Step::Item {
                key,
                value: value.to_string(),
            }
        } else {
            continue;
        };
        at.push(step);
        read(child, at, out);
        at.pop();
    }
}

/// The value at a path, if present.
pub fn resolve<'a>(mut v: &'a Value, path: &[Step]) -> Option<&'a Value> {
    for step in path {
        v = match step {
            Step::Field(f) => v.get(f)?,
            Step::Item { key, value } => v.as_array()?.iter().find(|i| keyed(i, key, value))?,
        };
    }
    Some(v)
}

/// Removes the value at a path (a keyed item whole when the path ends at it).
fn remove(v: &mut Value, path: &[Step]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut at = v;
    for step in parent {
        at = match step {
            Step::Field(f) => match at.get_mut(f) {
                Some(x) => x,
                None => return,
            },
            Step::Item { key, value } => {
                match at
                    .as_array_mut()
                    .and_then(|a| a.iter_mut().find(|i| keyed(i, key, value)))
                {
                    Some(x) => x,
                    None => return,
                }
            }
        };
    }
    match last {
        Step::Field(f) => {
            if let Some(m) = at.as_object_mut() {
                m.remove(f);
            }
        }
        Step::Item { key, value } => {
            if let Some(a) = at.as_array_mut() {
                a.retain(|i| !keyed(i, key, value));
            }
        }
    }
}

/// A path as kube-apiserver's conflict messages print it: `.spec.containers[name="c"].image`.
pub fn render(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Field(f) => {
                s.push('.');
                s.push_str(f);
            }
            Step::Item { key, value } => s.push_str(&format!("[{key}={value}]")),
        }
    }
    s
}

/// Why an apply was refused: the fields other managers own with other values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<(String, String)>);

impl Conflicts {
    /// kube-apiserver's message: `Apply failed with 1 conflict: conflict with "m": .spec.x`.
    pub fn message(&self) -> String {
        let n = self.0.len();
        let lines: Vec<String> = self
            .0
            .iter()
            .map(|(m, p)| format!("conflict with \"{m}\": {p}"))
            .collect();
        if n == 1 {
            format!("Apply failed with 1 conflict: {}", lines[0])
        } else {
            format!("Apply failed with {n} conflicts: {}", lines.join("\n"))
        }
    }
}

fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry(manager: &str, api_version: &str, set: &BTreeSet<Path>, now: &str) -> Value {
    json!({
        "manager": manager,
        "operation": "Apply",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": to_fields_v1(set),
    })
}

/// Applies `applied` for `manager` onto the live object (`None`: creates it). The result
/// carries the manager's `managedFields` entry; `force` takes over conflicting fields.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
) -> Result<Value, Conflicts> {
    let api_version = applied["apiVersion"].as_str().unwrap_or_default();
    let mine = field_set(applied);
    let Some(live) = live else {
        let mut obj = clean(applied);
        obj["metadata"]["managedFields"] = json!([entry(manager, api_version, &mine, now)]);
        return Ok(obj);
    };
    let mut others: Vec<Value> = Vec::new();
    let mut before: BTreeSet<Path> = BTreeSet::new();
    let mut conflicts = Vec::new();
    for mut e in entries(live) {
        let set = from_fields_v1(&e["fieldsV1"]);
        if e["manager"] == manager && e["operation"] == "Apply" {
            before = set;
            continue;
        }
        let mut kept = set.clone();
        if e["operation"] == "Apply" {
            for p in set.intersection(&mine) {
                if resolve(live, p) != resolve(applied, p) {
                    if force {
                        kept.remove(p);
                    } else {
                        let who = e["manager"].as_str().unwrap_or_default().to_string();
                        conflicts.push((who, render(p)));
                    }
                }
            }
        }
        e["fieldsV1"] = to_fields_v1(&kept);
        if !kept.is_empty() {
            others.push(e);
        }
    }
    if !conflicts.is_empty() {
        return Err(Conflicts(conflicts));
    }
    let owned_by_others: BTreeSet<Path> = others
        .iter()
        .flat_map(|e| from_fields_v1(&e["fieldsV1"]))
        .collect();
    let mut obj = live.clone();
    for gone in before.difference(&mine) {
        if !owned_by_others.contains(gone) {
            remove(&mut obj, gone);
        }
    }
    strategic(&mut obj, applied);
    others.push(entry(manager, api_version, &mine, now));
    obj["metadata"]["managedFields"] = Value::Array(others);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: &str = "2026-01-01T00:00:00Z";

    fn deploy(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "labels": {"app": "d"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    #[test]
    fn fields_v1_round_trips() {
        let set = field_set(&deploy(1, "x"));
        let v1 = to_fields_v1(&set);
        assert_eq!(
            v1,
            json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {},
                "f:template": {"f:spec": {"f:containers": {"k:{\"name\":\"c\"}": {"f:image": {}, "f:name": {}}}}}}})
        );
        assert_eq!(from_fields_v1(&v1), set);
    }

    #[test]
    fn apply_creates_then_conflicts_with_another_manager() {
        let made = apply(None, &deploy(1, "x"), "a", false, NOW).unwrap();
        assert_eq!(made["metadata"]["managedFields"][0]["manager"], "a");
        assert_eq!(made["metadata"]["managedFields"][0]["operation"], "Apply");
        let err = apply(Some(&made), &deploy(2, "x"), "b", false, NOW).unwrap_err();
        assert_eq!(
            err.message(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        let forced = apply(Some(&made), &deploy(2, "x"), "b", true, NOW).unwrap();
        assert_eq!(forced["spec"]["replicas"], 2);
        let managers: Vec<&str> = forced["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["a", "b"]);
        // The same value is shared, not a conflict.
        assert!(apply(Some(&made), &deploy(1, "x"), "c", false, NOW).is_ok());
    }

    #[test]
    fn apply_removes_fields_the_manager_dropped() {
        let made = apply(None, &deploy(1, "x"), "a", false, NOW).unwrap();
        let mut less = deploy(1, "x");
        less["metadata"]["labels"] = json!({});
        less["metadata"].as_object_mut().unwrap().remove("labels");
        let after = apply(Some(&made), &less, "a", false, NOW).unwrap();
        assert_eq!(after["metadata"]["labels"], json!({}));
        assert_eq!(
            after["spec"]["template"]["spec"]["containers"][0]["image"],
            "x"
        );
    }
}
