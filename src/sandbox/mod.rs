//! The sandboxed Rhai engine: the embedded stdlib, pure helpers and `fail`/`warn`, nothing that
//! touches files or nodes. Preset logic runs here; the runtime builds its engine on top of it.
//! Also the bridge between Rust errors and Rhai errors, so messages and hints survive scripts.

pub mod ip;
mod stdlib;
pub mod text;

use anyhow::Result;
use rhai::{Dynamic, Engine, EvalAltResult, FuncRegistration, Position, Scope};

use crate::error::Hinted;

/// The payload of a runtime error raised by a native function or `fail()`.
#[derive(Debug, Clone)]
pub struct ScriptError(pub Hinted);

/// Turns any error into a Rhai runtime error that keeps its message and hints.
pub fn to_rhai(err: anyhow::Error) -> Box<EvalAltResult> {
    let mut hints = Vec::new();
    for cause in err.chain() {
        hints.extend(crate::error::hints_of(cause).iter().cloned());
    }
    let message = err
        .chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ");
    Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(Hinted { message, hints })),
        Position::NONE,
    ))
}

/// Shorthand for natives: run a fallible body and convert its error.
pub fn native<T>(f: impl FnOnce() -> Result<T>) -> Result<T, Box<EvalAltResult>> {
    f().map_err(to_rhai)
}

fn fail(message: &str, hints: Vec<String>) -> Result<(), Box<EvalAltResult>> {
    Err(Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(Hinted {
            message: message.to_string(),
            hints,
        })),
        Position::NONE,
    )))
}

/// The sandbox: stdlib modules, the `ip::` and `text::` helpers, `fail`, `warn`.
pub fn engine() -> Engine {
    let mut engine = Engine::new();
    set_limits(&mut engine);
    FuncRegistration::new("warn")
        .with_comments(["/// Prints `WARN: <msg>` on stderr."])
        .register_into_engine(&mut engine, |msg: &str| {
            eprintln!("WARN: {}", crate::mask::scrub(msg))
        });
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message."])
        .register_into_engine(&mut engine, |msg: &str| fail(msg, Vec::new()));
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message and a hint."])
        .register_into_engine(&mut engine, |msg: &str, hint: &str| {
            fail(msg, vec![hint.to_string()])
        });
    FuncRegistration::new("address_problem")
        .with_comments(["/// \"\" when `addr` is an IP address or DNS name with an optional port, else what is wrong with it."])
        .register_into_engine(&mut engine, |addr: &str| {
            crate::talos::address::check(addr)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        });
    ip::register(&mut engine);
    text::register(&mut engine);
    engine.set_module_resolver(stdlib::resolver());
    engine
}

/// The expression limits every talm engine uses (deep stdlib functions need more than the
/// debug-build defaults).
pub fn set_limits(engine: &mut Engine) {
    engine.set_max_expr_depths(256, 256);
}

/// Compiles and runs script text with `args` bound to the constant `ARGS`; errors carry the
/// script name, line and column.
pub fn run(engine: &Engine, name: &str, source: &str, args: rhai::Map) -> Result<Dynamic> {
    let mut ast = engine.compile(source).map_err(|e| {
        crate::error::hinted(
            format!(
                "{name}:{}: syntax error: {}",
                pos(e.position()),
                e.err_type()
            ),
            format!("fix the script {name} at the position shown"),
        )
    })?;
    ast.set_source(name);
    let mut scope = Scope::new();
    scope.push_constant("ARGS", args);
    engine
        .eval_ast_with_scope::<Dynamic>(&mut scope, &ast)
        .map_err(|e| from_rhai(*e, name))
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
    match err {
        EvalAltResult::ErrorRuntime(ref d, _) if d.is::<ScriptError>() => {
            d.clone().cast::<ScriptError>().0.into()
        }
        EvalAltResult::ErrorInFunctionCall(_, ref src, inner, _)
        | EvalAltResult::ErrorInModule(ref src, inner, _)
            if is_passthrough(&inner) =>
        {
            from_rhai(*inner, if src.is_empty() { script } else { src })
        }
        EvalAltResult::ErrorInFunctionCall(_, src, inner, _) => {
            let src = if src.is_empty() {
                script.to_string()
            } else {
                src
            };
            from_rhai(*inner, &src)
        }
        mut other => {
            let p = other.position();
            other.clear_position();
            Hinted {
                message: format!("{script}:{}: {other}", pos(p)),
                hints: vec![format!("the script {script} failed at the position shown")],
            }
            .into()
        }
    }
}

fn is_passthrough(err: &EvalAltResult) -> bool {
    match err {
        EvalAltResult::ErrorRuntime(d, _) => d.is::<ScriptError>(),
        EvalAltResult::ErrorInFunctionCall(_, _, inner, _)
        | EvalAltResult::ErrorInModule(_, inner, _) => is_passthrough(inner),
        _ => false,
    }
}
