//! The workload controllers of a simulated cluster, in one pass over its objects: DaemonSets
//! (a pod per eligible node), Deployments (a ReplicaSet `<name>-<template hash>`, older ones
//! removed), ReplicaSets (their replicas kept, spread over Ready schedulable nodes), the
//! scheduling of bare pods, pods' status following their node (Ready while it is, unless a
//! fault holds them back), the garbage collection of pods whose owner or node is gone, and the
//! `status` of DaemonSets, ReplicaSets, Deployments and PodDisruptionBudgets.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Map, Value};

use super::faults::ClusterFaults;
use super::model::{node_ready, set_ready};
use super::pods::{self, Place};
use super::store::{Key, Object, Objects};

/// A Node as the scheduler sees it.
pub struct Candidate {
    pub name: String,
    pub ip: String,
    pub ready: bool,
    pub unschedulable: bool,
    pub taints: Vec<Value>,
    pub labels: Map<String, Value>,
}

impl Candidate {
    fn of(node: &Value) -> Candidate {
        let ip = node["status"]["addresses"]
            .as_array()
            .and_then(|a| a.iter().find(|x| x["type"] == "InternalIP"))
            .and_then(|x| x["address"].as_str())
            .unwrap_or("")
            .to_string();
        Candidate {
            name: text(node, &["metadata", "name"]),
            ip,
            ready: node_ready(node),
            unschedulable: node["spec"]["unschedulable"].as_bool() == Some(true),
            taints: node["spec"]["taints"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            labels: node["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn place(&self) -> Place<'_> {
        Place {
            node: &self.name,
            ip: &self.ip,
        }
    }
}

fn text(v: &Value, path: &[&str]) -> String {
    path.iter()
        .try_fold(v, |cur, k| cur.get(*k))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Whether `toleration` tolerates `taint` (Kubernetes' matching: key, operator, effect).
fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = toleration["effect"].as_str().unwrap_or("");
    if !effect.is_empty() && taint["effect"].as_str() != Some(effect) {
        return false;
    }
    let key = toleration["key"].as_str().unwrap_or("");
    match toleration["operator"].as_str().unwrap_or("Equal") {
        "Exists" => key.is_empty() || taint["key"].as_str() == Some(key),
        _ => {
            taint["key"].as_str() == Some(key)
                && toleration["value"].as_str().unwrap_or("")
                    == taint["value"].as_str().unwrap_or("")
        }
    }
}

/// Whether a pod with `spec` may be placed on `node`: every NoSchedule/NoExecute taint
/// tolerated and its `nodeSelector` matched.
fn fits(spec: &Value, node: &Candidate) -> bool {
    let tolerations = spec["tolerations"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let tainted = node.taints.iter().any(|t| {
        matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute"))
            && !tolerations.iter().any(|tol| tolerates(tol, t))
    });
    let selected = spec["nodeSelector"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| node.labels.get(k) == Some(v)));
    !tainted && selected
}

/// The tolerations the DaemonSet controller adds to its pods.
fn daemon_tolerations(spec: &mut Value) {
    let host = spec["hostNetwork"].as_bool() == Some(true);
    let mut add = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if host {
        add.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let list = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let mut list = list;
    for (key, effect) in add {
        if !list
            .iter()
            .any(|t| t["key"] == key && t["effect"] == effect)
        {
            list.push(json!({"key": key, "operator": "Exists", "effect": effect}));
        }
    }
    spec["tolerations"] = Value::Array(list);
}

/// The DaemonSet generation a pod was made from (its `pod-template-generation` label).
pub fn template_generation(pod: &Value) -> Option<i64> {
    pod["metadata"]["labels"]["pod-template-generation"]
        .as_str()?
        .parse()
        .ok()
}

fn uid(v: &Value) -> String {
    text(v, &["metadata", "uid"])
}

/// The uid of the object's controlling owner, and its kind.
fn controller(v: &Value) -> Option<(String, String)> {
    v["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
        .map(|o| (text(o, &["kind"]), text(o, &["uid"])))
}

/// Whether `labels` match a selector's `matchLabels` (expressions: `In`, `Exists` roughly).
pub fn matches(selector: &Value, labels: &Value) -> bool {
    let by_label = selector["matchLabels"]
        .as_object()
        .is_none_or(|m| m.iter().all(|(k, v)| labels.get(k) == Some(v)));
    let by_expr = selector["matchExpressions"].as_array().is_none_or(|es| {
        es.iter().all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let have = labels.get(key);
            let values = e["values"].as_array().cloned().unwrap_or_default();
            match e["operator"].as_str().unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(h)),
                "NotIn" => !have.is_some_and(|h| values.contains(h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            }
        })
    });
    by_label && by_expr
}

fn owner_ref(kind: &str, api: &str, owner: &Value) -> Value {
    json!([{
        "apiVersion": api,
        "kind": kind,
        "name": text(owner, &["metadata", "name"]),
        "uid": uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// Pods by the uid of their controlling owner.
type Owned<'a> = HashMap<String, Vec<&'a Value>>;

/// Everything one pass works from.
struct Pass<'a> {
    objects: &'a Objects,
    faults: &'a ClusterFaults,
    nodes: Vec<Candidate>,
    /// Where each node is in `nodes`, by name.
    index: HashMap<String, usize>,
}

impl Pass<'_> {
    fn node(&self, name: &str) -> Option<&Candidate> {
        self.index.get(name).map(|i| &self.nodes[*i])
    }

    fn ready_for(&self, ns: &str, name: &str, node: &Candidate) -> bool {
        node.ready && !self.faults.never_ready(ns, name)
    }

    /// Creates a pod from `template` on `node`.
    fn create_pod(
        &self,
        ns: &str,
        name: &str,
        template: &Value,
        owner: Value,
        node: &Candidate,
        extra: Map<String, Value>,
    ) {
        let mut meta = template["metadata"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        labels.extend(extra);
        meta.insert("labels".into(), Value::Object(labels));
        meta.insert("ownerReferences".into(), owner);
        meta.remove("name");
        let mut spec = template["spec"].clone();
        spec["nodeName"] = node.name.clone().into();
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec});
        let ready = self.ready_for(ns, name, node);
        pod["status"] = pods::status(&pod, name, node.place(), ready);
        let _ = self.objects.create(&Key::new("pods", ns, name), pod);
    }

    fn daemonset(&self, ds: &Value, owned: &Owned) {
        let ns = text(ds, &["metadata", "namespace"]);
        let ds_uid = uid(ds);
        let generation = ds["metadata"]["generation"].as_i64().unwrap_or(1);
        let mut template = ds["spec"]["template"].clone();
        daemon_tolerations(&mut template["spec"]);
        let mine = owned.get(&ds_uid).map_or(&[][..], Vec::as_slice);
        let mut placed: HashSet<String> = HashSet::new();
        for p in mine {
            let node = text(p, &["spec", "nodeName"]);
            let current = template_generation(p) == Some(generation);
            if self.node(&node).is_none() || !current || !placed.insert(node) {
                self.objects
                    .delete(&Key::new("pods", &ns, &text(p, &["metadata", "name"])));
            }
        }
        let name = text(ds, &["metadata", "name"]);
        for node in self.nodes.iter().filter(|n| !placed.contains(&n.name)) {
            if !fits(&template["spec"], node) {
                continue;
            }
            let pod = format!(
                "{name}-{}",
                crate::world::suffix(crate::world::mix(0, &ds_uid), &node.name, 5)
            );
            let mut extra = Map::new();
            extra.insert(
                "pod-template-generation".into(),
                generation.to_string().into(),
            );
            extra.insert(
                "controller-revision-hash".into(),
                crate::world::suffix(crate::world::mix(0, &template.to_string()), "revision", 10)
                    .into(),
            );
            self.create_pod(
                &ns,
                &pod,
                &template,
                owner_ref("DaemonSet", "apps/v1", ds),
                node,
                extra,
            );
        }
    }

    /// Keeps a Deployment's ReplicaSet for its current template; older ones go with their pods.
    fn deployment(&self, d: &Value, sets: &[Object]) {
        let ns = text(d, &["metadata", "namespace"]);
        let name = text(d, &["metadata", "name"]);
        let d_uid = uid(d);
        let template = &d["spec"]["template"];
        let hash = crate::world::suffix(
            crate::world::mix(0, &template.to_string()),
            "pod-template-hash",
            10,
        );
        let rs_name = format!("{name}-{hash}");
        for old in sets.iter().filter(|s| {
            controller(s).is_some_and(|(_, u)| u == d_uid)
                && text(s, &["metadata", "name"]) != rs_name
        }) {
            self.objects.delete(&Key::new(
                "replicasets.apps",
                &ns,
                &text(old, &["metadata", "name"]),
            ));
        }
        let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1);
        let mut t = template.clone();
        t["metadata"]["labels"]["pod-template-hash"] = hash.clone().into();
        let mut selector = d["spec"]["selector"].clone();
        selector["matchLabels"]["pod-template-hash"] = hash.clone().into();
        let key = Key::new("replicasets.apps", &ns, &rs_name);
        let updated = self.objects.modify(&key, |rs| {
            rs["spec"]["replicas"] = replicas.into();
        });
        if updated.is_none() {
            let mut labels = t["metadata"]["labels"].clone();
            labels["pod-template-hash"] = hash.into();
            let rs = json!({
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": rs_name,
                    "namespace": ns,
                    "labels": labels,
                    "annotations": {"deployment.kubernetes.io/desired-replicas": replicas.to_string()},
                    "ownerReferences": owner_ref("Deployment", "apps/v1", d),
                },
                "spec": {"replicas": replicas, "selector": selector, "template": t},
            });
            let _ = self.objects.create(&key, rs);
        }
    }

    /// Keeps a ReplicaSet's replicas: missing pods placed on the least loaded fitting node,
    /// extra ones (not ready first) removed.
    fn replicaset(&self, rs: &Value, owned: &Owned) {
        let ns = text(rs, &["metadata", "namespace"]);
        let name = text(rs, &["metadata", "name"]);
        let rs_uid = uid(rs);
        let want = rs["spec"]["replicas"].as_i64().unwrap_or(1).max(0) as usize;
        let mut mine: Vec<&Value> = owned.get(&rs_uid).cloned().unwrap_or_default();
        if mine.len() > want {
            mine.sort_by_key(|p| pods::is_ready(p));
            for p in &mine[..mine.len() - want] {
                self.objects
                    .delete(&Key::new("pods", &ns, &text(p, &["metadata", "name"])));
            }
            return;
        }
        let template = &rs["spec"]["template"];
        let mut load: HashMap<String, usize> = HashMap::new();
        for p in &mine {
            *load.entry(text(p, &["spec", "nodeName"])).or_default() += 1;
        }
        let mut taken: HashSet<String> = mine
            .iter()
            .map(|p| text(p, &["metadata", "name"]))
            .collect();
        let mut seq = 0u64;
        for _ in mine.len()..want {
            let Some(node) = self
                .nodes
                .iter()
                .filter(|n| n.ready && !n.unschedulable && fits(&template["spec"], n))
                .min_by_key(|n| (load.get(&n.name).copied().unwrap_or(0), n.name.clone()))
            else {
                return;
            };
            let pod = loop {
                seq += 1;
                let p = format!(
                    "{name}-{}",
                    crate::world::suffix(
                        crate::world::mix(0, &rs_uid),
                        &format!("{}#{seq}", self.objects.version()),
                        5
                    )
                );
                if !taken.contains(&p) && self.objects.get(&Key::new("pods", &ns, &p)).is_none() {
                    break p;
                }
            };
            taken.insert(pod.clone());
            *load.entry(node.name.clone()).or_default() += 1;
            self.create_pod(
                &ns,
                &pod,
                template,
                owner_ref("ReplicaSet", "apps/v1", rs),
                node,
                Map::new(),
            );
        }
    }

    /// Pods follow their node: bare ones get one, orphans and those of vanished nodes go,
    /// readiness follows the node. Mirror pods are the node controller's.
    fn pods(&self, pods: &[Object], owners: &HashSet<String>) {
        for p in pods {
            let ns = text(p, &["metadata", "namespace"]);
            let name = text(p, &["metadata", "name"]);
            let key = Key::new("pods", &ns, &name);
            if p["metadata"]["annotations"]
                .get("kubernetes.io/config.mirror")
                .is_some()
            {
                continue;
            }
            if let Some((_, owner)) = controller(p) {
                if !owners.contains(&owner) {
                    self.objects.delete(&key);
                    continue;
                }
            }
            let node_name = text(p, &["spec", "nodeName"]);
            if node_name.is_empty() {
                let chosen = self
                    .nodes
                    .iter()
                    .filter(|n| n.ready && !n.unschedulable && fits(&p["spec"], n))
                    .min_by_key(|n| crate::world::mix(0, &format!("{name}/{}", n.name)));
                if let Some(n) = chosen {
                    let ready = self.ready_for(&ns, &name, n);
                    self.objects.modify(&key, |p| {
                        p["spec"]["nodeName"] = n.name.clone().into();
                        p["status"] = pods::status(p, &name, n.place(), ready);
                    });
                }
                continue;
            }
            let Some(node) = self.node(&node_name) else {
                self.objects.delete(&key);
                continue;
            };
            let ready = self.ready_for(&ns, &name, node);
            if p["status"]["phase"].as_str().is_none_or(str::is_empty) {
                self.objects.modify(&key, |p| {
                    p["status"] = pods::status(p, &name, node.place(), ready)
                });
            } else if pods::is_ready(p) != ready {
                self.objects
                    .modify(&key, |p| set_ready(&mut p["status"], ready));
            }
        }
    }
}

/// One pass of every workload controller over a cluster's objects.
pub fn reconcile(objects: &Objects, faults: &ClusterFaults) {
    super::model::taint_unschedulable(objects);
    let nodes: Vec<Candidate> = objects
        .list("nodes", None)
        .0
        .iter()
        .map(|n| Candidate::of(n))
        .collect();
    let index = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let pass = Pass {
        objects,
        faults,
        nodes,
        index,
    };
    let (deployments, _) = objects.list("deployments.apps", None);
    let (sets, _) = objects.list("replicasets.apps", None);
    for d in &deployments {
        pass.deployment(d, &sets);
    }
    let (sets, _) = objects.list("replicasets.apps", None);
    let deployment_uids: HashSet<String> = deployments.iter().map(|d| uid(d)).collect();
    for s in &sets {
        if controller(s).is_some_and(|(k, u)| k == "Deployment" && !deployment_uids.contains(&u)) {
            objects.delete(&Key::new(
                "replicasets.apps",
                &text(s, &["metadata", "namespace"]),
                &text(s, &["metadata", "name"]),
            ));
        }
    }
    let (daemonsets, _) = objects.list("daemonsets.apps", None);
    let (pods, _) = objects.list("pods", None);
    let mut owned: Owned = HashMap::new();
    for p in &pods {
        if let Some((_, owner)) = controller(p) {
            owned.entry(owner).or_default().push(p);
        }
    }
    for ds in &daemonsets {
        pass.daemonset(ds, &owned);
    }
    let (sets, _) = objects.list("replicasets.apps", None);
    for s in &sets {
        pass.replicaset(s, &owned);
    }
    let owners: HashSet<String> = daemonsets
        .iter()
        .chain(&sets)
        .map(|o| uid(o))
        .chain(objects.list("nodes", None).0.iter().map(|n| uid(n)))
        .collect();
    let (pods, _) = objects.list("pods", None);
    pass.pods(&pods, &owners);
    let (pods, _) = objects.list("pods", None);
    super::status::write(objects, faults, &pods);
}
