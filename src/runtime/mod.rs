//! The Rhai runtime: the sandbox engine (`crate::sandbox`) plus talm's side-effecting native
//! modules (one `api_*` file per family), and running bundled scripts with their `ARGS`.

mod api_apply;
mod api_change;
mod api_config;
mod api_etcd;
mod api_inspect;
mod api_kubeconfig;
mod api_log;
mod api_migrate;
mod api_parallel;
pub mod api_playbook;
mod api_preset;
mod api_project;
mod api_render;
mod api_rolling;
mod api_rotate;
mod api_rotate_journal;
mod api_secrets;
mod api_stream;
mod api_support;
pub mod api_talos;
mod api_upgrade;
mod api_verify;
mod api_writeback;
mod node_opts;
mod opts;
pub mod playbooks;
pub mod repl;
mod repl_memory;
mod scratch;
pub mod session;
mod workers;

use std::path::Path;

use anyhow::Result;
use rhai::{Dynamic, Engine};

use crate::embedded::SCRIPTS;
pub use crate::sandbox::{from_rhai, native, to_rhai, Limits, ScriptError, Upcoming};
pub use session::{Runner, Scope, Session, Settings};

/// Builds the engine under `limits`: the sandbox (stdlib, pure helpers, `fail`/`warn`) plus
/// every native module, working in `session`.
pub fn engine(limits: &Limits, session: &Session) -> Engine {
    engine_with(limits, session, &api_parallel::Unchecked::default())
}

/// The engine, with the item errors of its `parallel` calls kept in `unchecked`.
fn engine_with(limits: &Limits, session: &Session, unchecked: &api_parallel::Unchecked) -> Engine {
    let mut engine = crate::sandbox::engine(limits);
    api_verify::register(&mut engine);
    api_config::register(&mut engine);
    api_inspect::register(&mut engine, session);
    api_kubeconfig::register(&mut engine);
    api_log::register(&mut engine);
    api_migrate::register(&mut engine);
    api_parallel::register(&mut engine, unchecked);
    api_playbook::register(&mut engine, session);
    api_project::register(&mut engine, session);
    api_preset::register(&mut engine);
    api_render::register(&mut engine);
    api_secrets::register(&mut engine, session);
    api_stream::register(&mut engine);
    api_talos::register(&mut engine, session);
    api_apply::register(&mut engine, session);
    // After talos: its node methods use the `Node` type name registered there.
    api_etcd::register(&mut engine, session);
    api_support::register(&mut engine, session);
    api_change::register(&mut engine, session);
    api_upgrade::register(&mut engine, session);
    api_rotate::register(&mut engine);
    api_rotate_journal::register(&mut engine, session);
    api_rolling::register(&mut engine, session);
    engine
}

/// Runs the bundled script `scripts/<name>.rhai` with `args` bound to `ARGS` (playbook limits).
pub fn run_bundled(name: &str, args: rhai::Map, session: &Session) -> Result<Dynamic> {
    let script = bundled(name)
        .ok_or_else(|| crate::error::plain(format!("no bundled script {name}.rhai")))?;
    run_source(&script.name, script.source, args, &script.limits, session)
}

/// The bundled script `scripts/<name>.rhai` as [`run_bundled`] runs it, to compile it ahead.
pub fn bundled(name: &str) -> Option<Upcoming> {
    let file = format!("{name}.rhai");
    Some(Upcoming {
        source: crate::embedded::find(SCRIPTS, &file)?,
        name: format!("scripts/{file}"),
        limits: Limits::PLAYBOOK,
    })
}

/// Runs a script file from disk (a playbook or project script); Ctrl-C stops it.
pub fn run_file(
    path: &Path,
    args: rhai::Map,
    limits: &Limits,
    session: &Session,
) -> Result<Dynamic> {
    let source = crate::project::fsutil::read_text(path)?;
    crate::sandbox::interrupt::install();
    let _running = crate::sandbox::interrupt::running();
    run_source(&path.display().to_string(), &source, args, limits, session)
}

/// Runs a playbook bundled with talm (`talm run bringup`); Ctrl-C stops it.
pub fn run_playbook(
    playbook: playbooks::Playbook,
    args: rhai::Map,
    limits: &Limits,
    session: &Session,
) -> Result<Dynamic> {
    crate::sandbox::interrupt::install();
    let _running = crate::sandbox::interrupt::running();
    run_source(
        &playbook.script_name(),
        playbook.source,
        args,
        limits,
        session,
    )
}

/// Compiles and runs script text; errors carry the script name, line and column. A script that
/// ends while a `parallel` item error it never checked with `is_error` is left fails over it.
pub fn run_source(
    name: &str,
    source: &str,
    args: rhai::Map,
    limits: &Limits,
    session: &Session,
) -> Result<Dynamic> {
    let unchecked = api_parallel::Unchecked::default();
    let engine = engine_with(limits, session, &unchecked);
    let out = crate::sandbox::run(&engine, limits, name, source, args)?;
    unchecked.check(name)?;
    Ok(out)
}

/// Runs script text named `name` as a playbook with no arguments, outside any project (tests
/// of the native modules).
#[cfg(test)]
pub(crate) fn run_test_script(name: &str, source: &str) -> Result<Dynamic> {
    run_source(
        name,
        source,
        rhai::Map::new(),
        &Limits::PLAYBOOK,
        &Session::default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_errors_carry_position() {
        let err = run_test_script("t.rhai", "let x = 1;\nundefined_fn(x);").unwrap_err();
        let text = crate::error::render(&err);
        assert!(text.contains("t.rhai:2:1"), "{text}");
        assert!(text.contains("undefined_fn"), "{text}");
        let err = run_test_script("s.rhai", "let = ;").unwrap_err();
        assert!(err.to_string().starts_with("s.rhai:1:"), "{err}");
    }

    #[test]
    fn fail_passes_message_and_hint_through_functions() {
        let src =
            "fn inner() { fail(\"bad thing\", \"do better\") }\nfn outer() { inner() }\nouter();";
        let err = run_test_script("t.rhai", src).unwrap_err();
        assert_eq!(
            crate::error::render(&err),
            "Error: bad thing\nhint: do better\n"
        );
    }
}
