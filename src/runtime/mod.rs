//! The Rhai runtime: the sandbox engine (`crate::sandbox`) plus talm's side-effecting natives
//! (`node`: the Node type and one module per family of its methods; `fleet`: parallel and
//! rolling work; `local`: the project's files), and running bundled scripts with their `ARGS`.

mod choices;
pub mod fleet;
pub mod local;
mod log;
pub mod node;
mod opts;
pub mod playbooks;
pub mod repl;
mod scratch;
pub mod session;
mod write;

use std::path::Path;

use anyhow::Result;
use rhai::{Dynamic, Engine};

use crate::embedded::SCRIPTS;
pub use crate::sandbox::{from_rhai, native, to_rhai, Limits, ScriptError, Upcoming};
pub use session::{Runner, Scope, Session, Settings};

/// Builds the engine under `limits`: the sandbox (stdlib, pure helpers, `fail`/`warn`) plus
/// every native module, working in `session`.
pub fn engine(limits: &Limits, session: &Session) -> Engine {
    engine_with(limits, session, &fleet::parallel::Unchecked::default())
}

/// The engine, with the item errors of its `parallel` calls kept in `unchecked`.
fn engine_with(
    limits: &Limits,
    session: &Session,
    unchecked: &fleet::parallel::Unchecked,
) -> Engine {
    let mut engine = crate::sandbox::engine(limits);
    node::verify::register(&mut engine);
    local::config::register(&mut engine);
    node::inspect::register(&mut engine, session);
    local::kubeconfig::register(&mut engine);
    log::register(&mut engine);
    write::register(&mut engine);
    local::migrate::register(&mut engine);
    fleet::parallel::register(&mut engine, unchecked);
    local::playbook::register(&mut engine, session);
    local::project::register(&mut engine, session);
    local::preset::register(&mut engine);
    local::render::register(&mut engine);
    local::secrets::register(&mut engine, session);
    node::stream::register(&mut engine);
    node::register(&mut engine, session);
    node::apply::register(&mut engine, session);
    // After talos: its node methods use the `Node` type name registered there.
    node::etcd::register(&mut engine, session);
    node::support::register(&mut engine, session);
    node::change::register(&mut engine, session);
    node::upgrade::register(&mut engine, session);
    node::pcap::register(&mut engine, session);
    node::debug::register(&mut engine);
    node::rotate::register(&mut engine);
    node::k8s::register(&mut engine, session);
    local::rotate_journal::register(&mut engine, session);
    fleet::rolling::register(&mut engine);
    fleet::hook::register(&mut engine, session);
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
    let unchecked = fleet::parallel::Unchecked::default();
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
    use crate::runtime::*;

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
