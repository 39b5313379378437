//! `rolling(nodes, f, #{max_parallel, health, before, after})`: a rolling operation over a
//! fleet. Control planes go one at a time, then workers `max_parallel` at a time (each batch
//! runs through `parallel()`, so its lines and progress are the same as any parallel work); after
//! each node or batch the cluster health check `n.health` (what `talm health` runs) must pass
//! before the next. `before(n)` / `after(n)` may veto by returning false or failing. The first
//! failure stops the roll with an error naming what was done, what failed and what was not
//! started; so does Ctrl-C (or SIGTERM) during the roll, and talm still exits as the signal
//! asks (130, 143).
//!
//! A node's role is its own machine type (the COSI `MachineType` resource), not a template
//! name: templates may be named anything, a node file may have none, and the node is what
//! etcd membership follows.

use anyhow::Result;
use rhai::{
    Array, Dynamic, Engine, EvalAltResult, FnPtr, FuncRegistration, Map, NativeCallContext,
};

use crate::error::hinted;
use crate::runtime::fleet::parallel::{ItemError, MAX_AT_ONCE};
use crate::runtime::node::etcd::HealthOpts;
use crate::runtime::node::Node;
use crate::runtime::opts::{options, FromOpt};
use crate::sandbox::{from_rhai, interrupt, to_rhai};
use crate::talos::block_on;

/// A function option (`before`, `after`): absent, or a closure / `Fn("name")`.
#[derive(Debug, Clone, Default)]
pub struct Callback(Option<FnPtr>);

impl FromOpt for Callback {
    const EXPECTED: &'static str = "a function: a closure |n| ... or Fn(\"name\")";
    fn absent() -> Self {
        Callback(None)
    }
    fn read(v: &Dynamic) -> Option<Self> {
        v.clone().try_cast::<FnPtr>().map(|f| Callback(Some(f)))
    }
}

options! {
    /// `rolling(nodes, f, #{max_parallel, health, before, after})`.
    pub struct RollingOpts for "rolling" {
        /// Workers at once: a count or a percentage of the workers such as `"25%"` (default 1;
        /// at most 32); control planes always go one at a time.
        max_parallel: Option<AtOnce>,
        /// true (default), false, or a map of `n.health` options plus `via` (the node to run
        /// the check on; default the roll's first control plane).
        health: Dynamic,
        /// Called with each node before its turn; false or an error stops the roll.
        before: Callback,
        /// Called with each node after its turn; false or an error stops the roll.
        after: Callback,
        /// Called with each node before the roll starts; true leaves it out (a node already
        /// done). A skipped control plane still runs the health check.
        skip: Callback,
    }
}

/// How many workers go at once: a count, or a share of the workers (`25%`, rounded up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtOnce {
    Count(i64),
    Percent(i64),
}

impl AtOnce {
    /// `8` or `25%`.
    pub fn parse(text: &str) -> Option<AtOnce> {
        match text.trim().strip_suffix('%') {
            Some(p) => p.trim().parse().ok().map(AtOnce::Percent),
            None => text.trim().parse().ok().map(AtOnce::Count),
        }
    }

    /// The batch size for `workers` workers (at least 1, at most `MAX_AT_ONCE`); `None` for a
    /// count below 1 or a share outside 1–100%.
    pub fn of(self, workers: usize) -> Option<usize> {
        let n = match self {
            AtOnce::Count(c) if c >= 1 => c as usize,
            AtOnce::Percent(p) if (1..=100).contains(&p) => {
                (workers * p as usize).div_ceil(100).max(1)
            }
            _ => return None,
        };
        Some(n.min(MAX_AT_ONCE))
    }
}

impl std::fmt::Display for AtOnce {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AtOnce::Count(c) => write!(f, "{c}"),
            AtOnce::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl crate::runtime::opts::FromOpt for AtOnce {
    const EXPECTED: &'static str = "a number of workers or a percentage such as \"25%\"";
    fn absent() -> Self {
        AtOnce::Count(1)
    }
    fn read(v: &Dynamic) -> Option<Self> {
        match v.as_int() {
            Ok(n) => Some(AtOnce::Count(n)),
            Err(_) => AtOnce::parse(&v.clone().into_string().ok()?),
        }
    }
}

/// What a node is, read from the node itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    ControlPlane,
    Worker,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::ControlPlane => "controlplane",
            Role::Worker => "worker",
        }
    }
}

fn role(n: &Node) -> Result<Role> {
    let res = n
        .with(|c| {
            block_on(c.get(
                "config",
                "MachineTypes.config.talos.dev",
                "machine-type",
            ))
        })
        .map_err(|e| {
            hinted(
                format!("rolling: cannot read the machine type of {}: {e:#}", n.name),
                "a roll puts control planes before workers by each node's machine type: check that the node answers (talm version -n NODE)",
            )
        })?;
    let spec = res
        .and_then(|r| r.spec)
        .map(|s| s.yaml_spec)
        .unwrap_or_default();
    match spec.trim() {
        "controlplane" | "init" => Ok(Role::ControlPlane),
        "worker" => Ok(Role::Worker),
        other => Err(hinted(
            format!("rolling: node {} has machine type {other:?}", n.name),
            "a roll works on configured nodes (control planes and workers); a node in maintenance mode has none yet",
        )),
    }
}

/// The health check after each turn.
enum Health {
    Off,
    On { via: Option<Node>, opts: Map },
}

impl Health {
    fn read(v: &Dynamic) -> Result<Health> {
        if v.is_unit() {
            return Ok(Health::On {
                via: None,
                opts: quiet(Map::new()),
            });
        }
        if let Ok(b) = v.as_bool() {
            return Ok(if b {
                Health::On {
                    via: None,
                    opts: quiet(Map::new()),
                }
            } else {
                Health::Off
            });
        }
        let Some(mut m) = v.clone().try_cast::<Map>() else {
            return Err(hinted(
                format!(
                    "option \"health\" of rolling must be true, false or a map, not {} ({})",
                    v,
                    v.type_name()
                ),
                "`talm help api rolling` describes the options",
            ));
        };
        let via = match m.remove("via") {
            None => None,
            Some(d) if d.is_unit() => None,
            Some(d) => Some(d.try_cast::<Node>().ok_or_else(|| {
                hinted(
                    "option \"health.via\" of rolling must be a node",
                    "give a control plane handle: node(ADDR) or one of talos::targets(...)",
                )
            })?),
        };
        HealthOpts::read(&m)?;
        Ok(Health::On {
            via,
            opts: quiet(m),
        })
    }
}

/// Health options with the progress lines off unless asked for (the roll prints one line).
fn quiet(mut m: Map) -> Map {
    m.entry("progress".into()).or_insert(false.into());
    m
}

/// Why a roll stopped.
enum Stop {
    Failed(String),
    Hook {
        which: &'static str,
        node: String,
        error: Option<String>,
    },
    Health {
        after: String,
        error: String,
    },
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

/// Where the roll is.
#[derive(Default)]
struct Tally {
    done: Vec<String>,
    failed: Vec<String>,
    /// The nodes whose turn Ctrl-C cut short.
    interrupted: Vec<String>,
    not_started: Vec<String>,
}

fn listed(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

fn stopped(stop: Stop, t: &Tally) -> Box<EvalAltResult> {
    let reason = match stop {
        Stop::Failed(first) => first,
        Stop::Hook {
            which,
            node,
            error: None,
        } => format!("{which}({node}) vetoed the roll"),
        Stop::Hook {
            which,
            node,
            error: Some(e),
        } => format!("{which}({node}) failed: {e}"),
        Stop::Health { after, error } => {
            format!("the cluster health check failed after {after}: {error}")
        }
        Stop::Interrupted => interrupt::Interrupted { at: None }.to_string(),
    };
    let mut msg = format!("rolling: {reason}\n  done: {}", listed(&t.done));
    if !t.failed.is_empty() {
        msg.push_str(&format!("\n  failed: {}", listed(&t.failed)));
    }
    if !t.interrupted.is_empty() {
        msg.push_str(&format!("\n  interrupted: {}", listed(&t.interrupted)));
    }
    msg.push_str(&format!("\n  not started: {}", listed(&t.not_started)));
    to_rhai(hinted(
        msg,
        "fix the cause, then run the roll again over the nodes not done",
    ))
}

/// Ctrl-C or a script limit: these end the whole script, never just the roll's turn.
pub(super) fn fatal(err: &EvalAltResult) -> bool {
    match err {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) => fatal(inner),
        EvalAltResult::ErrorTerminated(..)
        | EvalAltResult::ErrorTooManyOperations(_)
        | EvalAltResult::ErrorStackOverflow(_)
        | EvalAltResult::ErrorDataTooLarge(..) => true,
        _ => false,
    }
}

fn first_line(err: EvalAltResult) -> String {
    let text = crate::error::render(&from_rhai(err, "rolling"));
    let text = text.trim_start_matches("Error: ");
    text.lines().next().unwrap_or("").to_string()
}

/// Calls a `before`/`after` callback: `None` to go on, `Some(error)` (None inside: a veto) to
/// stop; Ctrl-C and script limits are raised.
fn ask(
    ctx: &NativeCallContext,
    f: &FnPtr,
    n: &Node,
) -> Result<Option<Option<String>>, Box<EvalAltResult>> {
    match f.call_within_context::<Dynamic>(ctx, (Dynamic::from(n.clone()),)) {
        Ok(v) if v.is_unit() || v.as_bool() == Ok(true) => Ok(None),
        Ok(v) if v.as_bool() == Ok(false) => Ok(Some(None)),
        Ok(v) => Ok(Some(Some(format!(
            "returned {v} ({}); return true to go on or false to stop the roll",
            v.type_name()
        )))),
        Err(e) if fatal(&e) => Err(e),
        Err(e) => Ok(Some(Some(first_line(*e)))),
    }
}

fn log(ctx: &NativeCallContext, line: String) -> Result<(), Box<EvalAltResult>> {
    ctx.call_native_fn::<Dynamic>("log", (Dynamic::from(line),))
        .map(|_| ())
}

/// The health check through `via` after a turn: `None` when it passed.
fn check(
    ctx: &NativeCallContext,
    via: &Node,
    opts: &Map,
) -> Result<Option<String>, Box<EvalAltResult>> {
    let checks = match ctx.call_native_fn::<Array>(
        "health",
        (Dynamic::from(via.clone()), Dynamic::from(opts.clone())),
    ) {
        Ok(c) => c,
        Err(e) if fatal(&e) => return Err(e),
        Err(e) => return Ok(Some(first_line(*e))),
    };
    let Some(last) = checks.last().and_then(|c| c.clone().try_cast::<Map>()) else {
        return Ok(None);
    };
    if last.get("ok").and_then(|v| v.as_bool().ok()) != Some(false) {
        return Ok(None);
    }
    let text = |k: &str| last.get(k).map(|v| v.to_string()).unwrap_or_default();
    let error = text("error");
    let error = error.lines().next().unwrap_or("").to_string();
    Ok(Some(format!(
        "{error} (waiting for {}: {})",
        text("check"),
        text("state").lines().next().unwrap_or("")
    )))
}

/// The node a workers-only roll checks the cluster from: the first worker's endpoint (as
/// `talosctl health` runs on the endpoint when no node is named), when it has one of its own.
fn through_endpoint(ctx: &NativeCallContext, w: &Node) -> Result<Node, Box<EvalAltResult>> {
    let ep = w.endpoint();
    let host = crate::talos::client::host(&ep);
    if ep.is_empty() || host == w.name {
        return Err(to_rhai(hinted(
            "rolling: no control plane among the nodes to run the cluster health check on",
            "name one: #{health: #{via: node(CONTROL_PLANE)}}, reach the workers through a control plane endpoint (-e), or pass #{health: false}",
        )));
    }
    let mut o = Map::new();
    o.insert("endpoint".into(), ep.into());
    ctx.call_native_fn::<Node>("node", (Dynamic::from(host), o))
}

fn rolling(
    ctx: &NativeCallContext,
    items: Array,
    f: &FnPtr,
    opts: &Map,
) -> Result<Array, Box<EvalAltResult>> {
    let o = RollingOpts::read(opts).map_err(to_rhai)?;
    let health = Health::read(&o.health).map_err(to_rhai)?;
    let mut cps = Vec::new();
    let mut workers = Vec::new();
    let mut first_cp = None;
    for (i, it) in items.iter().enumerate() {
        let Some(n) = it.clone().try_cast::<Node>() else {
            return Err(to_rhai(hinted(
                format!(
                    "rolling: item {i} is {} ({}), not a node",
                    it,
                    it.type_name()
                ),
                "give node handles: talos::targets(...) or node(ADDR)",
            )));
        };
        let r = role(&n).map_err(to_rhai)?;
        if r == Role::ControlPlane && first_cp.is_none() {
            first_cp = Some(n.clone());
        }
        if let Some(s) = &o.skip.0 {
            let v = s.call_within_context::<Dynamic>(ctx, (Dynamic::from(n.clone()),))?;
            match v.as_bool() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(_) => {
                    return Err(to_rhai(hinted(
                        format!(
                            "rolling: skip({}) returned {v} ({}), not true or false",
                            n.name,
                            v.type_name()
                        ),
                        "return true to leave the node out of the roll, false to roll it",
                    )))
                }
            }
        }
        match r {
            Role::ControlPlane => cps.push(n),
            Role::Worker => workers.push(n),
        }
    }
    let via = match &health {
        Health::Off => None,
        Health::On { via: Some(v), .. } => Some(v.clone()),
        Health::On { via: None, .. } => match first_cp {
            Some(cp) => Some(cp),
            None if workers.is_empty() => None,
            None => Some(through_endpoint(ctx, &workers[0])?),
        },
    };
    let mut batches: Vec<(Role, Vec<Node>)> = cps
        .into_iter()
        .map(|n| (Role::ControlPlane, vec![n]))
        .collect();
    let asked = o.max_parallel.unwrap_or(AtOnce::Count(1));
    let Some(at_once) = asked.of(workers.len()) else {
        return Err(to_rhai(hinted(
            format!("rolling: max_parallel {asked} is not a number of workers at once"),
            format!("give 1 or more (at most {MAX_AT_ONCE}) or a percentage from 1% to 100%, or leave it out for one at a time"),
        )));
    };
    for chunk in workers.chunks(at_once) {
        batches.push((Role::Worker, chunk.to_vec()));
    }
    // Ctrl-C (or SIGTERM) during the roll stops it as a failure does, saying where it was.
    interrupt::install();
    interrupt::install_term();
    let _running = interrupt::running();
    let mut t = Tally::default();
    let mut results = Array::new();
    match turns(
        ctx,
        f,
        &o,
        &health,
        via.as_ref(),
        &batches,
        &mut t,
        &mut results,
    ) {
        Err(_) if interrupt::pending() => {
            interrupt::absorb();
            Err(stopped(Stop::Interrupted, &t))
        }
        Err(e) => Err(e),
        Ok(()) => Ok(results),
    }
}

/// The roll's turns, batch by batch; `t` says where it is when one stops it.
#[allow(clippy::too_many_arguments)]
fn turns(
    ctx: &NativeCallContext,
    f: &FnPtr,
    o: &RollingOpts,
    health: &Health,
    via: Option<&Node>,
    batches: &[(Role, Vec<Node>)],
    t: &mut Tally,
    results: &mut Array,
) -> Result<(), Box<EvalAltResult>> {
    let rest = |t: &mut Tally, from: usize| {
        t.not_started = batches[from..]
            .iter()
            .flat_map(|(_, b)| b.iter().map(|n| n.name.clone()))
            .collect();
    };
    rest(t, 0);
    for (i, (role, batch)) in batches.iter().enumerate() {
        let names: Vec<String> = batch.iter().map(|n| n.name.clone()).collect();
        if interrupt::pending() {
            return Err(to_rhai(interrupt::Interrupted { at: None }.into()));
        }
        let what = match (role, batch.len()) {
            (Role::ControlPlane, _) => "control plane",
            (Role::Worker, 1) => "worker",
            (Role::Worker, _) => "workers",
        };
        log(ctx, format!("rolling: {what} {}", names.join(", ")))?;
        if let Some(b) = &o.before.0 {
            for n in batch {
                if let Some(error) = ask(ctx, b, n)? {
                    rest(t, i);
                    let node = n.name.clone();
                    return Err(stopped(
                        Stop::Hook {
                            which: "before",
                            node,
                            error,
                        },
                        t,
                    ));
                }
            }
        }
        let mut popts = Map::new();
        popts.insert("limit".into(), (batch.len() as i64).into());
        let items: Array = batch.iter().cloned().map(Dynamic::from).collect();
        rest(t, i + 1);
        t.interrupted = names.clone();
        let out =
            ctx.call_native_fn::<Array>("parallel", (items, Dynamic::from(f.clone()), popts))?;
        t.interrupted.clear();
        let mut first = None;
        for (n, r) in batch.iter().zip(out) {
            let err = ctx.call_native_fn::<bool>("is_error", (r.clone(),))?;
            let message = r
                .read_lock::<ItemError>()
                .map(|e| (e.message.clone(), e.node == n.name));
            match (err, message) {
                (true, m) => {
                    let (m, named) = m.unwrap_or_else(|| (r.to_string(), false));
                    let m = m.lines().next().unwrap_or("");
                    // A node failure names its node already (`node X: ...`).
                    first.get_or_insert(if named {
                        m.to_string()
                    } else {
                        format!("{} failed: {m}", n.name)
                    });
                    t.failed.push(n.name.clone());
                }
                (false, _) => {
                    t.done.push(n.name.clone());
                    let mut m = Map::new();
                    m.insert("node".into(), n.name.clone().into());
                    m.insert("role".into(), role.name().into());
                    m.insert("result".into(), r);
                    results.push(m.into());
                }
            }
        }
        if let Some(first) = first {
            return Err(stopped(Stop::Failed(first), t));
        }
        if let Some(a) = &o.after.0 {
            for n in batch {
                if let Some(error) = ask(ctx, a, n)? {
                    let node = n.name.clone();
                    return Err(stopped(
                        Stop::Hook {
                            which: "after",
                            node,
                            error,
                        },
                        t,
                    ));
                }
            }
        }
        if let (Some(v), Health::On { opts, .. }) = (via, health) {
            // Said before the wait, so a person (or a test) knows what the roll waits for.
            log(
                ctx,
                format!(
                    "rolling: checking the cluster's health after {}",
                    names.join(", ")
                ),
            )?;
            if let Some(error) = check(ctx, v, opts)? {
                let after = names.join(", ");
                return Err(stopped(Stop::Health { after, error }, t));
            }
            log(
                ctx,
                format!("rolling: cluster healthy after {}", names.join(", ")),
            )?;
        }
    }
    Ok(())
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("rolling")
        .with_comments(["/// A rolling operation: `f(n)` on the control planes one at a time, then on the workers `max_parallel` at a time (default 1), each batch through `parallel()`; after each the cluster health check (`n.health`, as `talm health`) must pass before the next. `opts`: max_parallel, health (true (default), false, or a map of n.health's options plus `via`, the node to check from: default the first control plane, else the workers' endpoint), before / after (closures called with each node; false or an error stops the roll), skip (a closure: true leaves a node out, e.g. one already done; a skipped control plane still runs the check). A node's role is its machine type. The first failure (f failing, a veto, the health check) stops the roll with an error naming the nodes done, failed and not started. Returns #{node, role, result} per node, in roll order."])
        .register_into_engine(
            engine,
            |ctx: NativeCallContext, nodes: Array, f: FnPtr, opts: Map| {
                rolling(&ctx, nodes, &f, &opts)
            },
        );
    FuncRegistration::new("rolling")
        .with_comments([
            "/// `rolling(nodes, f)`: one node at a time, the health check after each.",
        ])
        .register_into_engine(engine, |ctx: NativeCallContext, nodes: Array, f: FnPtr| {
            rolling(&ctx, nodes, &f, &Map::new())
        });
}

#[cfg(test)]
mod tests {
    use super::AtOnce;

    #[test]
    fn workers_at_once_are_a_count_or_a_share_rounded_up() {
        assert_eq!(AtOnce::parse("3"), Some(AtOnce::Count(3)));
        assert_eq!(AtOnce::parse("25%"), Some(AtOnce::Percent(25)));
        assert_eq!(AtOnce::parse("x"), None);
        assert_eq!(AtOnce::Percent(25).of(10), Some(3));
        assert_eq!(AtOnce::Percent(1).of(3), Some(1));
        assert_eq!(AtOnce::Percent(100).of(200), Some(32), "at most 32 at once");
        assert_eq!(AtOnce::Count(2).of(10), Some(2));
        assert_eq!(AtOnce::Count(0).of(10), None);
        assert_eq!(AtOnce::Percent(150).of(10), None);
    }
}
