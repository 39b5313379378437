//! The controllers that keep every simulated cluster's Kubernetes objects true to its nodes:
//! one task for the whole simulator, a pass every 250 ms. A pass reads each node's change
//! counters (cheap: no lock unless something changed), re-derives the facts of the nodes that
//! changed, starts and stops each control plane's kube-apiserver, and, for each cluster whose
//! API runs, writes the Nodes and mirror pods of the changed nodes and runs the workload
//! controllers when a node or an object changed. A cluster with nothing new costs nothing
//! beyond the counters, so thousands of nodes stay cheap.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::faults::ClusterFaults;
use super::model::{self, Facts, Readiness};
use super::store::{Key, Object, Objects};
use super::{apiserver, bootstrap, Kube};
use crate::api::Registry;
use crate::etcd::Cluster;
use crate::node::Node;

/// How often a pass runs.
const TICK: Duration = Duration::from_millis(250);
/// Every this many passes, health checks that faults fail over time are looked at again.
const RECHECK: u64 = 8;

/// What a pass last saw of a node.
struct Seen {
    /// The node's change counter, boot it serves, and whether it is switched off.
    mark: (u64, u64, bool),
    facts: Option<Facts>,
    /// Its etcd member (cluster and id) while etcd runs on it.
    member: Option<(Arc<Mutex<Cluster>>, u64)>,
    rebooting: bool,
    kubelet_ok: bool,
    /// Changed since its cluster's API last took it in (kept while that API is down).
    pending: bool,
}

impl Seen {
    fn readiness(&self) -> Readiness {
        let (_, up, off) = self.mark;
        match up > 0 && !off && !self.rebooting && self.kubelet_ok {
            true => Readiness::Ready,
            false => Readiness::Unknown,
        }
    }
}

/// One cluster's API as the controllers run it.
struct Api {
    kube: Arc<Kube>,
    /// The etcd cluster that keeps it (its pass counter is bumped after each pass).
    etcd: Arc<Mutex<Cluster>>,
    /// Control planes serving it: node name → (its boot, the token that stops it).
    servers: HashMap<String, (u64, CancellationToken)>,
    /// The namespaces and bootstrap manifests were written.
    seeded: bool,
    /// The store version after the last workload pass.
    settled: u64,
    /// The control plane holding the cluster endpoint's virtual IP, if the configs name one.
    vip: apiserver::Vip,
}

/// The controllers' memory between passes.
#[derive(Default)]
pub struct Controllers {
    seen: HashMap<String, Seen>,
    apis: Vec<Api>,
    passes: u64,
}

fn look(node: &Node, kubelet_ok: bool) -> Seen {
    let mark = mark(node);
    let facts = Facts::of(node);
    let st = node.state();
    let member = match (&st.etcd, &st.etcd_down) {
        (Some(m), None) => Some((Arc::clone(&m.cluster), m.id)),
        _ => None,
    };
    Seen {
        mark,
        facts,
        member,
        rebooting: st.rebooting,
        kubelet_ok,
        pending: true,
    }
}

fn mark(node: &Node) -> (u64, u64, bool) {
    (
        *node.changed.borrow(),
        *node.up.borrow(),
        *node.halted.borrow(),
    )
}

fn kubelet_ok(node: &Node) -> bool {
    !crate::net::unhealthy::failing(node)
        .iter()
        .any(|s| s == "kubelet")
}

impl Controllers {
    /// One pass over the simulator's nodes.
    pub fn pass(&mut self, registry: &Registry) {
        self.passes += 1;
        let recheck = self.passes.is_multiple_of(RECHECK);
        let nodes: Vec<Arc<Node>> = registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for n in &nodes {
            let name = n.name();
            let old = self.seen.get(&name);
            let fresh = match old {
                Some(s) if s.mark == mark(n) && !recheck => continue,
                Some(s) if s.mark == mark(n) => {
                    let ok = kubelet_ok(n);
                    if ok == s.kubelet_ok {
                        continue;
                    }
                    look(n, ok)
                }
                _ => look(n, kubelet_ok(n)),
            };
            let mut fresh = fresh;
            if fresh.facts.is_none() {
                // A node that lost its config (a reset) stays the Node it was, NotReady.
                fresh.facts = old.and_then(|s| s.facts.clone());
            }
            self.seen.insert(name, fresh);
        }
        self.adopt();
        let by_name: HashMap<String, &Arc<Node>> = nodes.iter().map(|n| (n.name(), n)).collect();
        for i in 0..self.apis.len() {
            self.run_cluster(i, &by_name);
            self.apis[i]
                .etcd
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .kube_passes += 1;
        }
    }

    /// Takes on the API of every etcd cluster a node runs.
    fn adopt(&mut self) {
        for s in self.seen.values() {
            let Some((cluster, _)) = &s.member else {
                continue;
            };
            let kube = Arc::clone(&cluster.lock().unwrap_or_else(|e| e.into_inner()).kube);
            if !self.apis.iter().any(|a| Arc::ptr_eq(&a.kube, &kube)) {
                self.apis.push(Api {
                    kube,
                    etcd: Arc::clone(cluster),
                    servers: HashMap::new(),
                    seeded: false,
                    settled: 0,
                    vip: apiserver::Vip::default(),
                });
            }
        }
    }

    fn run_cluster(&mut self, i: usize, nodes: &HashMap<String, &Arc<Node>>) {
        let kube = Arc::clone(&self.apis[i].kube);
        // The control planes whose etcd member keeps this API, and the live ones.
        let members: Vec<(&String, &Seen)> = self
            .seen
            .iter()
            .filter(|(_, s)| {
                s.member.as_ref().is_some_and(|(c, _)| {
                    Arc::ptr_eq(&c.lock().unwrap_or_else(|e| e.into_inner()).kube, &kube)
                })
            })
            .collect();
        let Some(cluster) = members
            .first()
            .and_then(|(_, s)| s.facts.as_ref())
            .map(|f| f.cluster)
        else {
            // No node runs this etcd any more: its servers stop.
            for (_, (_, stop)) in self.apis[i].servers.drain() {
                stop.cancel();
            }
            self.apis[i].vip.release();
            return;
        };
        let alive: HashSet<u64> = members
            .iter()
            .filter(|(_, s)| s.mark.1 > 0 && !s.mark.2)
            .filter_map(|(_, s)| s.member.as_ref().map(|(_, id)| *id))
            .collect();
        let quorum = members
            .first()
            .and_then(|(_, s)| s.member.as_ref())
            .is_some_and(|(c, _)| c.lock().unwrap_or_else(|e| e.into_inner()).quorum(&alive));
        let serving: Vec<(String, u64)> = members
            .iter()
            .filter(|(_, s)| quorum && s.mark.1 > 0 && !s.mark.2 && !s.rebooting)
            .map(|(n, s)| ((*n).clone(), s.mark.1))
            .collect();
        let faults = ClusterFaults::of(
            members
                .iter()
                .filter_map(|(n, _)| nodes.get(*n))
                .map(|n| n.faults())
                .collect::<Vec<_>>()
                .iter(),
        );
        let api = &mut self.apis[i];
        api.servers.retain(|name, (boot, stop)| {
            let keep = serving.iter().any(|(n, b)| n == name && b == boot);
            if !keep {
                stop.cancel();
            }
            keep
        });
        for (name, boot) in &serving {
            if api.servers.contains_key(name) {
                continue;
            }
            let Some(node) = nodes.get(name) else {
                continue;
            };
            let stop = node.stop.child_token();
            if apiserver::start(node, Arc::clone(&kube), stop.clone()) {
                if api.servers.is_empty() && !api.seeded {
                    if let Some(d) = faults.unavailable {
                        *kube
                            .unavailable_until
                            .lock()
                            .unwrap_or_else(|e| e.into_inner()) = Some(Instant::now() + d);
                    }
                }
                api.servers.insert(name.clone(), (*boot, stop));
            }
        }
        let holders: Vec<&Node> = serving
            .iter()
            .filter(|(n, _)| api.servers.contains_key(n))
            .filter_map(|(n, _)| nodes.get(n).map(|n| n.as_ref()))
            .collect();
        api.vip.keep(&holders, &kube);
        if api.servers.is_empty() {
            return;
        }
        let fresh = !api.seeded;
        if fresh {
            if let Some(node) = serving.first().and_then(|(n, _)| nodes.get(n)) {
                bootstrap::seed(&kube.objects, node);
            }
            api.seeded = true;
        }
        let due: Vec<String> = self
            .seen
            .iter()
            .filter(|(_, s)| s.facts.as_ref().is_some_and(|f| f.cluster == cluster))
            .filter(|(_, s)| fresh || s.pending)
            .map(|(n, _)| n.clone())
            .collect();
        for name in &due {
            let Some(s) = self.seen.get_mut(name) else {
                continue;
            };
            s.pending = false;
            let Some(f) = &s.facts else { continue };
            model::apply_node(&kube.objects, f, s.readiness());
            if f.control_plane {
                if let Some(node) = nodes.get(name) {
                    mirror_pods(
                        &kube.objects,
                        node,
                        f,
                        s.readiness() == Readiness::Ready,
                        &faults,
                    );
                }
            }
        }
        let touched = !due.is_empty();
        let api = &mut self.apis[i];
        if touched || kube.objects.version() != api.settled {
            super::workloads::reconcile(&kube.objects, &faults);
            api.settled = kube.objects.version();
        }
    }
}

/// Brings the mirror pods of a control plane to its static pods: one per static pod, none
/// for a static pod the kubelet no longer runs.
fn mirror_pods(objects: &Objects, node: &Node, f: &Facts, ready: bool, faults: &ClusterFaults) {
    let Some(owner) = objects.get(&Key::new("nodes", "", &f.name)) else {
        return;
    };
    let uid = owner["metadata"]["uid"].as_str().unwrap_or("").to_string();
    let pods = model::static_pods(node);
    let mut keep: HashSet<String> = HashSet::new();
    for (component, pod, status) in &pods {
        let status = match status {
            Some(s) => s.clone(),
            None => continue,
        };
        let name = format!("{component}-{}", f.name);
        let ready = ready && !faults.never_ready("kube-system", &name);
        let mut mirror = model::mirror_pod(f, &uid, component, pod, &status, ready);
        model::integral(&mut mirror["status"]);
        keep.insert(name.clone());
        objects.upsert(&Key::new("pods", "kube-system", &name), mirror);
    }
    // Talos runs these three static pods and no others: their mirrors are looked up by name,
    // not found in a list of every pod of kube-system (a pass over a thousand control planes
    // would read each pod a thousand times).
    for component in STATIC_PODS {
        let name = format!("{component}-{}", f.name);
        if keep.contains(&name) {
            continue;
        }
        let key = Key::new("pods", "kube-system", &name);
        let Some(p) = objects.get(&key) else { continue };
        let mirrored = p["metadata"]["annotations"]
            .get("kubernetes.io/config.mirror")
            .is_some();
        if mirrored && p["spec"]["nodeName"] == f.name.as_str() {
            objects.delete(&key);
        }
    }
}

/// The static pods Talos renders on a control plane.
const STATIC_PODS: [&str; 3] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

/// Runs the controllers until the simulator stops.
pub async fn run(registry: Arc<Registry>, stop: CancellationToken) {
    let mut c = Controllers::default();
    loop {
        c.pass(&registry);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(TICK) => {}
        }
    }
}

/// The objects of kind `resource` a cluster holds, for the checks (kube-system's when
/// `namespace` is given).
pub fn list(kube: &Kube, resource: &str, namespace: Option<&str>) -> Vec<Object> {
    kube.objects.list(resource, namespace).0
}
