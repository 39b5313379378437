//! `parallel(items, fn, limit)`: runs a script closure over items on a bounded pool of threads
//! (node operations overlap their network waits), keeping results in input order. The calling
//! thread works too, and extra worker threads come from a process-wide budget and are kept
//! between calls (`crate::runtime::fleet::workers`), so nested `parallel` calls never multiply threads without
//! bound and a pool that cannot grow still finishes. An item's error becomes its result
//! (`is_error(r)`, `r.message`) unless `fail_fast` is asked for; Ctrl-C and a script limit stop
//! the whole call. Each item is the current item of the thread working on it
//! (`crate::progress`): on a terminal it has a line with its stage on stderr (unless the call
//! is `quiet`: a script showing its own), and when the call runs several items, every line it
//! prints carries its node.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rhai::{
    Array, Dynamic, Engine, EvalAltResult, FnPtr, FuncRegistration, Map, NativeCallContext,
};

use crate::error::hinted;
use crate::progress::{Group, Label};
use crate::runtime::fleet::workers::Workers;
use talm_base::duration::{self, Zero};

/// Items one `parallel` call runs at once, at most (and without a `limit`).
pub const MAX_AT_ONCE: usize = 32;
/// Worker threads all `parallel` calls of the process may hold together: the pool's threads,
/// one call's extra threads (the pool starts them all at once, so no more than one call needs);
/// a nested call gets what its outer calls leave, and runs on its calling thread without.
const THREAD_BUDGET: usize = MAX_AT_ONCE - 1;
/// Stack of a worker thread: as deep as a script on the main thread may go (16 MiB), with a
/// render's own stack below it, so renders run on the worker itself (`guard::roomy_stack`).
/// Only the pages a thread touches take memory.
const WORKER_STACK: usize = (16 << 20) + crate::sandbox::guard::STACK;

static LIVE_WORKERS: AtomicUsize = AtomicUsize::new(0);

/// The process's workers, as many as the budget.
static WORKERS: Workers = Workers::new(THREAD_BUDGET, WORKER_STACK);

crate::runtime::opts::options! {
    /// `parallel(items, f, #{limit, fail_fast, quiet})`.
    pub struct ParallelOpts for "parallel" {
        /// Items at once (1 or more; at most 32).
        limit: Option<i64>,
        /// Stop at the first failing item and raise its error.
        fail_fast: bool,
        /// No progress lines on the terminal (the script shows its own).
        quiet: bool,
        /// After an item fails no new item starts (the ones started finish); an item not
        /// started is `()` among the results, and its progress line says `not started`.
        stop_after_failure: bool,
    }
}

/// Takes up to `want` threads from the process budget; returns how many it got.
fn reserve(want: usize) -> usize {
    let mut got = 0;
    let _ = LIVE_WORKERS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |live| {
        got = want.min(THREAD_BUDGET.saturating_sub(live));
        Some(live + got)
    });
    got
}

fn release(n: usize) {
    LIVE_WORKERS.fetch_sub(n, Ordering::SeqCst);
}

/// A failed item's result: `r.message`, `r.item`, `r.report`, `r.is_error` (true). Copies
/// share whether the script has checked it with `is_error(r)`.
#[derive(Clone)]
pub struct ItemError {
    pub item: Dynamic,
    pub message: String,
    /// The node `message` names (a node failure's `node X: ...`), "" when none.
    pub node: String,
    label: String,
    checked: Arc<AtomicBool>,
}

impl ItemError {
    fn new(item: &Dynamic, message: String, node: String) -> ItemError {
        ItemError {
            item: item.clone(),
            label: label(item),
            message,
            node,
            checked: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The failure said about its item, the item named once: `ITEM: message`, or the message
    /// alone when it names the item's node itself.
    pub fn report(&self) -> String {
        crate::talos::errors::about(&self.label, Some(&self.node), &self.message)
    }

    fn shown(&self) -> String {
        format!("error({}): {}", self.label, self.message)
    }
}

/// The item errors `parallel` returned during one script run. When the script ends without an
/// error of its own, each of them must have been passed to `is_error` (any copy of it): the
/// ones that were not make the run fail, named with their messages, so a playbook that ignores
/// failed items does not end as if they had worked.
#[derive(Clone, Default)]
pub struct Unchecked(Arc<Mutex<Vec<ItemError>>>);

impl Unchecked {
    fn add(&self, e: &ItemError) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.clone());
    }

    /// An error naming every item error the script `name` never checked.
    pub fn check(&self, name: &str) -> anyhow::Result<()> {
        let all = std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()));
        let missed: Vec<&ItemError> = all
            .iter()
            .filter(|e| !e.checked.load(Ordering::SeqCst))
            .collect();
        if missed.is_empty() {
            return Ok(());
        }
        let (n, them) = match missed.len() {
            1 => ("1 item".to_string(), "it"),
            k => (format!("{k} items"), "them"),
        };
        let mut msg = format!(
            "{name}: parallel(): {n} failed and the script did not check {them} with is_error():"
        );
        for e in &missed {
            let report = e.report();
            let first = report.lines().next().unwrap_or("");
            msg.push_str(&format!("\n  {first}"));
        }
        Err(hinted(
            msg,
            "look at each result with `if is_error(r) { ... r.message ... }`, or pass #{ fail_fast: true } to stop at the first failure",
        ))
    }
}

fn label(item: &Dynamic) -> String {
    if let Some(n) = item.clone().try_cast::<crate::runtime::node::Node>() {
        return n.name;
    }
    item.to_string()
}

/// Node files larger than this are not read for their modeline's nodes.
const NODE_FILE_MAX: u64 = 1 << 20;

/// The name an item's lines and progress line carry (the rule is in `crate::progress`): a node
/// handle's name, a string itself or, when it is a node file, its modeline's nodes, a map's
/// `node`; anything else (a YAML file that is no node file here too) is pending until its work
/// dials a node.
fn progress_label(item: &Dynamic, index: usize) -> Label {
    if let Some(n) = item.read_lock::<crate::runtime::node::Node>() {
        return Label::Node(n.name.clone());
    }
    if let Some(s) = item.read_lock::<rhai::ImmutableString>() {
        let text = s.as_str();
        if let Some(nodes) = node_file_nodes(text) {
            return Label::Node(nodes);
        }
        // A file that is no node file here (none, or not found from this folder): the node
        // its work dials names it.
        if text.ends_with(".yaml") || text.ends_with(".yml") {
            return Label::Pending(text.to_string());
        }
        if !text.is_empty() && text.len() <= 253 && !text.contains(char::is_whitespace) {
            return Label::Node(text.to_string());
        }
        return Label::Pending(format!("#{}", index + 1));
    }
    if let Some(m) = item.read_lock::<Map>() {
        if let Some(node) = m.get("node") {
            if let l @ Label::Node(_) = progress_label(node, index) {
                return l;
            }
        }
        return Label::Pending(format!("#{}", index + 1));
    }
    if item.is_int() || item.is_float() || item.is_bool() || item.is_char() {
        return Label::Pending(item.to_string());
    }
    Label::Pending(format!("#{}", index + 1))
}

/// The nodes of a node file's modeline (`a` or `a,b`), when `path` names one.
fn node_file_nodes(path: &str) -> Option<String> {
    let p = std::path::Path::new(path);
    let meta = std::fs::metadata(p).ok()?;
    if !meta.is_file() || meta.len() > NODE_FILE_MAX {
        return None;
    }
    let text = std::fs::read_to_string(p).ok()?;
    let modeline = crate::project::modeline::peek(&text)?;
    (!modeline.nodes.is_empty()).then(|| modeline.nodes.join(","))
}

/// Whether an item's error must end the whole call: Ctrl-C or a script limit.
fn stops_everything(err: &EvalAltResult) -> bool {
    match err {
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) => stops_everything(inner),
        EvalAltResult::ErrorTerminated(..)
        | EvalAltResult::ErrorTooManyOperations(_)
        | EvalAltResult::ErrorStackOverflow(_)
        | EvalAltResult::ErrorDataTooLarge(..) => true,
        _ => false,
    }
}

/// The work shared by the calling thread and the workers.
struct Work<'a> {
    ctx: &'a NativeCallContext<'a>,
    items: &'a Array,
    f: &'a FnPtr,
    fail_fast: bool,
    stop_after_failure: bool,
    results: Vec<Mutex<Option<Dynamic>>>,
    group: Group,
    next: AtomicUsize,
    stop: AtomicBool,
    fatal: Mutex<Option<Box<EvalAltResult>>>,
    first_error: Mutex<Option<anyhow::Error>>,
}

impl Work<'_> {
    fn run_items(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            if i >= self.items.len() || self.stop.load(Ordering::SeqCst) {
                return;
            }
            let working = self.group.start(i);
            let outcome = self
                .f
                .call_within_context::<Dynamic>(self.ctx, (self.items[i].clone(),));
            // The item's last stdout text goes out before its line says how it ended.
            drop(working);
            let value = match outcome {
                Ok(v) => {
                    self.group.finish(i, None);
                    v
                }
                Err(e) if stops_everything(&e) => {
                    self.group.finish(i, Some("stopped"));
                    self.stop.store(true, Ordering::SeqCst);
                    self.fatal
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                    return;
                }
                Err(e) => self.failed(i, *e),
            };
            *self.results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
        }
    }

    fn failed(&self, i: usize, e: EvalAltResult) -> Dynamic {
        let err = crate::sandbox::from_rhai(e, "parallel");
        let node = crate::talos::errors::named_node(&err).unwrap_or_default();
        let msg = crate::error::render(&err);
        let msg = msg.trim_start_matches("Error: ").trim_end().to_string();
        if self.stop_after_failure {
            self.stop.store(true, Ordering::SeqCst);
        }
        self.group.finish(i, Some(&msg));
        if self.fail_fast {
            self.stop.store(true, Ordering::SeqCst);
            self.first_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(err);
        }
        Dynamic::from(ItemError::new(&self.items[i], msg, node))
    }
}

/// How one `parallel` call runs.
struct How {
    limit: Option<i64>,
    fail_fast: bool,
    quiet: bool,
    stop_after_failure: bool,
}

impl How {
    fn limit(limit: Option<i64>) -> How {
        How {
            limit,
            fail_fast: false,
            quiet: false,
            stop_after_failure: false,
        }
    }
}

fn run(
    ctx: &NativeCallContext,
    items: Array,
    f: &FnPtr,
    how: How,
    unchecked: &Unchecked,
) -> Result<Array, Box<EvalAltResult>> {
    let How {
        limit,
        fail_fast,
        quiet,
        stop_after_failure,
    } = how;
    let n = items.len();
    let at_once = match limit {
        None => n.clamp(1, MAX_AT_ONCE),
        Some(l) if l < 1 => {
            return Err(crate::sandbox::to_rhai(hinted(
                format!("parallel: limit {l} is not a number of items at once"),
                format!(
                "give a limit of 1 or more (at most {MAX_AT_ONCE} run at once), or leave it out"
            ),
            )))
        }
        Some(l) => (l as usize).min(MAX_AT_ONCE).min(n.max(1)),
    };
    let labels = items
        .iter()
        .enumerate()
        .map(|(i, it)| progress_label(it, i))
        .collect();
    let work = Work {
        ctx,
        items: &items,
        f,
        fail_fast,
        stop_after_failure,
        results: (0..n).map(|_| Mutex::new(None)).collect(),
        group: Group::new(labels, !quiet),
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        fatal: Mutex::new(None),
        first_error: Mutex::new(None),
    };
    // The calling thread is one of the `at_once`; the others are extra threads.
    let reserved = reserve(at_once - 1);
    let (started, refused) = WORKERS.scope(reserved, &|| work.run_items());
    if let Some(e) = refused {
        eprintln!("WARN: parallel: started {started} extra thread(s) of {reserved} ({e}); the rest of the items run on those");
    }
    release(reserved);
    if let Some(e) = work.fatal.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    if let Some(e) = work
        .first_error
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        return Err(crate::sandbox::to_rhai(e));
    }
    let results: Array = work
        .results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or(Dynamic::UNIT)
        })
        .collect();
    for r in &results {
        if let Some(e) = r.read_lock::<ItemError>() {
            unchecked.add(&e);
        }
    }
    Ok(results)
}

/// Registers `parallel` and `is_error`; the item errors of this engine's runs go to `unchecked`.
pub fn register(engine: &mut Engine, unchecked: &Unchecked) {
    engine.register_type_with_name::<ItemError>("ItemError");
    engine.register_get("message", |e: &mut ItemError| e.message.clone());
    engine.register_get("item", |e: &mut ItemError| e.item.clone());
    engine.register_get("is_error", |_: &mut ItemError| true);
    engine.register_get("report", |e: &mut ItemError| e.report());
    engine.register_indexer_get(|e: &mut ItemError, key: &str| match key {
        "message" => Dynamic::from(e.message.clone()),
        "item" => e.item.clone(),
        "is_error" => Dynamic::from(true),
        "report" => Dynamic::from(e.report()),
        _ => Dynamic::UNIT,
    });
    engine.register_fn("to_string", |e: &mut ItemError| e.shown());
    engine.register_fn("to_debug", |e: &mut ItemError| e.shown());
    FuncRegistration::new("parallel")
        .with_comments(["/// Calls `f(item)` for every item, `limit` at a time (1 or more; at most 32 run at once), and returns the results in input order; a failing item's result is an error value (`is_error(r)`, `r.message`, `r.item`). Every such error must be checked with `is_error` before the script ends, or the script fails naming it. Ctrl-C or a script limit in any item stops the call."])
        .register_into_engine(engine, { let u = unchecked.clone(); move |ctx: NativeCallContext, items: Array, f: FnPtr, limit: i64| {
            run(&ctx, items, &f, How::limit(Some(limit)), &u)
        } });
    FuncRegistration::new("parallel")
        .with_comments(["/// `parallel(items, f)` with no limit: up to 32 items at once."])
        .register_into_engine(engine, {
            let u = unchecked.clone();
            move |ctx: NativeCallContext, items: Array, f: FnPtr| {
                run(&ctx, items, &f, How::limit(None), &u)
            }
        });
    FuncRegistration::new("parallel")
        .with_comments(["/// `parallel(items, f, #{limit, fail_fast, quiet, stop_after_failure})`: with `fail_fast` the first error stops the rest and is raised; with `stop_after_failure` no new item starts after a failure (the started ones finish) and an item not started is `()`; `quiet` draws no progress lines."])
        .register_into_engine(engine, { let u = unchecked.clone(); move |ctx: NativeCallContext, items: Array, f: FnPtr, opts: Map| {
            let o = ParallelOpts::read(&opts).map_err(crate::sandbox::to_rhai)?;
            let how = How { limit: o.limit, fail_fast: o.fail_fast, quiet: o.quiet, stop_after_failure: o.stop_after_failure };
            run(&ctx, items, &f, how, &u)
        } });
    FuncRegistration::new("is_error")
        .with_comments(["/// Whether a `parallel` result is an item's error; checking one this way is what keeps the script from failing over it at its end."])
        .register_into_engine(engine, |v: Dynamic| {
            if let Some(e) = v.read_lock::<ItemError>() {
                e.checked.store(true, Ordering::SeqCst);
                return true;
            }
            v.read_lock::<Map>()
                .and_then(|m| m.get("is_error").and_then(|x| x.as_bool().ok()))
                .unwrap_or(false)
        });
    FuncRegistration::new("parse_duration_seconds")
        .with_comments([
            "/// Seconds in Go duration text (`90s`, `5m`, `1h30m`); an error when it is not one.",
        ])
        .register_into_engine(engine, |text: &str| {
            crate::sandbox::native(|| {
                let d = duration::flag("parse_duration_seconds", text, Zero::Allowed)?;
                // Within Go's range: at most 9223372036 seconds.
                Ok(d.as_secs() as i64)
            })
        });
    FuncRegistration::new("go_duration")
        .with_comments([
            "/// Go duration text as Go's `Duration.String()` prints it (`90s` gives `1m30s`); an error when it is not one.",
        ])
        .register_into_engine(engine, |text: &str| {
            crate::sandbox::native(|| {
                Ok(duration::text(duration::flag("go_duration", text, Zero::Allowed)?))
            })
        });
    FuncRegistration::new("sleep")
        .with_comments(["/// Pauses the script for `seconds` (fractions allowed); Ctrl-C ends the pause and the script."])
        .register_into_engine(engine, |seconds: f64| {
            sleep(seconds.to_string(), duration::from_seconds(seconds))
        });
    FuncRegistration::new("sleep")
        .with_comments([
            "/// Pauses the script for whole `seconds`; Ctrl-C ends the pause and the script.",
        ])
        .register_into_engine(engine, |seconds: i64| {
            sleep(seconds.to_string(), duration::from_seconds(seconds as f64))
        });
}

/// `sleep(seconds)`: a negative, NaN or too long pause is an error, not a panic.
/// Sleeps a checked duration; Ctrl-C ends the pause and the script.
fn sleep(
    given: String,
    d: Result<std::time::Duration, duration::DurationError>,
) -> Result<(), Box<EvalAltResult>> {
    let d = crate::sandbox::native(|| duration::checked("sleep", &given, d, Zero::Allowed))?;
    crate::sandbox::sleep(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(item: Dynamic) -> Label {
        progress_label(&item, 1)
    }

    #[test]
    fn items_are_named_by_the_node_they_stand_for() {
        assert_eq!(named("10.0.0.1".into()), Label::Node("10.0.0.1".into()));
        assert_eq!(named("two words".into()), Label::Pending("#2".into()));
        assert_eq!(named(Dynamic::from(7_i64)), Label::Pending("7".into()));
        let mut m = Map::new();
        m.insert("node".into(), "cp-1".into());
        assert_eq!(named(m.into()), Label::Node("cp-1".into()));
        let mut m = Map::new();
        m.insert("step".into(), "x".into());
        assert_eq!(named(m.into()), Label::Pending("#2".into()));
        assert_eq!(named(Array::new().into()), Label::Pending("#2".into()));
    }

    #[test]
    fn a_node_file_is_named_by_its_modelines_nodes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("node1.yaml");
        std::fs::write(
            &file,
            "# talm: nodes=[\"10.0.0.1\",\"10.0.0.2\"], endpoints=[\"10.0.0.1\"], templates=[\"templates/controlplane.yaml\"]\nmachine: {}\n",
        )
        .unwrap();
        let path = file.display().to_string();
        assert_eq!(
            named(path.as_str().into()),
            Label::Node("10.0.0.1,10.0.0.2".into())
        );
        // A file without a modeline, or one not found, goes by its path until its work dials
        // a node.
        let plain = dir.path().join("plain.yaml");
        std::fs::write(&plain, "machine: {}\n").unwrap();
        let path = plain.display().to_string();
        assert_eq!(named(path.as_str().into()), Label::Pending(path.clone()));
        assert_eq!(
            named("nodes/elsewhere.yaml".into()),
            Label::Pending("nodes/elsewhere.yaml".into())
        );
    }
}
