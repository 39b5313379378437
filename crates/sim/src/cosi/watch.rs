//! COSI `Watch` as the COSI gRPC server and Talos's in-memory state answer it: the option checks
//! and their errors, the ready marker (an empty `WatchResponse`), bootstrap contents and the
//! BOOTSTRAPPED tombstone, tail events, bookmarks, single-resource watches (current state first:
//! CREATED, or DESTROYED with a tombstone), label/ID filtering with updates turned into
//! CREATED/DESTROYED when a resource enters or leaves the query, aggregation, overruns.

use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::Status;

use crate::cosi::query::{self, Queries};
use crate::cosi::store::{self, Change, Kind, Only};
use crate::node::Node;
use talm_wire::proto::cosi::resource as cosi;

type Tx = mpsc::Sender<Result<cosi::WatchResponse, Status>>;

/// What one Watch call asked for, after the COSI server's conversion of its options.
pub struct Plan {
    pub namespace: String,
    pub ty: String,
    id: Option<String>,
    queries: Queries,
    bootstrap: bool,
    tail: i32,
    from: Option<Vec<u8>>,
    bootstrap_bookmark: bool,
    aggregated: bool,
    api_version: i32,
}

/// Converts the request's options, refusing what the COSI server refuses before it looks at the
/// state (and so before Talos's access filter).
pub fn plan(r: &cosi::WatchRequest) -> Result<Plan, Status> {
    let o = r.options.clone().unwrap_or_default();
    let queries = match &r.id {
        None => query::parse(&o.label_query, o.id_query.as_ref())?,
        Some(_) => {
            if o.bootstrap_contents {
                return Err(Status::unimplemented(
                    "bootstrap contents is not implemented for resource watch",
                ));
            }
            if !o.label_query.is_empty() {
                return Err(Status::unimplemented(
                    "label query is not implemented for resource watch",
                ));
            }
            // An ID query is ignored for a single-resource watch.
            Queries::default()
        }
    };
    Ok(Plan {
        namespace: r.namespace.clone(),
        ty: r.r#type.clone(),
        id: r.id.clone(),
        queries,
        bootstrap: o.bootstrap_contents,
        tail: o.tail_events,
        from: o.start_from_bookmark,
        bootstrap_bookmark: o.bootstrap_bookmark,
        aggregated: o.aggregated && r.id.is_none(),
        api_version: r.api_version,
    })
}

fn invalid_bookmark() -> Status {
    Status::failed_precondition("invalid watch bookmark")
}

fn event(kind: cosi::EventType, resource: cosi::Resource, bookmark: Option<i64>) -> cosi::Event {
    cosi::Event {
        resource: Some(resource),
        event_type: kind as i32,
        old: None,
        error: None,
        bookmark: bookmark.map(store::bookmark),
    }
}

fn wire(e: &store::Event, change: Change) -> cosi::Event {
    let kind = match change {
        Change::Created => cosi::EventType::Created,
        Change::Updated => cosi::EventType::Updated,
        Change::Destroyed => cosi::EventType::Destroyed,
    };
    cosi::Event {
        old: if change == Change::Updated {
            e.old.clone()
        } else {
            None
        },
        ..event(kind, e.resource.clone(), Some(e.pos))
    }
}

/// Where a watch starts and what it sends before live events.
struct Start {
    pos: i64,
    first: Vec<cosi::Event>,
}

impl Plan {
    fn single(&self, kind: &Kind, id: &str) -> Result<Start, Status> {
        let mut pos = kind.write_pos();
        if self.tail > 0 && self.from.is_some() {
            return Err(Status::unknown(
                "cannot use both TailEvents and StartFromBookmark options",
            ));
        }
        if self.tail > 0 {
            let (mut found, min) = (0, kind.min_pos());
            while pos > min && found < self.tail {
                if kind
                    .at(pos - 1)
                    .and_then(|e| e.resource.metadata.as_ref())
                    .is_some_and(|m| m.id == id)
                {
                    found += 1;
                }
                pos -= 1;
            }
            return Ok(Start { pos, first: vec![] });
        }
        if let Some(b) = &self.from {
            let at = store::unbookmark(b).ok_or_else(invalid_bookmark)?;
            if at < kind.lower() || at < 0 || at >= kind.write_pos() {
                return Err(invalid_bookmark());
            }
            return Ok(Start {
                pos: at + 1,
                first: vec![],
            });
        }
        let first = match kind.item(id) {
            Some(r) => event(cosi::EventType::Created, r.clone(), None),
            None => event(
                cosi::EventType::Destroyed,
                store::tombstone(&self.namespace, &self.ty, id),
                None,
            ),
        };
        Ok(Start {
            pos,
            first: vec![first],
        })
    }

    fn kind(&self, kind: &Kind) -> Result<Start, Status> {
        let mut pos = kind.write_pos();
        let mut first = Vec::new();
        if self.bootstrap {
            if self.tail > 0 || self.from.is_some() {
                return Err(Status::unknown(
                    "cannot use BootstrapContents with TailEvents and StartFromBookmark options",
                ));
            }
            first.extend(
                kind.items()
                    .filter(|r| self.queries.matches(r))
                    .map(|r| event(cosi::EventType::Created, r.clone(), None)),
            );
            first.push(event(
                cosi::EventType::Bootstrapped,
                store::tombstone(&self.namespace, &self.ty, ""),
                Some(pos - 1),
            ));
        }
        match (&self.from, self.tail) {
            (Some(_), t) if t > 0 => {
                return Err(Status::unknown(
                    "cannot use both TailEvents and StartFromBookmark options",
                ))
            }
            (None, t) if t > 0 => {
                let n = (t as i64).min((kind.capacity() - store::GAP) as i64);
                pos = (pos - n).max(0);
            }
            (Some(b), _) => {
                let at = store::unbookmark(b).ok_or_else(invalid_bookmark)?;
                if at < kind.lower() || at < -1 || at >= kind.write_pos() {
                    return Err(invalid_bookmark());
                }
                pos = at + 1;
            }
            _ => {}
        }
        if self.bootstrap_bookmark {
            first.push(event(
                cosi::EventType::Noop,
                store::tombstone(&self.namespace, &self.ty, ""),
                Some(pos - 1),
            ));
        }
        Ok(Start { pos, first })
    }

    /// Live events from the history, filtered and transformed as COSI does.
    fn live(&self, events: &[store::Event]) -> Vec<cosi::Event> {
        events
            .iter()
            .filter_map(|e| {
                if let Some(id) = &self.id {
                    let same = e.resource.metadata.as_ref().is_some_and(|m| &m.id == id);
                    return same.then(|| wire(e, e.change));
                }
                let now = self.queries.matches(&e.resource);
                match e.change {
                    Change::Created | Change::Destroyed => now.then(|| wire(e, e.change)),
                    Change::Updated => {
                        let before = e.old.as_ref().is_some_and(|o| self.queries.matches(o));
                        match (before, now) {
                            (true, true) => Some(wire(e, Change::Updated)),
                            (true, false) => Some(wire(e, Change::Destroyed)),
                            (false, true) => Some(wire(e, Change::Created)),
                            (false, false) => None,
                        }
                    }
                }
            })
            .collect()
    }

    /// Sends `events` one per response, or all in one when aggregated; false once the client
    /// is gone.
    async fn send(&self, tx: &Tx, events: Vec<cosi::Event>) -> bool {
        let events: Vec<cosi::Event> = events
            .into_iter()
            .filter(|e| {
                self.api_version >= 1
                    || !matches!(
                        cosi::EventType::try_from(e.event_type),
                        Ok(cosi::EventType::Bootstrapped | cosi::EventType::Errored)
                    )
            })
            .collect();
        if events.is_empty() {
            return true;
        }
        if self.aggregated {
            return tx
                .send(Ok(cosi::WatchResponse { event: events }))
                .await
                .is_ok();
        }
        for e in events {
            if tx
                .send(Ok(cosi::WatchResponse { event: vec![e] }))
                .await
                .is_err()
            {
                return false;
            }
        }
        true
    }
}

/// Registers the watch on `node` (errors here fail the call) and serves it on `tx` until the
/// client goes away: the ready marker, the initial events, then live events.
pub async fn start(plan: Plan, node: Arc<Node>, tx: Tx) -> Result<(), Status> {
    let (boots, mut changed) = (node.state().boots, node.changed.subscribe());
    let kind = [(plan.namespace.as_str(), plan.ty.as_str())];
    let start = node
        .synced_only(Only::Kinds(&kind))
        .with_kind(&plan.namespace, &plan.ty, |k| match plan.id.clone() {
            Some(id) => plan.single(k, &id),
            None => plan.kind(k),
        })?;
    tokio::spawn(async move {
        if tx.send(Ok(cosi::WatchResponse::default())).await.is_err() {
            return;
        }
        // The bootstrap batch goes out whole when aggregated, like the rest.
        if !plan.send(&tx, start.first).await {
            return;
        }
        let mut pos = start.pos;
        loop {
            let kind = [(plan.namespace.as_str(), plan.ty.as_str())];
            let next =
                node.synced_only(Only::Kinds(&kind))
                    .with_kind(&plan.namespace, &plan.ty, |k| {
                        k.since(pos).map(|evs| (evs, k.write_pos()))
                    });
            match next {
                Err(overrun) => {
                    let errored = cosi::Event {
                        event_type: cosi::EventType::Errored as i32,
                        error: Some(overrun.0),
                        ..Default::default()
                    };
                    plan.send(&tx, vec![errored]).await;
                    return;
                }
                Ok((events, end)) => {
                    pos = end;
                    if !plan.send(&tx, plan.live(&events)).await {
                        return;
                    }
                }
            }
            tokio::select! {
                r = changed.changed() => if r.is_err() { return },
                _ = tx.closed() => return,
            }
            if node.state().boots != boots {
                // The watched node went down: the proxied stream breaks.
                let _ = tx
                    .send(Err(Status::unavailable("error reading from server: EOF")))
                    .await;
                return;
            }
        }
    });
    Ok(())
}
