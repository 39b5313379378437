//! `load_hook(file)` reads a hook file (`talm upgrade --rolling --hook`): its `before(node)` /
//! `after(node)` functions, run confined to the project as a playbook's natives are, may veto
//! a roll's turn.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use rhai::{CallFnOptions, Dynamic, Engine, EvalAltResult, FuncRegistration, AST};

use super::rolling::fatal;
use crate::error::hinted;
use crate::runtime::node::Node;
use crate::runtime::session::{Scope, Session, Settings};
use crate::sandbox::{from_rhai, to_rhai, Limits};

/// A hook file: its own engine (confined to the project) and its functions.
#[derive(Clone)]
pub struct Hook(Arc<HookFile>);

struct HookFile {
    path: String,
    engine: Engine,
    ast: AST,
    before: bool,
    after: bool,
}

fn load_hook(session: &Session, path: &str) -> Result<Hook> {
    session.check_inside("load_hook", path)?;
    let source = crate::project::fsutil::read_text(Path::new(path))?;
    let confined = Session::new(Settings {
        scope: Scope::Project,
        ..session.settings()
    });
    let limits = Limits::PLAYBOOK;
    let engine = crate::runtime::engine(&limits, &confined);
    let mut ast = engine.compile(&source).map_err(|e| {
        hinted(
            format!("hook {path}: syntax error: {e}"),
            format!("fix the hook file {path} at the position shown"),
        )
    })?;
    ast.set_source(path);
    let mut before = false;
    let mut after = false;
    for f in ast.iter_functions() {
        let slot = match f.name {
            "before" => &mut before,
            "after" => &mut after,
            _ => continue,
        };
        if f.params.len() != 1 {
            return Err(hinted(
                format!(
                    "hook {path}: {}() takes {} parameter(s); it is called with the node",
                    f.name,
                    f.params.len()
                ),
                format!("define it as fn {}(node) {{ ... }}", f.name),
            ));
        }
        *slot = true;
    }
    if !before && !after {
        return Err(hinted(
            format!("hook {path} defines neither before(node) nor after(node)"),
            "a hook file holds fn before(node) { ... } and/or fn after(node) { ... }; each returns false to stop the roll",
        ));
    }
    // Its top-level statements run once, as a playbook's would.
    engine
        .run_ast(&ast)
        .map_err(|e| crate::sandbox::from_rhai_within(*e, path, &limits))?;
    Ok(Hook(Arc::new(HookFile {
        path: path.to_string(),
        engine,
        ast,
        before,
        after,
    })))
}

/// Calls the hook's `which(node)`; true when the file does not define it.
fn call_hook(h: &Hook, which: &str, n: Node) -> Result<Dynamic, Box<EvalAltResult>> {
    let defined = match which {
        "before" => h.0.before,
        _ => h.0.after,
    };
    if !defined {
        return Ok(true.into());
    }
    let opts = CallFnOptions::new().eval_ast(false);
    h.0.engine
        .call_fn_with_options::<Dynamic>(opts, &mut rhai::Scope::new(), &h.0.ast, which, (n,))
        .map_err(|e| {
            if fatal(&e) {
                e
            } else {
                to_rhai(from_rhai(*e, &h.0.path))
            }
        })
}

pub fn register(engine: &mut Engine, session: &Session) {
    engine.register_type_with_name::<Hook>("Hook");
    FuncRegistration::new("load_hook")
        .with_comments(["/// Reads a hook file defining `before(node)` and/or `after(node)` (each returns false to stop a roll); its code runs confined to the project, as a playbook's. Call them as `h.before(n)` / `h.after(n)` (true when the file does not define one)."])
        .register_into_engine(engine, {
            let s = session.clone();
            move |path: &str| crate::sandbox::native(|| load_hook(&s, path))
        });
    FuncRegistration::new("before")
        .with_comments(["/// The hook file's `before(node)`: its result (true when it has none)."])
        .register_into_engine(engine, |h: &mut Hook, n: Node| call_hook(h, "before", n));
    FuncRegistration::new("after")
        .with_comments(["/// The hook file's `after(node)`: its result (true when it has none)."])
        .register_into_engine(engine, |h: &mut Hook, n: Node| call_hook(h, "after", n));
}
