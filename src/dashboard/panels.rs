//! The Summary screen's three panels as talosctl fills them from a node's resources: Talos
//! (UUID, CLUSTER, SIDEROLINK, STAGE, READY, SECUREBOOT), Kubernetes (TYPE, KUBERNETES,
//! KUBELET, and on a control plane APISERVER, CONTROLLER-MANAGER, SCHEDULER) and network
//! (HOST, IP, GW, CONNECTIVITY, DNS, NTP). A resource the node does not have shows `n/a`.

use serde_yaml_ng::Value;

use super::format::NOT_AVAILABLE;

/// What talosctl writes for an empty list of servers.
const NONE: &str = "<none>";

/// The resources the panels and the header read, by their spec (`None`: the node has none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    pub system_information: Option<Value>,
    pub cluster_info: Option<Value>,
    /// IDs of the cluster's members.
    pub members: Option<Vec<String>>,
    pub siderolink: Option<Value>,
    pub machine_status: Option<Value>,
    pub security_state: Option<Value>,
    pub machine_type: Option<Value>,
    pub kubelet_spec: Option<Value>,
    /// (ID, spec) of each static pod status.
    pub static_pods: Vec<(String, Value)>,
    pub hostname: Option<Value>,
    pub version: Option<Value>,
    /// (ID, spec) of the node addresses `routed` and `routed-no-k8s`.
    pub addresses: Vec<(String, Value)>,
    pub routes: Vec<Value>,
    pub network_status: Option<Value>,
    pub resolvers: Option<Value>,
    pub time_servers: Option<Value>,
}

/// A field's value: plain, or a status talosctl marks `√` in green or `×` in red.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Field {
    Text(String),
    Good(String),
    Bad(String),
}

impl Field {
    fn na() -> Field {
        Field::Text(NOT_AVAILABLE.into())
    }

    /// The text as drawn.
    pub fn text(&self) -> String {
        match self {
            Field::Text(t) => t.clone(),
            Field::Good(t) => format!("√ {t}"),
            Field::Bad(t) => format!("× {t}"),
        }
    }
}

/// One panel: names and values, the names padded to the longest.
pub type Panel = Vec<(&'static str, Field)>;

fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn texts(v: &Value, key: &str) -> Vec<String> {
    match v.get(key) {
        Some(Value::Sequence(s)) => s
            .iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// talosctl's `formatStatus`: first letter capitalised, the rest lower case; running, healthy
/// and true are good, stopped, unhealthy and false bad.
pub fn status(s: &str) -> Field {
    let mut t = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == 0 {
            t.extend(c.to_uppercase());
        } else {
            t.extend(c.to_lowercase());
        }
    }
    match t.to_lowercase().as_str() {
        "running" | "healthy" | "true" => Field::Good(t),
        "stopped" | "unhealthy" | "false" => Field::Bad(t),
        _ => Field::Text(t),
    }
}

/// `√ Healthy` or `× Unhealthy`.
pub fn health(healthy: bool) -> Field {
    status(if healthy { "healthy" } else { "unhealthy" })
}

/// The Talos panel.
pub fn talos(r: &Resources) -> Panel {
    let or_na = |v: Option<Field>| v.unwrap_or_else(Field::na);
    let uuid = r.system_information.as_ref().and_then(|v| text(v, "uuid"));
    let cluster = r
        .cluster_info
        .as_ref()
        .and_then(|v| text(v, "clusterName"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| NOT_AVAILABLE.into());
    // talosctl counts the members it has seen; before the first, it shows `n/a`.
    let machines = match &r.members {
        None => NOT_AVAILABLE.to_string(),
        Some(m) if m.is_empty() => NOT_AVAILABLE.to_string(),
        Some(m) if m.len() == 1 => "(1 machine)".into(),
        Some(m) => format!("({} machines)", m.len()),
    };
    let siderolink = r.siderolink.as_ref().map(|v| {
        let host = text(v, "host").unwrap_or_default();
        if host.is_empty() {
            Field::Text(String::new())
        } else if flag(v, "connected") {
            Field::Good(host)
        } else {
            Field::Bad(host)
        }
    });
    let stage = r
        .machine_status
        .as_ref()
        .map(|v| status(&text(v, "stage").unwrap_or_default()));
    let ready = r.machine_status.as_ref().map(|v| {
        let ready = v.get("status").is_some_and(|s| flag(s, "ready"));
        status(&ready.to_string())
    });
    let secure_boot = r
        .security_state
        .as_ref()
        .map(|v| status(&flag(v, "secureBoot").to_string()));
    vec![
        ("UUID", or_na(uuid.map(Field::Text))),
        ("CLUSTER", Field::Text(format!("{cluster} {machines}"))),
        ("SIDEROLINK", or_na(siderolink)),
        ("STAGE", or_na(stage)),
        ("READY", or_na(ready)),
        ("SECUREBOOT", or_na(secure_boot)),
    ]
}

/// The machine type as talosctl names it (`controlplane`, `worker`, `init`).
fn machine_type(r: &Resources) -> Option<String> {
    match r.machine_type.as_ref()? {
        Value::String(s) => Some(s.clone()),
        v => text(v, "machineType"),
    }
}

/// Ready condition of a static pod's status: `√ Healthy`, `× Unhealthy`, else `n/a`.
fn pod_ready(spec: &Value) -> Field {
    let conditions = spec
        .get("podStatus")
        .and_then(|p| p.get("conditions"))
        .and_then(Value::as_sequence);
    let ready = conditions.and_then(|c| {
        c.iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
    });
    match ready {
        Some(c) => health(c.get("status").and_then(Value::as_str) == Some("True")),
        None => Field::na(),
    }
}

/// The Kubernetes panel; `kubelet_healthy` is the kubelet service's health, if listed.
pub fn kubernetes(r: &Resources, kubelet_healthy: Option<bool>) -> Panel {
    let typ = machine_type(r);
    let version = r
        .kubelet_spec
        .as_ref()
        .and_then(|v| text(v, "image"))
        .map(|image| image.rsplit(':').next().unwrap_or_default().to_string());
    let mut panel = vec![
        (
            "TYPE",
            Field::Text(typ.clone().unwrap_or_else(|| NOT_AVAILABLE.into())),
        ),
        (
            "KUBERNETES",
            Field::Text(version.unwrap_or_else(|| NOT_AVAILABLE.into())),
        ),
        ("KUBELET", kubelet_healthy.map_or_else(Field::na, health)),
    ];
    if typ.as_deref() == Some("controlplane") {
        let pod = |name: &str| {
            r.static_pods
                .iter()
                .filter(|(id, _)| id.contains(name))
                .map(|(_, spec)| pod_ready(spec))
                .next_back()
                .unwrap_or_else(Field::na)
        };
        panel.extend([
            ("APISERVER", pod("kube-apiserver")),
            ("CONTROLLER-MANAGER", pod("kube-controller-manager")),
            ("SCHEDULER", pod("kube-scheduler")),
        ]);
    }
    panel
}

/// The node's addresses: `routed-no-k8s` when there is one, else `routed`, sorted.
fn addresses(r: &Resources) -> String {
    let pick = |id: &str| r.addresses.iter().find(|(i, _)| i == id).map(|(_, v)| v);
    match pick("routed-no-k8s").or_else(|| pick("routed")) {
        None => NOT_AVAILABLE.into(),
        Some(v) => {
            let mut a = texts(v, "addresses");
            a.sort();
            a.join(", ")
        }
    }
}

/// Gateways of the default routes, IPv4 first, each family sorted.
fn gateways(routes: &[Value]) -> String {
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    for r in routes {
        let gw = text(r, "gateway").unwrap_or_default();
        let dst = text(r, "dst").unwrap_or_default();
        if gw.is_empty() || !dst.is_empty() {
            continue;
        }
        if gw.contains(':') {
            v6.push(gw);
        } else {
            v4.push(gw);
        }
    }
    if v4.is_empty() && v6.is_empty() {
        return NOT_AVAILABLE.into();
    }
    v4.sort();
    v6.sort();
    v4.extend(v6);
    v4.join(", ")
}

fn servers(v: Option<&Value>, key: &str) -> String {
    match v {
        None => NOT_AVAILABLE.into(),
        Some(v) => {
            let s = texts(v, key);
            if s.is_empty() {
                NONE.into()
            } else {
                s.join(", ")
            }
        }
    }
}

/// The node's hostname as the resource has it.
pub fn hostname(r: &Resources) -> Option<String> {
    r.hostname.as_ref().and_then(|v| text(v, "hostname"))
}

/// The network panel.
pub fn network(r: &Resources) -> Panel {
    let connectivity = r.network_status.as_ref().map_or_else(Field::na, |v| {
        if flag(v, "connectivityReady") {
            Field::Good("OK".into())
        } else {
            Field::Bad("FAILED".into())
        }
    });
    vec![
        (
            "HOST",
            Field::Text(hostname(r).unwrap_or_else(|| NOT_AVAILABLE.into())),
        ),
        ("IP", Field::Text(addresses(r))),
        ("GW", Field::Text(gateways(&r.routes))),
        ("CONNECTIVITY", connectivity),
        (
            "DNS",
            Field::Text(servers(r.resolvers.as_ref(), "dnsServers")),
        ),
        (
            "NTP",
            Field::Text(servers(r.time_servers.as_ref(), "timeServers")),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    fn texts(p: &Panel) -> Vec<String> {
        p.iter().map(|(k, v)| format!("{k}={}", v.text())).collect()
    }

    #[test]
    fn without_resources_every_field_is_not_available() {
        let r = Resources::default();
        assert_eq!(
            texts(&talos(&r)),
            [
                "UUID=n/a",
                "CLUSTER=n/a n/a",
                "SIDEROLINK=n/a",
                "STAGE=n/a",
                "READY=n/a",
                "SECUREBOOT=n/a"
            ]
        );
        assert_eq!(
            texts(&kubernetes(&r, None)),
            ["TYPE=n/a", "KUBERNETES=n/a", "KUBELET=n/a"]
        );
        assert_eq!(
            texts(&network(&r)),
            [
                "HOST=n/a",
                "IP=n/a",
                "GW=n/a",
                "CONNECTIVITY=n/a",
                "DNS=n/a",
                "NTP=n/a"
            ]
        );
    }

    #[test]
    fn a_running_control_plane() {
        let r = Resources {
            system_information: Some(yaml("uuid: 4c4c4544-0042")),
            cluster_info: Some(yaml("clusterId: x\nclusterName: demo")),
            members: Some(vec!["cp-1".into(), "w-1".into()]),
            siderolink: Some(yaml("host: omni.example:443\nconnected: false")),
            machine_status: Some(yaml("stage: running\nstatus:\n  ready: true")),
            security_state: Some(yaml("secureBoot: false")),
            machine_type: Some(yaml("controlplane")),
            kubelet_spec: Some(yaml("image: ghcr.io/siderolabs/kubelet:v1.35.0")),
            static_pods: vec![
                (
                    "kube-system/kube-apiserver-cp-1".into(),
                    yaml("podStatus:\n  conditions:\n  - type: Ready\n    status: \"True\""),
                ),
                (
                    "kube-system/kube-scheduler-cp-1".into(),
                    yaml("podStatus:\n  conditions:\n  - type: Ready\n    status: \"False\""),
                ),
            ],
            hostname: Some(yaml("hostname: cp-1\ndomainname: \"\"")),
            addresses: vec![
                (
                    "routed".into(),
                    yaml("addresses: [10.5.0.3/24, 10.5.0.2/24]"),
                ),
                ("current".into(), yaml("addresses: [1.1.1.1/32]")),
            ],
            routes: vec![
                yaml("dst: 10.5.0.0/24\ngateway: \"\""),
                yaml("dst: \"\"\ngateway: fd00::1"),
                yaml("dst: \"\"\ngateway: 10.5.0.1"),
            ],
            network_status: Some(yaml("connectivityReady: true")),
            resolvers: Some(yaml("dnsServers: [1.1.1.1, 8.8.8.8]")),
            time_servers: Some(yaml("timeServers: []")),
            ..Resources::default()
        };
        assert_eq!(
            texts(&talos(&r)),
            [
                "UUID=4c4c4544-0042",
                "CLUSTER=demo (2 machines)",
                "SIDEROLINK=× omni.example:443",
                "STAGE=√ Running",
                "READY=√ True",
                "SECUREBOOT=× False"
            ]
        );
        assert_eq!(
            texts(&kubernetes(&r, Some(true))),
            [
                "TYPE=controlplane",
                "KUBERNETES=v1.35.0",
                "KUBELET=√ Healthy",
                "APISERVER=√ Healthy",
                "CONTROLLER-MANAGER=n/a",
                "SCHEDULER=× Unhealthy"
            ]
        );
        assert_eq!(
            texts(&network(&r)),
            [
                "HOST=cp-1",
                "IP=10.5.0.2/24, 10.5.0.3/24",
                "GW=10.5.0.1, fd00::1",
                "CONNECTIVITY=√ OK",
                "DNS=1.1.1.1, 8.8.8.8",
                "NTP=<none>"
            ]
        );
        let worker = Resources {
            machine_type: Some(yaml("worker")),
            members: Some(vec!["a".into()]),
            ..Resources::default()
        };
        assert_eq!(kubernetes(&worker, Some(false)).len(), 3);
        assert_eq!(talos(&worker)[1].1.text(), "n/a (1 machine)");
        let alone = Resources {
            members: Some(Vec::new()),
            ..Resources::default()
        };
        assert_eq!(talos(&alone)[1].1.text(), "n/a n/a");
        assert_eq!(status("booting"), Field::Text("Booting".into()));
    }
}
