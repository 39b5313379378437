//! The `status` the controllers report for workloads, from the pods they own: DaemonSets
//! (scheduled, ready, updated), ReplicaSets and Deployments (replicas, ready, available, the
//! Available and Progressing conditions), PodDisruptionBudgets (`pdb`), and the budgets the
//! `blocking_pdb` fault keeps. A status is rewritten only when it changes (timestamps of
//! conditions kept), so a pass over an unchanged cluster writes nothing.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::faults::ClusterFaults;
use super::pods::is_ready;
use super::store::{now, Key, Object, Objects};
use super::workloads::matches;

fn text(v: &Value, path: &[&str]) -> String {
    path.iter()
        .try_fold(v, |cur, k| cur.get(*k))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

fn key_of(resource: &str, v: &Value) -> Key {
    Key::new(
        resource,
        &text(v, &["metadata", "namespace"]),
        &text(v, &["metadata", "name"]),
    )
}

/// Pods by the uid of their controlling owner.
fn by_owner(pods: &[Object]) -> HashMap<String, Vec<&Value>> {
    let mut out: HashMap<String, Vec<&Value>> = HashMap::new();
    for p in pods {
        let owner = p["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|o| o.iter().find(|o| o["controller"] == true))
            .map(|o| text(o, &["uid"]));
        if let Some(uid) = owner {
            out.entry(uid).or_default().push(p);
        }
    }
    out
}

/// Inserts `n` under `k` unless it is zero (the API's `omitempty` counts).
fn count(m: &mut Map<String, Value>, k: &str, n: usize) {
    if n > 0 {
        m.insert(k.into(), n.into());
    }
}

/// A condition that keeps its `lastTransitionTime` while its status stays.
fn condition(before: &Value, ty: &str, status: &str, reason: &str, message: &str) -> Value {
    let since = before["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == ty && c["status"] == status))
        .map(|c| {
            (
                text(c, &["lastTransitionTime"]),
                text(c, &["lastUpdateTime"]),
            )
        });
    let (t, u) = since.unwrap_or_else(|| (now(), now()));
    json!({"type": ty, "status": status, "reason": reason, "message": message,
        "lastTransitionTime": t, "lastUpdateTime": u})
}

fn set_status(objects: &Objects, key: &Key, status: Value) {
    objects.modify(key, |o| o["status"] = status);
}

fn daemonsets(objects: &Objects, owned: &HashMap<String, Vec<&Value>>) {
    for ds in objects.list("daemonsets.apps", None).0 {
        let generation = ds["metadata"]["generation"].as_i64().unwrap_or(1);
        let pods = owned
            .get(&text(&ds, &["metadata", "uid"]))
            .cloned()
            .unwrap_or_default();
        let ready = pods.iter().filter(|p| is_ready(p)).count();
        let updated = pods
            .iter()
            .filter(|p| super::workloads::template_generation(p) == Some(generation))
            .count();
        let mut s = Map::new();
        s.insert("currentNumberScheduled".into(), pods.len().into());
        s.insert("desiredNumberScheduled".into(), pods.len().into());
        count(&mut s, "numberAvailable", ready);
        s.insert("numberMisscheduled".into(), 0.into());
        s.insert("numberReady".into(), ready.into());
        count(&mut s, "numberUnavailable", pods.len() - ready);
        s.insert("observedGeneration".into(), generation.into());
        count(&mut s, "updatedNumberScheduled", updated);
        set_status(objects, &key_of("daemonsets.apps", &ds), Value::Object(s));
    }
}

/// ReplicaSets' status; their (replicas, ready) by uid for the Deployments.
fn replicasets(
    objects: &Objects,
    owned: &HashMap<String, Vec<&Value>>,
) -> HashMap<String, (String, usize, usize)> {
    let mut out = HashMap::new();
    for rs in objects.list("replicasets.apps", None).0 {
        let uid = text(&rs, &["metadata", "uid"]);
        let pods = owned.get(&uid).cloned().unwrap_or_default();
        let ready = pods.iter().filter(|p| is_ready(p)).count();
        let mut s = Map::new();
        s.insert("replicas".into(), pods.len().into());
        count(&mut s, "fullyLabeledReplicas", pods.len());
        count(&mut s, "readyReplicas", ready);
        count(&mut s, "availableReplicas", ready);
        s.insert(
            "observedGeneration".into(),
            rs["metadata"]["generation"].as_i64().unwrap_or(1).into(),
        );
        set_status(objects, &key_of("replicasets.apps", &rs), Value::Object(s));
        let owner = rs["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|o| o.iter().find(|o| o["controller"] == true))
            .map(|o| text(o, &["uid"]))
            .unwrap_or_default();
        out.insert(owner, (text(&rs, &["metadata", "name"]), pods.len(), ready));
    }
    out
}

fn deployments(objects: &Objects, sets: &HashMap<String, (String, usize, usize)>) {
    for d in objects.list("deployments.apps", None).0 {
        let uid = text(&d, &["metadata", "uid"]);
        let (rs, replicas, ready) = sets.get(&uid).cloned().unwrap_or_default();
        let want = d["spec"]["replicas"].as_i64().unwrap_or(1).max(0) as usize;
        let available = ready + want / 4 >= want;
        let mut s = Map::new();
        s.insert(
            "observedGeneration".into(),
            d["metadata"]["generation"].as_i64().unwrap_or(1).into(),
        );
        count(&mut s, "replicas", replicas);
        count(&mut s, "updatedReplicas", replicas);
        count(&mut s, "readyReplicas", ready);
        count(&mut s, "availableReplicas", ready);
        count(
            &mut s,
            "unavailableReplicas",
            replicas.saturating_sub(ready),
        );
        let avail = match available {
            true => condition(
                &d,
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            ),
            false => condition(
                &d,
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            ),
        };
        let progress = condition(
            &d,
            "Progressing",
            "True",
            "NewReplicaSetAvailable",
            &format!("ReplicaSet {rs:?} has successfully progressed."),
        );
        s.insert("conditions".into(), json!([avail, progress]));
        set_status(objects, &key_of("deployments.apps", &d), Value::Object(s));
    }
}

/// The pods of `namespace` a budget's selector picks.
fn selected<'a>(pods: &'a [Object], namespace: &str, selector: &Value) -> Vec<&'a Value> {
    pods.iter()
        .map(|p| &**p)
        .filter(|p| text(p, &["metadata", "namespace"]) == namespace)
        .filter(|p| matches(selector, &p["metadata"]["labels"]))
        .collect()
}

/// The `blocking_pdb` fault's budgets: `minAvailable` equal to the pods they select.
fn blocking(objects: &Objects, faults: &ClusterFaults, pods: &[Object]) {
    for b in &faults.blocking {
        let labels: Map<String, Value> = b
            .selector
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.clone())))
            .collect();
        let selector = json!({"matchLabels": labels});
        let n = selected(pods, &b.namespace, &selector).len();
        let key = Key::new("poddisruptionbudgets.policy", &b.namespace, &b.name);
        let kept = objects.modify(&key, |p| p["spec"]["minAvailable"] = n.into());
        if kept.is_none() {
            let pdb = json!({
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": b.name, "namespace": b.namespace},
                "spec": {"minAvailable": n, "selector": selector},
            });
            let _ = objects.create(&key, pdb);
        }
    }
}

fn budgets(objects: &Objects, pods: &[Object]) {
    for pdb in objects.list("poddisruptionbudgets.policy", None).0 {
        let status = super::pdb::status(&pdb, &super::api::pdb_status(&pdb, pods));
        set_status(
            objects,
            &key_of("poddisruptionbudgets.policy", &pdb),
            status,
        );
    }
}

/// Writes every workload status from `pods` (the cluster's pods after the controllers' pass).
pub fn write(objects: &Objects, faults: &ClusterFaults, pods: &[Object]) {
    let owned = by_owner(pods);
    daemonsets(objects, &owned);
    let sets = replicasets(objects, &owned);
    deployments(objects, &sets);
    blocking(objects, faults, pods);
    budgets(objects, pods);
}
