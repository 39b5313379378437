//! `render::` script functions: rendering a project's templates against values and node facts,
//! and sealing user secrets out of the result.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::config::{assemble, gen_debug};
use crate::error::hinted;
use crate::facts::Facts;
use crate::project::{chart::Chart, fsutil, values};
use crate::render::{pipeline, seal};
use crate::runtime::native;
use crate::runtime::opts::options;
use crate::secrets::{bundle::Bundle, contract::Contract};

options! {
    /// The value flags of a render (`--values`, `--set`, ...).
    pub struct ValueFlags for "render::template values" {
        values: Vec<String>,
        set: Vec<String>,
        set_string: Vec<String>,
        set_file: Vec<String>,
        set_json: Vec<String>,
        set_literal: Vec<String>,
    }
}

options! {
    /// `render::template(#{...})`.
    pub struct TemplateOpts for "render::template" {
        root: String,
        templates: Vec<String>,
        values: ValueFlags,
        /// The version contract (else Chart.yaml's).
        talos_version: Option<String>,
        kubernetes_version: Option<String>,
        offline: bool,
        /// A discovery map or a facts file ("" = none).
        facts: Dynamic,
        full: bool,
        with_secrets: String,
        /// Also return the `talosctl gen config` invocations (`gen_debug`), as `--debug` prints
        /// them (`debug` is a Rhai keyword).
        gen_debug: bool,
    }
}

options! {
    /// `render::full(#{...})`.
    pub struct FullOpts for "render::full" {
        root: String,
        text: String,
        with_secrets: String,
        talos_version: Option<String>,
        kubernetes_version: Option<String>,
    }
}

/// The value flags, typed like every option map.
impl crate::runtime::opts::FromOpt for ValueFlags {
    const EXPECTED: &'static str =
        "a map of value flags (values, set, set_string, set_file, set_json, set_literal)";
    fn absent() -> Self {
        ValueFlags::default()
    }
    fn read(v: &Dynamic) -> Option<Self> {
        ValueFlags::read(&v.clone().try_cast::<Map>()?).ok()
    }
    fn why(v: &Dynamic, _function: &str, _key: &str) -> Option<anyhow::Error> {
        ValueFlags::read(&v.clone().try_cast::<Map>()?).err()
    }
}

fn concat(chart: &[String], cli: &[String]) -> Vec<String> {
    chart.iter().chain(cli).cloned().collect()
}

/// The facts a render reads: a node's discovery (a map from `n.discover()`), a recorded file,
/// or nothing (offline).
fn facts(o: &TemplateOpts, chart: &Chart) -> Result<Facts> {
    if o.facts.is_map() {
        return crate::render::dynamic::to_facts(&o.facts);
    }
    let file = o.facts.clone().into_string().unwrap_or_default();
    if !file.is_empty() {
        return Facts::parse(&fsutil::read_text(Path::new(&file))?, &file);
    }
    if o.offline || chart.template.offline {
        return Ok(Facts::empty());
    }
    Err(hinted(
        "rendering needs the node's facts",
        "pass the discovered node (`facts: n.discover()`), a facts file (--facts FILE), or render --offline",
    ))
}

/// The Talos contract and Kubernetes version of a render: the flags when set, else Chart.yaml.
/// The versions given, else Chart.yaml's.
fn versions(talos: Option<&str>, kubernetes: Option<&str>, chart: &Chart) -> (String, String) {
    let t = &chart.template;
    let talos = talos.map_or_else(|| t.talos_version.clone(), str::to_string);
    let kube = kubernetes.map_or_else(|| t.kubernetes_version.clone(), str::to_string);
    (talos, kube.trim_start_matches('v').to_string())
}

pub(in crate::runtime) fn template(o: TemplateOpts) -> Result<Map> {
    crate::progress::stage(crate::progress::Stage::Render);
    // One render per core at once, whatever the number of nodes a fleet step runs together.
    let _pass = crate::render::gate::RENDERS.enter();
    let root_path = Path::new(&o.root);
    let chart = Chart::load(root_path)?;
    let flags = &o.values;
    let t = &chart.template;
    let value_flags = values::ValueFlags {
        values: flags.values.clone(),
        set: concat(&t.values, &flags.set),
        set_string: concat(&t.string_values, &flags.set_string),
        set_file: concat(
            &chart_set_files(root_path, &t.file_values)?,
            &flags.set_file,
        ),
        set_json: concat(&t.json_values, &flags.set_json),
        set_literal: concat(&t.literal_values, &flags.set_literal),
    };
    let (talos_version, kubernetes_version) = versions(
        o.talos_version.as_deref(),
        o.kubernetes_version.as_deref(),
        &chart,
    );
    // Checked before values and facts are read, so a bad version fails fast.
    pipeline::multidoc(&talos_version)?;
    // Confined as the templates and value files are: a link out of the project is refused.
    let preset_values =
        crate::project::confine::read_text(root_path, &root_path.join("values.yaml"))?;
    if crate::yaml::parse_map(&preset_values, "values.yaml")?.is_empty() {
        return Err(hinted(
            "values.yaml is empty: the templates read the cluster's settings (endpoint, image, subnets...) from it",
            "restore it with `git checkout -- values.yaml`, or see the preset's own in a scratch folder: `talm init -p <preset> -N x`",
        ));
    }
    let vals = values::load(root_path, &preset_values, &t.value_files, &value_flags)?;
    if let Some(defaults) = preset_defaults(root_path) {
        vals.check_shapes(&defaults)?;
    }
    let facts = facts(&o, &chart)?;
    let req = pipeline::Request {
        root: root_path,
        templates: o.templates.clone(),
        facts: Arc::new(facts),
        values: vals.tree.clone(),
        chart_name: chart.name.clone(),
        chart_version: chart.version.clone(),
        talos_version,
        kubernetes_version: kubernetes_version.trim_start_matches('v').to_string(),
    };
    let mut out = pipeline::render(&req).map_err(|e| vals.attribute(e))?;
    let sealed: Vec<(&str, &serde_yaml_ng::Value)> = vals
        .sealed_origins
        .iter()
        .map(|(file, _)| file.as_str())
        .zip(vals.secrets.iter())
        .collect();
    if let Some((file, key)) = seal::split_secret(&out, &sealed) {
        return Err(hinted(
            format!("{file}: {key} holds a line break, and the template prints it so that it no longer reads as the value: it would be written in clear (node files) or printed unmasked; nothing was rendered"),
            format!("keep {key} on one line in {file}, or print it whole in the template (as a block: `key: |` then the value indented, or with `| to_json`)"),
        ));
    }
    let debug = if o.gen_debug || t.debug {
        let kube_raw = o
            .kubernetes_version
            .clone()
            .unwrap_or_else(|| t.kubernetes_version.clone());
        debug_dump(
            &out,
            (&o.root, &o.with_secrets),
            &chart,
            &req.talos_version,
            &kube_raw,
        )?
    } else {
        String::new()
    };
    let full = (o.full || t.full) && debug.is_empty();
    if full {
        out = full_config(
            &out,
            (&o.root, &o.with_secrets),
            &chart,
            &req.talos_version,
            &req.kubernetes_version,
        )?;
    }
    let mut m = Map::new();
    m.insert("text".into(), out.into());
    m.insert("full".into(), full.into());
    m.insert("gen_debug".into(), debug.into());
    let secrets: Array = seal::secret_strings(&vals.secrets)
        .into_iter()
        .map(Dynamic::from)
        .collect();
    m.insert("secrets".into(), secrets.into());
    let warnings: Array = vals.warnings.into_iter().map(Dynamic::from).collect();
    m.insert("warnings".into(), warnings.into());
    Ok(m)
}

/// Chart.yaml's `fileValues` (`key=path`, relative to the project) with their paths checked to
/// stay inside the project and made absolute, so they read the same from any folder.
fn chart_set_files(root: &Path, entries: &[String]) -> Result<Vec<String>> {
    entries
        .iter()
        .map(|kv| match kv.split_once('=') {
            Some((key, path)) => Ok(format!(
                "{key}={}",
                values::chart_path(root, path, "fileValues")?.display()
            )),
            None => Ok(kv.clone()),
        })
        .collect()
}

/// The values.yaml of the preset the project was made from (by its lock), for the shapes of
/// the values.
fn preset_defaults(root: &Path) -> Option<Arc<serde_yaml_ng::Value>> {
    let lock =
        crate::project::fsutil::read_text(&root.join(crate::project::lock::LOCK_FILE)).ok()?;
    let name = crate::project::lock::parse(&lock).ok()?.preset;
    // The presets are part of the binary: each one's defaults are parsed once per process.
    /// Listed in [`crate::caches::KEPT`].
    static DEFAULTS: crate::caches::memo::Memo<String, Option<Arc<serde_yaml_ng::Value>>> =
        crate::caches::memo::Memo::new(4);
    let parsed: Result<_, std::convert::Infallible> = DEFAULTS.get_or_try(name, |name| {
        let files = crate::project::presets::preset_files(name);
        Ok(files
            .get("values.yaml")
            .and_then(|t| crate::yaml::from_str(t).ok())
            .map(Arc::new))
    });
    parsed.ok().flatten()
}

/// The secrets bundle of a render and its path: `--with-secrets` ("" = Chart.yaml's), relative
/// to the project root.
fn secrets_bundle(place: (&str, &str), chart: &Chart) -> Result<(Bundle, PathBuf)> {
    let (root, with_secrets) = place;
    let secrets = match with_secrets {
        s if !s.is_empty() => s.to_string(),
        _ => chart.secrets(),
    };
    let path = if Path::new(&secrets).is_absolute() {
        PathBuf::from(&secrets)
    } else {
        Path::new(&root).join(&secrets)
    };
    let bundle_text = fsutil::read_text(&path).map_err(|e| {
        hinted(
            format!("failed to load secrets bundle: {e}"),
            "run `talm init -d` to open secrets.encrypted.yaml, or pass --with-secrets",
        )
    })?;
    // Parsed and validated once per content: a fleet's renders all read the same bundle.
    /// Listed in [`crate::caches::KEPT`].
    static BUNDLES: crate::caches::memo::Memo<(String, String), Bundle> =
        crate::caches::memo::Memo::new(4);
    let bundle = BUNDLES.get_or_try((bundle_text, secrets), |(text, name)| {
        Bundle::load(text, name)
    })?;
    Ok((bundle, path))
}

/// What `--debug` prints for a render: the `talosctl gen config` invocations of both
/// generations with the rendered patches. `kube_raw` is the Kubernetes version as configured.
fn debug_dump(
    rendered: &str,
    place: (&str, &str),
    chart: &Chart,
    talos_version: &str,
    kube_raw: &str,
) -> Result<String> {
    let (bundle, path) = secrets_bundle(place, chart)?;
    let base = assemble::Base {
        contract: Contract::parse(talos_version)?,
        kubernetes_version: kube_raw.trim_start_matches('v'),
        bundle: &bundle,
    };
    let call = gen_debug::Invocation {
        with_secrets: &path.display().to_string(),
        talos_version,
        kubernetes_version: kube_raw,
    };
    gen_debug::dump(rendered, &base, &call)
}

/// The whole machine config for a render (`--full`).
/// `place` is the project root and the `--with-secrets` bundle ("" = Chart.yaml's).
fn full_config(
    rendered: &str,
    place: (&str, &str),
    chart: &Chart,
    talos_version: &str,
    kubernetes_version: &str,
) -> Result<String> {
    let _pass = crate::render::gate::RENDERS.enter();
    let (bundle, _) = secrets_bundle(place, chart)?;
    if kubernetes_version.is_empty() {
        crate::output::err("WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.");
    }
    let base = assemble::Base {
        contract: Contract::parse(talos_version)?,
        kubernetes_version,
        bundle: &bundle,
    };
    assemble::full(rendered, &base)
}

/// What `n.apply(config)` sends: a whole config as it is; a patch (what `render()` returns)
/// merged into the config generated from the project's secrets, as `talm apply` does with a
/// node file without templates.
pub(in crate::runtime) fn whole_config(root: Option<&Path>, text: &str) -> Result<String> {
    if assemble::is_whole(text) {
        return Ok(text.to_string());
    }
    let Some(root) = root else {
        return Err(hinted(
            "n.apply: the config is a patch, and there is no project whose secrets make it a whole config",
            "run inside a talm project (or call use_project(root) first), or pass a whole config (render with `full: true`)",
        ));
    };
    let chart = Chart::load(root)?;
    let (talos, kube) = versions(None, None, &chart);
    let root = root.display().to_string();
    full_config(text, (&root, ""), &chart, &talos, &kube)
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("template")
        .with_comments([
            "/// Renders templates: `opts` has `root`, `templates`, `values` (#{values, set, set_string, set_file, set_json, set_literal}), `talos_version`/`kubernetes_version` (Chart.yaml's when absent or `()`), `offline`, `facts` (a facts file), `gen_debug` (`--debug`; or Chart.yaml templateOptions.debug). Returns #{text, full (whether it is the whole machine config, private keys included), secrets, warnings, gen_debug (what `--debug` prints, \"\" when off)}.",
        ])
        .set_into_module(&mut m, |opts: Map| native(|| template(TemplateOpts::read(&opts)?)));
    FuncRegistration::new("full")
        .with_comments(["/// The whole machine config from a patch without templates (a node file in direct-patch mode): the config Talos generates from the project's secrets, with `text` merged in. `opts` has `root`, `text`, `with_secrets`, `talos_version`/`kubernetes_version` (Chart.yaml's when absent or `()`)."])
        .set_into_module(&mut m, |opts: Map| {
            native(|| {
                crate::progress::stage(crate::progress::Stage::Render);
                let o = FullOpts::read(&opts)?;
                let chart = Chart::load(Path::new(&o.root))?;
                let (talos, kube) = versions(
                    o.talos_version.as_deref(),
                    o.kubernetes_version.as_deref(),
                    &chart,
                );
                full_config(&o.text, (&o.root, &o.with_secrets), &chart, &talos, &kube)
            })
        });
    FuncRegistration::new("gen_debug")
        .with_comments(["/// What `--debug` prints for a patch without templates: the `talosctl gen config` invocations (placeholder name and endpoint, then what the patch sets) with the patch. `opts` as `render::full`."])
        .set_into_module(&mut m, |opts: Map| {
            native(|| {
                let o = FullOpts::read(&opts)?;
                let chart = Chart::load(Path::new(&o.root))?;
                let (talos, _) = versions(o.talos_version.as_deref(), None, &chart);
                let kube_raw = o
                    .kubernetes_version
                    .unwrap_or_else(|| chart.template.kubernetes_version.clone());
                debug_dump(&o.text, (&o.root, &o.with_secrets), &chart, &talos, &kube_raw)
            })
        });
    FuncRegistration::new("seal")
        .with_comments(["/// Keeps `secrets` out of rendered `text`: mode \"omit\" drops them, \"redact\" prints `***`."])
        .set_into_module(&mut m, |text: &str, secrets: Array, mode: &str| {
            native(|| {
                let set = secrets.into_iter().filter_map(|d| d.into_string().ok()).collect();
                let mode = match mode {
                    "omit" => seal::Seal::Omit,
                    "redact" => seal::Seal::Redact,
                    other => anyhow::bail!("unknown seal mode {other:?} (omit or redact)"),
                };
                seal::apply(text, &set, mode)
            })
        });
    FuncRegistration::new("discovery_losses")
        .with_comments(["/// What the node file body `old` holds from discovery (install disk, hostname, nameservers, links' addresses and routes) that `new`, its render without facts, drops: one line each, [] when nothing is lost."])
        .set_into_module(&mut m, |old: &str, new: &str| {
            native(|| {
                Ok(crate::render::discovered::losses(old, new)?
                    .into_iter()
                    .map(Dynamic::from)
                    .collect::<Array>())
            })
        });
    FuncRegistration::new("template_path")
        .with_comments(["/// A template argument as the modeline records it: `templates/<name>`."])
        .set_into_module(&mut m, |arg: &str| {
            format!("templates/{}", pipeline::template_name(arg))
        });
    engine.register_static_module("render", m.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_render_takes_a_place_in_the_process_gate() {
        let before = crate::render::gate::taken_here();
        let dir = tempfile::tempdir().unwrap();
        let o = TemplateOpts {
            root: dir.path().display().to_string(),
            offline: true,
            ..Default::default()
        };
        // Not a project: the render fails, after taking its place.
        assert!(template(o).is_err());
        assert_eq!(crate::render::gate::taken_here(), before + 1);
        let chart = Chart::default();
        assert!(full_config(
            "",
            (&dir.path().display().to_string(), ""),
            &chart,
            "v1.13",
            "1.34"
        )
        .is_err());
        assert_eq!(crate::render::gate::taken_here(), before + 2);
    }
}
