//! What a simulated node puts into its cluster's Kubernetes API: the Node its kubelet
//! registers and keeps (labels, taints, addresses, nodeInfo, capacity, the Ready condition as
//! the kubelet and kube-controller-manager set it) and, on a control plane, the mirror pods of
//! the static pods Talos renders (read from the node's own COSI resources, so the pods carry
//! the very images and `talos.dev/config-version` the node's `StaticPods` have).

use serde_json::{json, Map, Value};

use super::store::{now, Key, Objects};
use crate::node::Node;

/// The kernel the simulated nodes run (as `/proc/sys/kernel/osrelease` has it).
const KERNEL: &str = "6.18.3-talos";
/// The container runtime the kubelet reports.
const RUNTIME: &str = "containerd://2.1.4";
/// CPUs of a simulated machine.
const CPUS: u64 = 2;

/// What the controllers know of one configured node; kept per node, so lean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Which cluster (a hash of the cluster CA).
    pub cluster: u64,
    /// The Kubernetes node name (Talos's `Nodenames`: the hostname, lower-cased).
    pub name: String,
    pub ip: String,
    pub control_plane: bool,
    /// `cluster.allowSchedulingOnControlPlanes`.
    pub schedulable_control_plane: bool,
    pub kubelet_version: String,
    pub talos_version: String,
    /// `machine.nodeLabels`.
    pub labels: Vec<(String, String)>,
    /// Seed of the node's boot-stable identifiers.
    pub node_id: String,
    pub boots: u64,
    pub disk_bytes: u64,
}

/// Whether a node's kubelet posts Ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Down, off, rebooting, or its kubelet unhealthy: the controller manager marks it Unknown.
    Unknown,
}

/// A stable number for text (the cluster CA: nodes keep a hash, not the certificate).
pub fn hash(text: &str) -> u64 {
    crate::world::mix(0, text)
}

impl Facts {
    /// The node's facts when it is configured (its kubelet would run).
    pub fn of(node: &Node) -> Option<Facts> {
        let st = node.state();
        let cfg = st.config.as_ref()?;
        let doc = cfg.v1alpha1();
        let hw = &node.spec.hardware;
        let name = st
            .hostname(hw)
            .unwrap_or_else(|| crate::node::state::stable_hostname(&st.node_id))
            .to_lowercase();
        let image = crate::cosi::content::kubelet::image(doc);
        let kubelet_version = image
            .rsplit_once(':')
            .map(|(_, t)| t.to_string())
            .unwrap_or_else(|| crate::world::KUBERNETES_VERSION.into());
        let labels = doc
            .and_then(|d| d.get("machine")?.get("nodeLabels")?.as_mapping())
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_string(), yaml_text(v))))
                    .collect()
            })
            .unwrap_or_default();
        let schedulable_control_plane = doc
            .and_then(|d| {
                d.get("cluster")?
                    .get("allowSchedulingOnControlPlanes")?
                    .as_bool()
            })
            .unwrap_or(false);
        let ip = crate::cosi::content::ips(hw)
            .into_iter()
            .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
            .unwrap_or_else(|| node.name());
        let disk = st
            .installed_disk
            .as_ref()
            .and_then(|d| hw.disks.iter().find(|x| &x.name == d))
            .or(hw.disks.first())
            .map_or(0, |d| d.size);
        Some(Facts {
            cluster: hash(&cfg.cluster_ca().0),
            name,
            ip,
            control_plane: cfg.is_control_plane(),
            schedulable_control_plane,
            kubelet_version,
            talos_version: st.version.clone(),
            labels,
            node_id: st.node_id.clone(),
            boots: st.boots,
            disk_bytes: disk,
        })
    }

    fn labels(&self) -> Map<String, Value> {
        let mut l = Map::new();
        l.insert("beta.kubernetes.io/arch".into(), "amd64".into());
        l.insert("beta.kubernetes.io/os".into(), "linux".into());
        l.insert("kubernetes.io/arch".into(), "amd64".into());
        l.insert("kubernetes.io/hostname".into(), self.name.clone().into());
        l.insert("kubernetes.io/os".into(), "linux".into());
        if self.control_plane {
            l.insert("node-role.kubernetes.io/control-plane".into(), "".into());
        }
        for (k, v) in &self.labels {
            l.insert(k.clone(), v.clone().into());
        }
        l
    }

    fn node_info(&self) -> Value {
        let seed = crate::world::mix(0, &self.node_id);
        json!({
            "architecture": "amd64",
            "bootID": crate::world::uuid(seed, &format!("boot/{}", self.boots)),
            "containerRuntimeVersion": RUNTIME,
            "kernelVersion": KERNEL,
            "kubeProxyVersion": "",
            "kubeletVersion": self.kubelet_version,
            "machineID": crate::world::hex(seed, "machine-id", 32),
            "operatingSystem": "linux",
            "osImage": format!("Talos ({})", self.talos_version),
            "systemUUID": crate::world::uuid(seed, "system-uuid"),
        })
    }

    fn resources(&self) -> (Value, Value) {
        let mem = crate::world::MEM_TOTAL_KB;
        let reserved = if self.control_plane { 512 } else { 384 } * 1024 + 100 * 1024;
        let disk_ki = self.disk_bytes / 1024;
        let capacity = json!({
            "cpu": CPUS.to_string(),
            "ephemeral-storage": format!("{disk_ki}Ki"),
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": format!("{mem}Ki"),
            "pods": "110",
        });
        let allocatable = json!({
            "cpu": format!("{}m", CPUS * 1000 - 50),
            "ephemeral-storage": format!("{}Ki", disk_ki.saturating_sub(256 * 1024)),
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": format!("{}Ki", mem.saturating_sub(reserved)),
            "pods": "110",
        });
        (capacity, allocatable)
    }
}

/// A config value as label text (`nodeLabels` values are strings, numbers or booleans).
fn yaml_text(v: &serde_yaml_ng::Value) -> String {
    match v {
        serde_yaml_ng::Value::String(s) => s.clone(),
        serde_yaml_ng::Value::Null => String::new(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim_end()
            .to_string(),
    }
}

/// The Node's conditions; a condition keeps its `lastTransitionTime` while its status stays.
fn conditions(ready: Readiness, before: &Value) -> Value {
    let at = now();
    let since = |ty: &str, status: &str| {
        before["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == ty && c["status"] == status))
            .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_string))
            .unwrap_or_else(|| at.clone())
    };
    let cond = |ty: &str, status: &str, reason: &str, message: &str| {
        let t = since(ty, status);
        json!({"type": ty, "status": status, "reason": reason, "message": message,
            "lastHeartbeatTime": t, "lastTransitionTime": t})
    };
    match ready {
        Readiness::Ready => json!([
            cond(
                "MemoryPressure",
                "False",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available"
            ),
            cond(
                "DiskPressure",
                "False",
                "KubeletHasNoDiskPressure",
                "kubelet has no disk pressure"
            ),
            cond(
                "PIDPressure",
                "False",
                "KubeletHasSufficientPID",
                "kubelet has sufficient PID available"
            ),
            cond(
                "Ready",
                "True",
                "KubeletReady",
                "kubelet is posting ready status"
            ),
        ]),
        Readiness::Unknown => {
            let gone = "Kubelet stopped posting node status.";
            json!([
                cond("MemoryPressure", "Unknown", "NodeStatusUnknown", gone),
                cond("DiskPressure", "Unknown", "NodeStatusUnknown", gone),
                cond("PIDPressure", "Unknown", "NodeStatusUnknown", gone),
                cond("Ready", "Unknown", "NodeStatusUnknown", gone),
            ])
        }
    }
}

/// The taints a node carries: the control plane's (unless scheduling on control planes is
/// allowed), `unschedulable` while cordoned, `unreachable` while its status is Unknown.
fn taints(f: &Facts, unschedulable: bool, ready: Readiness) -> Vec<Value> {
    let mut out = Vec::new();
    if f.control_plane && !f.schedulable_control_plane {
        out.push(json!({"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}));
    }
    if unschedulable {
        out.push(json!({"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable"}));
    }
    if ready == Readiness::Unknown {
        out.push(json!({"effect": "NoSchedule", "key": "node.kubernetes.io/unreachable"}));
    }
    out
}

/// Keeps each Node's `node.kubernetes.io/unschedulable` taint with its `spec.unschedulable`, as
/// kube-controller-manager does: a cordon or uncordon through the API changes only the spec.
pub fn taint_unschedulable(objects: &Objects) {
    const KEY: &str = "node.kubernetes.io/unschedulable";
    let tainted = |n: &Value| {
        n["spec"]["taints"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["key"] == KEY))
    };
    for node in objects.list("nodes", None).0 {
        let cordoned = node["spec"]["unschedulable"].as_bool() == Some(true);
        if cordoned == tainted(&node) {
            continue;
        }
        let name = node["metadata"]["name"].as_str().unwrap_or_default();
        objects.modify(&Key::new("nodes", "", name), |n| {
            let mut taints: Vec<Value> =
                n["spec"]["taints"].as_array().cloned().unwrap_or_default();
            taints.retain(|t| t["key"] != KEY);
            if cordoned {
                taints.push(json!({"effect": "NoSchedule", "key": KEY}));
            }
            match taints.is_empty() {
                true => {
                    if let Some(spec) = n["spec"].as_object_mut() {
                        spec.remove("taints");
                    }
                }
                false => n["spec"]["taints"] = Value::Array(taints),
            }
        });
    }
}

/// Brings the node's Node object to its facts and readiness: created when missing; labels
/// merged (a user's stay), taints and status the controllers' own, `spec.unschedulable` the
/// user's (never written here).
pub fn apply_node(objects: &Objects, f: &Facts, ready: Readiness) {
    let key = Key::new("nodes", "", &f.name);
    let shape = |n: &mut Value| {
        let unschedulable = n["spec"]["unschedulable"].as_bool() == Some(true);
        let mut labels = n["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        labels.extend(f.labels());
        n["metadata"]["labels"] = Value::Object(labels);
        let t = taints(f, unschedulable, ready);
        match t.is_empty() {
            true => {
                if let Some(spec) = n["spec"].as_object_mut() {
                    spec.remove("taints");
                }
            }
            false => n["spec"]["taints"] = Value::Array(t),
        }
        let (capacity, allocatable) = f.resources();
        let conds = conditions(ready, n);
        n["status"] = json!({
            "addresses": [
                {"type": "InternalIP", "address": f.ip},
                {"type": "Hostname", "address": f.name},
            ],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": conds,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": f.node_info(),
        });
    };
    if objects.modify(&key, shape).is_some() {
        return;
    }
    let mut fresh = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": f.name,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {},
    });
    shape(&mut fresh);
    let _ = objects.create(&key, fresh);
}

/// Whether a Node object says Ready and schedulable (a cordon is `spec.unschedulable`).
pub fn node_ready(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .is_some_and(|c| c["status"] == "True")
}

/// The static pods a control plane's kubelet runs, from its COSI resources: each
/// `StaticPods` pod with the `StaticPodStatuses` status when the kubelet reports one; the
/// config version annotation is the node's current one for that component.
pub fn static_pods(node: &Node) -> Vec<(String, Value, Option<Value>)> {
    // Only the types read here: a control plane nobody asks for its resources keeps no others.
    let store = node.synced_only(crate::cosi::store::Only::Kinds(&[
        ("k8s", "StaticPods.kubernetes.talos.dev"),
        ("k8s", "StaticPodStatuses.kubernetes.talos.dev"),
        ("controlplane", "APIServerConfigs.kubernetes.talos.dev"),
        (
            "controlplane",
            "ControllerManagerConfigs.kubernetes.talos.dev",
        ),
        ("controlplane", "SchedulerConfigs.kubernetes.talos.dev"),
    ]));
    let yaml = |r: &talm_wire::proto::cosi::resource::Resource| -> Value {
        let text = r.spec.as_ref().map_or("", |s| s.yaml_spec.as_str());
        serde_yaml_ng::from_str(text).unwrap_or(Value::Null)
    };
    let pods: Vec<(String, Value)> =
        store.with_kind("k8s", "StaticPods.kubernetes.talos.dev", |k| {
            k.items()
                .map(|r| {
                    (
                        r.metadata
                            .as_ref()
                            .map(|m| m.id.clone())
                            .unwrap_or_default(),
                        yaml(r),
                    )
                })
                .collect()
        });
    let statuses: Vec<(String, Value)> =
        store.with_kind("k8s", "StaticPodStatuses.kubernetes.talos.dev", |k| {
            k.items()
                .map(|r| {
                    (
                        r.metadata
                            .as_ref()
                            .map(|m| m.id.clone())
                            .unwrap_or_default(),
                        yaml(r),
                    )
                })
                .collect()
        });
    let version = |ty: &str, id: &str| {
        store.with_kind("controlplane", ty, |k| {
            k.item(id)
                .and_then(|r| r.metadata.as_ref().map(|m| m.version.clone()))
        })
    };
    pods.into_iter()
        .map(|(id, pod)| {
            let mut pod = match pod.get("pod") {
                Some(p) => p.clone(),
                None => pod,
            };
            let config = match id.as_str() {
                "kube-apiserver" => "APIServerConfigs.kubernetes.talos.dev",
                "kube-controller-manager" => "ControllerManagerConfigs.kubernetes.talos.dev",
                _ => "SchedulerConfigs.kubernetes.talos.dev",
            };
            if let Some(v) = version(config, &id) {
                pod["metadata"]["annotations"]["talos.dev/config-version"] = v.into();
            }
            let status = statuses
                .iter()
                .find(|(sid, _)| {
                    sid.strip_prefix("kube-system/")
                        .is_some_and(|rest| rest.starts_with(&format!("{id}-")))
                })
                .map(|(_, s)| s.clone());
            (id, pod, status)
        })
        .collect()
}

/// A static pod's mirror pod as the kubelet posts it: `<component>-<node>` in kube-system,
/// labelled and annotated as the pod, plus the mirror annotations, owned by the Node; its
/// status the kubelet's (Ready only while the node is).
pub fn mirror_pod(
    f: &Facts,
    node_uid: &str,
    component: &str,
    pod: &Value,
    status: &Value,
    ready: bool,
) -> Value {
    let mut meta = pod["metadata"].as_object().cloned().unwrap_or_default();
    let name = format!("{component}-{}", f.name);
    let hash = crate::world::hex(crate::world::mix(0, &pod.to_string()), "config.hash", 32);
    let mut annotations = meta
        .get("annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert("kubernetes.io/config.hash".into(), hash.clone().into());
    annotations.insert("kubernetes.io/config.mirror".into(), hash.into());
    annotations.insert("kubernetes.io/config.source".into(), "file".into());
    meta.insert("annotations".into(), Value::Object(annotations));
    meta.insert("name".into(), name.into());
    meta.insert("namespace".into(), "kube-system".into());
    meta.insert(
        "ownerReferences".into(),
        json!([{"apiVersion": "v1", "kind": "Node", "name": f.name, "uid": node_uid, "controller": true}]),
    );
    let mut spec = pod["spec"].clone();
    integral(&mut spec);
    spec["nodeName"] = f.name.clone().into();
    let mut status = status.clone();
    if !ready {
        set_ready(&mut status, false);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status})
}

/// Sets a pod status's Ready and ContainersReady conditions and its containers' `ready`.
pub fn set_ready(status: &mut Value, ready: bool) {
    let text = if ready { "True" } else { "False" };
    if let Some(conds) = status["conditions"].as_array_mut() {
        for c in conds
            .iter_mut()
            .filter(|c| c["type"] == "Ready" || c["type"] == "ContainersReady")
        {
            if c["status"] != text {
                c["status"] = text.into();
                c["lastTransitionTime"] = now().into();
            }
        }
    }
    if let Some(cs) = status["containerStatuses"].as_array_mut() {
        for c in cs {
            c["ready"] = ready.into();
        }
    }
}

/// Turns whole floats into integers: Talos's renders are Go maps through JSON (numbers are
/// floats), but the API serves a Pod's integer fields as integers, which clients insist on.
pub fn integral(v: &mut Value) {
    match v {
        Value::Number(n) => {
            if let Some(f) = n
                .as_f64()
                .filter(|f| n.is_f64() && f.fract() == 0.0 && f.abs() < 9e15)
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral),
        Value::Object(m) => m.values_mut().for_each(integral),
        _ => {}
    }
}
