//! Preset logic in Rhai: a project's `templates/_context.rhai` runs in the sandbox before the
//! templates, with `lookup(kind, namespace, id)` over the node's facts, and returns the map the
//! templates see as `node` (default link, addresses, hostname, disks, ...). Preset logic and
//! Rhai templates run under the strict limits (`Limits::TEMPLATE`).

use std::sync::Arc;

use anyhow::Result;
use rhai::{Dynamic, FuncRegistration};

use super::facts::Facts;
use crate::sandbox::Limits;

/// The file name of a preset's context script, inside `templates/`.
pub const CONTEXT_SCRIPT: &str = "_context.rhai";

/// The sandbox with `lookup` bound to the node's facts.
fn engine(facts: Arc<Facts>) -> rhai::Engine {
    let mut engine = crate::sandbox::engine(&Limits::TEMPLATE);
    FuncRegistration::new("lookup")
        .with_comments([
            "/// A node resource by kind and id (`{}` when missing), or all of a kind as `#{apiVersion, kind: \"List\", items}` when `id` is \"\".",
        ])
        .register_into_engine(&mut engine, move |kind: &str, namespace: &str, id: &str| {
            crate::sandbox::native(|| {
                Ok(rhai::serde::to_dynamic(facts.lookup(kind, namespace, id))?)
            })
        });
    engine
}

fn eval(name: &str, source: &str, facts: Arc<Facts>, args: &serde_json::Value) -> Result<Dynamic> {
    let args: rhai::Map = rhai::serde::to_dynamic(args)?
        .try_cast::<rhai::Map>()
        .unwrap_or_default();
    crate::sandbox::run(&engine(facts), &Limits::TEMPLATE, name, source, args)
}

/// Runs the context script with `args` (values, chart, talos, template) as `ARGS`.
pub fn run(
    name: &str,
    source: &str,
    facts: Arc<Facts>,
    args: &serde_json::Value,
) -> Result<serde_json::Value> {
    let out = eval(name, source, facts, args)?;
    if out.is_unit() {
        return Ok(serde_json::Value::Object(Default::default()));
    }
    Ok(rhai::serde::from_dynamic(&out)?)
}

/// Runs a template written in Rhai (`templates/*.rhai`): it sees the render context as `ARGS`
/// and returns the patch, as YAML text or as a map (written as YAML).
pub fn render_script(
    name: &str,
    source: &str,
    facts: Arc<Facts>,
    ctx: &serde_json::Value,
) -> Result<String> {
    let out = eval(name, source, facts, ctx)?;
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
        let out = run(
            "templates/_context.rhai",
            src,
            Arc::new(facts),
            &serde_json::json!({"machine_type": "worker"}),
        )
        .unwrap();
        assert_eq!(
            out,
            serde_json::json!({"mtu": 9000, "none": 0, "type": "worker"})
        );
        let err = run(
            "templates/_context.rhai",
            "fail(\"no default route\")",
            Arc::new(Facts::empty()),
            &serde_json::json!({}),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "no default route");
        let err = run(
            "templates/_context.rhai",
            "let x = ;",
            Arc::new(Facts::empty()),
            &serde_json::json!({}),
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("templates/_context.rhai:1:"),
            "{err}"
        );
    }
}
