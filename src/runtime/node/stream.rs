//! Streams that run until they end or Ctrl-C: following logs and the kernel log, and watching
//! resources. `n.follow(...)` and `n.watch(...)` hand each line or event to a script closure
//! that may stop them (`n.events(...)` likewise for the event stream); `talos::follow_logs`,
//! `talos::watch_print` and `talos::events_print` print several nodes' streams at once, as
//! `talm logs -F`, `dmesg -F`, `get -w` and `events` do.

use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FnPtr, FuncRegistration, Map, NativeCallContext};
use tokio::sync::mpsc;

use crate::proto::cosi::resource as cosi;
use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::lines::{Last, Lines};
use crate::runtime::node::watch_print::WatchPrinter;
use crate::runtime::node::Node;
use crate::runtime::opts::options;
use crate::sandbox::interrupt;
use crate::talos::client::Client;
use crate::talos::resources::{self, Definition, Output};
use crate::talos::streams::DataStream;

options! {
    /// `n.follow(service, #{...}, f)` and `talos::follow_logs(nodes, service, #{...})`.
    pub struct FollowOpts for "n.follow" {
        /// Lines of history first (-1 = all, 0 = only new lines).
        tail: Option<i64>,
        /// A Kubernetes container (`namespace/pod:container`) instead of a Talos service.
        kubernetes: bool,
        /// Keep following (default true); false ends at the current end of the log.
        follow: Option<bool>,
    }
}

options! {
    /// `talos::watch_print(nodes, kind, #{...})`.
    pub struct WatchOpts for "talos::watch_print" {
        id: Option<String>,
        namespace: Option<String>,
        /// table, yaml, json or jsonpath=EXPR.
        output: Option<String>,
    }
}

options! {
    /// `n.events(#{...}, f)` and `talos::events_print(nodes, #{...})`.
    pub struct EventsOpts for "n.events" {
        /// Past events first: N (-1 = all kept), default none.
        tail: Option<i64>,
        /// Events after this event ID.
        since: Option<String>,
        /// Events of the last seconds (or Go duration text).
        duration: Option<Duration>,
        /// Only the events of this actor (an ID from reboot, reset, upgrade).
        actor_id: Option<String>,
    }
}

impl EventsOpts {
    fn request(&self) -> machine::EventsRequest {
        machine::EventsRequest {
            tail_events: self.tail.unwrap_or(0).clamp(-1, i64::from(i32::MAX)) as i32,
            tail_id: self.since.clone().unwrap_or_default(),
            tail_seconds: self
                .duration
                .map_or(0, |d| d.as_secs().min(i32::MAX as u64) as i32),
            with_actor_id: self.actor_id.clone().unwrap_or_default(),
        }
    }
}

/// Runs `each` on every shown event of every node until all streams end, `each` says stop,
/// or Ctrl-C.
fn event_pump(
    nodes: &[Node],
    o: &EventsOpts,
    mut each: impl FnMut(&str, &crate::talos::events::Shown) -> Result<bool>,
) -> Result<()> {
    interrupt::install();
    let _running = interrupt::running();
    let clients: Vec<(String, Client)> = nodes
        .iter()
        .map(|n| Ok((n.name.clone(), n.client()?)))
        .collect::<Result<_>>()
        .map_err(|e| listed(vec![e], None).expect("one failure"))?;
    let req = o.request();
    crate::talos::block_on(async {
        let (tx, rx) = mpsc::channel::<Got<crate::talos::events::Shown>>(256);
        let mut tasks = Vec::new();
        for (name, c) in clients {
            let (tx, req) = (tx.clone(), req.clone());
            tasks.push(tokio::spawn(async move {
                let mut s = match c.events(req).await {
                    Ok(s) => s,
                    Err(e) => return tx.send(Got::Failed(e)).await.map_err(|_| ()),
                };
                loop {
                    match s.next().await {
                        Ok(Some(e)) => {
                            if let Some(shown) = crate::talos::events::show(&e) {
                                tx.send(Got::Item(name.clone(), shown))
                                    .await
                                    .map_err(|_| ())?;
                            }
                        }
                        Ok(None) => return tx.send(Got::Done).await.map_err(|_| ()),
                        Err(e) => return tx.send(Got::Failed(e)).await.map_err(|_| ()),
                    }
                }
            }));
        }
        drop(tx);
        drain(rx, tasks, Failures::Listed { opening: None }, &mut each).await
    })
}

/// How a stream command reports the nodes whose stream failed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Failures {
    /// `ERROR: <status>` as each node's refusal comes (the command then exits 1 without more);
    /// a failed call is the command's error (`error getting logs: ...`).
    Each,
    /// Once, at the end, as talosctl's stream reader: the nodes' errors listed (`1 error
    /// occurred:` then ` <status>` lines), a failed call alone (after `opening: ` when the
    /// command words a stream that could not be opened so).
    Listed { opening: Option<&'static str> },
}

/// The nodes' stream failures as talosctl reports them at the end (`Failures::Listed`).
fn listed(mut failures: Vec<anyhow::Error>, opening: Option<&str>) -> Option<anyhow::Error> {
    use talm_base::error::node::{go, reword, Go, Kind};
    let direct = failures
        .iter()
        .position(|e| go(e).is_some_and(|g| g.is_direct()));
    if let Some(i) = direct {
        return Some(reword(failures.swap_remove(i), |go, kind| match kind {
            // The stream could not be opened: the call's error.
            Kind::Refused => match opening {
                Some(what) => format!("{what}: {}", go.stream()),
                None => go.stream().to_string(),
            },
            _ => format!("error streaming results: {}", go.stream()),
        }));
    }
    let said: Option<Vec<String>> = failures
        .iter()
        .map(|e| go(e).as_ref().map(|g: &Go| g.stream().to_string()))
        .collect();
    match said {
        Some(said) if !said.is_empty() => {
            let hints = failures
                .iter()
                .flat_map(|e| {
                    e.chain()
                        .flat_map(|c| talm_base::error::hints_of(c).to_vec())
                })
                .fold(Vec::new(), |mut all, h| {
                    if !all.contains(&h) {
                        all.push(h);
                    }
                    all
                });
            let message = crate::runtime::node::inspect::text::stream_errors(&said);
            Some(crate::error::Hinted { message, hints }.into())
        }
        _ => failures.into_iter().next(),
    }
}

/// How often a wait looks at Ctrl-C.
const TICK: Duration = Duration::from_millis(100);

/// Opens a node's log (or, for `kernel`, its kernel log) as a stream.
async fn open_log(c: &Client, service: &str, o: &FollowOpts) -> Result<DataStream> {
    let follow = o.follow.unwrap_or(true);
    let tail = o.tail.unwrap_or(-1);
    if service == "kernel" && !o.kubernetes {
        // The kernel log has no line count: history all, or (tail 0) only new records.
        return c
            .dmesg_stream(machine::DmesgRequest {
                follow,
                tail: tail == 0,
            })
            .await;
    }
    let driver = if o.kubernetes {
        crate::proto::common::ContainerDriver::Cri
    } else {
        crate::proto::common::ContainerDriver::Containerd
    };
    c.logs_stream(machine::LogsRequest {
        namespace: if o.kubernetes { "k8s.io" } else { "system" }.into(),
        id: service.into(),
        driver: driver as i32,
        follow,
        tail_lines: tail.clamp(-1, i64::from(i32::MAX)) as i32,
    })
    .await
}

/// What a per-node stream task reports: an item (a line, an event) of a node, its failure, or
/// its end.
enum Got<T> {
    Item(String, T),
    Failed(anyhow::Error),
    Done,
}

/// Hands what the per-node tasks send to `each` until every task is done, `each` says stop,
/// or Ctrl-C; the first node failure is the result (the other nodes go on meanwhile).
async fn drain<T>(
    mut rx: mpsc::Receiver<Got<T>>,
    tasks: Vec<tokio::task::JoinHandle<Result<(), ()>>>,
    report: Failures,
    mut each: impl FnMut(&str, &T) -> Result<bool>,
) -> Result<()> {
    let mut live = tasks.len();
    let mut failures = Vec::new();
    let mut shown = false;
    let outcome = loop {
        if live == 0 {
            break Ok(());
        }
        if interrupt::pending() {
            interrupt::clear();
            break Ok(());
        }
        match tokio::time::timeout(TICK, rx.recv()).await {
            Err(_) => continue,
            Ok(None) => break Ok(()),
            Ok(Some(Got::Item(node, item))) => match each(&node, &item) {
                Ok(true) => {}
                Ok(false) => break Ok(()),
                Err(e) => break Err(e),
            },
            Ok(Some(Got::Done)) => live -= 1,
            Ok(Some(Got::Failed(e))) => {
                live -= 1;
                if report == Failures::Each {
                    if let Some(line) = error_line(&e) {
                        crate::output::err(&line);
                        shown = true;
                        continue;
                    }
                }
                failures.push(e);
            }
        }
    };
    for t in tasks {
        t.abort();
    }
    outcome?;
    let failure = match report {
        Failures::Each => failures
            .into_iter()
            .next()
            .map(failed_call)
            .or_else(|| shown.then(|| talm_base::error::Shown.into())),
        Failures::Listed { opening } => listed(failures, opening),
    };
    failure.map_or(Ok(()), Err)
}

/// A log call that failed as a whole, in talosctl's words: the stream could not be opened
/// (`error fetching logs: ...`) or broke (`error getting logs: ...`).
fn failed_call(e: anyhow::Error) -> anyhow::Error {
    use talm_base::error::node::{reword, Kind};
    reword(e, |go, kind| match kind {
        Kind::Refused => format!("error fetching logs: {}", go.stream()),
        _ => format!("error getting logs: {}", go.stream()),
    })
}

/// talosctl's line for a node whose log stream failed in apid's reply (`ERROR: <status>`, then
/// talm's hints): none for a failure of the call itself, which ends the command as its error.
fn error_line(e: &anyhow::Error) -> Option<String> {
    use talm_base::error::node::{go, Go};
    let Some(Go::Node { status, .. }) = go(e) else {
        return None;
    };
    let mut line = format!("ERROR: {status}");
    for h in e
        .chain()
        .flat_map(|c| talm_base::error::hints_of(c).to_vec())
    {
        line += &format!("\nhint: {h}");
    }
    Some(line)
}

/// Runs `each` on every line of every node's stream until all end, `each` says stop, or Ctrl-C.
fn pump(
    nodes: &[Node],
    service: &str,
    o: &FollowOpts,
    mut each: impl FnMut(&str, &str) -> Result<bool>,
) -> Result<()> {
    interrupt::install();
    let _running = interrupt::running();
    // The kernel log reads as talosctl's dmesg (its stream reader); a service's log keeps
    // `ERROR:` lines as talosctl's logs prints them.
    let report = if service == "kernel" && !o.kubernetes {
        Failures::Listed {
            opening: Some("error getting dmesg"),
        }
    } else {
        Failures::Each
    };
    let clients: Vec<(String, Client)> = nodes
        .iter()
        .map(|n| Ok((n.name.clone(), n.client()?)))
        .collect::<Result<_>>()
        .map_err(|e| match report {
            Failures::Listed { opening } => listed(vec![e], opening).expect("one failure"),
            Failures::Each => failed_call(e),
        })?;
    crate::talos::block_on(async {
        let (tx, rx) = mpsc::channel::<Got<String>>(256);
        let mut tasks = Vec::new();
        for (name, c) in clients {
            let tx = tx.clone();
            let (service, o) = (service.to_string(), o.clone());
            tasks.push(tokio::spawn(async move {
                // The kernel log has no line count: its last N lines come from the history,
                // then only new records follow.
                let kernel_tail = (service == "kernel" && !o.kubernetes)
                    .then_some(o.tail.unwrap_or(-1))
                    .filter(|t| *t > 0);
                let o = match kernel_tail {
                    Some(n) => {
                        let history = FollowOpts {
                            follow: Some(false),
                            ..o.clone()
                        };
                        // Only the last n lines are kept, however much the node sends.
                        let mut last = Last::new(n as usize);
                        match open_log(&c, &service, &history).await {
                            Ok(mut h) => {
                                let mut split = Lines::default();
                                loop {
                                    match h.next().await {
                                        Ok(Some(chunk)) => last.extend(split.push(&chunk)),
                                        Ok(None) => break,
                                        Err(e) => {
                                            return tx.send(Got::Failed(e)).await.map_err(|_| ())
                                        }
                                    }
                                }
                                last.extend(split.rest());
                            }
                            Err(e) => return tx.send(Got::Failed(e)).await.map_err(|_| ()),
                        }
                        for l in last.into_lines() {
                            tx.send(Got::Item(name.clone(), l)).await.map_err(|_| ())?;
                        }
                        if o.follow == Some(false) {
                            return tx.send(Got::Done).await.map_err(|_| ());
                        }
                        FollowOpts { tail: Some(0), ..o }
                    }
                    None => o,
                };
                let mut s = match open_log(&c, &service, &o).await {
                    Ok(s) => s,
                    Err(e) => return tx.send(Got::Failed(e)).await.map_err(|_| ()),
                };
                let mut lines = Lines::default();
                loop {
                    match s.next().await {
                        Ok(Some(chunk)) => {
                            for l in lines.push(&chunk) {
                                tx.send(Got::Item(name.clone(), l)).await.map_err(|_| ())?;
                            }
                        }
                        Ok(None) => {
                            if let Some(l) = lines.rest() {
                                tx.send(Got::Item(name.clone(), l)).await.map_err(|_| ())?;
                            }
                            return tx.send(Got::Done).await.map_err(|_| ());
                        }
                        Err(e) => return tx.send(Got::Failed(e)).await.map_err(|_| ()),
                    }
                }
            }));
        }
        drop(tx);
        drain(rx, tasks, report, |node, line: &String| each(node, line)).await
    })
}

fn event_name(t: i32) -> &'static str {
    match cosi::EventType::try_from(t) {
        Ok(cosi::EventType::Created) => "created",
        Ok(cosi::EventType::Updated) => "updated",
        Ok(cosi::EventType::Destroyed) => "destroyed",
        Ok(cosi::EventType::Bootstrapped) => "bootstrapped",
        Ok(cosi::EventType::Errored) => "errored",
        _ => "noop",
    }
}

/// Watches `kind` (one resource with `id`) on a node, handing each event to `each` until it
/// returns false, the node ends the watch, or Ctrl-C.
fn watch_events(
    n: &Node,
    kind: &str,
    id: Option<&str>,
    namespace: Option<&str>,
    mut each: impl FnMut(&Definition, &str, &cosi::Event) -> Result<bool>,
) -> Result<()> {
    interrupt::install();
    let _running = interrupt::running();
    let c = n.client()?;
    crate::talos::block_on(async {
        let def = resources::resolve(&c, kind).await?;
        let ns = namespace
            .filter(|s| !s.is_empty())
            .unwrap_or(&def.namespace)
            .to_string();
        let options = cosi::WatchOptions {
            bootstrap_contents: id.is_none(),
            ..Default::default()
        };
        let mut w = c.watch(&ns, &def.ty, id, options).await?;
        loop {
            if interrupt::pending() {
                interrupt::clear();
                return Ok(());
            }
            let e = match tokio::time::timeout(TICK, w.next()).await {
                Err(_) => continue,
                Ok(r) => r?,
            };
            let Some(e) = e else { return Ok(()) };
            let name = event_name(e.event_type);
            if name == "errored" {
                anyhow::bail!(
                    "error watching resource: {}",
                    e.error.clone().unwrap_or_default()
                );
            }
            if !each(&def, name, &e)? {
                return Ok(());
            }
        }
    })
}

fn event_map(name: &str, e: &cosi::Event) -> Result<Map> {
    let mut m = Map::new();
    m.insert("event".into(), name.into());
    let res = |r: &Option<cosi::Resource>| -> Result<Dynamic> {
        Ok(match r {
            Some(r) => rhai::serde::to_dynamic(resources::to_value(r))?,
            None => Dynamic::UNIT,
        })
    };
    m.insert("resource".into(), res(&e.resource)?);
    m.insert("old".into(), res(&e.old)?);
    Ok(m)
}

/// Whether a closure's answer means "go on" (anything but `false`).
fn goes_on(v: Dynamic) -> bool {
    v.as_bool().unwrap_or(true)
}

fn nodes_of(items: Array) -> Result<Vec<Node>> {
    items
        .into_iter()
        .map(|d| {
            d.try_cast::<Node>()
                .ok_or_else(|| anyhow::anyhow!("expected nodes (from talos::targets)"))
        })
        .collect()
}

/// The node methods.
pub fn register(engine: &mut Engine) {
    FuncRegistration::new("follow")
        .with_comments(["/// Follows a service's log (`kernel`: the kernel log) until `f(line)` returns false or Ctrl-C; `opts`: `tail` (lines of history, -1 all, 0 none), `kubernetes`, `follow` (default true)."])
        .register_into_engine(engine, |ctx: NativeCallContext, n: &mut Node, service: &str, opts: Map, f: FnPtr| {
            native(|| {
                let o = FollowOpts::read(&opts)?;
                pump(std::slice::from_ref(n), service, &o, |_, line| {
                    let v: Dynamic = f.call_within_context(&ctx, (line.to_string(),)).map_err(|e| anyhow::anyhow!("{e}"))?;
                    Ok(goes_on(v))
                })
            })
        });
    FuncRegistration::new("events")
        .with_comments(["/// The node's events as they happen: `f(#{node, id, event, actor_id, source, message})` returns false to stop (Ctrl-C stops too). `opts`: `tail` (past events first; -1 all), `since` (an event ID), `duration` (the last seconds or `5m`), `actor_id`."])
        .register_into_engine(engine, |ctx: NativeCallContext, n: &mut Node, opts: Map, f: FnPtr| {
            native(|| {
                let o = EventsOpts::read(&opts)?;
                event_pump(std::slice::from_ref(n), &o, |_, shown| {
                    let m = rhai::serde::to_dynamic(shown)?;
                    let v: Dynamic = f.call_within_context(&ctx, (m,)).map_err(|e| anyhow::anyhow!("{e}"))?;
                    Ok(goes_on(v))
                })
            })
        });
    FuncRegistration::new("watch")
        .with_comments(["/// Watches a kind (talosctl aliases work): what exists first (`created`), then `bootstrapped`, then changes as they happen; `f(#{event, resource, old})` returns false to stop (Ctrl-C stops too)."])
        .register_into_engine(engine, |ctx: NativeCallContext, n: &mut Node, kind: &str, f: FnPtr| {
            native(|| {
                watch_events(n, kind, None, None, |_, name, e| {
                    let v: Dynamic = f.call_within_context(&ctx, (event_map(name, e)?,)).map_err(|e| anyhow::anyhow!("{e}"))?;
                    Ok(goes_on(v))
                })
            })
        });
    FuncRegistration::new("watch")
        .with_comments(["/// Watches one resource by ID: its current state first (`created`, or `destroyed` when missing), then its changes."])
        .register_into_engine(engine, |ctx: NativeCallContext, n: &mut Node, kind: &str, id: &str, f: FnPtr| {
            native(|| {
                watch_events(n, kind, Some(id), None, |_, name, e| {
                    let v: Dynamic = f.call_within_context(&ctx, (event_map(name, e)?,)).map_err(|e| anyhow::anyhow!("{e}"))?;
                    Ok(goes_on(v))
                })
            })
        });
}

options! {
    /// `talos::dashboard(nodes, #{...})`.
    pub struct DashboardOpts for "talos::dashboard" {
        /// How often the screens refresh (default 3s).
        interval: Option<Duration>,
    }
}

/// The `talos::` functions that print several nodes' streams.
pub fn add_to_talos(m: &mut rhai::Module) {
    FuncRegistration::new("dashboard")
        .with_comments(["/// The terminal dashboard over `nodes` until `q` (refused when stdin is not a terminal). `opts`: `interval`."])
        .set_into_module(m, |nodes: Array, opts: Map| {
            native(|| {
                let o = DashboardOpts::read(&opts)?;
                use std::io::IsTerminal;
                crate::dashboard::check_terminal(std::io::stdin().is_terminal())?;
                let clients = nodes_of(nodes)?
                    .into_iter()
                    .map(|n| Ok((n.name.clone(), n.client()?)))
                    .collect::<Result<Vec<_>>>()?;
                let mut d = crate::dashboard::Options::default();
                if let Some(i) = o.interval {
                    d.interval = i;
                }
                crate::dashboard::run(clients, d).map(|_| ())
            })
        });
    FuncRegistration::new("events_print")
        .with_comments(["/// Prints `talm events` for every node: NODE ID EVENT / ACTOR SOURCE MESSAGE, two lines per event, as events happen, until Ctrl-C. `opts` as `n.events`."])
        .set_into_module(m, |nodes: Array, opts: Map| {
            native(|| {
                let o = EventsOpts::read(&opts)?;
                let nodes = nodes_of(nodes)?;
                let mut header = true;
                event_pump(&nodes, &o, |node, shown| {
                    let mut rows = Vec::new();
                    if header {
                        rows.push(["NODE", "ID", "EVENT", "ACTOR", "SOURCE", "MESSAGE"].map(str::to_string).to_vec());
                        header = false;
                    }
                    rows.extend(crate::talos::events::rows(shown, node));
                    crate::output::write(crate::printable::printable(&resources::table(&rows)).as_bytes())?;
                    Ok(true)
                })
            })
        });
    FuncRegistration::new("follow_logs")
        .with_comments(["/// Prints the log of `service` of every node as it grows (`talm logs -F`), each line prefixed with its node (as talosctl prints them, one node or several), until every stream ends or Ctrl-C. `opts` as `n.follow`."])
        .set_into_module(m, |nodes: Array, service: &str, opts: Map| {
            native(|| {
                let o = FollowOpts::read(&opts)?;
                let nodes = nodes_of(nodes)?;
                pump(&nodes, service, &o, |node, line| {
                    let line = crate::printable::printable(line);
                    let text = format!("{node}: {line}\n");
                    crate::output::write(text.as_bytes())?;
                    Ok(true)
                })
            })
        });
    FuncRegistration::new("watch_print")
        .with_comments(["/// Prints `talm get KIND -w` for every node: what exists, then each change as it happens, until Ctrl-C. `opts`: `id`, `namespace`, `output` (table, yaml, json, jsonpath=EXPR)."])
        .set_into_module(m, |nodes: Array, kind: &str, opts: Map| {
            native(|| {
                let o = WatchOpts::read(&opts)?;
                let output = Output::parse(o.output.as_deref().unwrap_or("table"))?;
                let nodes = nodes_of(nodes)?;
                // One node at a time would never reach the second: a watch has no end.
                let mut handles = Vec::new();
                for n in nodes {
                    let (kind, o, output) = (kind.to_string(), o.clone(), output.clone());
                    handles.push(std::thread::spawn(move || -> Result<()> {
                        let mut p = WatchPrinter::new(output);
                        let name = n.name.clone();
                        watch_events(&n, &kind, o.id.as_deref(), o.namespace.as_deref(), |def, ev, e| {
                            p.event(&name, def, ev, e)?;
                            Ok(true)
                        })
                    }));
                }
                let mut first = Ok(());
                for h in handles {
                    let r = h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a watch stopped unexpectedly")));
                    if first.is_ok() {
                        first = r;
                    }
                }
                first
            })
        });
}
