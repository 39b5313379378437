//! The cluster's Kubernetes API from scripts: `k8s::nodes()`, `k8s::pods(ns, selector)`,
//! `k8s::apply(yaml)`, `k8s::format_nodes(list)` over the project's cluster, and a node's
//! `n.cordon()`, `n.drain(#{timeout})`, `n.uncordon()`. The client is made as talosctl makes it:
//! from the admin kubeconfig a control plane issues through the Talos API (the node's
//! endpoint), the Kubernetes node name from the node's `Nodenames` resource.

use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::{Node as KNode, Pod};
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use super::Node;
use crate::error::hinted;
use crate::runtime::native;
use crate::runtime::node::opts::{CheckOpts, DrainOpts, NodeOpts};
use crate::runtime::session::Session;
use crate::talos::block_on;
use talm_client::k8s::drain::DrainError;
use talm_client::k8s::Cluster;

/// talosctl's `--drain-timeout` default.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(300);

/// The same node's endpoint itself: where talosctl asks for the kubeconfig (a control plane
/// by convention), whatever node the handle targets.
fn endpoint_of(n: &Node) -> Node {
    Node {
        target: None,
        ..n.fresh()
    }
}

/// A Kubernetes client for the node's cluster (`endpoint` overrides the API's host:port).
pub(crate) fn cluster_of(n: &Node, endpoint: Option<&str>) -> Result<Cluster> {
    let text = super::kubeconfig_text(&endpoint_of(n))?;
    block_on(Cluster::connect(&text, endpoint))
}

/// The name the node registered under in Kubernetes (Talos's `Nodenames` resource).
pub(crate) fn k8s_name(n: &Node) -> Result<String> {
    let r = n
        .with(|c| block_on(c.get("k8s", "Nodenames.kubernetes.talos.dev", "nodename")))
        .map_err(|e| anyhow::anyhow!("error getting Kubernetes node name from Talos API: {e:#}"))?;
    let name = r
        .map(|r| crate::talos::resources::to_value(&r))
        .and_then(|v| v.get("spec")?.get("nodename")?.as_str().map(str::to_string))
        .unwrap_or_default();
    if name.is_empty() {
        return Err(hinted(
            format!("node {}: no Kubernetes node name yet", n.name),
            "the node registers with Kubernetes once its kubelet runs: wait for it, or check `talm get nodenames`",
        ));
    }
    Ok(name)
}

/// A progress line, as talosctl's reporter prints it without a terminal.
fn report(line: &str) {
    crate::runtime::log::line(line);
}

/// A drain that stopped, as the user reads it: what blocked, the node's state (`pending`: what
/// it keeps for its next boot, `; ...` or empty), the way out.
fn drain_failed(e: DrainError, file_hint: &str, pending: &str) -> anyhow::Error {
    let left = match &e {
        DrainError::Blocked { node, .. } | DrainError::Timeout { node, .. } => Some(node.clone()),
        DrainError::Api(_) => None,
    };
    match left {
        Some(node) => hinted(
            format!("{e}; the node {node} is left cordoned{pending}"),
            format!("make room for the pod (or raise --drain-timeout) and run the command again, or make the node schedulable again with `talm uncordon {file_hint}`"),
        ),
        None if pending.is_empty() => anyhow::Error::from(e),
        None => anyhow::anyhow!("{e}{pending}"),
    }
}

/// How to name a node on a talm command line: the node and the endpoint it was reached through.
fn command_target(n: &Node) -> String {
    format!("-n {} -e {}", n.name, n.endpoint())
}

/// A node drained for a reboot, to be made schedulable again once back.
pub(crate) struct Drained {
    cluster: Cluster,
    name: String,
    node: Node,
}

/// Cordons and drains the node before it goes down; `None` when there is nothing to drain
/// (a single-node cluster, whose pods have nowhere to go). `pending` says what the node keeps
/// for its next boot when the drain stops it (an upgrade's new Talos, already installed).
pub(crate) fn before_reboot(
    n: &Node,
    timeout: Duration,
    pending: Option<&str>,
) -> Result<Option<Drained>> {
    let pending = pending.map(|p| format!("; {p}")).unwrap_or_default();
    let unreachable = |e: anyhow::Error| {
        hinted(
            format!("error draining node {}: {e:#}{pending}", n.name),
            "the drain goes through the cluster's Kubernetes API (the server of the kubeconfig its control plane issues): bring it up, or pass --drain=false to go on without draining",
        )
    };
    let cluster = cluster_of(n, None).map_err(unreachable)?;
    let name = k8s_name(n)?;
    let nodes = block_on(cluster.nodes()).map_err(unreachable)?;
    if nodes.len() <= 1 {
        report(&format!("{name}: single-node cluster, not drained"));
        return Ok(None);
    }
    block_on(cluster.drain(&name, timeout, &report))
        .map_err(|e| drain_failed(e, &command_target(n), &pending))?;
    Ok(Some(Drained {
        cluster,
        name,
        node: n.clone(),
    }))
}

impl Drained {
    /// Waits for the node to report Ready, then uncordons it.
    pub(crate) fn after_reboot(self, timeout: Duration) -> Result<()> {
        report(&format!("{}: waiting for node to become Ready", self.name));
        // The API may have moved while the node rebooted: a fresh client, as talosctl makes.
        let cluster = cluster_of(&self.node, None).unwrap_or(self.cluster);
        block_on(cluster.wait_ready(&self.name, timeout)).map_err(|e| {
            hinted(
                format!("{e:#}; the node {} is left cordoned", self.name),
                format!(
                    "once it is Ready, make it schedulable again with `talm uncordon {}`",
                    command_target(&self.node)
                ),
            )
        })?;
        block_on(cluster.uncordon(&self.name, &report))
    }
}

fn age_of(created: Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>) -> String {
    let Some(t) = created else {
        return "<unknown>".into();
    };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    talm_base::humanize::human_duration(now - t.0.as_second())
}

fn roles(n: &KNode) -> Vec<String> {
    n.metadata
        .labels
        .iter()
        .flatten()
        .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
        .map(str::to_string)
        .collect()
}

/// A Node's STATUS column: Ready, NotReady or Unknown, with `SchedulingDisabled` when cordoned.
fn status_of(n: &KNode) -> String {
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    let mut s = match ready.map(|c| c.status.as_str()) {
        Some("True") => "Ready".to_string(),
        Some("False") => "NotReady".to_string(),
        _ => "Unknown".to_string(),
    };
    if n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        s.push_str(",SchedulingDisabled");
    }
    s
}

fn internal_ip(n: &KNode) -> String {
    n.status
        .as_ref()
        .and_then(|s| s.addresses.as_ref())
        .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
        .map(|a| a.address.clone())
        .unwrap_or_default()
}

fn kubelet_version(n: &KNode) -> String {
    n.status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.kubelet_version.clone())
        .unwrap_or_default()
}

/// Nodes (as `node_map` gives them) as `kubectl get nodes` prints them.
pub fn nodes_table(nodes: &Array) -> Result<String> {
    let mut rows = vec![["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        .map(String::from)
        .to_vec()];
    for n in nodes {
        let m = n.clone().try_cast::<Map>().ok_or_else(|| {
            hinted(
                format!("k8s::format_nodes: {n} is not a node map"),
                "give the list k8s::nodes() or n.k8s_nodes() returns",
            )
        })?;
        let text = |k: &str| m.get(k).map(|v| v.to_string()).unwrap_or_default();
        let roles: Vec<String> = m
            .get("roles")
            .and_then(|r| r.clone().try_cast::<Array>())
            .unwrap_or_default()
            .iter()
            .map(|r| r.to_string())
            .collect();
        rows.push(vec![
            text("name"),
            text("status"),
            if roles.is_empty() {
                "<none>".into()
            } else {
                roles.join(",")
            },
            text("age"),
            text("version"),
        ]);
    }
    Ok(talm_base::tabwriter::table(&rows))
}

fn node_map(n: &KNode) -> Map {
    let mut m = Map::new();
    m.insert(
        "name".into(),
        n.metadata.name.clone().unwrap_or_default().into(),
    );
    m.insert("status".into(), status_of(n).into());
    m.insert("ready".into(), talm_client::k8s::is_ready(n).into());
    let cordoned = n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
    m.insert("unschedulable".into(), cordoned.into());
    m.insert(
        "roles".into(),
        roles(n)
            .into_iter()
            .map(Dynamic::from)
            .collect::<Array>()
            .into(),
    );
    m.insert("internal_ip".into(), internal_ip(n).into());
    m.insert("version".into(), kubelet_version(n).into());
    m.insert(
        "age".into(),
        age_of(n.metadata.creation_timestamp.as_ref()).into(),
    );
    m
}

fn pod_map(p: &Pod) -> Map {
    let mut m = Map::new();
    m.insert(
        "namespace".into(),
        p.metadata.namespace.clone().unwrap_or_default().into(),
    );
    m.insert(
        "name".into(),
        p.metadata.name.clone().unwrap_or_default().into(),
    );
    let spec = p.spec.as_ref();
    m.insert(
        "node".into(),
        spec.and_then(|s| s.node_name.clone())
            .unwrap_or_default()
            .into(),
    );
    let st = p.status.as_ref();
    m.insert(
        "phase".into(),
        st.and_then(|s| s.phase.clone()).unwrap_or_default().into(),
    );
    let ready = st
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    m.insert("ready".into(), ready.into());
    let labels: Map = p
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.as_str().into(), v.clone().into()))
        .collect();
    m.insert("labels".into(), labels.into());
    m
}

/// Whether a config's CNI is `none` (its nodes never report Ready by themselves).
fn cni_none(config: &str) -> bool {
    serde_yaml_ng::Deserializer::from_str(config).any(|d| {
        let Ok(v) = <serde_yaml_ng::Value as serde::Deserialize>::deserialize(d) else {
            return false;
        };
        v.get("cluster")
            .and_then(|c| c.get("network"))
            .and_then(|c| c.get("cni"))
            .and_then(|c| c.get("name"))
            .and_then(serde_yaml_ng::Value::as_str)
            == Some("none")
    })
}

/// One check through the API, as `n.k8s_check` runs it.
fn k8s_check(n: &Node, check: &str, o: &CheckOpts) -> Result<String> {
    let Some(which) = talm_client::k8s::checks::Check::named(check) else {
        return Err(hinted(
            format!("n.k8s_check: {check:?} is not one of the Kubernetes checks"),
            "give a name of Talos's list, e.g. \"all k8s nodes to report ready\"",
        ));
    };
    let cni = super::change::machine_config(n)
        .map(|c| cni_none(&c))
        .unwrap_or(false);
    let endpoint = (!o.k8s_endpoint.is_empty()).then_some(o.k8s_endpoint.as_str());
    let cluster = match cluster_of(n, endpoint) {
        Ok(c) => c,
        Err(e) => return Ok(format!("{e:#}")),
    };
    let expected = talm_client::k8s::checks::Expected {
        control_planes: &o.control_plane_nodes,
        workers: &o.worker_nodes,
        cni_none: cni,
    };
    Ok(match block_on(cluster.check(which, &expected)) {
        Ok(outcome) => outcome.as_str().to_string(),
        Err(e) => e,
    })
}

/// The project's cluster: a client through the first endpoint of the talosconfig's context.
fn project_cluster(session: &Session) -> Result<Cluster> {
    let endpoints = super::context_endpoints(session)?;
    let Some(first) = endpoints.first() else {
        return Err(hinted(
            "no Talos endpoint to ask for the cluster's kubeconfig",
            "run inside a project whose talosconfig names endpoints (talm init, talm talosconfig)",
        ));
    };
    let n = super::node_with(session, first, &NodeOpts::default())?;
    cluster_of(&n, None)
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("cordon")
        .with_comments(["/// Marks the node's Kubernetes node unschedulable (`kubectl cordon`)."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let c = cluster_of(n, None)?;
                block_on(c.cordon(&k8s_name(n)?, &report))
            })
        });
    FuncRegistration::new("uncordon")
        .with_comments([
            "/// Marks the node's Kubernetes node schedulable again (`kubectl uncordon`).",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let c = cluster_of(n, None)?;
                block_on(c.uncordon(&k8s_name(n)?, &report))
            })
        });
    FuncRegistration::new("drain")
        .with_comments(["/// Cordons the node's Kubernetes node and evicts its pods (DaemonSet and mirror pods stay), waiting until they are gone: `timeout` (default 5m). The node stays cordoned; `n.uncordon()` undoes it."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| {
                let o = DrainOpts::read(&opts)?;
                let c = cluster_of(n, None)?;
                let name = k8s_name(n)?;
                block_on(c.drain(&name, o.timeout.unwrap_or(DRAIN_TIMEOUT), &report))
                    .map_err(|e| drain_failed(e, &command_target(n), ""))
            })
        });
    FuncRegistration::new("k8s_nodes")
        .with_comments(["/// The Kubernetes nodes of the node's cluster (the kubeconfig its endpoint issues), as `k8s::nodes()` gives them; `endpoint` (host[:port], \"\" for the kubeconfig's) replaces the API server's address."])
        .register_into_engine(engine, |n: &mut Node, endpoint: &str| {
            native(|| {
                let c = cluster_of(n, Some(endpoint))?;
                Ok(block_on(c.nodes())?.iter().map(|n| Dynamic::from(node_map(n))).collect::<Array>())
            })
        });
    FuncRegistration::new("k8s_check")
        .with_comments(["/// One Kubernetes check of the cluster health check, run from here through the cluster's API (the kubeconfig the node's endpoint issues): `check` is Talos's name (`all k8s nodes to report`, ...); `opts`: control_plane_nodes, worker_nodes (addresses), k8s_endpoint (host[:port]). Returns \"OK\", \"SKIP\" or the failure as Talos words it."])
        .register_into_engine(engine, |n: &mut Node, check: &str, opts: Map| {
            native(|| k8s_check(n, check, &CheckOpts::read(&opts)?))
        });
    let mut m = Module::new();
    FuncRegistration::new("static_pods_check")
        .with_comments(["/// `all control plane static pods to be running` over what each control plane's Talos API lists: `found` maps a control plane's address to the IDs of its StaticPodStatus resources. Returns \"OK\" or Talos's message."])
        .set_into_module(&mut m, |found: Array| {
            native(|| {
                let mut pairs = Vec::new();
                for f in found {
                    let pair: (String, Vec<String>) = rhai::serde::from_dynamic(&f)?;
                    pairs.push(pair);
                }
                Ok(match talm_wire::k8s::checks::static_pods(&pairs) {
                    Ok(o) => o.as_str().to_string(),
                    Err(e) => e,
                })
            })
        });
    FuncRegistration::new("nodes")
        .with_comments(["/// The cluster's Kubernetes nodes: #{name, status, ready, unschedulable, roles, internal_ip, version, age} each."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move || {
                native(|| {
                    let c = project_cluster(&session)?;
                    Ok(block_on(c.nodes())?.iter().map(|n| Dynamic::from(node_map(n))).collect::<Array>())
                })
            }
        });
    FuncRegistration::new("format_nodes")
        .with_comments([
            "/// Nodes from `k8s::nodes()` or `n.k8s_nodes()` as `kubectl get nodes` prints them.",
        ])
        .set_into_module(&mut m, |nodes: Array| native(|| nodes_table(&nodes)));
    FuncRegistration::new("pods")
        .with_comments(["/// The pods of a namespace (\"\" for all) matching a label selector (\"\" for all): #{namespace, name, node, phase, ready, labels} each."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move |namespace: &str, selector: &str| {
                native(|| {
                    let c = project_cluster(&session)?;
                    Ok(block_on(c.pods(namespace, selector, ""))?.iter().map(|p| Dynamic::from(pod_map(p))).collect::<Array>())
                })
            }
        });
    FuncRegistration::new("apply")
        .with_comments(["/// Applies Kubernetes objects (YAML, several documents) server side as field manager `talm`; returns #{kind, namespace, name, changed} each."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move |yaml: &str| {
                native(|| {
                    let objects = talm_client::k8s::apply::objects(yaml, "k8s::apply")?;
                    let c = project_cluster(&session)?;
                    let done = block_on(c.apply(&objects, false))?;
                    Ok(done
                        .into_iter()
                        .map(|a| {
                            let mut m = Map::new();
                            m.insert("kind".into(), a.kind.into());
                            m.insert("namespace".into(), a.namespace.into());
                            m.insert("name".into(), a.name.into());
                            m.insert("changed".into(), a.changed.into());
                            Dynamic::from(m)
                        })
                        .collect::<Array>())
                })
            }
        });
    engine.register_static_module("k8s", m.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stopped_drain_says_what_the_node_keeps_for_its_next_boot() {
        let blocked = || DrainError::Blocked {
            node: "w1".into(),
            pod: "workload/web-1".into(),
            budget: None,
            timeout: Duration::from_secs(2),
        };
        let pending = "; ghcr.io/siderolabs/installer:v1.13.9 is installed and runs from the node's next reboot";
        let e = drain_failed(blocked(), "-n 127.0.0.2 -e 127.0.0.1", pending);
        assert_eq!(
            format!("{e:#}"),
            "error draining node \"w1\": pod workload/web-1 could not be evicted within 2s: its eviction was refused; the node w1 is left cordoned; ghcr.io/siderolabs/installer:v1.13.9 is installed and runs from the node's next reboot"
        );
        let e = drain_failed(blocked(), "-n 127.0.0.2 -e 127.0.0.1", "");
        assert_eq!(
            format!("{e:#}"),
            "error draining node \"w1\": pod workload/web-1 could not be evicted within 2s: its eviction was refused; the node w1 is left cordoned"
        );
        let api = DrainError::Api(anyhow::anyhow!("connection refused"));
        assert_eq!(
            format!("{:#}", drain_failed(api, "", pending)),
            "connection refused; ghcr.io/siderolabs/installer:v1.13.9 is installed and runs from the node's next reboot"
        );
    }
}
