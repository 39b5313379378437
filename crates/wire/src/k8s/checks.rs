//! The Kubernetes checks of Talos's cluster health (`pkg/cluster/check/kubernetes.go` and
//! `default.go` at v1.13.7), as pure functions over the objects the API lists (JSON as the
//! API serves them) and the nodes the cluster is expected to have. The simulator's
//! server-side health and talm's client-side `--server=false` call the same functions, so
//! both fail with Talos's exact messages.

use serde_json::Value;

/// A check that did not fail: it passed, or it does not apply (Talos's `SKIP`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Skip,
}

impl Outcome {
    /// The state the health reporter prints.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "OK",
            Outcome::Skip => "SKIP",
        }
    }
}

/// The label of the control plane role on a Node.
pub const CONTROL_PLANE_LABEL: &str = "node-role.kubernetes.io/control-plane";

/// The control plane components whose pods the checks look for.
pub const COMPONENTS: [&str; 3] = [
    "kube-apiserver",
    "kube-scheduler",
    "kube-controller-manager",
];

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj["metadata"]["labels"].get(key).and_then(Value::as_str)
}

/// Go's `%v` of a string slice: `[a b]`.
fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Go's `%q` of a slice of addresses: `["10.5.0.2" "10.5.0.3"]`.
fn go_quoted(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", q.join(" "))
}

/// The status of condition `ty` (`Ready`...), when the object reports it.
fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a str> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .and_then(|c| c["status"].as_str())
}

/// Whether `obj`'s labels satisfy an equality selector (`k8s-app=kube-dns`, `a = b,c=d`).
pub fn selects(selector: &str, obj: &Value) -> bool {
    selector
        .split(',')
        .filter(|t| !t.trim().is_empty())
        .all(|term| match term.split_once('=') {
            Some((k, v)) => label(obj, k.trim().trim_end_matches('=')) == Some(v.trim()),
            None => label(obj, term.trim()).is_some(),
        })
}

/// A Node's InternalIP and ExternalIP addresses, as the checks compare them.
fn node_ips(node: &Value) -> Vec<String> {
    node["status"]["addresses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|x| matches!(x["type"].as_str(), Some("InternalIP" | "ExternalIP")))
                .filter_map(|x| x["address"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `cluster.NodesMatch`: every expected node (by its IPs) is one listed node, and no listed
/// node is left over.
fn nodes_match(expected: &[Vec<String>], actual: Vec<Vec<String>>) -> Result<(), String> {
    let mut left = actual;
    for want in expected {
        match left
            .iter()
            .position(|ips| ips.iter().any(|ip| want.contains(ip)))
        {
            Some(i) => {
                left.remove(i);
            }
            None => {
                return Err(format!(
                    "can't find expected node with IPs {}",
                    go_quoted(want)
                ))
            }
        }
    }
    if !left.is_empty() {
        let mut ips: Vec<std::net::IpAddr> = left
            .iter()
            .flatten()
            .filter_map(|ip| ip.parse().ok())
            .collect();
        ips.sort();
        let ips: Vec<String> = ips.iter().map(ToString::to_string).collect();
        return Err(format!("unexpected nodes with IPs {}", go_quoted(&ips)));
    }
    Ok(())
}

/// `all k8s nodes to report`: the listed Nodes are the expected nodes (each given by its IPs).
pub fn nodes_reported(expected: &[Vec<String>], nodes: &[Value]) -> Result<Outcome, String> {
    nodes_match(expected, nodes.iter().map(node_ips).collect())?;
    Ok(Outcome::Pass)
}

/// `all control plane static pods to be running`: each control plane (its IP, and the IDs of
/// its `StaticPodStatus` resources) runs the three static pods.
pub fn static_pods(control_planes: &[(String, Vec<String>)]) -> Result<Outcome, String> {
    for (ip, ids) in control_planes {
        let mut missing: Vec<String> = COMPONENTS
            .iter()
            .map(|c| format!("kube-system/{c}"))
            .filter(|want| !ids.iter().any(|id| id.starts_with(want.as_str())))
            .collect();
        if !missing.is_empty() {
            missing.sort();
            return Err(format!(
                "missing static pods on node {ip}: {}",
                go_list(&missing)
            ));
        }
    }
    Ok(Outcome::Pass)
}

/// `all control plane components to be ready`: the control plane Nodes are the expected
/// control planes; component DaemonSets (self-hosted clusters) are complete; each component
/// has one pod per control plane, all Ready. `daemonsets` and `pods` are kube-system's.
pub fn control_plane_components(
    expected: &[Vec<String>],
    nodes: &[Value],
    daemonsets: &[Value],
    pods: &[Value],
) -> Result<Outcome, String> {
    let control_planes: Vec<Vec<String>> = nodes
        .iter()
        .filter(|n| label(n, CONTROL_PLANE_LABEL).is_some())
        .map(node_ips)
        .collect();
    let count = control_planes.len();
    nodes_match(expected, control_planes)?;
    let num = |ds: &Value, k: &str| ds["status"][k].as_i64().unwrap_or(0);
    for ds in daemonsets
        .iter()
        .filter(|d| label(d, "k8s-app").is_some_and(|a| COMPONENTS.contains(&a)))
    {
        let desired = num(ds, "desiredNumberScheduled");
        for (field, what) in [
            ("currentNumberScheduled", "current number scheduled"),
            ("numberAvailable", "number available"),
            ("numberReady", "number ready"),
        ] {
            if num(ds, field) != desired {
                return Err(format!(
                    "expected {what} for {} to be {desired}, got {}",
                    name(ds),
                    num(ds, field)
                ));
            }
        }
    }
    for app in COMPONENTS {
        let of_app: Vec<&Value> = pods
            .iter()
            .filter(|p| label(p, "k8s-app") == Some(app))
            .filter(|p| {
                p["metadata"]["annotations"]
                    .get("checkpointer.alpha.coreos.com/checkpoint-of")
                    .is_none()
            })
            .collect();
        if of_app.len() != count {
            return Err(format!(
                "expected number of pods for {app} to be {count}, got {}",
                of_app.len()
            ));
        }
        let not_ready: Vec<String> = of_app
            .iter()
            .filter(|p| condition(p, "Ready").is_some_and(|s| s != "True"))
            .map(|p| name(p).to_string())
            .collect();
        if !not_ready.is_empty() {
            return Err(format!(
                "some pods are not ready for {app}: {}",
                go_list(&not_ready)
            ));
        }
    }
    Ok(Outcome::Pass)
}

/// `all k8s nodes to report ready`: every Node's Ready condition is True.
pub fn nodes_ready(nodes: &[Value]) -> Result<Outcome, String> {
    let not_ready: Vec<String> = nodes
        .iter()
        .filter(|n| condition(n, "Ready").is_some_and(|s| s != "True"))
        .map(|n| name(n).to_string())
        .collect();
    match not_ready.is_empty() {
        true => Ok(Outcome::Pass),
        false => Err(format!("some nodes are not ready: {}", go_list(&not_ready))),
    }
}

/// `all k8s nodes to report schedulable`: no Node is cordoned. Talos names the first one only.
pub fn nodes_schedulable(nodes: &[Value]) -> Result<Outcome, String> {
    match nodes
        .iter()
        .find(|n| n["spec"]["unschedulable"].as_bool() == Some(true))
    {
        None => Ok(Outcome::Pass),
        Some(n) => Err(format!("some nodes are not schedulable: [{}]", name(n))),
    }
}

/// `K8sPodReadyAssertion`: the pods `selector` picks from `pods` (one namespace's) are all
/// Ready, and `replicas` of them.
pub fn pods_ready(
    replicas: i64,
    namespace: &str,
    selector: &str,
    pods: &[Value],
) -> Result<Outcome, String> {
    let chosen: Vec<&Value> = pods.iter().filter(|p| selects(selector, p)).collect();
    if chosen.is_empty() {
        return Err(format!(
            "no pods found for namespace {namespace:?} and label selector {selector:?}"
        ));
    }
    let (mut ready, mut not_ready) = (Vec::new(), Vec::new());
    for pod in chosen {
        if pod["metadata"].get("deletionTimestamp").is_some() || pod["status"]["phase"] == "Failed"
        {
            continue;
        }
        let terminated = pod["status"]["containerStatuses"]
            .as_array()
            .is_none_or(|cs| cs.iter().all(|c| c["state"].get("terminated").is_some()));
        if terminated {
            continue;
        }
        if condition(pod, "Ready") == Some("True") {
            ready.push(name(pod).to_string());
        } else {
            not_ready.push(name(pod).to_string());
        }
    }
    if ready.is_empty() {
        return Err(format!(
            "no ready pods found for namespace {namespace:?} and label selector {selector:?}"
        ));
    }
    if !not_ready.is_empty() {
        return Err(format!("some pods are not ready: {}", go_list(&not_ready)));
    }
    if ready.len() as i64 != replicas {
        return Err(format!(
            "expected {replicas} ready pods, got {}",
            ready.len()
        ));
    }
    Ok(Outcome::Pass)
}

/// `kube-proxy to report ready`: skipped without its DaemonSet; else its desired number of
/// pods Ready. `daemonsets` and `pods` are kube-system's.
pub fn kube_proxy(daemonsets: &[Value], pods: &[Value]) -> Result<Outcome, String> {
    const SELECTOR: &str = "k8s-app=kube-proxy";
    let Some(ds) = daemonsets.iter().find(|d| selects(SELECTOR, d)) else {
        return Ok(Outcome::Skip);
    };
    let desired = ds["status"]["desiredNumberScheduled"].as_i64().unwrap_or(0);
    pods_ready(desired, "kube-system", SELECTOR, pods)
}

/// `coredns to report ready`: skipped when the CNI is `none` or without the Deployment; else
/// its replicas Ready. `deployments` and `pods` are kube-system's.
pub fn coredns(cni_none: bool, deployments: &[Value], pods: &[Value]) -> Result<Outcome, String> {
    const SELECTOR: &str = "k8s-app=kube-dns";
    if cni_none {
        return Ok(Outcome::Skip);
    }
    let Some(d) = deployments.iter().find(|d| selects(SELECTOR, d)) else {
        return Ok(Outcome::Skip);
    };
    let replicas = d["spec"]["replicas"].as_i64().unwrap_or(0);
    pods_ready(replicas, "kube-system", SELECTOR, pods)
}

/// `all k8s nodes to report ready`, skipped when the CNI is `none`.
pub fn nodes_ready_unless_no_cni(cni_none: bool, nodes: &[Value]) -> Result<Outcome, String> {
    if cni_none {
        return Ok(Outcome::Skip);
    }
    nodes_ready(nodes)
}

#[cfg(test)]
mod tests;
