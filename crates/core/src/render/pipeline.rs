//! One render: a project's templates (and its `_context.rhai` preset logic) with the merged
//! values and a node's facts, giving the config patch text of the requested templates. The
//! templates come compiled from the process's cache (`render::cache`), so rendering many nodes
//! reads and compiles them once.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use serde_json::json;

use super::{cache::Compiled, context, dynamic};
use crate::secrets::contract::Contract;
use talm_base::error::hinted;
use talm_wire::facts::Facts;

/// The newest Talos version contract the presets know.
pub const NEWEST_CONTRACT: (u32, u32) = (1, 13);

/// What to render.
pub struct Request<'a> {
    pub root: &'a Path,
    /// Template paths as the user gives them (`templates/controlplane.yaml`).
    pub templates: Vec<String>,
    pub facts: Arc<Facts>,
    pub values: serde_yaml_ng::Value,
    pub chart_name: String,
    pub chart_version: String,
    /// The Talos version contract (`v1.12`), "" for the presets' legacy default.
    pub talos_version: String,
    pub kubernetes_version: String,
}

/// The engine name of a template argument: its path below `templates/`, `/`-separated.
pub fn template_name(arg: &str) -> String {
    let arg = arg.replace('\\', "/");
    let arg = arg.trim_start_matches("./");
    match arg.find("templates/") {
        Some(i) if i == 0 || arg[..i].ends_with('/') => arg[i + "templates/".len()..].to_string(),
        _ => arg.rsplit('/').next().unwrap_or(arg).to_string(),
    }
}

/// Whether a contract renders the multi-document network format (v1.12 and later).
pub fn multidoc(talos_version: &str) -> Result<bool> {
    let c = Contract::parse(talos_version)?;
    if talos_version.trim().is_empty() {
        return Ok(false);
    }
    if c.newer_than(NEWEST_CONTRACT.0, NEWEST_CONTRACT.1) {
        return Err(hinted(
            format!(
                "talosVersion {talos_version} is newer than the v{}.{} contract the presets render; Talos {talos_version} changed the machine-config layout",
                NEWEST_CONTRACT.0, NEWEST_CONTRACT.1
            ),
            "set templateOptions.talosVersion (or --talos-version) to v1.13 or lower",
        ));
    }
    Ok(c.newer_than(1, 11))
}

/// Renders the requested templates, joined as YAML documents; a render of the same inputs
/// earlier in the process gives its kept text (`kept`).
pub fn render(req: &Request<'_>) -> Result<String> {
    let (project, multidoc) = prepare(req)?;
    super::kept::render(&project, req, || render_with(&project, req, multidoc))
}

/// [`render`] without the kept renders: what every node's first render costs (the render
/// bench's rows).
pub fn render_anew(req: &Request<'_>) -> Result<String> {
    let (project, multidoc) = prepare(req)?;
    render_with(&project, req, multidoc)
}

/// The request checked, its project compiled and whether it renders multi-document.
fn prepare(req: &Request<'_>) -> Result<(Arc<Compiled>, bool)> {
    if req.templates.is_empty() {
        return Err(hinted(
            "templates are not set for the command: please use `--file` or `--template` flag",
            "for example: talm template -t templates/controlplane.yaml",
        ));
    }
    let multidoc = multidoc(&req.talos_version)?;
    Ok((super::cache::load(req.root)?, multidoc))
}

/// [`render`] with the project compiled.
fn render_with(project: &Compiled, req: &Request<'_>, multidoc: bool) -> Result<String> {
    let values = super::prepared::of(&req.values)?;
    let mut outputs = Vec::new();
    for t in &req.templates {
        let name = template_name(t);
        // What the preset logic and the templates see besides the values and `node`.
        let base = json!({
            "chart": {"name": req.chart_name, "version": req.chart_version},
            "talos": {"version": req.talos_version, "multidoc": multidoc},
            "kubernetes_version": req.kubernetes_version,
            "template": name,
        });
        let node = match &project.context {
            Some(script) => {
                let mut args = context::args_of(&base)?;
                args.insert("values".into(), values.rhai.clone());
                context::node(script, &req.facts, args)?
            }
            None => rhai::Map::new().into(),
        };
        let out = if name.ends_with(".rhai") {
            let script = project.scripts.get(&name).ok_or_else(|| {
                hinted(
                    format!("template {name} not found"),
                    "templates are named by their path below templates/, e.g. controlplane.yaml",
                )
            })?;
            let mut ctx = base;
            ctx["values"] = values.json.clone();
            ctx["node"] = dynamic::to_json(&node)?;
            context::render_script(script, &req.facts, &ctx)?
        } else {
            let mut ctx = tera::Context::from_serialize(&base)
                .map_err(|e| anyhow::anyhow!("the render context: {e}"))?;
            ctx.insert_value("values", values.tera.clone());
            ctx.insert_value("node", dynamic::to_tera(&node)?);
            project.tera()?.render(&name, ctx, &req.facts)?
        };
        // Checked as it is returned (one final newline), so that the parse the check keeps is
        // the one a full config (`assemble::full`) reads next.
        let out = format!("{}\n", out.trim_end_matches('\n'));
        super::verify::check(
            &format!("templates/{name}"),
            &out,
            &[&values.risky, req.facts.risky()],
        )?;
        outputs.push(out);
    }
    Ok(outputs.join("---\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rhai_templates_render() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("templates");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("pure.rhai"), "let l = lookup(\"links\", \"\", \"eth0\");\n#{ machine: #{ type: \"worker\", mtu: l.spec.mtu, domain: ARGS.values.d } }").unwrap();
        std::fs::write(
            t.join("text.rhai"),
            "`machine:\n  type: ${ARGS.chart.name}\n`",
        )
        .unwrap();
        let facts = Facts::parse(
            "resources:\n  links:\n    - metadata: {id: eth0}\n      spec: {mtu: 9000}\n",
            "f",
        )
        .unwrap();
        let mut req = Request {
            root: dir.path(),
            templates: vec!["templates/pure.rhai".into()],
            facts: Arc::new(facts),
            values: serde_yaml_ng::from_str("d: x").unwrap(),
            chart_name: "c".into(),
            chart_version: "0.1.0".into(),
            talos_version: "".into(),
            kubernetes_version: String::new(),
        };
        let out: serde_yaml_ng::Value = serde_yaml_ng::from_str(&render(&req).unwrap()).unwrap();
        assert_eq!(
            out,
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>(
                "machine: {domain: x, mtu: 9000, type: worker}"
            )
            .unwrap()
        );
        req.templates = vec!["templates/text.rhai".into()];
        assert_eq!(render(&req).unwrap(), "machine:\n  type: c\n");
        req.templates = vec!["templates/none.rhai".into()];
        assert!(render(&req)
            .unwrap_err()
            .to_string()
            .contains("template none.rhai not found"));
    }

    #[test]
    fn template_names() {
        assert_eq!(
            template_name("templates/controlplane.yaml"),
            "controlplane.yaml"
        );
        assert_eq!(template_name("./templates/sub/x.yaml"), "sub/x.yaml");
        assert_eq!(template_name("templates\\worker.yaml"), "worker.yaml");
        assert_eq!(template_name("/abs/elsewhere/worker.yaml"), "worker.yaml");
        assert_eq!(template_name("/p/templates/worker.yaml"), "worker.yaml");
        assert_eq!(template_name("mytemplates/x.yaml"), "x.yaml");
    }

    #[test]
    fn contracts() {
        assert!(!multidoc("").unwrap());
        assert!(!multidoc("v1.11").unwrap());
        assert!(multidoc("v1.12").unwrap());
        assert!(multidoc("v1.13.2").unwrap());
        let err = multidoc("v1.14").unwrap_err();
        assert!(
            err.to_string().contains("newer than the v1.13 contract"),
            "{err}"
        );
    }

    #[test]
    fn renders_with_context_script() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("templates");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("_context.rhai"), "#{ link: lookup(\"links\", \"\", \"\").items[0].metadata.id, multi: ARGS.talos.multidoc }").unwrap();
        std::fs::write(
            t.join("cp.yaml"),
            "link: {{ node.link }}\nmultidoc: {{ node.multi }}\nname: {{ chart.name }}\n",
        )
        .unwrap();
        let facts =
            Facts::parse("resources:\n  links:\n    - metadata: {id: eth0}\n", "f").unwrap();
        let req = Request {
            root: dir.path(),
            templates: vec!["templates/cp.yaml".into(), "cp.yaml".into()],
            facts: Arc::new(facts),
            values: serde_yaml_ng::Value::Null,
            chart_name: "c".into(),
            chart_version: "0.1.0".into(),
            talos_version: "v1.12".into(),
            kubernetes_version: String::new(),
        };
        assert_eq!(
            render(&req).unwrap(),
            "link: eth0\nmultidoc: true\nname: c\n---\nlink: eth0\nmultidoc: true\nname: c\n"
        );
    }
}
