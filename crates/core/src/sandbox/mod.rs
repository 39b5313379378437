//! The sandboxed Rhai engine: the embedded stdlib, pure helpers and `fail`/`warn`, nothing that
//! touches files or nodes. Preset logic runs here; the runtime builds its engine on top of it.
//! Also the bridge between Rust errors and Rhai errors, so messages and hints survive scripts.
//! Every engine runs bounded (`limits`), stops on Ctrl-C (`interrupt`) and fails on a missing
//! map property instead of reading `()`.

pub(crate) mod compiled;
pub mod guard;
pub mod interrupt;
pub mod ip;
pub mod limits;
mod stdlib;
pub mod text;
pub mod tpl;
mod watchdog;
mod yaml;

pub use compiled::Upcoming;
pub use stdlib::{help as help_stdlib, prewarm as prewarm_stdlib};

pub use limits::{Limits, Profile};
pub use talm_base::caches::lanes::{self, Lane};

use std::cell::Cell;

use anyhow::Result;
use rhai::{Dynamic, Engine, EvalAltResult, FuncRegistration, Position, Scope, AST};

use talm_base::error::Hinted;

/// The payload of a runtime error raised by a native function or `fail()`: the message with
/// its hints, and the node failure it was, if it was one (scripts ask `error_kind(e)` and
/// `error_node(e)`).
#[derive(Debug, Clone)]
pub struct ScriptError(pub Hinted, pub Option<NodeFailure>);

/// What a node failure carries through a script: its kind, and the node its message names.
#[derive(Debug, Clone)]
pub struct NodeFailure {
    pub kind: talm_base::error::node::Kind,
    /// Empty when the message names no node.
    pub node: String,
    /// How talosctl's Go client words it, when known.
    pub go: Option<talm_base::error::node::Go>,
}

/// What `on_progress` hands Rhai to stop a script on Ctrl-C.
const INTERRUPT_TOKEN: &str = "interrupted";
/// The token a script stops with when stdout was closed by its reader.
const CLOSED_TOKEN: &str = "stdout closed";
/// The token a script stops with when its failure was already shown (talosctl's `ERROR:`
/// lines): the command ends, exit 1, nothing more said.
const SHOWN_TOKEN: &str = "failure shown";
/// Operations between two looks at talm's memory (a look costs a read of /proc).
const MEMORY_CHECK_EVERY: u64 = 1 << 16;

fn terminated() -> Box<EvalAltResult> {
    Box::new(EvalAltResult::ErrorTerminated(
        INTERRUPT_TOKEN.into(),
        Position::NONE,
    ))
}

/// Turns any error into a Rhai runtime error that keeps its message and hints (an interruption
/// stays one, so it ends the script however deep it happened).
pub fn to_rhai(err: anyhow::Error) -> Box<EvalAltResult> {
    if interrupt::is_interrupted(&err) {
        return terminated();
    }
    if talm_base::output::is_closed(&err) {
        return Box::new(EvalAltResult::ErrorTerminated(
            CLOSED_TOKEN.into(),
            Position::NONE,
        ));
    }
    if err.chain().any(|c| c.is::<talm_base::error::Shown>()) {
        return Box::new(EvalAltResult::ErrorTerminated(
            SHOWN_TOKEN.into(),
            Position::NONE,
        ));
    }
    let failure = talm_base::error::node::kind(&err).map(|kind| NodeFailure {
        kind,
        node: talm_base::error::node::named_node(&err).unwrap_or_default(),
        go: talm_base::error::node::go(&err),
    });
    let mut hints = Vec::new();
    for cause in err.chain() {
        hints.extend(talm_base::error::hints_of(cause).iter().cloned());
    }
    let message = err
        .chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ");
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(Hinted { message, hints }, failure)),
        Position::NONE,
    ))
}

/// Shorthand for natives: run a fallible body and convert its error.
pub fn native<T>(f: impl FnOnce() -> Result<T>) -> Result<T, Box<EvalAltResult>> {
    f().map_err(to_rhai)
}

fn fail(message: &str, hints: Vec<String>) -> Result<(), Box<EvalAltResult>> {
    Err(Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(
            Hinted {
                message: message.to_string(),
                hints,
            },
            None,
        )),
        Position::NONE,
    )))
}

/// [`interrupt::sleep`] for natives: a Ctrl-C while sleeping stops the script.
pub fn sleep(d: std::time::Duration) -> Result<(), Box<EvalAltResult>> {
    interrupt::sleep(d).map_err(|_| terminated())
}

thread_local! {
    /// talm's resident memory (KiB) when this thread's current [`eval_ast`] run started.
    static RUN_BASE: Cell<Option<u64>> = const { Cell::new(None) };
}

/// Settings every talm engine shares: the profile's limits, Ctrl-C checked between
/// operations, and a missing map property being an error (`m.get("k")` reads optional keys).
pub fn configure(engine: &mut Engine, limits: &Limits) {
    limits.apply(engine);
    // Scripts are compiled without Rhai's optimiser: it took a fifth of every compile and bought
    // nothing at run time (figures in docs/performance.md).
    engine.set_optimization_level(rhai::OptimizationLevel::None);
    engine.set_fail_on_invalid_map_property(true);
    let max_kib = limits.max_memory_mib.map(|m| m * 1024);
    let built = guard::resident_kib().unwrap_or(0);
    engine.on_progress(move |count| {
        if interrupt::pending() {
            return Some(INTERRUPT_TOKEN.into());
        }
        // Growth is measured from the start of the run when the run says so ([`eval_ast`]:
        // an engine compiled once serves a long-lived process), else from the engine's build.
        let base = RUN_BASE.with(Cell::get).unwrap_or(built);
        let over = |max| guard::resident_kib().is_some_and(|k| k.saturating_sub(base) > max);
        match max_kib {
            Some(max) if count % MEMORY_CHECK_EVERY == 0 && over(max) => {
                Some(limits::MEMORY_TOKEN.into())
            }
            _ => None,
        }
    });
}

thread_local! {
    static SAID: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

fn said() {
    SAID.with(|n| n.set(n.get() + 1));
}

/// How many lines scripts on this thread have printed (`print`, `warn`) so far: a caller that
/// keeps what a script computed compares it before and after, and keeps nothing that printed.
pub fn lines_said() -> u64 {
    SAID.with(|n| n.get())
}

/// The sandbox under `limits`: stdlib modules, the `ip::`, `text::`, `yaml::` and `json::`
/// helpers, `fail`, `warn`.
pub fn engine(limits: &Limits) -> Engine {
    engine_on(limits, Lane::FIRST)
}

/// [`engine`] with the stdlib modules of `lane`.
pub fn engine_on(limits: &Limits, lane: Lane) -> Engine {
    let mut engine = Engine::new_raw();
    // What `Engine::new` sets up, with its standard package built once per process (building
    // it took a fifth of an engine's making, and a playbook makes engines per node) and
    // without Rhai's string interner: one engine serves many threads (the preset logic of a
    // fleet's renders, `parallel` items), and a thread that finds the interner's lock taken
    // sleeps 10 ms (Rhai's `locked_write`), which made two threads render slower than one.
    engine.set_max_strings_interned(0);
    engine.on_print(|s| {
        said();
        println!("{s}")
    });
    engine.register_global_module(standard_package());
    configure(&mut engine, limits);
    FuncRegistration::new("warn")
        .with_comments(["/// Prints `WARN: <msg>` on stderr."])
        .register_into_engine(&mut engine, |msg: &str| {
            said();
            talm_base::output::err(&format!("WARN: {}", talm_base::mask::scrub(msg)))
        });
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message."])
        .register_into_engine(&mut engine, |msg: &str| fail(msg, Vec::new()));
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message and a hint."])
        .register_into_engine(&mut engine, |msg: &str, hint: &str| {
            fail(msg, vec![hint.to_string()])
        });
    FuncRegistration::new("fail_with_code")
        .with_comments(["/// Stops the script with an error message; talm then exits with `code` (a command's own exit status, such as a debug container's), not 1. No `try` catches it."])
        .register_into_engine(&mut engine, |code: i64, msg: &str| -> Result<(), Box<EvalAltResult>> {
            let exit = talm_base::error::Exit {
                code: i32::try_from(code).unwrap_or(1),
                message: msg.to_string(),
            };
            Err(Box::new(EvalAltResult::ErrorTerminated(
                Dynamic::from(exit),
                Position::NONE,
            )))
        });
    FuncRegistration::new("address_problem")
        .with_comments(["/// \"\" when `addr` is an IP address or DNS name with an optional port, else what is wrong with it."])
        .register_into_engine(&mut engine, |addr: &str| {
            talm_base::address::check(addr)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        });
    engine.register_type_with_name::<ScriptError>("Error");
    engine.register_fn("to_string", |e: &mut ScriptError| e.0.message.clone());
    FuncRegistration::new("error_kind")
        .with_comments(["/// What kind of node failure a caught error was: refused, unreachable, timeout, in-maintenance, not-maintenance, foreign-ca, wrong-name, bad-server-cert, fingerprint-mismatch, client-cert-rejected, handshake, not-talos, cut, denied, maintenance-unimplemented, status; \"\" for other errors."])
        .register_into_engine(&mut engine, |e: ScriptError| {
            e.1.map(|f| f.kind.name()).unwrap_or_default().to_string()
        });
    FuncRegistration::new("error_node")
        .with_comments(["/// The node a caught node failure names in its message (`node X: ...`), \"\" for other errors: a report about that node then does not name it again."])
        .register_into_engine(&mut engine, |e: Dynamic| {
            e.try_cast::<ScriptError>()
                .and_then(|e| e.1)
                .map(|f| f.node)
                .unwrap_or_default()
        });
    tpl::register(&mut engine);
    ip::register(&mut engine);
    text::register(&mut engine);
    yaml::register(&mut engine);
    engine.set_module_resolver(stdlib::resolver(lane));
    engine
}

/// Listed in [`talm_base::caches::KEPT`].
static PACKAGE: std::sync::OnceLock<rhai::Shared<rhai::Module>> = std::sync::OnceLock::new();

/// Builds Rhai's standard package on a thread of its own (a thousand functions registered:
/// about a millisecond), for a command that builds its engine after other work.
pub fn prewarm_package() {
    if PACKAGE.get().is_some() {
        return;
    }
    let _ = talm_base::ahead::spawn(std::thread::Builder::new().name("package".into()), || {
        drop(standard_package())
    });
}

/// Rhai's standard package (core, strings, maths, arrays, maps, time...), shared by every
/// engine, lanes included: a copy per lane cost memory for a gain lost in the noise of the
/// render bench (docs/performance.md).
fn standard_package() -> rhai::Shared<rhai::Module> {
    use rhai::packages::{Package, StandardPackage};
    PACKAGE
        .get_or_init(|| StandardPackage::new().as_shared_module())
        .clone()
}

/// Compiles and runs script text with `args` bound to the constant `ARGS`; errors carry the
/// script name, line and column, and a limit error names the limit of `limits`.
pub fn run(
    engine: &Engine,
    limits: &Limits,
    name: &str,
    source: &str,
    args: rhai::Map,
) -> Result<Dynamic> {
    let ast =
        compiled::compile(engine, limits, name, source).map_err(|e| syntax_error(name, &e))?;
    eval_ast(engine, limits, name, &ast, args)
}

/// Compiles script text; a syntax error names the script, line and column.
pub fn compile(engine: &Engine, name: &str, source: &str) -> Result<AST> {
    let mut ast = engine.compile(source).map_err(|e| syntax_error(name, &e))?;
    ast.set_source(name);
    Ok(ast)
}

pub(crate) fn syntax_error(name: &str, e: &rhai::ParseError) -> anyhow::Error {
    talm_base::error::hinted(
        format!(
            "{name}:{}: syntax error: {}",
            pos(e.position()),
            e.err_type()
        ),
        format!("fix the script {name} at the position shown"),
    )
}

/// Runs a compiled script with `args` bound to the constant `ARGS`; the memory limit counts
/// from the start of this run. Errors as [`run`]'s.
pub fn eval_ast(
    engine: &Engine,
    limits: &Limits,
    name: &str,
    ast: &AST,
    args: rhai::Map,
) -> Result<Dynamic> {
    struct Restore(Option<u64>);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUN_BASE.with(|b| b.set(self.0));
        }
    }
    let base = limits.max_memory_mib.and(guard::resident_kib_base());
    let _restore = Restore(RUN_BASE.with(|b| b.replace(base.or(b.get()))));
    let mut scope = Scope::new();
    scope.push_constant("ARGS", args);
    engine
        .eval_ast_with_scope::<Dynamic>(&mut scope, ast)
        .map_err(|e| from_rhai_within(*e, name, limits))
}

fn pos(p: Position) -> String {
    match (p.line(), p.position()) {
        (Some(l), Some(c)) => format!("{l}:{c}"),
        (Some(l), None) => format!("{l}"),
        _ => "?".into(),
    }
}

/// Unwraps a Rhai error back into the user-facing error: natives' and `fail()`'s messages pass
/// through as they were; anything else is a script fault shown with file, line and column.
pub fn from_rhai(err: EvalAltResult, script: &str) -> anyhow::Error {
    convert(err, script, None)
}

/// [`from_rhai`] for a script that ran under `limits`: a limit error names the limit.
pub fn from_rhai_within(err: EvalAltResult, script: &str, limits: &Limits) -> anyhow::Error {
    convert(err, script, Some(limits))
}

fn convert(err: EvalAltResult, script: &str, limits: Option<&Limits>) -> anyhow::Error {
    match err {
        EvalAltResult::ErrorRuntime(ref d, _) if d.is::<ScriptError>() => {
            let ScriptError(h, failure) = d.clone().cast::<ScriptError>();
            match failure {
                // A node failure stays one through the script, kind and all.
                Some(NodeFailure { kind, node, go }) => talm_base::error::node::NodeError {
                    kind,
                    node,
                    said: h.message.clone(),
                    message: h.message,
                    hints: h.hints,
                    go,
                }
                .into(),
                None => h.into(),
            }
        }
        EvalAltResult::ErrorInFunctionCall(_, ref src, inner, _)
        | EvalAltResult::ErrorInModule(ref src, inner, _)
            if is_passthrough(&inner) =>
        {
            convert(*inner, if src.is_empty() { script } else { src }, limits)
        }
        EvalAltResult::ErrorInFunctionCall(_, src, inner, _) => {
            let src = if src.is_empty() {
                script.to_string()
            } else {
                src
            };
            convert(*inner, &src, limits)
        }
        EvalAltResult::ErrorTerminated(ref token, p)
            if token.clone().into_string().ok().as_deref() == Some(INTERRUPT_TOKEN) =>
        {
            interrupt::Interrupted {
                at: Some(format!("{script}:{}", pos(p))),
            }
            .into()
        }
        EvalAltResult::ErrorTerminated(ref token, _) if token.is::<talm_base::error::Exit>() => {
            token.clone().cast::<talm_base::error::Exit>().into()
        }
        EvalAltResult::ErrorTerminated(ref token, _)
            if token.clone().into_string().ok().as_deref() == Some(CLOSED_TOKEN) =>
        {
            talm_base::output::Closed.into()
        }
        EvalAltResult::ErrorTerminated(ref token, _)
            if token.clone().into_string().ok().as_deref() == Some(SHOWN_TOKEN) =>
        {
            talm_base::error::Shown.into()
        }
        mut other => {
            let p = other.position();
            let at = format!("{script}:{}", pos(p));
            if let Some(h) = limits.and_then(|l| l.explain(&other, &at)) {
                return h.into();
            }
            let mut hints = vec![format!("the script {script} failed at the position shown")];
            if let EvalAltResult::ErrorPropertyNotFound(key, _) = &other {
                hints.push(format!(
                    "a map has no {key:?}: read an optional key with `m.get(\"{key}\")` (or test `\"{key}\" in m`)"
                ));
            }
            other.clear_position();
            Hinted {
                message: format!("{at}: {other}"),
                hints,
            }
            .into()
        }
    }
}

fn is_passthrough(err: &EvalAltResult) -> bool {
    match err {
        EvalAltResult::ErrorRuntime(d, _) => d.is::<ScriptError>(),
        EvalAltResult::ErrorTerminated(t, _) => t.is::<talm_base::error::Exit>(),
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) => is_passthrough(inner),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_compile_without_the_optimiser() {
        // A fifth of every compile (a one-shot command compiles its project's preset logic and
        // the stdlib) for no gain at run time.
        for limits in [&Limits::TEMPLATE, &Limits::PLAYBOOK] {
            let engine = engine(limits);
            assert_eq!(engine.optimization_level(), rhai::OptimizationLevel::None);
            // Constant expressions still evaluate as written.
            assert_eq!(
                engine
                    .eval::<i64>("const K = 2; let x = K * 3 + 1; x")
                    .unwrap(),
                7
            );
        }
    }

    #[test]
    fn engines_shared_by_threads_intern_no_strings() {
        // Rhai's interner is one lock per engine, and a thread that finds it taken sleeps 10 ms:
        // engines serving many threads (preset logic, `parallel`) must not have one.
        for limits in [&Limits::TEMPLATE, &Limits::PLAYBOOK] {
            let engine = engine(limits);
            assert_eq!(engine.max_strings_interned(), 0);
        }
        // Strings still work across threads on one engine.
        let engine = engine(&Limits::TEMPLATE);
        let ast = engine.compile("let s = `${ARGS.n}-x`; s + s").unwrap();
        std::thread::scope(|sc| {
            for n in 0..2i64 {
                let (engine, ast) = (&engine, &ast);
                sc.spawn(move || {
                    let mut args = rhai::Map::new();
                    args.insert("n".into(), n.into());
                    let out = eval_ast(engine, &Limits::TEMPLATE, "t", ast, args).unwrap();
                    assert_eq!(out.into_string().unwrap(), format!("{n}-x{n}-x"));
                });
            }
        });
    }
}
