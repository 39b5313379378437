//! Watches: newline-delimited JSON events (`{"type":"ADDED","object":{...}}`) for the objects
//! a request selects, from a resourceVersion (or the current state first, as ADDED events),
//! with bookmarks when allowed, a 410 Expired ERROR event when the version is older than the
//! history kept, and an end at `timeoutSeconds` or when the server stops. With a selector, an
//! object that comes to match arrives as ADDED and one that stops matching as DELETED.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::handle::{Filter, Req};
use super::resources::Kind;
use super::status::{Failure, Reason};
use crate::kube::store::{Change, Event, Key, Object, Subscription};
use crate::kube::Kube;

/// A watch without `timeoutSeconds` ends after this (kube-apiserver's minimum request timeout).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
/// How often a watch that allows bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// What a watch asks for.
#[derive(Debug, Clone)]
pub struct Spec {
    pub kind: &'static Kind,
    pub namespace: Option<String>,
    pub filter: Filter,
    /// Changes after this version; `None`: the current objects first (as ADDED).
    pub since: Option<u64>,
    pub timeout: Duration,
    pub bookmarks: bool,
    /// `sendInitialEvents=true`: a bookmark marks the end of the initial objects.
    pub initial_events_end: bool,
}

impl Spec {
    pub fn of(req: &Req<'_>, filter: Filter) -> Result<Spec, Failure> {
        let initial = req.param("sendInitialEvents") == Some("true");
        let since = match req.param("resourceVersion") {
            _ if initial => None,
            None | Some("") | Some("0") => None,
            Some(v) => Some(v.parse::<u64>().map_err(|_| {
                Failure::new(
                    Reason::BadRequest,
                    format!(
                        "resourceVersion: Invalid value: \"{v}\": must be a non-negative integer"
                    ),
                )
            })?),
        };
        let timeout = req
            .param("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        Ok(Spec {
            kind: req.target.kind,
            namespace: req.target.namespace.clone(),
            filter,
            since,
            timeout,
            bookmarks: matches!(req.param("allowWatchBookmarks"), Some("true" | "1")),
            initial_events_end: initial,
        })
    }

    fn in_scope(&self, key: &Key) -> bool {
        key.resource == self.kind.resource()
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| &key.namespace == ns)
    }

    /// The event type a change shows as to this watch, given the objects it has seen match
    /// (`shown`, kept up to date); `None` when the watch does not see it.
    fn classify(&self, e: &Event, shown: &mut HashSet<Key>) -> Option<&'static str> {
        if !self.in_scope(&e.key) {
            return None;
        }
        let matches = self.filter.matches(&e.object);
        let was = shown.contains(&e.key);
        match (e.change, was, matches) {
            (Change::Deleted, true, _) => {
                shown.remove(&e.key);
                Some("DELETED")
            }
            (Change::Deleted, false, m) => m.then_some("DELETED"),
            (_, true, true) => Some(e.change.as_str()),
            (_, true, false) => {
                shown.remove(&e.key);
                Some("DELETED")
            }
            (_, false, true) => {
                shown.insert(e.key.clone());
                Some("ADDED")
            }
            (_, false, false) => None,
        }
    }

    fn bookmark(&self, version: u64, end: bool) -> Value {
        let mut meta = json!({"resourceVersion": version.to_string()});
        if end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        json!({"type": "BOOKMARK", "object": {"kind": self.kind.kind, "apiVersion": self.kind.api_version(), "metadata": meta}})
    }
}

/// One event line.
pub fn line(kind: &str, object: &Value) -> Bytes {
    let mut text = json!({"type": kind, "object": object}).to_string();
    text.push('\n');
    Bytes::from(text)
}

/// The ERROR event of a version older than the history kept.
fn expired(asked: u64, now: u64) -> Bytes {
    let status = Failure::new(
        Reason::Expired,
        format!("too old resource version: {asked} ({now})"),
    )
    .body();
    line("ERROR", &status)
}

/// Starts a watch; its lines arrive on the receiver, which ends with the watch.
pub fn start(kube: Arc<Kube>, spec: Spec, stop: CancellationToken) -> mpsc::Receiver<Bytes> {
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        tokio::select! {
            _ = run(&kube, &spec, &tx) => {}
            _ = tokio::time::sleep(spec.timeout) => {}
            _ = stop.cancelled() => {}
        }
    });
    rx
}

/// The store key of a listed object.
fn key_of(spec: &Spec, obj: &Value) -> Key {
    let m = &obj["metadata"];
    Key::new(
        &spec.kind.resource(),
        m["namespace"].as_str().unwrap_or_default(),
        m["name"].as_str().unwrap_or_default(),
    )
}

async fn run(kube: &Kube, spec: &Spec, tx: &mpsc::Sender<Bytes>) {
    let (items, now) = kube
        .objects
        .list(&spec.kind.resource(), spec.namespace.as_deref());
    let items: Vec<Object> = items
        .into_iter()
        .filter(|o| spec.filter.matches(o))
        .collect();
    // What the client has seen match: the current objects. From a version that is close
    // (the backlog's changes are in it already) and the backlog's replay keeps it so.
    let mut shown: HashSet<Key> = items.iter().map(|o| key_of(spec, o)).collect();
    let (sub, mut last) = match spec.since {
        Some(v) => match kube.objects.subscribe(v) {
            Some(s) => (s, v),
            None => {
                let _ = tx.send(expired(v, kube.objects.version())).await;
                return;
            }
        },
        None => {
            let v = now;
            let Some(s) = kube.objects.subscribe(v) else {
                let _ = tx.send(expired(v, kube.objects.version())).await;
                return;
            };
            for obj in &items {
                if tx.send(line("ADDED", obj)).await.is_err() {
                    return;
                }
            }
            if spec.initial_events_end && tx.send(line_of(spec.bookmark(v, true))).await.is_err() {
                return;
            }
            (s, v)
        }
    };
    let Subscription { backlog, mut live } = sub;
    for e in backlog {
        if !send(spec, tx, &e, &mut last, &mut shown).await {
            return;
        }
    }
    let mut ticks = tokio::time::interval(BOOKMARK_EVERY);
    ticks.tick().await;
    loop {
        tokio::select! {
            got = live.recv() => match got {
                Ok(e) => {
                    if !send(spec, tx, &e, &mut last, &mut shown).await {
                        return;
                    }
                }
                // Fell behind the feed: replay from the history, or expire.
                Err(broadcast::error::RecvError::Lagged(_)) => match kube.objects.subscribe(last) {
                    Some(s) => {
                        live = s.live;
                        for e in s.backlog {
                            if !send(spec, tx, &e, &mut last, &mut shown).await {
                                return;
                            }
                        }
                    }
                    None => {
                        let _ = tx.send(expired(last, kube.objects.version())).await;
                        return;
                    }
                },
                Err(broadcast::error::RecvError::Closed) => return,
            },
            _ = ticks.tick(), if spec.bookmarks => {
                if tx.send(line_of(spec.bookmark(last, false))).await.is_err() {
                    return;
                }
            }
            _ = tx.closed() => return,
        }
    }
}

fn line_of(v: Value) -> Bytes {
    let mut text = v.to_string();
    text.push('\n');
    Bytes::from(text)
}

/// Sends an event the watch selects (once: versions only grow); false when the client left.
async fn send(
    spec: &Spec,
    tx: &mpsc::Sender<Bytes>,
    e: &Event,
    last: &mut u64,
    shown: &mut HashSet<Key>,
) -> bool {
    if e.version <= *last {
        return true;
    }
    *last = e.version;
    match spec.classify(e, shown) {
        Some(kind) => tx.send(line(kind, &e.object)).await.is_ok(),
        None => true,
    }
}
