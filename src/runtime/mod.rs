//! The Rhai runtime: one engine with talm's native modules (one `api_*` file per family), the
//! embedded stdlib as importable modules, and running bundled scripts with their `ARGS`.

mod api_config;
mod api_log;
mod api_net;
mod api_preset;
mod api_project;
mod api_secrets;
mod api_yaml;
mod stdlib;

use std::path::Path;

use anyhow::Result;
use rhai::{Dynamic, Engine, EvalAltResult, Position, Scope};

use crate::embedded::SCRIPTS;
use crate::error::Hinted;

/// The payload of a runtime error raised by a native function or `fail()`.
#[derive(Debug, Clone)]
pub struct ScriptError(pub Hinted);

/// Turns any error into a Rhai runtime error that keeps its message and hints.
pub fn to_rhai(err: anyhow::Error) -> Box<EvalAltResult> {
    let mut hints = Vec::new();
    for cause in err.chain() {
        if let Some(h) = cause.downcast_ref::<Hinted>() {
            hints.extend(h.hints.iter().cloned());
        }
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

/// Builds the engine with every native module and the stdlib resolver.
pub fn engine() -> Engine {
    let mut engine = Engine::new();
    engine.set_max_expr_depths(256, 256);
    api_config::register(&mut engine);
    api_log::register(&mut engine);
    api_net::register(&mut engine);
    api_project::register(&mut engine);
    api_preset::register(&mut engine);
    api_secrets::register(&mut engine);
    api_yaml::register(&mut engine);
    engine.set_module_resolver(stdlib::resolver());
    engine
}

/// Runs the bundled script `scripts/<name>.rhai` with `args` bound to `ARGS`.
pub fn run_bundled(name: &str, args: rhai::Map) -> Result<Dynamic> {
    let file = format!("{name}.rhai");
    let source = crate::embedded::find(SCRIPTS, &file)
        .ok_or_else(|| crate::error::plain(format!("no bundled script {file}")))?;
    run_source(&format!("scripts/{file}"), source, args)
}

/// Runs a script file from disk (a playbook).
pub fn run_file(path: &Path, args: rhai::Map) -> Result<Dynamic> {
    let source = crate::project::fsutil::read_text(path)?;
    run_source(&path.display().to_string(), &source, args)
}

/// Compiles and runs script text; errors carry the script name, line and column.
pub fn run_source(name: &str, source: &str, args: rhai::Map) -> Result<Dynamic> {
    let engine = engine();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_errors_carry_position() {
        let err =
            run_source("t.rhai", "let x = 1;\nundefined_fn(x);", rhai::Map::new()).unwrap_err();
        let text = crate::error::render(&err);
        assert!(text.contains("t.rhai:2:1"), "{text}");
        assert!(text.contains("undefined_fn"), "{text}");
        let err = run_source("s.rhai", "let = ;", rhai::Map::new()).unwrap_err();
        assert!(err.to_string().starts_with("s.rhai:1:"), "{err}");
    }

    #[test]
    fn fail_passes_message_and_hint_through_functions() {
        let src =
            "fn inner() { fail(\"bad thing\", \"do better\") }\nfn outer() { inner() }\nouter();";
        let err = run_source("t.rhai", src, rhai::Map::new()).unwrap_err();
        assert_eq!(
            crate::error::render(&err),
            "Error: bad thing\nhint: do better\n"
        );
    }
}
