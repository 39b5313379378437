//! The node-inspection calls of a simulated node (Containers, Stats, Processes, Memory, Mounts,
//! Netstat, Read, List, Copy, DiskUsage, ServiceList) over the node's `world::World`, with apid's
//! routing (`nodes` one-to-many with hostnames and in-band errors, `node` one-to-one), Talos's
//! roles (Read and Copy need os:admin, the rest any of admin/operator/reader) and its refusals
//! (no CRI before the Kubernetes runtime starts, maintenance readers).

use std::sync::Arc;

use tonic::{Request, Response, Status};

use super::{error_meta, peer, Route, Routed, Stream_, Svc};
use crate::node::{denied, Node};
use crate::world::workload::{Pod, Workload};
use crate::world::{meminfo, mounts, netstat, rootfs, services, walk, World};
use talm_wire::proto::common;
use talm_wire::proto::machine;

routed!(
    machine::Container,
    machine::Stats,
    machine::Process,
    machine::Memory,
    machine::Mounts,
    machine::Netstat
);

/// Stream messages whose field 1 is `common.Metadata`: apid adds the hostname to it.
trait Hosted: Default + Send + 'static {
    fn meta(&mut self) -> &mut Option<common::Metadata>;
}

macro_rules! hosted {
    ($($t:ty),*) => { $(impl Hosted for $t { fn meta(&mut self) -> &mut Option<common::Metadata> { &mut self.metadata } })* };
}
hosted!(common::Data, machine::FileInfo, machine::DiskUsageInfo);

/// Who may look at a node.
pub(super) const READERS: [&str; 3] = ["os:admin", "os:operator", "os:reader"];
/// Who may change services, containers and images.
pub(super) const OPERATORS: [&str; 2] = ["os:admin", "os:operator"];

/// Any of `allowed` among `roles`, else Talos's denial.
pub(super) fn allow(roles: &[String], allowed: &[&str]) -> Result<(), Status> {
    if roles.iter().any(|r| allowed.contains(&r.as_str())) {
        Ok(())
    } else {
        Err(denied())
    }
}

/// The CRI's socket is not there until the `cri` service runs.
pub(super) fn cri_down(prefix: &str) -> Status {
    Status::unavailable(format!(
        "{prefix}connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\""
    ))
}

/// Data chunks of at most 1024 bytes, as machined's chunker sends them.
fn chunks(bytes: &[u8]) -> Vec<common::Data> {
    bytes
        .chunks(1024)
        .map(|c| common::Data {
            metadata: None,
            bytes: c.to_vec(),
        })
        .collect()
}

/// A container and, when it runs, its metrics (memory bytes, CPU nanoseconds).
pub(super) type Listed = (machine::ContainerInfo, Option<(u64, u64)>);

/// Which containers a Containers/Stats request asks for.
enum Inventory {
    System,
    Cri,
    Nothing,
}

fn inventory(w: &World, namespace: &str, driver: i32) -> Result<Inventory, Status> {
    if namespace.is_empty() {
        return Err(Status::invalid_argument("namespace can't be empty"));
    }
    match common::ContainerDriver::try_from(driver) {
        Ok(common::ContainerDriver::Cri) if namespace != "k8s.io" => Err(Status::unknown(
            "CRI inspector is supported only for K8s namespace",
        )),
        Ok(common::ContainerDriver::Cri) if !w.running("cri") => Err(cri_down("")),
        Ok(common::ContainerDriver::Cri) => Ok(Inventory::Cri),
        Ok(common::ContainerDriver::Containerd) if namespace == "system" => Ok(Inventory::System),
        Ok(common::ContainerDriver::Containerd) if !w.running("cri") => Err(cri_down("")),
        Ok(common::ContainerDriver::Containerd) => Ok(Inventory::Nothing),
        Err(_) => Err(Status::invalid_argument(format!(
            "unsupported driver \"{driver}\""
        ))),
    }
}

/// The CRI view of a pod: its sandbox, then its containers.
fn pod_entries(pod: &Pod, load: &Workload) -> Vec<Listed> {
    let id = pod.id();
    let mut out = vec![(
        machine::ContainerInfo {
            namespace: "k8s.io".into(),
            id: id.clone(),
            image: crate::world::workload::PAUSE_IMAGE.into(),
            pid: pod.pid as u32,
            status: "SANDBOX_READY".into(),
            pod_id: id.clone(),
            name: id.clone(),
            network_namespace: pod.netns.clone(),
            internal_id: pod.sandbox.clone(),
            uid: pod.uid.clone(),
        },
        Some((0, 0)),
    )];
    for c in &pod.containers {
        let metrics = c.running.then(|| {
            let cpu = load.cpu_usec_of(&c.cgroup) * 1000;
            (load.memory_of(&c.cgroup), cpu)
        });
        out.push((
            machine::ContainerInfo {
                namespace: "k8s.io".into(),
                id: format!("{id}:{}:{}", c.name, &c.id[..12]),
                image: c.image.clone(),
                pid: c.pid.max(0) as u32,
                status: if c.running {
                    "CONTAINER_RUNNING"
                } else {
                    "CONTAINER_EXITED"
                }
                .into(),
                pod_id: id.clone(),
                name: c.name.clone(),
                network_namespace: pod.netns.clone(),
                internal_id: c.id.clone(),
                uid: pod.uid.clone(),
            },
            metrics,
        ));
    }
    out
}

/// Every container of the inventory, with its metrics (memory bytes, CPU nanoseconds).
pub(super) fn containers(n: &Node, namespace: &str, driver: i32) -> Result<Vec<Listed>, Status> {
    let w = World::of(n);
    let inv = inventory(&w, namespace, driver)?;
    let load = Workload::of(&w);
    Ok(match inv {
        Inventory::Nothing => vec![],
        Inventory::System => load
            .system
            .iter()
            .map(|c| {
                let info = machine::ContainerInfo {
                    namespace: namespace.into(),
                    id: c.id.clone(),
                    image: c.image.clone(),
                    pid: c.pid as u32,
                    status: "RUNNING".into(),
                    pod_id: c.id.clone(),
                    name: c.id.clone(),
                    network_namespace: String::new(),
                    internal_id: c.id.clone(),
                    uid: String::new(),
                };
                let cpu = load.cpu_usec_of(&c.cgroup) * 1000;
                (info, Some((load.memory_of(&c.cgroup), cpu)))
            })
            .collect(),
        Inventory::Cri => load
            .pods
            .iter()
            .flat_map(|p| pod_entries(p, &load))
            .collect(),
    })
}

impl Svc {
    /// A server stream of `f`'s messages from every target: errors of a local or one-to-one
    /// call fail it before streaming; through `nodes` each message gets its hostname and a
    /// node's failure becomes one message with the error in its metadata.
    async fn streamed<T: Hosted>(
        &self,
        req: &Request<impl Sized>,
        call: &str,
        many_ok: bool,
        f: impl Fn(&Arc<Node>, &[String]) -> Result<Vec<T>, Status>,
    ) -> Result<Response<Stream_<T>>, Status> {
        let peer = peer(req);
        let drops = self.faults(call, &peer).await?;
        let items = match self.route(req, &format!("/machine.MachineService/{call}"), many_ok)? {
            Route::Local => f(&self.node, &peer.roles)?,
            Route::One(n) => f(&self.target(&n)?, &peer.roles)?,
            Route::Many(ns) => ns
                .iter()
                .flat_map(
                    |n| match self.target(n).and_then(|node| f(&node, &peer.roles)) {
                        Ok(items) => items
                            .into_iter()
                            .map(|mut m| {
                                m.meta().get_or_insert_with(Default::default).hostname = n.clone();
                                m
                            })
                            .collect(),
                        Err(st) => {
                            let mut m = T::default();
                            *m.meta() = Some(error_meta(n, &st));
                            vec![m]
                        }
                    },
                )
                .collect(),
        };
        Ok(Response::new(Self::stream(items, drops, peer)))
    }

    pub(super) async fn inspect_containers(
        &self,
        req: Request<machine::ContainersRequest>,
    ) -> Result<Response<machine::ContainersResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Containers", |n, roles| {
                allow(roles, &READERS)?;
                let containers = containers(n, &body.namespace, body.driver)?
                    .into_iter()
                    .map(|(c, _)| c)
                    .collect();
                Ok(machine::Container {
                    metadata: None,
                    containers,
                })
            })
            .await?;
        Ok(Response::new(machine::ContainersResponse { messages }))
    }

    pub(super) async fn inspect_stats(
        &self,
        req: Request<machine::StatsRequest>,
    ) -> Result<Response<machine::StatsResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Stats", |n, roles| {
                allow(roles, &READERS)?;
                let stats = containers(n, &body.namespace, body.driver)?
                    .into_iter()
                    .filter_map(|(c, m)| {
                        let (memory_usage, cpu_usage) = m?;
                        Some(machine::Stat {
                            namespace: c.namespace,
                            id: c.id,
                            memory_usage,
                            cpu_usage,
                            pod_id: c.pod_id,
                            name: c.name,
                        })
                    })
                    .collect();
                Ok(machine::Stats {
                    metadata: None,
                    stats,
                })
            })
            .await?;
        Ok(Response::new(machine::StatsResponse { messages }))
    }

    pub(super) async fn inspect_processes(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::ProcessesResponse>, Status> {
        let messages = self
            .unary(&req, "Processes", |n, roles| {
                allow(roles, &READERS)?;
                let w = World::of(n);
                let processes = Workload::of(&w)
                    .procs
                    .into_iter()
                    .map(|p| machine::ProcessInfo {
                        // (utime + stime) / 100, as machined reads /proc/<pid>/stat.
                        cpu_time: {
                            let (u, s) = p.ticks();
                            (u + s) as f64 / 100.0
                        },
                        pid: p.pid,
                        ppid: p.ppid,
                        state: p.state.to_string(),
                        threads: p.threads,
                        virtual_memory: p.vsz,
                        resident_memory: p.rss,
                        command: p.comm,
                        executable: p.exe,
                        args: p.args.join(" "),
                        label: p.label,
                    })
                    .collect();
                Ok(machine::Process {
                    metadata: None,
                    processes,
                })
            })
            .await?;
        Ok(Response::new(machine::ProcessesResponse { messages }))
    }

    pub(super) async fn inspect_memory(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::MemoryResponse>, Status> {
        let messages = self
            .unary(&req, "Memory", |n, roles| {
                allow(roles, &READERS)?;
                let w = World::of(n);
                Ok(machine::Memory {
                    metadata: None,
                    meminfo: Some(meminfo::meminfo(&w, &Workload::of(&w))),
                })
            })
            .await?;
        Ok(Response::new(machine::MemoryResponse { messages }))
    }

    pub(super) async fn inspect_mounts(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::MountsResponse>, Status> {
        let messages = self
            .unary(&req, "Mounts", |n, roles| {
                allow(roles, &READERS)?;
                let w = World::of(n);
                let stats = mounts::mounts(&w, &Workload::of(&w))
                    .into_iter()
                    .map(|m| machine::MountStat {
                        filesystem: m.source,
                        size: m.size,
                        available: m.available,
                        mounted_on: m.target,
                    })
                    .collect();
                Ok(machine::Mounts {
                    metadata: None,
                    stats,
                })
            })
            .await?;
        Ok(Response::new(machine::MountsResponse { messages }))
    }

    pub(super) async fn inspect_netstat(
        &self,
        req: Request<machine::NetstatRequest>,
    ) -> Result<Response<machine::NetstatResponse>, Status> {
        let body = req.get_ref().clone();
        let messages = self
            .unary(&req, "Netstat", |n, roles| {
                allow(roles, &READERS)?;
                let w = World::of(n);
                let connectrecord = netstat::netstat(&w, &Workload::of(&w), &body)?;
                Ok(machine::Netstat {
                    metadata: None,
                    connectrecord,
                })
            })
            .await?;
        Ok(Response::new(machine::NetstatResponse { messages }))
    }

    pub(super) async fn inspect_service_list(
        &self,
        req: Request<()>,
    ) -> Result<Response<machine::ServiceListResponse>, Status> {
        let messages = self
            .unary(&req, "ServiceList", |n, roles| {
                allow(roles, &READERS)?;
                let w = World::of(n);
                Ok(machine::ServiceList {
                    metadata: None,
                    services: {
                        let mut list = services::list(&w, &Workload::of(&w));
                        let st = n.state();
                        if st.config.is_some() {
                            list.extend(crate::machined::changes::extension_services(
                                &n.spec.hardware.extensions,
                                w.boot,
                            ));
                        }
                        crate::machined::changes::overlay(list, &st.changes)
                    },
                })
            })
            .await?;
        Ok(Response::new(machine::ServiceListResponse { messages }))
    }

    pub(super) async fn inspect_read(
        &self,
        req: Request<machine::ReadRequest>,
    ) -> Result<Response<Stream_<common::Data>>, Status> {
        let path = req.get_ref().path.clone();
        self.streamed(&req, "Read", true, move |n, roles| {
            allow(roles, &["os:admin"])?;
            let w = World::of(n);
            let fs = rootfs::build(&w, &Workload::of(&w));
            let abs = if path.starts_with('/') {
                path.clone()
            } else {
                format!("/{path}")
            };
            let (_, e) = fs.stat(&abs).map_err(|mut e| {
                e.path = path.clone();
                Status::not_found(e.to_string())
            })?;
            if !e.is_regular() {
                return Err(Status::unknown("path must be a regular file"));
            }
            Ok(chunks(&e.content()))
        })
        .await
    }

    pub(super) async fn inspect_list(
        &self,
        req: Request<machine::ListRequest>,
    ) -> Result<Response<Stream_<machine::FileInfo>>, Status> {
        let body = req.get_ref().clone();
        self.streamed(&req, "List", true, move |n, roles| {
            allow(roles, &READERS)?;
            let w = World::of(n);
            walk::list(&rootfs::build(&w, &Workload::of(&w)), &body)
                .map_err(|e| Status::unknown(e.to_string()))
        })
        .await
    }

    pub(super) async fn inspect_copy(
        &self,
        req: Request<machine::CopyRequest>,
    ) -> Result<Response<Stream_<common::Data>>, Status> {
        let root = req.get_ref().root_path.clone();
        self.streamed(&req, "Copy", true, move |n, roles| {
            allow(roles, &["os:admin"])?;
            let clean = if root.starts_with('/') {
                crate::world::fs::clean(&root)
            } else {
                root.trim_end_matches('/').to_string()
            };
            if !clean.starts_with('/') {
                return Err(Status::unknown(format!(
                    "path is not absolute {}",
                    if clean.is_empty() { "." } else { &clean }
                )));
            }
            let w = World::of(n);
            let (bytes, problem) = walk::copy(&rootfs::build(&w, &Workload::of(&w)), &clean);
            let mut out = chunks(&bytes);
            if let Some(error) = problem {
                out.push(common::Data {
                    metadata: Some(common::Metadata {
                        error,
                        ..Default::default()
                    }),
                    bytes: vec![],
                });
            }
            Ok(out)
        })
        .await
    }

    pub(super) async fn inspect_disk_usage(
        &self,
        req: Request<machine::DiskUsageRequest>,
    ) -> Result<Response<Stream_<machine::DiskUsageInfo>>, Status> {
        let body = req.get_ref().clone();
        self.streamed(&req, "DiskUsage", true, move |n, roles| {
            allow(roles, &READERS)?;
            let w = World::of(n);
            Ok(walk::disk_usage(
                &rootfs::build(&w, &Workload::of(&w)),
                &body,
            ))
        })
        .await
    }
}
