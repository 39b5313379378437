//! The resources Talos's controllers fill from a running node, grouped by subject: what the
//! machine is (`hardware`), how it runs (`runtime`), its clock (`time`), its etcd member
//! (`etcd`), its place in the cluster (`cluster`), its Kubernetes parts (`k8s`, the static pods
//! in `pods`/`podparts`/`podstatus`, `kubelet`, `manifests`), its volumes and extensions
//! (`volumes`, `extensions`) and its roots of trust (`secrets`); each built from the node's
//! hardware and state, the other simulated nodes of its world (`Peer`) and what its API
//! serves with (`ApiCerts`).

pub mod cluster;
pub mod etcd;
pub mod extensions;
pub mod hardware;
pub mod k8s;
pub mod kubelet;
pub mod lookup;
pub mod manifests;
pub mod podparts;
pub mod pods;
pub mod podstatus;
pub mod protospec;
pub mod runtime;
pub mod secrets;
pub mod time;
pub mod volumes;

use serde_yaml_ng::Value;

use crate::cosi::facts::{map, Res};
use crate::node::hardware::Hardware;
use crate::node::state::State;

/// What another node of the world tells this one (through discovery and etcd).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Peer {
    /// The cluster it belongs to (its cluster CA).
    pub identity: String,
    /// Discovery's node ID.
    pub node_id: String,
    pub hostname: String,
    pub machine_type: String,
    pub version: String,
    /// Its IP addresses, without prefix.
    pub ips: Vec<String>,
    /// Its etcd runs (the cluster's Kubernetes API is up).
    pub etcd: bool,
}

impl Peer {
    /// A configured node as the others see it; nothing for a node in maintenance.
    pub fn of(hw: &Hardware, st: &State) -> Option<Peer> {
        let cfg = st.config.as_ref()?;
        Some(Peer {
            identity: cfg.cluster_ca().0,
            node_id: cluster::identity(st),
            hostname: st.hostname(hw).unwrap_or_default(),
            machine_type: cfg.machine_type(),
            version: st.version.clone(),
            ips: ips(hw),
            etcd: etcd_runs(st),
        })
    }
}

/// Whether the node's etcd service runs.
pub fn etcd_runs(st: &State) -> bool {
    crate::node::services(st)
        .iter()
        .any(|(id, state)| *id == "etcd" && *state == "Running")
}

/// The node's IP addresses (every link, without prefix).
pub fn ips(hw: &Hardware) -> Vec<String> {
    hw.links
        .iter()
        .flat_map(|l| l.addresses.iter())
        .filter_map(|a| a.split('/').next())
        .map(str::to_string)
        .collect()
}

/// The certificates apid serves with in the node's current boot (base64 of PEM, as Talos
/// writes them): its server certificate and key, on control planes a client certificate and
/// key, and the CAs it accepts clients from (none in maintenance, which skips client checks).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ApiCerts {
    pub server: (String, String),
    pub client: Option<(String, String)>,
    pub accepted: Vec<String>,
    pub maintenance: bool,
}

/// What a node learns from outside its state: the other nodes of its world, the services
/// whose health check an injected fault fails and the certificates its API serves with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Outside {
    pub peers: Vec<Peer>,
    pub unhealthy: Vec<String>,
    pub api: Option<ApiCerts>,
}

/// A node's view: its hardware, state, the other nodes of its world, failing health checks
/// and its API's certificates (once it serves).
pub struct Ctx<'a> {
    pub hw: &'a Hardware,
    pub st: &'a State,
    pub peers: &'a [Peer],
    pub unhealthy: &'a [String],
    pub api: Option<&'a ApiCerts>,
}

impl Ctx<'_> {
    /// This node and the other nodes of its cluster (same cluster CA), this one first.
    pub fn cluster(&self) -> Vec<Peer> {
        let Some(me) = Peer::of(self.hw, self.st) else {
            return Vec::new();
        };
        let others = self
            .peers
            .iter()
            .filter(|p| p.identity == me.identity && p.node_id != me.node_id)
            .cloned();
        std::iter::once(me.clone()).chain(others).collect()
    }

    /// The cluster's Kubernetes API answers: some control plane of it runs etcd.
    pub fn kubernetes_up(&self) -> bool {
        self.cluster()
            .iter()
            .any(|p| p.etcd && matches!(p.machine_type.as_str(), "controlplane" | "init"))
    }

    pub fn is_control_plane(&self) -> bool {
        self.st
            .config
            .as_ref()
            .is_some_and(|c| c.is_control_plane())
    }
}

pub fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

pub fn texts<S: AsRef<str>>(v: &[S]) -> Value {
    Value::Sequence(v.iter().map(|x| s(x.as_ref())).collect())
}

/// A mapping from pairs, dropping those whose value is `None` (Go's `omitempty`).
pub fn omit(pairs: Vec<(&str, Option<Value>)>) -> Value {
    map(pairs
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect())
}

/// `Some` unless the text is empty (an `omitempty` string).
pub fn text(v: &str) -> Option<Value> {
    (!v.is_empty()).then(|| s(v))
}

/// `Some` unless the number is zero (an `omitempty` number).
pub fn number(v: u64) -> Option<Value> {
    (v != 0).then(|| Value::from(v))
}

/// A resource at `version`.
pub fn res(
    namespace: &'static str,
    ty: &'static str,
    id: impl Into<String>,
    owner: &'static str,
    spec: Value,
    version: u64,
) -> Res {
    Res {
        namespace,
        ty,
        id: id.into(),
        owner,
        spec,
        version,
        annotations: vec![],
    }
}

/// Every resource the node's controllers fill.
pub fn all(ctx: &Ctx) -> Vec<Res> {
    let mut out = Vec::new();
    out.extend(hardware::resources(ctx));
    out.extend(runtime::resources(ctx));
    out.extend(time::resources(ctx));
    out.extend(etcd::resources(ctx));
    out.extend(cluster::resources(ctx));
    out.extend(k8s::resources(ctx));
    out.extend(pods::resources(ctx));
    out.extend(kubelet::resources(ctx));
    out.extend(manifests::resources(ctx));
    out.extend(volumes::resources(ctx));
    out.extend(extensions::resources(ctx));
    out.extend(secrets::resources(ctx));
    out
}

/// A node for unit tests: the default machine, in maintenance or configured as `kind`.
#[cfg(test)]
pub mod testing {
    use crate::node::hardware::Hardware;
    use crate::node::state::{Config, State};

    pub fn hw() -> Hardware {
        Hardware::default_for("127.0.0.11".parse().unwrap())
    }

    /// The context of one node alone, with every service healthy.
    pub fn alone<'a>(hw: &'a Hardware, st: &'a State) -> super::Ctx<'a> {
        super::Ctx {
            hw,
            st,
            peers: &[],
            unhealthy: &[],
            api: None,
        }
    }

    /// A state configured as `kind` (`controlplane`, `worker`) with cluster CA `ca`.
    pub fn configured(kind: &str, ca: &str) -> State {
        let mut st = State::new("v1.13.7", "n1");
        let text = format!(
            "version: v1alpha1\nmachine:\n    type: {kind}\n    network:\n        hostname: node-{kind}\ncluster:\n    clusterName: c\n    controlPlane:\n        endpoint: https://127.0.0.11:6443\n    ca:\n        crt: {ca}\n    discovery:\n        enabled: true\n"
        );
        let docs = serde_yaml_ng::Deserializer::from_str(&text)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        st.set_config(Some(Config::new(text, docs)));
        st.installed_disk = Some("nvme0n1".into());
        st
    }

    /// The keys of a mapping, in order.
    pub fn keys(v: &serde_yaml_ng::Value) -> Vec<String> {
        v.as_mapping()
            .unwrap()
            .keys()
            .map(|k| k.as_str().unwrap().to_string())
            .collect()
    }
}
