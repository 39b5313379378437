//! Talking to nodes from scripts: `node(addr[, opts])` handles with `version()`, `get()`,
//! `discover()`, and `talos::targets(opts)` resolving nodes and endpoints from flags, modeline
//! and talosconfig the way talosctl does. Connections open on first use and are kept. Option
//! maps are typed (`options!`): an unknown key is an error, and `reset` without options wipes
//! only STATE and EPHEMERAL, as `talm reset` does.

pub(crate) mod apply;
pub(crate) mod change;
pub(crate) mod debug;
pub(crate) mod etcd;
pub(crate) mod inspect;
pub(crate) mod k8s;
pub(crate) mod lines;
pub(crate) mod opts;
pub(crate) mod pcap;
mod reach;
pub(crate) mod rotate;
pub(crate) mod stream;
pub(crate) mod support;
pub(crate) mod tracked;
pub(crate) mod upgrade;
pub(crate) mod verify;
mod watch_print;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::error::hinted;
use crate::proto::machine;
use crate::runtime::native;
use crate::runtime::node::opts::{
    LogsOpts, NodeOpts, RebootOpts, ResetOpts, ScanOpts, TargetsOpts,
};
use crate::runtime::session::Session;
use crate::talos::client::{self, Client};
use crate::talos::creds::Auth;
use crate::talos::tracker::Goal;
use crate::talos::{block_on, discovery, errors, resources};
pub(crate) use reach::targets;
use reach::{context_endpoints, node_with};
use talm_base::duration::{self, Zero};

/// A node as scripts hold it: where to connect (its endpoints, tried in order), as whom, and
/// the connection once made.
#[derive(Clone)]
pub struct Node {
    pub name: String,
    endpoints: Vec<String>,
    target: Option<String>,
    opts: client::Options,
    conn: Arc<Mutex<Option<Client>>>,
}

impl Node {
    /// Runs `f` on the node's connection (opened on first use); a failure drops the connection
    /// so the next call dials again (the node may have rebooted).
    pub(super) fn with<T>(&self, f: impl FnOnce(&Client) -> Result<T>) -> Result<T> {
        let c = self.client()?;
        let r = f(&c);
        if r.is_err() {
            *self.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        r
    }

    /// A handle to the same node without a connection yet: its next call dials.
    pub(super) fn fresh(&self) -> Node {
        Node {
            conn: Arc::new(Mutex::new(None)),
            ..self.clone()
        }
    }

    /// A way to open fresh connections to the node (not kept), for waits across a reboot.
    pub(super) fn dialer(
        &self,
    ) -> impl Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Client>> + Send>>
    {
        let (endpoints, target, opts) = (
            self.endpoints.clone(),
            self.target.clone(),
            self.opts.clone(),
        );
        move || {
            let (endpoints, target, opts) = (endpoints.clone(), target.clone(), opts.clone());
            Box::pin(async move {
                crate::talos::failover::connect(&endpoints, target.as_deref(), &opts).await
            })
        }
    }

    /// Whether the handle is a maintenance-mode one.
    pub(super) fn insecure(&self) -> bool {
        self.opts.auth.is_insecure()
    }

    /// The same node through the same endpoints with other credentials (its own connection).
    pub(super) fn with_auth(&self, auth: Auth) -> Node {
        Node {
            name: self.name.clone(),
            endpoints: self.endpoints.clone(),
            target: self.target.clone(),
            opts: client::Options {
                auth,
                timeout: self.opts.timeout,
            },
            conn: Arc::new(Mutex::new(None)),
        }
    }

    /// The node itself, not through an endpoint: a node in maintenance mode is reached only at
    /// its own address (no apid proxies to it).
    pub(super) fn direct(&self) -> Node {
        let Some(target) = &self.target else {
            return self.fresh();
        };
        Node {
            endpoints: vec![target.clone()],
            target: None,
            ..self.fresh()
        }
    }

    /// Drops the kept connection (the node rebooted under it).
    pub(super) fn forget(&self) {
        *self.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    pub(super) fn client(&self) -> Result<Client> {
        let mut guard = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = guard.as_ref() {
            return Ok(c.clone());
        }
        let c = block_on(crate::talos::failover::connect(
            &self.endpoints,
            self.target.as_deref(),
            &self.opts,
        ))?;
        *guard = Some(c.clone());
        Ok(c)
    }

    /// The endpoint calls go through first.
    pub fn endpoint(&self) -> String {
        self.endpoints.first().cloned().unwrap_or_default()
    }
}

/// The partitions a reset wipes when neither a wipe mode nor labels are given: META (and with
/// it the node's identity) survives.
pub const RESET_DEFAULT_LABELS: [&str; 2] = ["STATE", "EPHEMERAL"];

fn to_dyn(v: &serde_yaml_ng::Value) -> Result<Dynamic> {
    Ok(rhai::serde::to_dynamic(v)?)
}

fn version(n: &Node) -> Result<Map> {
    let v = n.with(|c| block_on(c.version()))?;
    let mut m: Map = to_dyn(&discovery::version_value(&v))?.cast::<Map>();
    // Every key is there for scripts (reading a missing one is an error), "" when not reported.
    for key in [
        "tag",
        "sha",
        "built",
        "go_version",
        "os",
        "arch",
        "platform",
        "mode",
    ] {
        m.entry(key.into()).or_insert_with(|| "".into());
    }
    m.insert("node".into(), n.name.clone().into());
    Ok(m)
}

fn get(n: &Node, kind: &str, id: &str, namespace: &str) -> Result<Dynamic> {
    n.with(|c| block_on(get_async(c, kind, id, namespace)))
}

async fn get_async(c: &Client, kind: &str, id: &str, namespace: &str) -> Result<Dynamic> {
    {
        let def = resources::resolve(c, kind).await?;
        let (ty, ns) = (def.ty, def.namespace);
        let ns = if namespace.is_empty() {
            ns
        } else {
            namespace.to_string()
        };
        if id.is_empty() {
            let items: Vec<serde_yaml_ng::Value> = c
                .list(&ns, &ty)
                .await?
                .iter()
                .map(resources::to_value)
                .collect();
            return to_dyn(&serde_yaml_ng::Value::Sequence(items));
        }
        match c.get(&ns, &ty, id).await? {
            Some(r) => to_dyn(&resources::to_value(&r)),
            None => Ok(Dynamic::UNIT),
        }
    }
}

/// Resources as `talm get` prints them (`output`: table, yaml, json, jsonpath=EXPR), formatted
/// from the node's answer without passing through script maps, so specs keep the order Talos
/// gives their keys; `()` when `id` names a resource the node does not have.
fn get_text(n: &Node, kind: &str, id: &str, namespace: &str, output: &str) -> Result<Dynamic> {
    let output = resources::Output::parse(output)?;
    n.with(|c| {
        block_on(async {
            let def = resources::resolve(c, kind).await?;
            let ns = if namespace.is_empty() {
                def.namespace.clone()
            } else {
                namespace.to_string()
            };
            let items: Vec<serde_yaml_ng::Value> = if id.is_empty() {
                c.list(&ns, &def.ty)
                    .await?
                    .iter()
                    .map(resources::to_value)
                    .collect()
            } else {
                match c.get(&ns, &def.ty, id).await? {
                    Some(r) => vec![resources::to_value(&r)],
                    None => return Ok(Dynamic::UNIT),
                }
            };
            Ok(resources::format(&n.name, &items, &output, &def)?.into())
        })
    })
}

/// A node's discovery as a script map.
pub(super) fn discover(n: &Node) -> Result<Dynamic> {
    crate::progress::stage(crate::progress::Stage::Discover);
    let facts = n.with(|c| block_on(discovery::discover(c)))?;
    crate::render::dynamic::from_facts(&facts)
}

/// Whole seconds a script waits for (`wait_ready(300)`), within Go's range.
fn wait_limit(secs: i64) -> Result<Duration> {
    duration::checked(
        "seconds",
        &secs.to_string(),
        duration::from_seconds(secs as f64),
        Zero::Allowed,
    )
}

/// Whether the node answers this handle now. A maintenance-mode handle also counts a node that
/// has left maintenance (what one waits for after `apply -i`).
fn answers(n: &Node) -> bool {
    *n.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
    match n.with(|c| block_on(c.version())) {
        Ok(_) => true,
        Err(e) => {
            n.opts.auth.is_insecure() && errors::kind(&e) == Some(errors::Kind::NotMaintenance)
        }
    }
}

/// Polls `ready` every 250 ms until it holds or `limit` passes; Ctrl-C stops the wait.
fn poll(
    limit: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<bool, Box<rhai::EvalAltResult>> {
    // Within Go's range the deadline fits an Instant; past it there is none.
    let deadline = std::time::Instant::now().checked_add(limit);
    loop {
        if ready() {
            return Ok(true);
        }
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Ok(false);
        }
        crate::sandbox::sleep(Duration::from_millis(250))?;
    }
}

/// Waits until the node answers (after an apply or a reboot).
fn wait_ready(n: &Node, limit: Duration) -> Result<bool, Box<rhai::EvalAltResult>> {
    crate::progress::stage(crate::progress::Stage::Ready);
    poll(limit, || answers(n))
}

/// Waits for a reboot to happen: the node stops answering, then answers again.
fn wait_reboot(n: &Node, limit: Duration) -> Result<bool, Box<rhai::EvalAltResult>> {
    crate::progress::stage(crate::progress::Stage::Reboot);
    let start = std::time::Instant::now();
    let went_down = poll(limit.min(Duration::from_secs(300)), || {
        *n.conn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        n.with(|c| block_on(c.version())).is_err()
    })?;
    Ok(went_down && wait_ready(n, limit.saturating_sub(start.elapsed()))?)
}

/// The reset request for `o`: with neither a wipe mode nor labels only STATE and EPHEMERAL are
/// wiped, never the whole disk.
fn reset_request(o: &ResetOpts) -> machine::ResetRequest {
    let labels = if o.wipe_mode.is_none() && o.system_labels.is_empty() {
        RESET_DEFAULT_LABELS.map(String::from).to_vec()
    } else {
        o.system_labels.clone()
    };
    machine::ResetRequest {
        graceful: o.graceful.unwrap_or(true),
        reboot: o.reboot,
        system_partitions_to_wipe: labels
            .into_iter()
            .map(|label| machine::ResetPartitionSpec { label, wipe: true })
            .collect(),
        user_disks_to_wipe: o.user_disks.clone(),
        mode: machine::reset_request::WipeMode::from(o.wipe_mode.unwrap_or_default()) as i32,
    }
}

fn logs(n: &Node, service: &str, o: &LogsOpts) -> Result<String> {
    let tail = o.tail.unwrap_or(-1);
    let bytes = if service == "kernel" {
        n.with(|c| block_on(c.dmesg(machine::DmesgRequest::default())))?
    } else {
        let driver = if o.kubernetes {
            crate::proto::common::ContainerDriver::Cri
        } else {
            crate::proto::common::ContainerDriver::Containerd
        };
        let req = machine::LogsRequest {
            namespace: if o.kubernetes { "k8s.io" } else { "system" }.into(),
            id: service.into(),
            driver: driver as i32,
            follow: false,
            tail_lines: tail.clamp(-1, i64::from(i32::MAX)) as i32,
        };
        n.with(|c| block_on(c.logs(req)))?
    };
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if service == "kernel" && tail >= 0 {
        let lines: Vec<&str> = text.lines().collect();
        let keep = lines.len().saturating_sub(tail as usize);
        text = lines[keep..].iter().map(|l| format!("{l}\n")).collect();
    }
    Ok(text)
}

fn scan(cidr: &str, o: &ScanOpts) -> Result<Array> {
    let port = match o.port {
        None => 50000,
        Some(p) => u16::try_from(p)
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| hinted(format!("port {p} is not a TCP port"), "give 1 to 65535"))?,
    };
    let conc = o.concurrency.unwrap_or(256).clamp(0, 4096) as usize;
    let timeout = o.timeout.unwrap_or(Duration::from_millis(500));
    let found = block_on(crate::talos::scan::scan(cidr, port, timeout, conc))?;
    Ok(found
        .into_iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("ip".into(), f.ip.to_string().into());
            m.insert("mode".into(), f.mode.into());
            m.insert("version".into(), f.version.into());
            Dynamic::from(m)
        })
        .collect())
}

fn service_map(s: machine::ServiceInfo) -> Dynamic {
    let mut m = Map::new();
    let health = s.health.unwrap_or_default();
    let events: Array = s
        .events
        .unwrap_or_default()
        .events
        .into_iter()
        .map(|e| {
            let mut ev = Map::new();
            ev.insert(
                "ago".into(),
                duration::since(e.ts.as_ref().map(|t| (t.seconds, t.nanos))).into(),
            );
            ev.insert("state".into(), e.state.into());
            ev.insert("msg".into(), e.msg.into());
            Dynamic::from(ev)
        })
        .collect();
    m.insert("id".into(), s.id.into());
    m.insert("state".into(), s.state.into());
    m.insert("healthy".into(), health.healthy.into());
    m.insert("unknown".into(), health.unknown.into());
    m.insert("message".into(), health.last_message.into());
    m.insert("events".into(), events.into());
    Dynamic::from(m)
}

/// The node's admin kubeconfig, without credential plugins: each one dropped is warned about.
/// A failed call is said as
/// talosctl says it: `error copying: ...` when it could not start, `error initializing gzip:
/// ...` (its archive reader meeting the node's refusal) after.
pub fn kubeconfig_text(n: &Node) -> Result<String> {
    use talm_base::error::node::{reword, Kind};
    let bytes = n.with(|c| block_on(c.kubeconfig())).map_err(|e| {
        reword(e, |go, kind| match kind {
            Kind::Refused => format!("error copying: {}", go.stream()),
            _ => format!("error initializing gzip: {}", go.stream()),
        })
    })?;
    let (text, dropped) =
        crate::project::kubeconfig::without_plugins(&String::from_utf8_lossy(&bytes))?;
    for d in dropped {
        crate::output::err(&format!(
            "WARNING: {}: the kubeconfig from the node gives {d}: dropped, talm never keeps a program a node names for your kubectl to run",
            n.name
        ));
    }
    Ok(text)
}

pub fn register(engine: &mut Engine, session: &Session) {
    engine.register_type_with_name::<Node>("Node");
    engine.register_get("name", |n: &mut Node| n.name.clone());
    engine.register_get("endpoint", |n: &mut Node| n.endpoint());
    engine.register_get("endpoints", |n: &mut Node| {
        n.endpoints
            .iter()
            .cloned()
            .map(Dynamic::from)
            .collect::<Array>()
    });
    engine.register_fn("to_string", |n: &mut Node| format!("node({})", n.name));
    FuncRegistration::new("node")
        .with_comments(["/// A node reached through the project's talosconfig, at `addr`."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |addr: &str| native(|| node_with(&session, addr, &NodeOpts::default()))
        });
    FuncRegistration::new("node")
        .with_comments(["/// A node with options: `insecure` (maintenance mode), `endpoint`, or `endpoints` (tried in order, the first that answers), `talosconfig`, `context`, `skip_verify` (the node's certificate unchecked, the client's still presented), `timeout` (seconds or `30s`)."])
        .register_into_engine(engine, {
            let session = session.clone();
            move |addr: &str, opts: Map| native(|| node_with(&session, addr, &NodeOpts::read(&opts)?))
        });
    FuncRegistration::new("version")
        .with_comments(["/// The node's Talos version: #{node, tag, sha, built, go_version, os, arch, platform, mode, rbac}."])
        .register_into_engine(engine, |n: &mut Node| native(|| version(n)));
    FuncRegistration::new("definition")
        .with_comments(["/// What the node's resource definition says of a kind (talosctl aliases work): #{type, namespace, display, columns: [#{name, json_path}]}."])
        .register_into_engine(engine, |n: &mut Node, kind: &str| {
            native(|| {
                let d = n.with(|c| block_on(resources::resolve(c, kind)))?;
                Ok(rhai::serde::to_dynamic(d)?)
            })
        });
    FuncRegistration::new("get")
        .with_comments(["/// Every resource of a kind (talosctl aliases work: links, addresses, routes, disks...), as #{metadata, spec} maps."])
        .register_into_engine(engine, |n: &mut Node, kind: &str| native(|| get(n, kind, "", "")));
    FuncRegistration::new("get")
        .with_comments(["/// One resource by ID, or () when the node has none."])
        .register_into_engine(engine, |n: &mut Node, kind: &str, id: &str| {
            native(|| get(n, kind, id, ""))
        });
    FuncRegistration::new("get")
        .with_comments(["/// One resource by ID in a namespace (an empty ID lists them all)."])
        .register_into_engine(engine, |n: &mut Node, kind: &str, id: &str, ns: &str| {
            native(|| get(n, kind, id, ns))
        });
    FuncRegistration::new("get_text")
        .with_comments(["/// Resources of a kind as `talm get` prints them: `id` (\"\" for all), `namespace` (\"\" for the kind's own), `output` (table, yaml, json or jsonpath=EXPR); specs keep the key order the node gives them. () when `id` names no resource."])
        .register_into_engine(engine, |n: &mut Node, kind: &str, id: &str, namespace: &str, output: &str| {
            native(|| get_text(n, kind, id, namespace, output))
        });
    FuncRegistration::new("bootstrap")
        .with_comments(["/// Bootstraps etcd on the node (a control plane, once); a second call fails with Talos's AlreadyExists."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| n.with(|c| block_on(c.bootstrap(machine::BootstrapRequest::default()))))
        });
    FuncRegistration::new("kubeconfig")
        .with_comments(["/// The admin kubeconfig the node issues (a control plane), as text."])
        .register_into_engine(engine, |n: &mut Node| native(|| kubeconfig_text(n)));
    FuncRegistration::new("reboot")
        .with_comments(["/// Reboots the node (`opts.mode`: default, powercycle, or force: no graceful stop of pods and services); `opts.wait` follows it with talosctl's tracker until the node is back on a new boot (`opts.timeout`, default 30m). Returns the actor ID."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| {
                let o = RebootOpts::read(&opts)?;
                let req = machine::RebootRequest {
                    mode: machine::reboot_request::Mode::from(o.mode) as i32,
                };
                crate::progress::stage(crate::progress::Stage::Reboot);
                if !o.wait && !o.drain {
                    return Ok(n.with(|c| block_on(c.reboot(req)))?.actor_id);
                }
                tracked::refuse_insecure(n)?;
                let drained = match o.drain {
                    true => k8s::before_reboot(n, o.drain_timeout.unwrap_or(k8s::DRAIN_TIMEOUT), None)?,
                    false => None,
                };
                let how = tracked::Follow::new(Goal::Rebooted, o.timeout, o.kernel_log);
                let actor = tracked::follow(n, how, move |c| async move { Ok(c.reboot(req).await?.actor_id) })?;
                if let Some(d) = drained {
                    d.after_reboot(o.timeout.unwrap_or(tracked::WAIT))?;
                }
                Ok(actor)
            })
        });
    FuncRegistration::new("reboot")
        .with_comments(["/// Reboots the node."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                crate::progress::stage(crate::progress::Stage::Reboot);
                n.with(|c| block_on(c.reboot(machine::RebootRequest::default())))?;
                Ok(())
            })
        });
    FuncRegistration::new("logs")
        .with_comments(["/// A service's log (`kernel` reads the kernel log): `opts.tail` keeps the last lines, `opts.kubernetes` reads a container in the k8s.io namespace."])
        .register_into_engine(engine, |n: &mut Node, service: &str, opts: Map| {
            native(|| logs(n, service, &LogsOpts::read(&opts)?))
        });
    FuncRegistration::new("services")
        .with_comments(["/// The node's services: #{id, state, healthy, unknown (no health check result), message, events} each; `events` oldest first, #{state, msg, ago} (`ago` as Go prints the time since, e.g. `19m27s`)."])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let list = n.with(|c| block_on(c.services()))?;
                Ok(list.into_iter().map(service_map).collect::<Array>())
            })
        });
    FuncRegistration::new("reset")
        .with_comments(["/// Resets the node as `talm reset` does: `opts` may hold `graceful` (default true), `reboot`, `wipe_mode` (all, system-disk, user-disks), `system_labels` (partitions to wipe), `user_disks`, `wait` (follow it with talosctl's tracker until the services stop; with `reboot`, until the node is back in maintenance mode), `timeout` (of the wait, default 30m). Left out, only STATE and EPHEMERAL are wiped (META kept); the whole system disk only with `wipe_mode: \"all\"` and no labels. An unknown option is an error."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| {
                let o = ResetOpts::read(&opts)?;
                let req = reset_request(&o);
                if !o.wait {
                    return Ok(n.with(|c| block_on(c.reset(req)))?.actor_id);
                }
                tracked::refuse_insecure(n)?;
                let goal = Goal::ServicesStopped { then_back: req.reboot };
                let how = tracked::Follow::new(goal, o.timeout, o.kernel_log);
                tracked::follow(n, how, move |c| async move { Ok(c.reset(req).await?.actor_id) })
            })
        });
    FuncRegistration::new("reset")
        .with_comments([
            "/// Resets the node wiping only STATE and EPHEMERAL (META kept), gracefully.",
        ])
        .register_into_engine(engine, |n: &mut Node| {
            native(|| {
                let req = reset_request(&ResetOpts::default());
                n.with(|c| block_on(c.reset(req))).map(|_| ())
            })
        });
    FuncRegistration::new("wait_ready")
        .with_comments(["/// Waits up to `seconds` until the node's API answers again (after an apply or reboot); false on timeout."])
        .register_into_engine(engine, |n: &mut Node, seconds: i64| {
            let limit = native(|| wait_limit(seconds))?;
            wait_ready(n, limit)
        });
    FuncRegistration::new("wait_reboot")
        .with_comments(["/// Waits up to `seconds` for a reboot: the node goes away, then answers again; false on timeout."])
        .register_into_engine(engine, |n: &mut Node, seconds: i64| {
            let limit = native(|| wait_limit(seconds))?;
            wait_reboot(n, limit)
        });
    FuncRegistration::new("discover")
        .with_comments(["/// Everything presets read from the node: #{node, version, resources: #{disks, links, addresses, routes, ...}}, the `--facts` file format."])
        .register_into_engine(engine, |n: &mut Node| native(|| discover(n)));

    let mut m = Module::new();
    FuncRegistration::new("targets")
        .with_comments(["/// The nodes a command acts on, from #{nodes, endpoints, files, insecure, cert_fingerprints, talosconfig, context, timeout} (cert_fingerprints: with insecure, the maintenance certificate must match one, talosctl's base64 SHA-256 of its public key): flags win, then the node files' modelines, then the talosconfig context."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move |opts: Map| native(|| targets(&session, &TargetsOpts::read(&opts)?))
        });
    FuncRegistration::new("context_endpoints")
        .with_comments(["/// The talosconfig context's endpoints (--talosconfig, --context), read without its credentials; [] when there is no talosconfig."])
        .set_into_module(&mut m, {
            let session = session.clone();
            move || {
                native(|| {
                    Ok(context_endpoints(&session)?
                        .into_iter()
                        .map(Dynamic::from)
                        .collect::<Array>())
                })
            }
        });
    FuncRegistration::new("scan")
        .with_comments(["/// Talos API endpoints in an IPv4 range: `opts` has `port` (50000), `timeout` (500ms), `concurrency` (256). Returns #{ip, mode (maintenance|configured|unknown), version} each, in address order."])
        .set_into_module(&mut m, |cidr: &str, opts: Map| native(|| scan(cidr, &ScanOpts::read(&opts)?)));
    FuncRegistration::new("format")
        .with_comments([
            "/// Resources (from `get`) as `talm get` prints them for `node`: `output` is table, yaml, json or jsonpath=EXPR; `def` is the kind's `n.definition(kind)` (its display name and print columns).",
        ])
        .set_into_module(&mut m, |node: &str, items: Dynamic, output: &str, def: Dynamic| {
            native(|| {
                let v: serde_yaml_ng::Value = rhai::serde::from_dynamic(&items)?;
                let items = match v {
                    serde_yaml_ng::Value::Sequence(s) => s,
                    serde_yaml_ng::Value::Null => vec![],
                    one => vec![one],
                };
                let def: resources::Definition = rhai::serde::from_dynamic(&def)?;
                resources::format(node, &items, &resources::Output::parse(output)?, &def)
            })
        });
    crate::runtime::node::stream::add_to_talos(&mut m);
    crate::runtime::fleet::each::add_to_talos(&mut m, session);
    engine.register_static_module("talos", m.into());
}
