//! Preset logic in Rhai: a project's `templates/_context.rhai` runs in the sandbox before the
//! templates, with `lookup(kind, namespace, id)` over the node's facts, and returns the map the
//! templates see as `node` (default link, addresses, hostname, disks, ...). Preset logic and
//! Rhai templates run under the strict limits (`Limits::TEMPLATE`), on one sandbox engine per
//! process; each script is compiled once (`Script`) and run for every node, `lookup` reading
//! the facts of the node being rendered (`current::with_current`), `once` keeping what the values
//! alone decide for the script's later runs (`once`). Renders at once run on different lanes
//! (`sandbox::lanes`), each with its own engine and compiled copy of the script; the copies are
//! the sandbox's kept compiled scripts (`sandbox::compiled`), the ones playbooks use.

use std::sync::Arc;

use anyhow::Result;
use rhai::{Dynamic, FuncRegistration, AST};

use super::current;
use super::dynamic;
use super::once::{self, Kept};
use crate::sandbox::compiled::{self, Code};
use crate::sandbox::lanes::{self, Lane, PerLane};
use crate::sandbox::Limits;
use talm_wire::facts::Facts;

/// The file name of a preset's context script, inside `templates/`.
pub const CONTEXT_SCRIPT: &str = "_context.rhai";

/// The sandbox with `lookup` over the current node's facts, built once per lane.
fn engine(lane: Lane) -> &'static rhai::Engine {
    /// Listed in [`talm_base::caches::KEPT`].
    static ENGINES: PerLane<rhai::Engine> = PerLane::new();
    ENGINES.get_or_init(lane, || {
        let mut engine = crate::sandbox::engine_on(&Limits::TEMPLATE, lane);
        FuncRegistration::new("lookup")
            .with_comments([
                "/// A node resource by kind and id (`{}` when missing), or all of a kind as `#{apiVersion, kind: \"List\", items}` when `id` is \"\".",
            ])
            .register_into_engine(&mut engine, |kind: &str, namespace: &str, id: &str| {
                crate::sandbox::native(|| {
                    current::find_current(kind, namespace, id, dynamic::from_found)
                })
            });
        FuncRegistration::new("once")
            .with_comments([
                "/// `f` called with the items of `key`, its result kept by the key's content for later runs of this script (what the values alone decide, computed once for a fleet).",
            ])
            .register_into_engine(
                &mut engine,
                |ctx: rhai::NativeCallContext, key: rhai::Array, f: rhai::FnPtr| {
                    once::once(&ctx, key, f)
                },
            );
        engine
    })
}

/// A Rhai script of a project (`templates/_context.rhai`, `templates/*.rhai`): its name as
/// errors show it, its text, and its compiled copies (kept with every compiled script).
pub struct Script {
    pub name: String,
    pub source: String,
    code: Arc<Code>,
    /// Results of its `once` calls.
    kept: Arc<Kept>,
}

impl Script {
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Script {
        let (name, source) = (name.into(), source.into());
        let code = compiled::code(&name, &Limits::TEMPLATE, &source);
        Script {
            name,
            source,
            code,
            kept: Arc::default(),
        }
    }

    /// The script compiled for `lane` (compiled on first use there, or waited for while
    /// another thread compiles it; a syntax error is reported on every use).
    fn ast(&self, lane: Lane) -> Result<Arc<AST>> {
        self.code
            .ast(engine(lane), lane)
            .map_err(|e| crate::sandbox::syntax_error(&self.name, &e))
    }

    /// Compiles the script now, for the first lane (a one-shot command's), rather than at its
    /// first run.
    pub fn compile(&self) -> Result<()> {
        self.ast(Lane::FIRST).map(|_| ())
    }

    /// [`Script::compile`] unless another thread compiles it already: for a thread with time
    /// to spare.
    pub fn offer(&self) {
        self.code.offer(engine(Lane::FIRST), Lane::FIRST);
    }

    /// Whether the script has been compiled on any lane (tests of the render cache).
    pub fn compiled(&self) -> bool {
        self.code.copies() > 0
    }

    /// On how many lanes the script has been compiled (tests).
    pub fn copies(&self) -> usize {
        self.code.copies()
    }

    /// How many `once` results the script keeps (tests).
    pub fn kept(&self) -> usize {
        self.kept.len()
    }
}

/// `args` (a JSON object) as the script's `ARGS` map.
pub fn args_of(args: &serde_json::Value) -> Result<rhai::Map> {
    Ok(dynamic::from_json(args)?
        .try_cast::<rhai::Map>()
        .unwrap_or_default())
}

fn eval(script: &Script, facts: &Arc<Facts>, args: rhai::Map) -> Result<Dynamic> {
    lanes::with_lane(|lane| {
        let ast = script.ast(lane)?;
        current::with_current(facts, || {
            once::with_kept(&script.kept, || {
                let engine = engine(lane);
                crate::sandbox::eval_ast(engine, &Limits::TEMPLATE, &script.name, &ast, args)
            })
        })
    })
}

/// Runs the context script with `args` (values, chart, talos, template) as `ARGS`: the `node`
/// map (empty when the script returns nothing).
pub fn node(script: &Script, facts: &Arc<Facts>, args: rhai::Map) -> Result<Dynamic> {
    let out = eval(script, facts, args)?;
    Ok(if out.is_unit() {
        rhai::Map::new().into()
    } else {
        out
    })
}

/// [`node`] from and to JSON.
pub fn run(
    script: &Script,
    facts: &Arc<Facts>,
    args: &serde_json::Value,
) -> Result<serde_json::Value> {
    dynamic::to_json(&node(script, facts, args_of(args)?)?)
}

/// Runs a template written in Rhai (`templates/*.rhai`): it sees the render context as `ARGS`
/// and returns the patch, as YAML text or as a map (written as YAML).
pub fn render_script(
    script: &Script,
    facts: &Arc<Facts>,
    ctx: &serde_json::Value,
) -> Result<String> {
    let out = eval(script, facts, args_of(ctx)?)?;
    if out.is_string() {
        return Ok(out.into_string().unwrap_or_default());
    }
    let value: serde_yaml_ng::Value = rhai::serde::from_dynamic(&out)?;
    Ok(serde_yaml_ng::to_string(&value)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_script_reads_facts_and_args() {
        let facts = Facts::parse(
            "resources:\n  links:\n    - metadata: {id: eth0}\n      spec: {mtu: 9000}\n",
            "f.yaml",
        )
        .unwrap();
        let src = "let l = lookup(\"links\", \"\", \"eth0\");\n#{ mtu: l.spec.mtu, type: ARGS.machine_type, none: lookup(\"disks\", \"\", \"\").len() }";
        let script = Script::new("templates/_context.rhai", src);
        let out = run(
            &script,
            &Arc::new(facts),
            &serde_json::json!({"machine_type": "worker"}),
        )
        .unwrap();
        assert_eq!(
            out,
            serde_json::json!({"mtu": 9000, "none": 0, "type": "worker"})
        );
        let err = run(
            &Script::new("templates/_context.rhai", "fail(\"no default route\")"),
            &Arc::new(Facts::empty()),
            &serde_json::json!({}),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no default route");
        let err = run(
            &Script::new("templates/_context.rhai", "let x = ;"),
            &Arc::new(Facts::empty()),
            &serde_json::json!({}),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("templates/_context.rhai:1:"),
            "{err}"
        );
    }

    #[test]
    fn renders_at_once_run_their_own_copies_alike() {
        let facts = Arc::new(
            Facts::parse(
                "resources:\n  links:\n    - metadata: {id: eth0}\n      spec: {mtu: 9000}\n",
                "f",
            )
            .unwrap(),
        );
        let script = Script::new(
            "templates/_context.rhai",
            "import \"talm/net\" as net;\n#{ mtu: lookup(\"links\", \"\", \"eth0\").spec.mtu, k: ARGS.k }",
        );
        let args = serde_json::json!({"k": "v"});
        let want = serde_json::json!({"mtu": 9000, "k": "v"});
        // This thread holds a lane while another renders: the other takes a second lane and
        // compiles the script there.
        let (here, there) = lanes::with_lane(|_| {
            let here = run(&script, &facts, &args).unwrap();
            let there = std::thread::scope(|s| {
                s.spawn(|| run(&script, &facts, &args).unwrap())
                    .join()
                    .unwrap()
            });
            (here, there)
        });
        assert_eq!((here, there), (want.clone(), want));
        assert_eq!(script.copies(), 2);
    }

    #[test]
    fn once_keeps_a_result_by_its_key() {
        let facts = |links: &str| {
            Arc::new(Facts::parse(&format!("resources:\n  links: {links}\n"), "f").unwrap())
        };
        let (one, two) = (
            facts("[{metadata: {id: eth0}}]"),
            facts("[{metadata: {id: eth0}}, {metadata: {id: eth1}}]"),
        );
        // Impure on purpose: the number of links tells whether `count` ran.
        let script = Script::new(
            "templates/_context.rhai",
            "fn count(k) { lookup(\"links\", \"\", \"\").items.len() }\nonce([ARGS.k], Fn(\"count\"))",
        );
        let run_with = |f: &Arc<Facts>, k: &str| run(&script, f, &serde_json::json!({"k": k}));
        assert_eq!(run_with(&one, "a").unwrap(), 1);
        assert_eq!(run_with(&two, "a").unwrap(), 1, "kept for the same key");
        assert_eq!(run_with(&two, "b").unwrap(), 2, "another key runs it");
        assert_eq!(script.kept(), 2);
        // A failing function is not kept: it fails again on the next run.
        let failing = Script::new(
            "templates/_context.rhai",
            "once([ARGS.k], |k| if k == \"bad\" { fail(\"bad key\") } else { k + \"!\" })",
        );
        for _ in 0..2 {
            let err = run(&failing, &one, &serde_json::json!({"k": "bad"})).unwrap_err();
            assert_eq!(err.to_string(), "bad key");
        }
        assert_eq!(failing.kept(), 0);
        assert_eq!(
            run(&failing, &one, &serde_json::json!({"k": "ok"})).unwrap(),
            "ok!"
        );
        assert_eq!(failing.kept(), 1);
    }
}
