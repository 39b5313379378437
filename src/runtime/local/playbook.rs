//! What playbooks (`talm run`, project scripts, the REPL) build on beyond the node API: running
//! any talm command in-process (`talm([...])`, `template_file`, `apply_file`), the project
//! (`project()`, `nodes_of`, `use_project` of another talm project), and file access confined
//! to the project folder (`file::`, links resolved). `talm([...])` is not confined: it runs a
//! command line as the user would type it.

use std::path::{Path, PathBuf};

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::error::hinted;
use crate::project::{confine, fsutil};
use crate::runtime::native;
use crate::runtime::opts::options;
use crate::runtime::session::Session;

options! {
    /// `render(#{...})`.
    pub struct RenderOpts for "render" {
        /// One template (`templates/controlplane.yaml`).
        template: String,
        /// Several templates, joined as YAML documents.
        templates: Vec<String>,
        /// A Node (discovered now).
        node: Dynamic,
        /// A discovery map or a facts file.
        facts: Dynamic,
        /// Helm-style `a.b=c` strings.
        set: Vec<String>,
        talos_version: Option<String>,
        kubernetes_version: Option<String>,
        full: bool,
        offline: bool,
    }
}

options! {
    /// `template_file(path, #{...})`.
    pub struct TemplateFileOpts for "template_file" {
        insecure: bool,
    }
}

options! {
    /// `apply_file(path, #{...})`.
    pub struct ApplyFileOpts for "apply_file" {
        insecure: bool,
        mode: String,
        dry_run: bool,
        /// More `-f` files merged over the node file.
        side_patches: Vec<String>,
    }
}

/// Runs a talm command line in this process, e.g. `talm(["apply", "-f", "nodes/n1.yaml", "-i"])`.
fn talm(s: &Session, args: Array) -> Result<()> {
    let mut argv: Vec<std::ffi::OsString> = vec!["talm".into()];
    argv.extend(
        args.into_iter()
            .map(|a| std::ffi::OsString::from(a.to_string())),
    );
    let shown: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match s.settings().runner.run(argv)? {
        0 => Ok(()),
        code => Err(hinted(
            format!("`{}` exited with {code}", shown.join(" ")),
            "see its output above",
        )),
    }
}

fn render(s: &Session, o: RenderOpts) -> Result<String> {
    let templates = if o.templates.is_empty() {
        vec![o.template.clone()]
    } else {
        o.templates.clone()
    };
    let facts = if let Some(n) = o.node.clone().try_cast::<crate::runtime::node::Node>() {
        crate::runtime::node::discover(&n)?
    } else if !o.facts.is_unit() {
        o.facts.clone()
    } else if !o.offline {
        return Err(hinted("render needs a node, facts or offline: true", "render(#{ template: \"templates/controlplane.yaml\", node: node(ip, #{ insecure: true }) })"));
    } else {
        Dynamic::UNIT
    };
    let r = crate::runtime::local::render::template(crate::runtime::local::render::TemplateOpts {
        root: s.root()?,
        templates,
        values: crate::runtime::local::render::ValueFlags {
            set: o.set,
            ..Default::default()
        },
        talos_version: o.talos_version,
        kubernetes_version: o.kubernetes_version,
        full: o.full,
        offline: o.offline,
        facts,
        with_secrets: String::new(),
        gen_debug: false,
    })?;
    Ok(r.get("text").map(|t| t.to_string()).unwrap_or_default())
}

fn key(s: &Session) -> Result<age::x25519::Identity> {
    let path = project_path(s, crate::secrets::crypt::KEY_FILE)?;
    crate::secrets::crypt::check_key_mode(&path);
    let text = fsutil::read_text(&path)?;
    crate::secrets::crypt::parse_key(&text, "talm.key")
}

fn secrets_load(s: &Session, rel: &str) -> Result<Dynamic> {
    use crate::secrets::twins;
    let plain = project_path(s, rel)?;
    let value = if plain.exists() {
        crate::yaml::parse(&fsutil::read_text(&plain)?, rel)?
    } else {
        let enc_name = twins::twin_name(rel);
        let enc = project_path(s, &enc_name)?;
        crate::secrets::crypt::decrypt_value(&key(s)?, &fsutil::read_text(&enc)?, &enc_name)?
    };
    // What a playbook loads from a secrets file is never printed in clear by talm.
    crate::mask::register(twins::scalar_texts(&value));
    Ok(rhai::serde::to_dynamic(value)?)
}

fn secrets_seal(s: &Session, rel: &str, encrypt: bool) -> Result<String> {
    use crate::secrets::{crypt, twins};
    let plain = project_path(s, rel)?;
    let enc_name = twins::twin_name(rel);
    let enc = project_path(s, &enc_name)?;
    let kind = twins::Kind::of_file(rel);
    let id = key(s)?;
    if encrypt {
        let text = fsutil::read_text(&plain)?;
        twins::check(kind, &text, rel)?;
        let previous = if enc.exists() {
            Some(fsutil::read_text(&enc)?)
        } else {
            None
        };
        let out = crypt::encrypt_yaml(&id, &text, rel, previous.as_deref())?;
        fsutil::write_atomic(&enc, out.as_bytes(), fsutil::Mode::Secret)?;
        Ok(enc.display().to_string())
    } else {
        let out = crypt::decrypt_yaml(&id, &fsutil::read_text(&enc)?, &enc_name)?;
        twins::check(kind, &out, &enc_name)?;
        if plain.exists() {
            let lost = twins::losses(&fsutil::read_text(&plain)?, &out);
            if !lost.is_empty() {
                let list: Vec<String> = lost.iter().map(|l| format!("  {l}")).collect();
                return Err(crate::error::hinted(
                    format!(
                        "refusing to overwrite {rel}: it holds {} value(s) that {enc_name} does not:\n{}",
                        lost.len(),
                        list.join("\n")
                    ),
                    format!("secrets::encrypt(\"{rel}\") first to keep them, or `talm init --decrypt --force` to replace {rel}"),
                ));
            }
        }
        fsutil::write_atomic(&plain, out.as_bytes(), fsutil::Mode::Secret)?;
        Ok(plain.display().to_string())
    }
}

/// A project file path: relative paths are taken from the project root; links are followed
/// and must stay inside it.
fn project_path(s: &Session, rel: &str) -> Result<PathBuf> {
    confine::inside(&s.root()?, rel)
}

/// `secrets::load`, `secrets::encrypt`, `secrets::decrypt` over project files (added to the
/// `secrets` module by `local::secrets`).
pub fn add_secret_files(sec: &mut Module, session: &Session) {
    FuncRegistration::new("load")
        .with_comments(["/// A project secrets file as a map: the plain file, or its encrypted twin (`secrets.encrypted.yaml` for `secrets.yaml`, `talosconfig.encrypted` for `talosconfig`) opened with talm.key; its values are masked in every message."])
        .set_into_module(sec, { let s = session.clone(); move |rel: &str| native(|| secrets_load(&s, rel)) });
    FuncRegistration::new("encrypt")
        .with_comments(["/// Writes the encrypted twin (0600; `x.encrypted.yaml` for `x.yaml`, else `x.encrypted`) from the plain project file with talm.key, after checking the plain file is whole; returns its path."])
        .set_into_module(sec, { let s = session.clone(); move |rel: &str| native(|| secrets_seal(&s, rel, true)) });
    FuncRegistration::new("decrypt")
        .with_comments(["/// Writes the plain project file (0600) from its encrypted twin with talm.key; refused when the plain file holds what the twin does not. Returns its path."])
        .set_into_module(sec, { let s = session.clone(); move |rel: &str| native(|| secrets_seal(&s, rel, false)) });
}

pub fn register(engine: &mut Engine, session: &Session) {
    FuncRegistration::new("talm")
        .with_comments(["/// Runs a talm command in this process: `talm([\"template\", \"-f\", \"nodes/node1.yaml\", \"-I\", \"-i\"])`; an error when it fails. Its paths are taken as the shell would take them (from the working directory, not confined to the project): a playbook is a program you chose to run, and it may create a project elsewhere (`init --root DIR`). The project helpers (`file::`, `project::`, `secrets::`, `kubeconfig`, `copy_to`) are confined to the project."])
        .register_into_engine(engine, {
            let s = session.clone();
            move |args: Array| native(|| talm(&s, args))
        });
    FuncRegistration::new("template_file")
        .with_comments(["/// `talm template -f path -I` (with `#{insecure}`): renders the node file's templates against its node and rewrites it in place."])
        .register_into_engine(engine, { let session = session.clone(); move |path: &str, opts: Map| {
            native(|| {
                let o = TemplateFileOpts::read(&opts)?;
                let mut a: Array = ["template", "-f", path, "-I"].iter().map(|s| Dynamic::from(s.to_string())).collect();
                if o.insecure {
                    a.push("-i".into());
                }
                talm(&session, a)
            })
        }});
    FuncRegistration::new("apply_file")
        .with_comments([
            "/// `talm apply -f path` with `#{insecure, mode, dry_run, side_patches}`.",
        ])
        .register_into_engine(engine, {
            let session = session.clone();
            move |path: &str, opts: Map| {
                native(|| {
                    let o = ApplyFileOpts::read(&opts)?;
                    let mut a: Array = ["apply", "-f", path]
                        .iter()
                        .map(|s| Dynamic::from(s.to_string()))
                        .collect();
                    for s in o.side_patches {
                        a.push("-f".into());
                        a.push(s.into());
                    }
                    if o.insecure {
                        a.push("-i".into());
                    }
                    if o.dry_run {
                        a.push("--dry-run".into());
                    }
                    if !o.mode.is_empty() {
                        a.push("-m".into());
                        a.push(o.mode.into());
                    }
                    talm(&session, a)
                })
            }
        });
    FuncRegistration::new("use_project")
        .with_comments(["/// Makes the talm project at `root` the one `project()`, `file::`, `project::` and `node()` work in (after creating it with `talm([\"init\", ...])`); a folder that is not a talm project (Chart.yaml and secrets) is refused."])
        .register_into_engine(engine, { let s = session.clone(); move |root: &str| {
            native(|| s.switch_project(root))
        } });
    FuncRegistration::new("project")
        .with_comments(["/// The project: #{root, values (values.yaml), chart (Chart.yaml), nodes (the node files under nodes/)}."])
        .register_into_engine(engine, { let s = session.clone(); move || {
            native(|| {
                let r = s.root()?;
                let mut m = Map::new();
                let read = |rel: &str| -> Result<Dynamic> {
                    let p = confine::inside(&r, rel)?;
                    if !p.exists() {
                        return Ok(Map::new().into());
                    }
                    Ok(rhai::serde::to_dynamic(crate::yaml::parse(&fsutil::read_text(&p)?, rel)?)?)
                };
                m.insert("root".into(), r.clone().into());
                m.insert("values".into(), read("values.yaml")?);
                m.insert("chart".into(), read("Chart.yaml")?);
                let mut nodes: Array = Vec::new();
                let dir = Path::new(&r).join("nodes");
                if dir.is_dir() {
                    for (rel, _) in fsutil::files_below(&dir)? {
                        if rel.ends_with(".yaml") || rel.ends_with(".yml") {
                            nodes.push(format!("nodes/{rel}").into());
                        }
                    }
                }
                m.insert("nodes".into(), nodes.into());
                Ok(m)
            })
        } });
    FuncRegistration::new("kubeconfig")
        .with_comments([
            "/// Writes the node's admin kubeconfig to a project file (0600) and returns its path.",
        ])
        .register_into_engine(engine, {
            let s = session.clone();
            move |n: &mut crate::runtime::node::Node, rel: &str| {
                native(|| {
                    let path = project_path(&s, rel)?;
                    let text = crate::runtime::node::kubeconfig_text(n)?;
                    fsutil::write_atomic(&path, text.as_bytes(), fsutil::Mode::Secret)?;
                    Ok(path.display().to_string())
                })
            }
        });
    FuncRegistration::new("render")
        .with_comments(["/// Renders the project's templates for a node: `opts` has `template` (or `templates`), `node` (a Node, discovered now) or `facts` (a discovery map or a facts file), `set` (Helm-style `a.b=c` strings), `talos_version`, `kubernetes_version`, `full`, `offline`. Returns the YAML text."])
        .register_into_engine(engine, { let s = session.clone(); move |opts: Map| native(|| render(&s, RenderOpts::read(&opts)?)) });
    FuncRegistration::new("nodes_of")
        .with_comments(["/// The nodes of a node file's modeline, reached through its endpoints."])
        .register_into_engine(engine, {
            let s = session.clone();
            move |file: &str| {
                native(|| {
                    crate::runtime::node::targets(
                        &s,
                        &crate::runtime::node::opts::TargetsOpts {
                            files: vec![file.to_string()],
                            ..Default::default()
                        },
                    )
                })
            }
        });
    let mut f = Module::new();
    FuncRegistration::new("read")
        .with_comments([
            "/// A project file's text (paths inside the project only, symbolic links included).",
        ])
        .set_into_module(&mut f, {
            let s = session.clone();
            move |rel: &str| native(|| fsutil::read_text(&project_path(&s, rel)?))
        });
    FuncRegistration::new("write")
        .with_comments(["/// Writes a project file atomically (paths inside the project only, symbolic links included)."])
        .set_into_module(&mut f, { let s = session.clone(); move |rel: &str, content: &str| {
            native(|| {
                fsutil::write_atomic(
                    &project_path(&s, rel)?,
                    content.as_bytes(),
                    fsutil::Mode::Public,
                )
            })
        } });
    FuncRegistration::new("exists")
        .with_comments(["/// Whether a project file exists (paths inside the project only, symbolic links included)."])
        .set_into_module(&mut f, { let s = session.clone(); move |rel: &str| {
            native(|| Ok(project_path(&s, rel)?.exists()))
        } });
    engine.register_static_module("file", f.into());
}
