//! Server-side printing: the `meta.k8s.io/v1 Table` kube-apiserver answers when `Accept` asks
//! for `as=Table`, with the columns its printers give nodes, pods, workloads, budgets and
//! namespaces (name and age for the rest). Wide columns have priority 1.

use serde_json::{json, Value};

use crate::kube::store::Object;

use super::age::{age, human_duration, unix_of};
use super::resources::Kind;
use super::select::Selector;

/// What each row carries of its object (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

impl Include {
    pub fn parse(v: Option<&str>) -> Include {
        match v {
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            _ => Include::Metadata,
        }
    }
}

/// Whether an `Accept` header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').any(|alt| {
        let params: Vec<&str> = alt.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

fn col(name: &str, ty: &str, format: &str, description: &str, priority: u8) -> Value {
    json!({"name": name, "type": ty, "format": format, "description": description, "priority": priority})
}

fn name_col() -> Value {
    col(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically.",
        0,
    )
}

fn age_col() -> Value {
    col(
        "Age",
        "string",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    )
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn or_none(v: &Value) -> String {
    match v.as_str() {
        Some(x) if !x.is_empty() => x.to_string(),
        _ => "<none>".into(),
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn containers_images(template_spec: &Value) -> (String, String) {
    let cs = template_spec["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let names: Vec<String> = cs.iter().map(|c| s(&c["name"])).collect();
    let images: Vec<String> = cs.iter().map(|c| s(&c["image"])).collect();
    (names.join(","), images.join(","))
}

fn selector_text(sel: &Value) -> String {
    Selector::of_object(sel).map_or_else(|| "<none>".into(), |s| s.render())
}

/// A node's STATUS: its Ready condition, then `SchedulingDisabled` when cordoned.
pub fn node_status(node: &Value) -> String {
    let ready = node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| c["status"].as_str().unwrap_or_default().to_string());
    let mut parts = vec![match ready.as_deref() {
        Some("True") => "Ready",
        Some("False") => "NotReady",
        _ => "Unknown",
    }
    .to_string()];
    if node["spec"]["unschedulable"] == true {
        parts.push("SchedulingDisabled".into());
    }
    parts.join(",")
}

fn node_roles(node: &Value) -> String {
    let mut roles: Vec<String> = node["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            if let Some(r) = k.strip_prefix("node-role.kubernetes.io/") {
                Some(r.to_string())
            } else if k == "kubernetes.io/role" {
                v.as_str().map(str::to_string)
            } else {
                None
            }
        })
        .filter(|r| !r.is_empty())
        .collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        "<none>".into()
    } else {
        roles.join(",")
    }
}

fn node_address(node: &Value, kind: &str) -> String {
    node["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == kind)
        .map_or_else(|| "<none>".into(), |a| s(&a["address"]))
}

fn or_unknown(v: &Value) -> String {
    match v.as_str() {
        Some(x) if !x.is_empty() => x.to_string(),
        _ => "<unknown>".into(),
    }
}

/// A pod's STATUS as kubectl shows it: being deleted, a container's waiting or terminated
/// reason, the pod's reason, else its phase.
pub fn pod_status(pod: &Value) -> String {
    if !pod["metadata"]["deletionTimestamp"].is_null() {
        return "Terminating".into();
    }
    let mut reason = match pod["status"]["reason"].as_str() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ => s(&pod["status"]["phase"]),
    };
    for c in pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let st = &c["state"];
        if let Some(r) = st["waiting"]["reason"].as_str().filter(|r| !r.is_empty()) {
            reason = r.to_string();
        } else if let Some(r) = st["terminated"]["reason"]
            .as_str()
            .filter(|r| !r.is_empty())
        {
            reason = r.to_string();
        }
    }
    reason
}

fn pod_cells(pod: &Value, now: i64) -> Vec<Value> {
    let total = pod["spec"]["containers"].as_array().map_or(0, Vec::len);
    let statuses = pod["status"]["containerStatuses"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ready = statuses.iter().filter(|c| c["ready"] == true).count();
    let restarts: i64 = statuses.iter().map(|c| int(&c["restartCount"])).sum();
    let last = statuses
        .iter()
        .filter_map(|c| {
            c["lastState"]["terminated"]["finishedAt"]
                .as_str()
                .and_then(unix_of)
        })
        .max();
    let restarts = match last {
        Some(t) if restarts > 0 => format!("{restarts} ({} ago)", human_duration(now - t)),
        _ => restarts.to_string(),
    };
    let gates = pod["spec"]["readinessGates"].as_array().map_or(0, Vec::len);
    let gates = if gates == 0 {
        "<none>".to_string()
    } else {
        let conds = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let met = pod["spec"]["readinessGates"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| {
                conds
                    .iter()
                    .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
            })
            .count();
        format!("{met}/{gates}")
    };
    vec![
        s(&pod["metadata"]["name"]).into(),
        format!("{ready}/{total}").into(),
        pod_status(pod).into(),
        restarts.into(),
        age(pod, now).into(),
        or_none(&pod["status"]["podIP"]).into(),
        or_none(&pod["spec"]["nodeName"]).into(),
        or_none(&pod["status"]["nominatedNodeName"]).into(),
        gates.into(),
    ]
}

/// The columns and cells of one type's printer.
/// A row's cells of an object at a time.
type Cells = fn(&Value, i64) -> Vec<Value>;

fn printer(kind: &Kind) -> (Vec<Value>, Cells) {
    let (n, a) = (name_col(), age_col());
    let c = |name: &str, ty: &str, p: u8| col(name, ty, "", "", p);
    match kind.resource().as_str() {
        "nodes" => (
            vec![
                n,
                c("Status", "string", 0),
                c("Roles", "string", 0),
                a,
                c("Version", "string", 0),
                c("Internal-IP", "string", 1),
                c("External-IP", "string", 1),
                c("OS-Image", "string", 1),
                c("Kernel-Version", "string", 1),
                c("Container-Runtime", "string", 1),
            ],
            |o, now| {
                let info = &o["status"]["nodeInfo"];
                vec![
                    s(&o["metadata"]["name"]).into(),
                    node_status(o).into(),
                    node_roles(o).into(),
                    age(o, now).into(),
                    s(&info["kubeletVersion"]).into(),
                    node_address(o, "InternalIP").into(),
                    node_address(o, "ExternalIP").into(),
                    or_unknown(&info["osImage"]).into(),
                    or_unknown(&info["kernelVersion"]).into(),
                    or_unknown(&info["containerRuntimeVersion"]).into(),
                ]
            },
        ),
        "pods" => (
            vec![
                n,
                c("Ready", "string", 0),
                c("Status", "string", 0),
                c("Restarts", "string", 0),
                a,
                c("IP", "string", 1),
                c("Node", "string", 1),
                c("Nominated Node", "string", 1),
                c("Readiness Gates", "string", 1),
            ],
            pod_cells,
        ),
        "deployments.apps" => (
            vec![
                n,
                c("Ready", "string", 0),
                c("Up-to-date", "integer", 0),
                c("Available", "integer", 0),
                a,
                c("Containers", "string", 1),
                c("Images", "string", 1),
                c("Selector", "string", 1),
            ],
            |o, now| {
                let (cs, is) = containers_images(&o["spec"]["template"]["spec"]);
                let want = o["spec"]["replicas"].as_i64().unwrap_or(1);
                vec![
                    s(&o["metadata"]["name"]).into(),
                    format!("{}/{want}", int(&o["status"]["readyReplicas"])).into(),
                    int(&o["status"]["updatedReplicas"]).into(),
                    int(&o["status"]["availableReplicas"]).into(),
                    age(o, now).into(),
                    cs.into(),
                    is.into(),
                    selector_text(&o["spec"]["selector"]).into(),
                ]
            },
        ),
        "replicasets.apps" => (
            vec![
                n,
                c("Desired", "integer", 0),
                c("Current", "integer", 0),
                c("Ready", "integer", 0),
                a,
                c("Containers", "string", 1),
                c("Images", "string", 1),
                c("Selector", "string", 1),
            ],
            |o, now| {
                let (cs, is) = containers_images(&o["spec"]["template"]["spec"]);
                vec![
                    s(&o["metadata"]["name"]).into(),
                    o["spec"]["replicas"].as_i64().unwrap_or(1).into(),
                    int(&o["status"]["replicas"]).into(),
                    int(&o["status"]["readyReplicas"]).into(),
                    age(o, now).into(),
                    cs.into(),
                    is.into(),
                    selector_text(&o["spec"]["selector"]).into(),
                ]
            },
        ),
        "daemonsets.apps" => (
            vec![
                n,
                c("Desired", "integer", 0),
                c("Current", "integer", 0),
                c("Ready", "integer", 0),
                c("Up-to-date", "integer", 0),
                c("Available", "integer", 0),
                c("Node Selector", "string", 0),
                a,
                c("Containers", "string", 1),
                c("Images", "string", 1),
                c("Selector", "string", 1),
            ],
            |o, now| {
                let (cs, is) = containers_images(&o["spec"]["template"]["spec"]);
                let st = &o["status"];
                let ns: Vec<String> = o["spec"]["template"]["spec"]["nodeSelector"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect();
                vec![
                    s(&o["metadata"]["name"]).into(),
                    int(&st["desiredNumberScheduled"]).into(),
                    int(&st["currentNumberScheduled"]).into(),
                    int(&st["numberReady"]).into(),
                    int(&st["updatedNumberScheduled"]).into(),
                    int(&st["numberAvailable"]).into(),
                    if ns.is_empty() {
                        "<none>".to_string()
                    } else {
                        ns.join(",")
                    }
                    .into(),
                    age(o, now).into(),
                    cs.into(),
                    is.into(),
                    selector_text(&o["spec"]["selector"]).into(),
                ]
            },
        ),
        "poddisruptionbudgets.policy" => (
            vec![
                n,
                c("Min Available", "string", 0),
                c("Max Unavailable", "string", 0),
                c("Allowed Disruptions", "integer", 0),
                a,
            ],
            |o, now| {
                let show = |v: &Value| match v {
                    Value::Null => "N/A".to_string(),
                    Value::String(x) => x.clone(),
                    other => other.to_string(),
                };
                vec![
                    s(&o["metadata"]["name"]).into(),
                    show(&o["spec"]["minAvailable"]).into(),
                    show(&o["spec"]["maxUnavailable"]).into(),
                    int(&o["status"]["disruptionsAllowed"]).into(),
                    age(o, now).into(),
                ]
            },
        ),
        "namespaces" => (vec![n, c("Status", "string", 0), a], |o, now| {
            let phase = o["status"]["phase"].as_str().unwrap_or("Active");
            vec![
                s(&o["metadata"]["name"]).into(),
                phase.into(),
                age(o, now).into(),
            ]
        }),
        _ => (vec![n, a], |o, now| {
            vec![s(&o["metadata"]["name"]).into(), age(o, now).into()]
        }),
    }
}

/// The Table of `items` at `now` (Unix seconds).
pub fn table(
    kind: &Kind,
    items: &[Object],
    version: Option<u64>,
    include: Include,
    now: i64,
) -> Value {
    let (columns, cells) = printer(kind);
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            let mut row = json!({"cells": cells(o, now)});
            match include {
                Include::None => {}
                Include::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]});
                }
                Include::Object => row["object"] = Value::clone(o),
            }
            row
        })
        .collect();
    let mut meta = json!({});
    if let Some(v) = version {
        meta["resourceVersion"] = v.to_string().into();
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "columnDefinitions": columns, "rows": rows})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::resources::find;

    #[test]
    fn accept_headers() {
        assert!(wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"));
        assert!(!wants_table("application/json"));
    }

    #[test]
    fn node_rows() {
        let node = json!({"metadata": {"name": "cp1", "creationTimestamp": "1970-01-01T00:00:00Z",
            "labels": {"node-role.kubernetes.io/control-plane": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "10.5.0.2"}, {"type": "Hostname", "address": "cp1"}],
                "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Talos (v1.13.7)", "kernelVersion": "6.18.1-talos", "containerRuntimeVersion": "containerd://2.1.5"}}});
        let t = table(
            find("", "v1", "nodes").unwrap(),
            &[Object::new(node)],
            Some(7),
            Include::None,
            600,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "cp1",
                "Ready,SchedulingDisabled",
                "control-plane",
                "10m",
                "v1.36.2",
                "10.5.0.2",
                "<none>",
                "Talos (v1.13.7)",
                "6.18.1-talos",
                "containerd://2.1.5"
            ])
        );
        let names: Vec<(&str, u64)> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["priority"].as_u64().unwrap()))
            .collect();
        assert_eq!(
            names[..5],
            [
                ("Name", 0),
                ("Status", 0),
                ("Roles", 0),
                ("Age", 0),
                ("Version", 0)
            ]
        );
        assert_eq!(names[5], ("Internal-IP", 1));
        assert_eq!(t["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn pod_rows() {
        let pod = json!({"metadata": {"name": "p", "creationTimestamp": "1970-01-01T00:00:00Z"},
            "spec": {"nodeName": "w1", "containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "podIP": "10.244.0.5", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 2, "lastState": {"terminated": {"finishedAt": "1970-01-01T00:00:30Z"}}, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let t = table(
            find("", "v1", "pods").unwrap(),
            &[Object::new(pod)],
            None,
            Include::Metadata,
            90,
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "p",
                "1/2",
                "CrashLoopBackOff",
                "2 (60s ago)",
                "90s",
                "10.244.0.5",
                "w1",
                "<none>",
                "<none>"
            ])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "p");
    }
}
