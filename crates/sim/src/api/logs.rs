//! MachineService `Logs` and `Dmesg` as streams, the way machined serves them: the buffer's
//! last `tail_lines` lines (all when negative) in chunks of up to 1 KiB, or one message per
//! kernel record; with `follow` the stream stays open and carries new lines as the node writes
//! them, until the client cancels. Through `nodes` metadata every message carries its node and
//! a failing node answers in-band.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use crate::api::{error_meta, peer, Route, Stream_, Svc};
use crate::net::server::Peer;
use crate::node::Node;
use crate::world::workload::Workload;
use crate::world::{rootfs, World};
use talm_wire::proto::common;
use talm_wire::proto::machine;

type Tx = mpsc::Sender<Result<common::Data, Status>>;

/// A target of the call: its name when routed one-to-many, and the node (or why not).
type Target = (Option<String>, Result<Arc<Node>, Status>);

/// Log buffers machined keeps besides the services' own (read by `talosctl support`).
const MACHINED_LOGS: [&str; 2] = ["controller-runtime", "dns-resolve-cache"];

/// Largest chunk machined sends of a log buffer.
const CHUNK: usize = 1024;

/// What one target streams.
#[derive(Clone)]
enum Source {
    Service {
        id: String,
        tail: i32,
    },
    Kernel {
        from_end: bool,
    },
    /// A pod container's log file, its last `tail` lines (all when negative).
    File {
        lines: Vec<String>,
    },
}

pub(crate) fn may_read(roles: &[String]) -> Result<(), Status> {
    if roles
        .iter()
        .any(|r| r == "os:admin" || r == "os:operator" || r == "os:reader")
    {
        Ok(())
    } else {
        Err(crate::node::denied())
    }
}

/// Which buffer a Logs request reads, or machined's refusal.
fn log_source(node: &Node, req: &machine::LogsRequest) -> Result<Source, Status> {
    if req.namespace == "system" || req.id == "kubelet" {
        let known = req.id == "kernel"
            || MACHINED_LOGS.contains(&req.id.as_str())
            || crate::node::services(&node.state())
                .iter()
                .any(|(id, _)| *id == req.id);
        if !known {
            return Err(Status::unknown(format!(
                "log {:?} was not registered",
                req.id
            )));
        }
        return Ok(if req.id == "kernel" {
            Source::Kernel { from_end: false }
        } else {
            Source::Service {
                id: req.id.clone(),
                tail: req.tail_lines,
            }
        });
    }
    if req.namespace.is_empty() {
        return Err(Status::invalid_argument("namespace can't be empty"));
    }
    match common::ContainerDriver::try_from(req.driver) {
        Ok(common::ContainerDriver::Cri) if req.namespace != "k8s.io" => Err(Status::unknown(
            "CRI inspector is supported only for K8s namespace",
        )),
        Ok(common::ContainerDriver::Cri) => container_log(node, req),
        Ok(_) => Err(Status::unknown(format!("container {:?} not found", req.id))),
        Err(_) => Err(Status::invalid_argument(format!(
            "unsupported driver \"{}\"",
            req.driver
        ))),
    }
}

/// A CRI container's log, found as Talos's CRI inspector finds it from
/// `namespace/pod:container[:ID prefix]`: the pod's first container of that name, or the one
/// whose ID holds the prefix.
fn container_log(node: &Node, req: &machine::LogsRequest) -> Result<Source, Status> {
    let not_found = || Status::unknown(format!("container {:?} not found", req.id));
    let (namespace, rest) = req.id.split_once('/').ok_or_else(not_found)?;
    let (pod, name) = rest.split_once(':').unwrap_or((rest, ""));
    let (name, id) = name.split_once(':').unwrap_or((name, ""));
    if name.is_empty() {
        // A pod's sandbox: the pause process logs nothing.
        return Err(Status::unknown("no log available"));
    }
    let w = World::of(node);
    let load = Workload::of(&w);
    let c = load
        .pods
        .iter()
        .filter(|p| p.namespace == namespace && p.name == pod)
        .flat_map(|p| p.containers.iter())
        .filter(|c| c.name == name)
        .find(|c| c.id.contains(id))
        .ok_or_else(not_found)?;
    let text = rootfs::container_log(&w, c);
    let all: Vec<String> = text.lines().map(str::to_string).collect();
    let keep = usize::try_from(req.tail_lines).map_or(0, |n| all.len().saturating_sub(n));
    Ok(Source::File {
        lines: all[keep..].to_vec(),
    })
}

fn data(bytes: Vec<u8>, meta: &Option<common::Metadata>) -> common::Data {
    common::Data {
        metadata: meta.clone(),
        bytes,
    }
}

/// Lines as machined's chunker sends them: newline-terminated, cut at 1 KiB.
fn chunks(lines: &[String], meta: &Option<common::Metadata>) -> Vec<common::Data> {
    let text: Vec<u8> = lines
        .iter()
        .flat_map(|l| format!("{l}\n").into_bytes())
        .collect();
    text.chunks(CHUNK).map(|c| data(c.to_vec(), meta)).collect()
}

async fn send_all(tx: &Tx, items: Vec<common::Data>) -> bool {
    for d in items {
        if tx.send(Ok(d)).await.is_err() {
            return false;
        }
    }
    true
}

/// Streams one target's buffer into `tx`, following it when asked.
async fn pump(node: Arc<Node>, src: Source, follow: bool, meta: Option<common::Metadata>, tx: Tx) {
    let mut grew = node.journal.grew.subscribe();
    let j = &node.journal;
    let (first, mut mark) = match &src {
        Source::Service { id, tail } => {
            let (lines, mark) = j.service_tail(id, *tail);
            (chunks(&lines, &meta), mark)
        }
        Source::Kernel { from_end } => {
            let (records, mark) = j.kernel_tail(*from_end);
            let items = records
                .iter()
                .map(|r| data(r.text().into_bytes(), &meta))
                .collect();
            (items, mark)
        }
        // The simulated containers write nothing more while a client follows.
        Source::File { lines } => (chunks(lines, &meta), node.journal.mark()),
    };
    if !send_all(&tx, first).await || !follow {
        return;
    }
    loop {
        tokio::select! {
            r = grew.changed() => if r.is_err() { return },
            _ = tx.closed() => return,
        }
        let items = match &src {
            Source::Service { id, .. } => j.service_since(id, &mut mark).map(|l| chunks(&l, &meta)),
            Source::File { .. } => j.still(&mark).then(Vec::new),
            Source::Kernel { .. } => j.kernel_since(&mut mark).map(|rs| {
                rs.iter()
                    .map(|r| data(r.text().into_bytes(), &meta))
                    .collect()
            }),
        };
        // None: the node rebooted, its buffers (and this stream's source) are gone.
        let Some(items) = items else { return };
        if !send_all(&tx, items).await {
            return;
        }
    }
}

/// Serves a Logs or Dmesg call: routes it, opens every target's source and streams them.
async fn serve(
    svc: &Svc,
    req: &Request<impl Sized>,
    call: &str,
    follow: bool,
    open: impl Fn(&Arc<Node>, &[String]) -> Result<Source, Status>,
) -> Result<Response<Stream_<common::Data>>, Status> {
    let peer = peer(req);
    let drops = svc.faults(call, &peer).await?;
    let (tx, rx) = mpsc::channel::<Result<common::Data, Status>>(64);
    let route = svc.route(req, &format!("/machine.MachineService/{call}"), true)?;
    let targets: Vec<Target> = match route {
        Route::Local => vec![(None, Ok(Arc::clone(&svc.node)))],
        Route::One(n) => vec![(None, Ok(svc.target(&n)?))],
        Route::Many(ns) => ns
            .into_iter()
            .map(|n| (Some(n.clone()), svc.target(&n)))
            .collect(),
    };
    let mut started = Vec::new();
    for (host, node) in targets {
        let opened = node.and_then(|n| open(&n, &peer.roles).map(|src| (n, src)));
        match (host, opened) {
            (None, Err(st)) => return Err(st),
            (Some(h), Err(st)) => {
                let _ = tx.try_send(Ok(common::Data {
                    metadata: Some(error_meta(&h, &st)),
                    bytes: vec![],
                }));
            }
            (host, Ok((n, src))) => {
                let meta = host.map(|h| common::Metadata {
                    hostname: h,
                    ..Default::default()
                });
                started.push((n, src, meta));
            }
        }
    }
    for (n, src, meta) in started {
        tokio::spawn(pump(n, src, follow, meta, tx.clone()));
    }
    drop(tx);
    let (out, out_rx) = mpsc::channel(64);
    tokio::spawn(forward(rx, out, drops, peer));
    Ok(Response::new(Box::pin(
        tokio_stream::wrappers::ReceiverStream::new(out_rx),
    )))
}

/// Forwards the targets' messages to the client; with the drop fault the connection is cut
/// after the first one.
async fn forward(
    mut rx: mpsc::Receiver<Result<common::Data, Status>>,
    out: Tx,
    drops: bool,
    peer: Peer,
) {
    while let Some(item) = rx.recv().await {
        if out.send(item).await.is_err() {
            return;
        }
        if drops {
            tokio::time::sleep(Duration::from_millis(50)).await;
            peer.kill.cancel();
            return;
        }
    }
}

pub async fn logs(
    svc: &Svc,
    req: Request<machine::LogsRequest>,
) -> Result<Response<Stream_<common::Data>>, Status> {
    let body = req.get_ref().clone();
    serve(svc, &req, "Logs", body.follow, |n, roles| {
        may_read(roles)?;
        log_source(n, &body)
    })
    .await
}

pub async fn dmesg(
    svc: &Svc,
    req: Request<machine::DmesgRequest>,
) -> Result<Response<Stream_<common::Data>>, Status> {
    let body = *req.get_ref();
    serve(svc, &req, "Dmesg", body.follow, |_, roles| {
        may_read(roles)?;
        Ok(Source::Kernel {
            from_end: body.tail,
        })
    })
    .await
}
