//! Looking at nodes from scripts: one node method per talosctl inspection command
//! (`containers`, `stats`, `processes`, `memory`, `mounts`, `netstat`, `read`, `list`,
//! `usage`, `copy`, `time`, `cgroups`, `service`, `images`, `dependencies`), each returning the reply's data
//! as maps whose keys are the Talos message fields the tables print, plus the streaming forms
//! (`read_out`, `copy_out`, `copy_to`) and, in `text`, the natives that print rows as
//! talosctl's tables do.

mod convert;
mod copy;
mod graph;
mod opts;
pub(crate) mod text;

use std::io::Write;

use anyhow::{anyhow, Result};
use rhai::{Array, Blob, Dynamic, Engine, FuncRegistration, Map};

use self::convert::*;
use self::opts::{CgroupsOpts, ImagesOpts, KubeOpts, ListOpts, NetstatOpts, StatsOpts, UsageOpts};
use crate::error::hinted;
use crate::proto::{common, machine};
use crate::runtime::native;
use crate::runtime::node::Node;
use crate::talos::block_on;
use talm_base::error::node::Kind;

/// Writes to stdout; a closed pipe (the reader went away) ends the output quietly.
struct Stdout {
    closed: bool,
}

impl Stdout {
    fn write(&mut self, b: &[u8]) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        match out.write_all(b).and_then(|_| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            r => r.map_err(|e| anyhow!("error writing to stdout: {e}")),
        }
    }
}

fn read_text(n: &Node, path: &str) -> Result<String> {
    let mut buf = Vec::new();
    n.with(|c| {
        block_on(c.read(path, |b| {
            buf.extend_from_slice(b);
            Ok(())
        }))
    })?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// As talosctl's `read`: a call that could not start is `error reading file: ...`, a node's
/// refusal while reading `error reading: ...`.
fn read_out(n: &Node, path: &str) -> Result<()> {
    let mut out = Stdout { closed: false };
    n.with(|c| block_on(c.read(path, |b| out.write(b))))
        .map_err(read_failed)
}

/// A failed read of a node's stream (a file, an etcd snapshot) as talosctl says it: `error
/// reading file: ...` when the stream could not be opened, else `error reading: ...`; a
/// failure talm words itself (a timeout, a cut) stays as it is.
pub(crate) fn read_failed(e: anyhow::Error) -> anyhow::Error {
    talm_base::error::node::reword(e, |go, kind| match kind {
        Kind::Refused => format!("error reading file: {}", go.stream()),
        _ => format!("error reading: {}", go.stream()),
    })
}

/// A failed copy as talosctl says it: a call that could not start is `error copying: ...`, a
/// node's refusal while streaming its bare status; a failure talm words itself stays.
pub(crate) fn copy_failed(e: anyhow::Error) -> anyhow::Error {
    talm_base::error::node::reword(e, |go, kind| match kind {
        Kind::Refused => format!("error copying: {}", go.stream()),
        _ => go.stream().to_string(),
    })
}

fn copy_blob(n: &Node, path: &str) -> Result<Blob> {
    let mut buf = Vec::new();
    n.with(|c| {
        block_on(c.copy(path, |b| {
            buf.extend_from_slice(b);
            Ok(())
        }))
    })
    .map_err(copy_failed)?;
    Ok(buf)
}

fn copy_out(n: &Node, path: &str) -> Result<()> {
    let mut out = Stdout { closed: false };
    n.with(|c| block_on(c.copy(path, |b| out.write(b))))
        .map_err(copy_failed)
}

fn netstat_request(o: &NetstatOpts) -> Result<machine::NetstatRequest> {
    use machine::netstat_request::{Feature, Filter, L4proto, NetNs};
    let filter = match o.filter.as_str() {
        "" | "connected" => Filter::Connected,
        "listening" => Filter::Listening,
        "all" => Filter::All,
        other => {
            return Err(hinted(
                format!("unknown netstat filter {other:?}"),
                "use connected, listening or all",
            ))
        }
    };
    let mut p = L4proto::default();
    let protocols = if o.protocols.is_empty() {
        vec![
            "tcp".to_string(),
            "tcp6".into(),
            "udp".into(),
            "udp6".into(),
        ]
    } else {
        o.protocols.clone()
    };
    for proto in &protocols {
        let bit = match proto.as_str() {
            "tcp" => &mut p.tcp,
            "tcp6" => &mut p.tcp6,
            "udp" => &mut p.udp,
            "udp6" => &mut p.udp6,
            "udplite" => &mut p.udplite,
            "udplite6" => &mut p.udplite6,
            "raw" => &mut p.raw,
            "raw6" => &mut p.raw6,
            other => {
                return Err(hinted(
                    format!("unknown protocol {other:?} for n.netstat"),
                    "use tcp, tcp6, udp, udp6, udplite, udplite6, raw or raw6",
                ))
            }
        };
        *bit = true;
    }
    Ok(machine::NetstatRequest {
        filter: filter as i32,
        feature: Some(Feature { pid: o.programs }),
        l4proto: Some(p),
        netns: Some(NetNs {
            hostnetwork: o.host.unwrap_or(true),
            netns: o.netns.clone(),
            allnetns: o.all_netns,
        }),
    })
}

/// talosctl's `--type` letters: `f` regular, `d` directory, `l`/`L` symbolic link.
fn file_types(values: &[String]) -> Result<Vec<i32>> {
    use machine::list_request::Type;
    let mut out = Vec::new();
    for v in values {
        for c in v.chars() {
            out.push(match c {
                'f' => Type::Regular,
                'd' => Type::Directory,
                'l' | 'L' => Type::Symlink,
                other => {
                    return Err(hinted(
                        format!("invalid file type: {other}"),
                        "use f (regular file), d (directory) or l (symbolic link)",
                    ))
                }
            } as i32);
        }
    }
    Ok(out)
}

fn list(n: &Node, path: &str, o: &ListOpts) -> Result<Array> {
    let req = machine::ListRequest {
        root: if path.is_empty() {
            "/".into()
        } else {
            path.into()
        },
        recurse: o.recurse,
        recursion_depth: i32::try_from(o.depth)
            .map_err(|_| anyhow!("depth {} is out of range", o.depth))?,
        types: file_types(&o.types)?,
        report_xattrs: o.xattrs,
    };
    let mut out = Array::new();
    n.with(|c| {
        block_on(c.list_files(req, |f| {
            out.push(file_info(&n.name, f).into());
            Ok(())
        }))
    })?;
    Ok(out)
}

fn usage(n: &Node, paths: Dynamic, o: &UsageOpts) -> Result<Array> {
    let paths: Vec<String> = if paths.is_string() {
        vec![paths.to_string()]
    } else {
        rhai::serde::from_dynamic(&paths).map_err(|_| {
            hinted(
                "n.usage takes a path or a list of paths",
                "e.g. n.usage(\"/var\") or n.usage([\"/var\", \"/etc\"])",
            )
        })?
    };
    let req = machine::DiskUsageRequest {
        recursion_depth: i32::try_from(o.depth)
            .map_err(|_| anyhow!("depth {} is out of range", o.depth))?,
        all: o.all,
        threshold: o.threshold,
        paths: if paths.is_empty() {
            vec!["/".into()]
        } else {
            paths
        },
    };
    let items = n.with(|c| block_on(c.disk_usage(req)))?;
    Ok(items
        .into_iter()
        .map(|d| usage_info(&n.name, d).into())
        .collect())
}

fn images(n: &Node, o: &ImagesOpts) -> Result<Array> {
    use common::{ContainerDriver as D, ContainerdNamespace as Ns};
    let (driver, namespace) = match o.namespace.as_str() {
        "" | "cri" => (D::Cri, Ns::NsCri),
        "system" => (D::Cri, Ns::NsSystem),
        "inmem" => (D::Containerd, Ns::NsSystem),
        other => {
            return Err(hinted(
                format!("unsupported namespace {other:?}"),
                "use cri (Kubernetes images), system (etcd, kubelet) or inmem",
            ))
        }
    };
    let instance = common::ContainerdInstance {
        driver: driver as i32,
        namespace: namespace as i32,
    };
    let items = n.with(|c| block_on(c.image_list(instance)))?;
    Ok(items
        .into_iter()
        .map(|i| image(&n.name, i).into())
        .collect())
}

fn service(n: &Node, id: Option<&str>) -> Result<Dynamic> {
    let list = n.with(|c| block_on(c.services()))?;
    let mut all: Vec<Dynamic> = Vec::new();
    for s in list {
        if id.is_none_or(|id| id == s.id) {
            all.push(service_info(&n.name, s).into());
        }
    }
    Ok(match id {
        None => all.into(),
        Some(_) => all.into_iter().next().unwrap_or(Dynamic::UNIT),
    })
}

/// Registers the node methods and the table natives.
pub fn register(engine: &mut Engine, session: &crate::runtime::Session) {
    text::register(engine);
    FuncRegistration::new("containers")
        .with_comments(["/// Containers of Talos's own containerd (`system`): #{node, namespace, id, image, pid, status, pod_id, name, network_namespace, internal_id, uid} each, sorted by id as `talm containers` lists them."])
        .register_into_engine(engine, |n: &mut Node| native(|| containers(n, false)));
    FuncRegistration::new("containers")
        .with_comments(["/// Containers with options: `kubernetes: true` lists the CRI's pods (`ns/pod`, status SANDBOX_READY) and their containers (`ns/pod:name:id`)."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| native(|| containers(n, KubeOpts::read(&opts)?.kubernetes)));
    FuncRegistration::new("stats")
        .with_comments(["/// Memory (bytes) and CPU (nanoseconds) of the running containers: #{node, namespace, id, pod_id, name, memory_usage, cpu_usage}; `#{kubernetes: true}` for the CRI's."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| native(|| stats(n, StatsOpts::read(&opts)?.kubernetes)));
    FuncRegistration::new("stats")
        .with_comments(["/// Memory and CPU of the containers of Talos's own containerd."])
        .register_into_engine(engine, |n: &mut Node| native(|| stats(n, false)));
    FuncRegistration::new("processes")
        .with_comments(["/// The node's processes: #{node, pid, ppid, state, threads, cpu_time (seconds), virtual_memory, resident_memory (bytes), command, executable, args, label}."])
        .register_into_engine(engine, |n: &mut Node| native(|| Ok(n.with(|c| block_on(c.processes()))?.into_iter().map(|p| process(&n.name, p).into()).collect::<Array>())));
    FuncRegistration::new("memory")
        .with_comments(["/// /proc/meminfo of the node in kB: #{node, memtotal, memfree, memavailable, buffers, cached, shmem, ...} (Talos's MemInfo field names)."])
        .register_into_engine(engine, |n: &mut Node| native(|| Ok(meminfo(&n.name, &n.with(|c| block_on(c.memory()))?))));
    FuncRegistration::new("mounts")
        .with_comments(["/// Mounts with their sizes in bytes: #{node, filesystem, size, available, mounted_on} (kernel file systems have size 0)."])
        .register_into_engine(engine, |n: &mut Node| native(|| Ok(n.with(|c| block_on(c.mounts()))?.into_iter().map(|m| mount(&n.name, m).into()).collect::<Array>())));
    FuncRegistration::new("disk_stats")
        .with_comments(["/// Each block device's I/O counters: #{node, name, read_completed, read_sectors, read_time_ms, write_completed, write_sectors, write_time_ms, io_in_progress, io_time_ms, io_time_weighted_ms}."])
        .register_into_engine(engine, |n: &mut Node| native(|| Ok(n.with(|c| block_on(c.disk_stats()))?.devices.into_iter().map(|d| disk_stat(&n.name, d).into()).collect::<Array>())));
    FuncRegistration::new("netstat")
        .with_comments(["/// Sockets: `opts` has `filter` (connected (default), listening, all), `programs` (owning processes), `protocols` (default tcp, tcp6, udp, udp6), `host` (default true), `netns` (pod network namespaces), `all_netns`. Returns #{node, l4proto, localip, localport, remoteip, remoteport, state, txqueue, rxqueue, tr, timerwhen, retrnsmt, uid, timeout, inode, process: #{pid, name}, netns}."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| native(|| {
            let req = netstat_request(&NetstatOpts::read(&opts)?)?;
            Ok(n.with(|c| block_on(c.netstat(req)))?.into_iter().map(|r| connection(&n.name, r).into()).collect::<Array>())
        }));
    FuncRegistration::new("netstat")
        .with_comments(["/// Connected TCP and UDP sockets of the host network."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let req = netstat_request(&NetstatOpts::default())?;
                Ok(n.with(|c| block_on(c.netstat(req)))?
                    .into_iter()
                    .map(|r| connection(&n.name, r).into())
                    .collect::<Array>())
            })
        });
    FuncRegistration::new("read")
        .with_comments(["/// A file's content as text (needs os:admin; bytes that are not UTF-8 become U+FFFD)."])
        .register_into_engine(engine, |n: &mut Node, path: &str| native(|| read_text(n, path)));
    FuncRegistration::new("read_out")
        .with_comments([
            "/// Streams a file's bytes to stdout as they arrive, unchanged (`talm read`).",
        ])
        .register_into_engine(engine, |n: &mut Node, path: &str| {
            native(|| read_out(n, path))
        });
    FuncRegistration::new("list")
        .with_comments(["/// Directory entries under `path` (the root first, `.`): #{node, name, relative_name, size, mode, modified, is_dir, error, link, uid, gid, label}."])
        .register_into_engine(engine, |n: &mut Node, path: &str| native(|| list(n, path, &ListOpts::default())));
    FuncRegistration::new("list")
        .with_comments(["/// Directory entries with options: `recurse`, `depth` (recursion depth; 0 with `recurse` is unlimited), `types` (talosctl letters f, d, l), `xattrs` (read SELinux labels)."])
        .register_into_engine(engine, |n: &mut Node, path: &str, opts: Map| native(|| list(n, path, &ListOpts::read(&opts)?)));
    FuncRegistration::new("usage")
        .with_comments(["/// Disk usage (apparent sizes, bytes) of a path or list of paths: #{node, name, relative_name, size, error}, folders after their contents, the root last."])
        .register_into_engine(engine, |n: &mut Node, paths: Dynamic| native(|| usage(n, paths, &UsageOpts::default())));
    FuncRegistration::new("usage")
        .with_comments(["/// Disk usage with options: `depth` (levels reported, 0 = all), `all` (files too), `threshold` (bytes; negative keeps entries below it)."])
        .register_into_engine(engine, |n: &mut Node, paths: Dynamic, opts: Map| native(|| usage(n, paths, &UsageOpts::read(&opts)?)));
    FuncRegistration::new("copy")
        .with_comments(["/// The tree at `path` as a .tar.gz blob (needs os:admin)."])
        .register_into_engine(engine, |n: &mut Node, path: &str| {
            native(|| copy_blob(n, path))
        });
    FuncRegistration::new("copy_out")
        .with_comments([
            "/// Streams the .tar.gz of the tree at `path` to stdout (`talm copy PATH -`).",
        ])
        .register_into_engine(engine, |n: &mut Node, path: &str| {
            native(|| copy_out(n, path))
        });
    FuncRegistration::new("copy_to")
        .with_comments(["/// Unpacks the tree at `path` into the local folder `dest` (made when missing; an existing file there is an error), as `talosctl copy` does. In a playbook `dest` must lie inside the project (links followed)."])
        .register_into_engine(engine, {
            let s = session.clone();
            move |n: &mut Node, path: &str, dest: &str| {
                native(|| copy::copy_to(n, path, &s.local_path("copy_to", dest)?))
            }
        });
    FuncRegistration::new("time")
        .with_comments(["/// The node's time against its NTP server: #{node, server, localtime, remotetime} (times as Go prints them, UTC)."])
        .register_into_engine(engine, |n: &mut Node| native(|| Ok(time_info(&n.name, n.with(|c| block_on(c.time(None)))?))));
    FuncRegistration::new("time")
        .with_comments(["/// The node's time against the NTP server `server` (TimeCheck)."])
        .register_into_engine(engine, |n: &mut Node, server: &str| {
            native(|| {
                Ok(time_info(
                    &n.name,
                    n.with(|c| block_on(c.time(Some(server))))?,
                ))
            })
        });
    FuncRegistration::new("service")
        .with_comments(["/// Every service: #{node, id, state, health (?, OK, Fail), healthy, unknown, last_message, last_change, events: [#{msg, state, ts}]} (times in Unix seconds, events oldest first)."])
        .register_into_engine(engine, |n: &mut Node| native(|| service(n, None)));
    FuncRegistration::new("service")
        .with_comments(["/// One service by ID, or () when the node does not run it."])
        .register_into_engine(engine, |n: &mut Node, id: &str| {
            native(|| service(n, Some(id)))
        });
    FuncRegistration::new("images")
        .with_comments(["/// The Kubernetes images of the CRI: #{node, name, digest, size, created (Unix seconds), labels}."])
        .register_into_engine(engine, |n: &mut Node| native(|| images(n, &ImagesOpts::default())));
    FuncRegistration::new("images")
        .with_comments(["/// Images with options: `namespace` cri (default), system or inmem."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| images(n, &ImagesOpts::read(&opts)?))
        });
    FuncRegistration::new("dependencies")
        .with_comments(["/// The controller runtime's dependency graph as DOT text, as `talosctl inspect dependencies` prints it; with `with_resources` the live resources of each type instead of the types."])
        .register_into_engine(engine, |n: &mut Node, with_resources: bool| native(|| dependencies(n, with_resources)));
    FuncRegistration::new("cgroups")
        .with_comments(["/// The cgroup tree for a preset (cpu, cpuset, io, memory, process, psi, swap): #{columns, rows: [#{name, path, cells}]}, names drawn as a tree and resolved to pods, containers and processes unless `skip_cri_resolve` (needs os:admin)."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| native(|| cgroups(n, &CgroupsOpts::read(&opts)?)));
}

fn containers(n: &Node, kubernetes: bool) -> Result<Array> {
    let mut list = n.with(|c| block_on(c.containers(kubernetes)))?;
    list.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(list
        .into_iter()
        .map(|c| container(&n.name, c).into())
        .collect())
}

fn stats(n: &Node, kubernetes: bool) -> Result<Array> {
    let mut list = n.with(|c| block_on(c.stats(kubernetes)))?;
    list.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(list.into_iter().map(|s| stat(&n.name, s).into()).collect())
}

fn dependencies(n: &Node, with_resources: bool) -> Result<String> {
    n.with(|c| {
        let edges = block_on(c.dependencies()).map_err(|e| {
            talm_base::error::node::reword(e, |go, _| {
                format!(
                    "error getting controller runtime dependencies: {}",
                    go.unary()
                )
            })
        })?;
        if with_resources {
            graph::resources_graph(c, &edges)
        } else {
            Ok(graph::types_graph(&edges))
        }
    })
}

fn cgroups(n: &Node, o: &CgroupsOpts) -> Result<Map> {
    use talm_wire::cgroups;
    let presets = format!("[{}]", cgroups::PRESETS.join(" "));
    let columns = match o.preset.as_str() {
        "" => {
            return Err(hinted(
                "either schema file or preset must be specified",
                format!("pick a preset: {presets}"),
            ))
        }
        p => cgroups::columns(p).ok_or_else(|| {
            hinted(
                format!("invalid preset name: {p} (valid {presets})"),
                "run `talm cgroups --preset memory`, for one",
            )
        })?,
    };
    let mut procs = std::collections::HashMap::new();
    match n.with(|c| block_on(c.processes())) {
        Ok(list) => {
            for p in list {
                let name = [
                    p.executable.as_str(),
                    p.command.as_str(),
                    p.args.split_whitespace().next().unwrap_or(""),
                ]
                .into_iter()
                .find(|s| !s.is_empty())
                .unwrap_or("");
                procs.insert(
                    p.pid.to_string(),
                    name.rsplit('/').next().unwrap_or(name).to_string(),
                );
            }
        }
        Err(e) => crate::output::err(&format!("WARNING: error getting processes: {e:#}")),
    }
    let mut devices = std::collections::HashMap::new();
    match copy_blob(n, "/sys/dev/block") {
        Ok(bytes) => {
            let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
            if let Ok(entries) = ar.entries() {
                for e in entries.flatten() {
                    if e.header().entry_type() == tar::EntryType::Symlink {
                        let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
                        let target = e
                            .link_name_bytes()
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default();
                        devices.insert(name, target.rsplit('/').next().unwrap_or("").to_string());
                    }
                }
            }
        }
        Err(e) => crate::output::err(&format!("WARNING: error copying devices: {e:#}")),
    }
    let bytes = copy_blob(n, "/sys/fs/cgroup").map_err(|e| anyhow!("error copying: {e:#}"))?;
    let mut tree =
        cgroups::tree(bytes.as_slice()).map_err(|e| anyhow!("error reading cgroups: {e:#}"))?;
    let mut names = std::collections::HashMap::new();
    if !o.skip_cri_resolve {
        match n.with(|c| block_on(c.containers(true))) {
            Ok(list) => {
                for c in list {
                    if !c.uid.is_empty() && !c.pod_id.is_empty() {
                        names.insert(format!("pod{}", c.uid), c.pod_id.clone());
                    }
                    if !c.internal_id.is_empty() {
                        let name = if c.pod_id == c.name {
                            "sandbox".to_string()
                        } else {
                            c.name.clone()
                        };
                        names.insert(c.internal_id.clone(), name);
                    }
                }
            }
            Err(e) => crate::output::err(&format!("WARNING: error getting containers: {e:#}")),
        }
    }
    cgroups::resolve(&mut tree, &names, &procs, &devices);
    let rows: Array = cgroups::rows(&o.preset, &tree)
        .into_iter()
        .map(|r| {
            let mut m = Map::new();
            m.insert("name".into(), r.name.into());
            m.insert("path".into(), r.path.into());
            m.insert(
                "cells".into(),
                r.cells
                    .into_iter()
                    .map(Dynamic::from)
                    .collect::<Array>()
                    .into(),
            );
            Dynamic::from(m)
        })
        .collect();
    let mut m = Map::new();
    m.insert("node".into(), n.name.clone().into());
    m.insert(
        "columns".into(),
        columns
            .into_iter()
            .map(|c| Dynamic::from(c.to_string()))
            .collect::<Array>()
            .into(),
    );
    m.insert("rows".into(), rows.into());
    Ok(m)
}
