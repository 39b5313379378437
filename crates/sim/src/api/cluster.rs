//! ClusterService.HealthCheck of a simulated control plane: the cluster's nodes (given, or
//! discovered as the configured nodes of the same cluster, as Kubernetes would list them), then
//! Talos's checks in order, each retried at its interval until it passes or the wait timeout
//! ends, computed from the simulator's real state (nodes down, etcd not bootstrapped or not
//! joined, members that are no control planes). Progress lines are sent as machined's
//! reporter sends them: `waiting for <check>: <state>` whenever the line changes. The
//! Kubernetes checks read the cluster's simulated Kubernetes API (`crate::kube::health`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use crate::api::{error_meta, peer, Route, Stream_, Svc};
use crate::etcd::calls;
use crate::kube::health::{Check, Expected};
use crate::node::Node;
use crate::world::{services, workload::Workload, World, MEM_TOTAL_KB};
use talm_wire::api::describe;
use talm_wire::k8s::checks::Outcome;
use talm_wire::proto::cluster::{self, cluster_service_server::ClusterService};
use talm_wire::proto::{common, machine};

/// A check's result when it does not fail: passed, or skipped (it does not apply).
enum Pass {
    Ok,
    Skip,
}

impl From<Outcome> for Pass {
    fn from(o: Outcome) -> Pass {
        match o {
            Outcome::Pass => Pass::Ok,
            Outcome::Skip => Pass::Skip,
        }
    }
}

/// hashicorp/go-multierror's text, as FilterMessages returns in-band errors.
fn multierror(errs: &[String]) -> String {
    let head = match errs.len() {
        1 => "1 error occurred:".to_string(),
        n => format!("{n} errors occurred:"),
    };
    let points: Vec<String> = errs.iter().map(|e| format!("* {e}")).collect();
    format!("{head}\n\t{}\n\n", points.join("\n\t"))
}

/// The cluster as the checks see it.
struct Info {
    control_planes: Vec<String>,
    workers: Vec<String>,
}

impl Info {
    fn all(&self) -> Vec<String> {
        self.control_planes
            .iter()
            .chain(&self.workers)
            .cloned()
            .collect()
    }
}

/// Go's `%q` of a list of strings: `["a" "b"]`.
fn go_quoted(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", q.join(" "))
}

/// The checks, in Talos's order, with their retry intervals.
const CHECKS: [(&str, u64); 16] = [
    ("etcd to be healthy", 5),
    ("etcd members to be consistent across nodes", 5),
    ("etcd members to be control plane nodes", 5),
    ("apid to be ready", 5),
    ("all nodes memory sizes", 5),
    ("all nodes disk sizes", 5),
    ("no diagnostics", 5),
    ("kubelet to be healthy", 5),
    ("all nodes to finish boot sequence", 5),
    ("all k8s nodes to report", 30),
    ("all control plane static pods to be running", 5),
    ("all control plane components to be ready", 5),
    ("all k8s nodes to report ready", 5),
    ("kube-proxy to report ready", 5),
    ("coredns to report ready", 5),
    ("all k8s nodes to report schedulable", 5),
];

/// Runs checks against the simulator from one node, as its local client would.
struct Checker {
    svc: Svc,
    node: Arc<Node>,
    roles: Vec<String>,
    info: Info,
}

impl Checker {
    /// A one-to-many call: each node's answer, or the FilterMessages error list.
    fn many<T>(
        &self,
        nodes: &[String],
        f: impl Fn(&Arc<Node>) -> Result<T, Status>,
    ) -> Result<Vec<(String, T)>, String> {
        let mut ok = Vec::new();
        let mut errs = Vec::new();
        for n in nodes {
            match self.svc.target(n).and_then(|node| f(&node)) {
                Ok(v) => ok.push((n.clone(), v)),
                Err(st) => errs.push(format!("{n}: {}", describe(&st))),
            }
        }
        if errs.is_empty() {
            Ok(ok)
        } else {
            Err(multierror(&errs))
        }
    }

    fn service_health(&self, service: &str) -> Result<Pass, String> {
        let nodes = &self.info.control_planes;
        let found = self.many(nodes, |n| {
            let w = World::of(n);
            Ok(services::list(&w, &Workload::of(&w))
                .into_iter()
                .find(|s| s.id == service))
        })?;
        let mut found: Vec<(String, machine::ServiceInfo)> = found
            .into_iter()
            .filter_map(|(n, s)| s.map(|s| (n, s)))
            .collect();
        if found.len() != nodes.len() {
            return Err(format!(
                "expected a response with {} node(s), got {}",
                nodes.len(),
                found.len()
            ));
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut errs = Vec::new();
        for (node, s) in found {
            let events = s.events.map(|e| e.events).unwrap_or_default();
            let Some(last) = events.last() else {
                errs.push(format!(
                    "{node}: no events recorded yet for service {service:?}"
                ));
                continue;
            };
            if last.state != "Running" {
                errs.push(format!(
                    "{node}: service {service:?} not in expected state \"Running\": current state [{}] {}",
                    last.state, last.msg
                ));
            } else if !s.health.is_some_and(|h| h.healthy) {
                errs.push(format!("{node}: service is not healthy: {service}"));
            }
        }
        match errs.is_empty() {
            true => Ok(Pass::Ok),
            false => Err(multierror(&errs)),
        }
    }

    fn members(&self, n: &Arc<Node>) -> Result<machine::EtcdMembers, Status> {
        calls::member_list(n, &self.roles, &self.svc.registry, false)
    }

    fn etcd_consistent(&self) -> Result<Pass, String> {
        let mut lists = self.many(&self.info.control_planes, |n| self.members(n))?;
        if lists.is_empty() {
            return Err("no messages returned".into());
        }
        lists.sort_by(|a, b| a.0.cmp(&b.0));
        let key = |m: &machine::EtcdMember| (m.hostname.clone(), m.id, m.is_learner);
        let known: Vec<_> = lists[0].1.members.iter().map(key).collect();
        for (node, list) in &lists[1..] {
            if list.members.len() != known.len() {
                let expected: Vec<&str> = known.iter().map(|k| k.0.as_str()).collect();
                let actual: Vec<&str> = list.members.iter().map(|m| m.hostname.as_str()).collect();
                return Err(format!(
                    "{node}: expected to have [{}] members, got [{}]",
                    expected.join(" "),
                    actual.join(" ")
                ));
            }
            if let Some(m) = list.members.iter().find(|m| !known.contains(&key(m))) {
                return Err(format!(
                    "{node}: found unexpected etcd member {}",
                    m.hostname
                ));
            }
        }
        Ok(Pass::Ok)
    }

    fn etcd_control_planes(&self) -> Result<Pass, String> {
        let list = self.members(&self.node).map_err(|st| describe(&st))?;
        let ips: Vec<String> = list
            .members
            .iter()
            .flat_map(|m| m.peer_urls.iter())
            .map(|u| {
                let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
                let host = rest.rsplit_once(':').map_or(rest, |(h, _)| h);
                host.trim_matches(['[', ']']).to_string()
            })
            .collect();
        if ips.iter().all(|ip| self.info.control_planes.contains(ip)) {
            Ok(Pass::Ok)
        } else {
            Err(format!(
                "etcd member ips {} are not subset of control plane node ips {}",
                go_quoted(&ips),
                go_quoted(&self.info.control_planes)
            ))
        }
    }

    fn apid(&self) -> Result<Pass, String> {
        self.many(&self.info.all(), |n| n.version_reply())?;
        Ok(Pass::Ok)
    }

    fn memory(&self) -> Result<Pass, String> {
        let versions = self.many(&self.info.all(), |n| n.version_reply())?;
        for (node, v) in versions {
            if v.platform.is_some_and(|p| p.mode == "container") {
                continue;
            }
            let need = if self.info.control_planes.contains(&node) {
                1698
            } else {
                874
            };
            let have = MEM_TOTAL_KB * 1024 / (1 << 20);
            if have < need {
                return Err(format!("node {node:?} does not meet memory requirements: expected at least {need} MiB, actual {have} MiB"));
            }
        }
        Ok(Pass::Ok)
    }

    fn disks(&self) -> Result<Pass, String> {
        const MIB: u64 = 1 << 20;
        // EFI, STATE and META as Talos sizes them by default.
        let system = (100 + 100 + 1) * MIB;
        let need = 6 * 1024 * MIB - system - 10 * MIB;
        for (node, disk) in self.many(&self.info.all(), |n| {
            let disk = n.state().installed_disk.clone();
            Ok(disk.and_then(|d| n.spec.hardware.disks.iter().find(|x| x.name == d).cloned()))
        })? {
            let Some(disk) = disk else { continue };
            let size = disk.size.saturating_sub(system);
            if size < need {
                let sep = if disk.name.ends_with(|c: char| c.is_ascii_digit()) {
                    "p"
                } else {
                    ""
                };
                return Err(format!(
                    "ephemeral partition \"/dev/{}{sep}4\" for node {node:?} is too small, expected at least {}, actual {}",
                    disk.name,
                    talm_base::humanize::ibytes(need),
                    talm_base::humanize::ibytes(size)
                ));
            }
        }
        Ok(Pass::Ok)
    }

    fn booted(&self) -> Result<Pass, String> {
        let stages = self.many(&self.info.all(), |n| Ok(n.state().rebooting))?;
        let busy: Vec<String> = stages
            .into_iter()
            .filter(|(_, r)| *r)
            .map(|(n, _)| n)
            .collect();
        match busy.is_empty() {
            true => Ok(Pass::Ok),
            false => Err(format!(
                "nodes are not running: rebooting: {}",
                go_quoted(&busy)
            )),
        }
    }

    /// One of the Kubernetes checks, over the cluster's simulated API.
    fn kubernetes(&self, check: Check) -> Result<Pass, String> {
        let expected = Expected {
            control_planes: &self.info.control_planes,
            workers: &self.info.workers,
        };
        crate::kube::health::run(check, &self.node, &self.svc.registry, &expected).map(Pass::from)
    }

    fn run(&self, check: usize) -> Result<Pass, String> {
        match check {
            0 => self.service_health("etcd"),
            1 => self.etcd_consistent(),
            2 => self.etcd_control_planes(),
            3 => self.apid(),
            4 => self.memory(),
            5 => self.disks(),
            6 => Ok(Pass::Ok),
            7 => self.service_health("kubelet"),
            8 => self.booted(),
            9 => self.kubernetes(Check::NodesReport),
            10 => self.kubernetes(Check::StaticPods),
            11 => self.kubernetes(Check::Components),
            12 => self.kubernetes(Check::NodesReady),
            13 => self.kubernetes(Check::KubeProxy),
            14 => self.kubernetes(Check::CoreDns),
            _ => self.kubernetes(Check::Schedulable),
        }
    }
}

/// The cluster's nodes: as given, else the configured nodes of the target's cluster.
fn cluster_info(svc: &Svc, node: &Node, req: &cluster::HealthCheckRequest) -> Info {
    let given = req.cluster_info.clone().unwrap_or_default();
    if !given.control_plane_nodes.is_empty() || !given.worker_nodes.is_empty() {
        return Info {
            control_planes: given.control_plane_nodes,
            workers: given.worker_nodes,
        };
    }
    let identity = node.state().config.as_ref().map(|c| c.cluster_ca().0);
    let mut nodes: Vec<Arc<Node>> = svc
        .registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    nodes.sort_by_key(|n| n.spec.addr);
    let mut info = Info {
        control_planes: Vec::new(),
        workers: Vec::new(),
    };
    for n in nodes {
        let st = n.state();
        let Some(cfg) = &st.config else { continue };
        if Some(cfg.cluster_ca().0) != identity {
            continue;
        }
        if cfg.is_control_plane() {
            info.control_planes.push(n.name());
        } else {
            info.workers.push(n.name());
        }
    }
    info
}

/// Sends progress lines of the checks; `Err` when one fails past the deadline.
async fn checks(
    checker: Checker,
    deadline: tokio::time::Instant,
    tx: &mpsc::Sender<String>,
) -> Result<(), Status> {
    let expired = || Status::deadline_exceeded("context deadline exceeded");
    let nodes = checker.info.all();
    let _ = tx
        .send(format!("discovered nodes: {}", go_quoted(&nodes)))
        .await;
    let checker = Arc::new(checker);
    for (i, (what, every)) in CHECKS.iter().enumerate() {
        if tokio::time::Instant::now() >= deadline {
            return Err(expired());
        }
        let mut last = format!("waiting for {what}: ...");
        let _ = tx.send(last.clone()).await;
        loop {
            let c = Arc::clone(&checker);
            let result = tokio::task::spawn_blocking(move || c.run(i))
                .await
                .unwrap_or_else(|e| Err(format!("check failed: {e}")));
            let state = match &result {
                Ok(Pass::Ok) => "OK".to_string(),
                Ok(Pass::Skip) => "SKIP".to_string(),
                Err(e) => e.clone(),
            };
            let line = format!("waiting for {what}: {state}").trim().to_string();
            if line != last {
                let _ = tx.send(line.clone()).await;
                last = line;
            }
            if result.is_ok() {
                break;
            }
            let next = tokio::time::Instant::now() + Duration::from_secs(*every);
            if next >= deadline {
                tokio::time::sleep_until(deadline).await;
                return Err(expired());
            }
            tokio::time::sleep_until(next).await;
        }
    }
    Ok(())
}

#[tonic::async_trait]
impl ClusterService for Svc {
    type HealthCheckStream = Stream_<cluster::HealthCheckProgress>;

    async fn health_check(
        &self,
        req: Request<cluster::HealthCheckRequest>,
    ) -> Result<Response<Self::HealthCheckStream>, Status> {
        let peer = peer(&req);
        let route = self.route(&req, "/cluster.ClusterService/HealthCheck", true)?;
        let (target, host) = match route {
            Route::Local => (Ok(Arc::clone(&self.node)), None),
            Route::One(n) => (self.target(&n), None),
            Route::Many(ns) => {
                let n = ns.first().cloned().unwrap_or_default();
                (self.target(&n), Some(n))
            }
        };
        let body = req.into_inner();
        let wait = body
            .wait_timeout
            .map(|d| Duration::new(d.seconds.max(0) as u64, d.nanos.max(0) as u32))
            .unwrap_or_default();
        let roles = peer.roles.to_vec();
        let ready = target.and_then(|node| {
            calls::allow(&roles, &["os:admin", "os:operator", "os:reader"])?;
            calls::control_plane(&node, "cluster health check")?;
            Ok(node)
        });
        let meta = |h: &Option<String>| {
            h.as_ref().map(|h| common::Metadata {
                hostname: h.clone(),
                ..Default::default()
            })
        };
        let node = match (ready, &host) {
            (Ok(n), _) => n,
            (Err(st), None) => return Err(st),
            (Err(st), Some(h)) => {
                let msg = cluster::HealthCheckProgress {
                    metadata: Some(error_meta(h, &st)),
                    message: String::new(),
                };
                let once: Self::HealthCheckStream = Box::pin(tokio_stream::iter([Ok(msg)]));
                return Ok(Response::new(once));
            }
        };
        let info = cluster_info(self, &node, &body);
        let checker = Checker {
            svc: self.clone(),
            node,
            roles,
            info,
        };
        let (tx, rx) = mpsc::channel::<Result<cluster::HealthCheckProgress, Status>>(64);
        let deadline = tokio::time::Instant::now() + wait;
        tokio::spawn(async move {
            let (lines_tx, mut lines) = mpsc::channel::<String>(64);
            let run = tokio::spawn(async move { checks(checker, deadline, &lines_tx).await });
            while let Some(line) = lines.recv().await {
                let msg = cluster::HealthCheckProgress {
                    metadata: meta(&host),
                    message: line,
                };
                if tx.send(Ok(msg)).await.is_err() {
                    run.abort();
                    return;
                }
            }
            let outcome = run
                .await
                .unwrap_or_else(|e| Err(Status::internal(e.to_string())));
            if let Err(st) = outcome {
                let last = match &host {
                    None => Err(st),
                    Some(h) => Ok(cluster::HealthCheckProgress {
                        metadata: Some(error_meta(h, &st)),
                        message: String::new(),
                    }),
                };
                let _ = tx.send(last).await;
            }
        });
        let stream: Self::HealthCheckStream =
            Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx));
        Ok(Response::new(stream))
    }
}
