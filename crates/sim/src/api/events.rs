//! MachineService `Events` as machined serves it: a hello event first (clients wait for it),
//! then the history the request asks for (`tail_events`, `tail_id`, `tail_seconds`; combining
//! them is an error after the hello), then new events as they are published, until the client
//! cancels or the node reboots. `with_actor_id` keeps only that actor's events.

use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::{Request, Response, Status};

use crate::api::{error_meta, peer, Route, Stream_, Svc};
use crate::node::events::{Events, Published};
use crate::node::Node;
use talm_wire::proto::machine;

type Tx = mpsc::Sender<Result<machine::Event, Status>>;

/// A target of the call: its name when routed one-to-many, and the node (or why not).
type Target = (Option<String>, Result<Arc<Node>, Status>);

/// Streams one node's events into `tx`; `host` names the node when routed one-to-many.
async fn pump(node: Arc<Node>, req: machine::EventsRequest, host: Option<String>, tx: Tx) {
    let name = host.clone().unwrap_or_default();
    let m = node.machine_id();
    let keep = |e: &Published| req.with_actor_id.is_empty() || e.actor_id == req.with_actor_id;
    let mut grew = node.events.grew.subscribe();
    let hello = Events::hello(m, &req.with_actor_id);
    if tx.send(Ok(hello.to_wire(&name))).await.is_err() {
        return;
    }
    let (past, mut pos) = match node.events.start(&req) {
        Ok(x) => x,
        Err(text) => {
            let st = Status::unknown(text);
            let _ = match host {
                Some(h) => {
                    tx.send(Ok(machine::Event {
                        metadata: Some(error_meta(&h, &st)),
                        ..Default::default()
                    }))
                    .await
                }
                None => tx.send(Err(st)).await,
            };
            return;
        }
    };
    for e in past.iter().filter(|e| keep(e)) {
        if tx.send(Ok(e.to_wire(&name))).await.is_err() {
            return;
        }
    }
    loop {
        tokio::select! {
            r = grew.changed() => if r.is_err() { return },
            _ = tx.closed() => return,
        }
        // None: the node rebooted and its events are gone with this stream's position.
        let Some((new, next)) = node.events.since(pos) else {
            return;
        };
        pos = next;
        for e in new.iter().filter(|e| keep(e)) {
            if tx.send(Ok(e.to_wire(&name))).await.is_err() {
                return;
            }
        }
    }
}

pub async fn events(
    svc: &Svc,
    req: Request<machine::EventsRequest>,
) -> Result<Response<Stream_<machine::Event>>, Status> {
    let peer = peer(&req);
    svc.faults("Events", &peer).await?;
    crate::api::logs::may_read(&peer.roles)?;
    let body = req.get_ref().clone();
    let route = svc.route(&req, "/machine.MachineService/Events", true)?;
    let targets: Vec<Target> = match route {
        Route::Local => vec![(None, Ok(Arc::clone(&svc.node)))],
        Route::One(n) => vec![(None, Ok(svc.target(&n)?))],
        Route::Many(ns) => ns
            .into_iter()
            .map(|n| (Some(n.clone()), svc.target(&n)))
            .collect(),
    };
    let (tx, rx) = mpsc::channel(64);
    for (host, node) in targets {
        match (host, node) {
            (None, Err(st)) => return Err(st),
            (Some(h), Err(st)) => {
                let _ = tx.try_send(Ok(machine::Event {
                    metadata: Some(error_meta(&h, &st)),
                    ..Default::default()
                }));
            }
            (host, Ok(n)) => {
                tokio::spawn(pump(n, body.clone(), host, tx.clone()));
            }
        }
    }
    drop(tx);
    Ok(Response::new(Box::pin(
        tokio_stream::wrappers::ReceiverStream::new(rx),
    )))
}
