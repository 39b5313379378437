//! `project::` script functions: the project root, reading files inside it (links followed and
//! kept inside, `confine`), and the write plan (`project::plan(root)`) that carries out all
//! writes of a command at its end. In a playbook every root and file they name must lie inside
//! the session's project (`Session::check_inside`).

use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use rhai::{Array, Dynamic, Engine, FuncRegistration, Module};

use crate::project::confine::inside;
use crate::project::fsutil::{self, Mode, Plan};
use crate::project::{chart::Chart, drift, gitignore, modeline, root};
use crate::runtime::native;
use crate::runtime::session::Session;

fn new_plan(root: &str, label: &str) -> PlanHandle {
    PlanHandle {
        root: root.to_string(),
        plan: Arc::new(Mutex::new(Plan::new(Path::new(root), label))),
    }
}

/// `root` once the session allows it: any folder for a bundled command, a folder inside the
/// project for a playbook (`what` names the native in the refusal).
fn confined(s: &Session, what: &str, root: &str) -> Result<String> {
    s.check_inside(what, root)?;
    Ok(root.to_string())
}

/// `path` (absolute, or from the working directory) relative to the project `root`, refused
/// when it leads outside the project lexically or through links.
fn relative(root: &str, path: &str) -> Result<String> {
    let abs = root::absolute(Path::new(path))?;
    let rel = abs.strip_prefix(root).map_err(|_| {
        crate::error::hinted(
            format!("{path} is outside the project at {root}"),
            "pass files of this project",
        )
    })?;
    let rel = rel.display().to_string();
    inside(root, &rel)?;
    Ok(rel)
}

/// A plan shared between the script and the runtime.
#[derive(Clone)]
pub struct PlanHandle {
    root: String,
    plan: Arc<Mutex<Plan>>,
}

fn lock(p: &PlanHandle) -> std::sync::MutexGuard<'_, Plan> {
    p.plan.lock().unwrap_or_else(|e| e.into_inner())
}

/// `-f` arguments with folders replaced by the *.yaml / *.yml files below them.
pub fn expand_files(paths: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for p in paths {
        let path = Path::new(p);
        if !path.is_dir() {
            out.push(p.clone());
            continue;
        }
        let found: Vec<_> = fsutil::files_below(path)?
            .into_iter()
            .filter(|(rel, _)| rel.ends_with(".yaml") || rel.ends_with(".yml"))
            .collect();
        if found.is_empty() {
            return Err(crate::error::hinted(
                format!("no YAML files found in directory {p}"),
                "pass node files, or a folder holding them",
            ));
        }
        out.extend(
            found
                .into_iter()
                .map(|(_, full)| full.display().to_string()),
        );
    }
    Ok(out)
}

pub fn register(engine: &mut Engine, session: &Session) {
    let mut m = Module::new();
    FuncRegistration::new("find_root")
        .with_comments(["/// The nearest folder at or above `start` holding Chart.yaml and secrets.yaml (or secrets.encrypted.yaml); \"\" when there is none."])
        .set_into_module(&mut m, |start: &str| {
            native(|| {
                Ok(root::detect(Path::new(start))?
                    .map(|p| p.display().to_string())
                    .unwrap_or_default())
            })
        });
    FuncRegistration::new("abs")
        .with_comments(["/// `path` made absolute against the current directory."])
        .set_into_module(&mut m, |path: &str| {
            native(|| Ok(root::absolute(Path::new(path))?.display().to_string()))
        });
    FuncRegistration::new("exclusive")
        .with_comments(["/// Takes the folder `dir` for this run (made if missing): another talm run that takes it waits, saying so, until this one ends. Keep the result in a variable for as long as the run reads, decides and writes there (`let held = project::exclusive(dir);`)."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |dir: &str| {
                native(|| {
                    let dir = confined(&s, "project::exclusive", dir)?;
                    let held = crate::project::exclusive::take(Path::new(&dir))?;
                    Ok(Dynamic::from(std::sync::Arc::new(held)))
                })
            }
        });
    FuncRegistration::new("exists")
        .with_comments(["/// Whether `rel` exists inside the project `root`."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, rel: &str| {
                native(|| Ok(inside(&confined(&s, "project::exists", root)?, rel)?.exists()))
            }
        });
    FuncRegistration::new("read")
        .with_comments(["/// The text of `rel` inside the project `root`."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, rel: &str| {
                native(|| {
                    let path = inside(&confined(&s, "project::read", root)?, rel)?;
                    let text = fsutil::read_text(&path)?;
                    if path.file_name()
                        == Some(std::ffi::OsStr::new(crate::secrets::crypt::KEY_FILE))
                    {
                        crate::secrets::crypt::check_key_mode(&path);
                    }
                    Ok(text)
                })
            }
        });
    FuncRegistration::new("existing")
        .with_comments(["/// Which of the paths `rels` already exist under `root`, sorted."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, rels: Array| {
                native(|| {
                    let root = &confined(&s, "project::existing", root)?;
                    let mut found = Vec::new();
                    for r in rels {
                        let rel = r
                            .into_string()
                            .map_err(|t| anyhow::anyhow!("expected a path, got {t}"))?;
                        if inside(root, &rel)?.exists() {
                            found.push(rel);
                        }
                    }
                    found.sort();
                    Ok(found.into_iter().map(Dynamic::from).collect::<Array>())
                })
            }
        });
    FuncRegistration::new("files_under")
        .with_comments([
            "/// Every file below `rel` inside `root`, as root-relative paths, sorted.",
        ])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, rel: &str| {
                native(|| {
                    let base = inside(&confined(&s, "project::files_under", root)?, rel)?;
                    let mut out = Array::new();
                    if base.is_dir() {
                        for (sub, _) in fsutil::files_below(&base)? {
                            out.push(Dynamic::from(format!(
                                "{}/{sub}",
                                rel.trim_end_matches('/')
                            )));
                        }
                    }
                    Ok(out)
                })
            }
        });
    FuncRegistration::new("chart")
        .with_comments(["/// The talm options of `<root>/Chart.yaml` (name, strictCharts, kubeconfig, talosconfig, secrets)."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str| {
            native(|| {
                let c = Chart::load(Path::new(&confined(&s, "project::chart", root)?))?;
                let mut map = rhai::Map::new();
                map.insert("name".into(), c.name.clone().into());
                map.insert("strict".into(), c.strict_charts.into());
                map.insert("kubeconfig".into(), c.kubeconfig().into());
                map.insert("talosconfig".into(), c.talosconfig().into());
                map.insert("secrets".into(), c.secrets().into());
                map.insert("talos_version".into(), c.template.talos_version.clone().into());
                map.insert("offline".into(), c.template.offline.into());
                map.insert("gen_debug".into(), c.template.debug.into());
                let files: Array = c.template.value_files.iter().cloned().map(Dynamic::from).collect();
                map.insert("value_files".into(), files.into());
                Ok(map)
            })
        } });
    FuncRegistration::new("check_drift")
        .with_comments(["/// Warns (or, when `strict`, fails) when the project's library or preset differs from this binary's."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str, strict: bool| {
            native(|| drift::check(Path::new(&confined(&s, "project::check_drift", root)?), strict))
        } });
    FuncRegistration::new("gitignore")
        .with_comments([
            "/// The updated .gitignore text for `root`, or () when nothing is missing.",
        ])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, kubeconfig: &str| {
                native(|| {
                    let path = inside(&confined(&s, "project::gitignore", root)?, ".gitignore")?;
                    let existing = if path.exists() {
                        Some(fsutil::read_text(&path)?)
                    } else {
                        None
                    };
                    Ok(gitignore::update(existing.as_deref(), kubeconfig)
                        .map(Dynamic::from)
                        .unwrap_or(Dynamic::UNIT))
                })
            }
        });
    FuncRegistration::new("node_file")
        .with_comments(["/// A node file taken apart: #{leading (comment lines above the modeline), nodes, endpoints, templates, body}."])
        .set_into_module(&mut m, { let s = session.clone(); move |path: &str| {
            native(|| {
                let text = fsutil::read_text(Path::new(&confined(&s, "project::node_file", path)?))
                    .map_err(|e| anyhow::anyhow!("error opening config file: {e}"))?;
                let nf = modeline::find(&text, path)?;
                let arr = |v: Vec<String>| v.into_iter().map(Dynamic::from).collect::<Array>();
                let mut out = rhai::Map::new();
                out.insert("leading".into(), arr(nf.leading).into());
                out.insert("nodes".into(), arr(nf.modeline.nodes).into());
                out.insert("endpoints".into(), arr(nf.modeline.endpoints).into());
                out.insert("templates".into(), arr(nf.modeline.templates).into());
                out.insert("body".into(), nf.body.into());
                Ok(out)
            })
        } });
    FuncRegistration::new("peek_node_file")
        .with_comments(["/// A file of an apply chain: #{modeline: bool, nodes, endpoints, templates, body, empty}; without a modeline the whole text is the body. A malformed modeline is an error."])
        .set_into_module(&mut m, { let s = session.clone(); move |path: &str| {
            native(|| {
                let text = fsutil::read_text(Path::new(&confined(&s, "project::peek_node_file", path)?))
                    .map_err(|e| anyhow::anyhow!("error opening config file: {e}"))?;
                let arr = |v: Vec<String>| v.into_iter().map(Dynamic::from).collect::<Array>();
                let mut out = rhai::Map::new();
                let has = text.lines().any(|l| l.trim_start().starts_with("# talm:"));
                let (nodes, endpoints, templates, body) = if has {
                    let nf = modeline::find(&text, path)?;
                    (nf.modeline.nodes, nf.modeline.endpoints, nf.modeline.templates, nf.body)
                } else {
                    (vec![], vec![], vec![], text.clone())
                };
                out.insert("modeline".into(), has.into());
                out.insert("empty".into(), crate::config::nodebody::effectively_empty(&body).into());
                out.insert("nodes".into(), arr(nodes).into());
                out.insert("endpoints".into(), arr(endpoints).into());
                out.insert("templates".into(), arr(templates).into());
                out.insert("body".into(), body.into());
                Ok(out)
            })
        } });
    FuncRegistration::new("modeline")
        .with_comments(["/// The modeline line for a node file."])
        .set_into_module(
            &mut m,
            |nodes: Array, endpoints: Array, templates: Array| {
                let s = |a: Array| {
                    a.into_iter()
                        .filter_map(|d| d.into_string().ok())
                        .collect::<Vec<_>>()
                };
                modeline::Modeline {
                    nodes: s(nodes),
                    endpoints: s(endpoints),
                    templates: s(templates),
                }
                .render()
            },
        );
    FuncRegistration::new("expand_files")
        .with_comments([
            "/// `-f` arguments with folders replaced by the *.yaml / *.yml files below them.",
        ])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |paths: Array| {
                native(|| {
                    let paths: Vec<String> = paths
                        .into_iter()
                        .filter_map(|d| d.into_string().ok())
                        .collect();
                    for p in &paths {
                        s.check_inside("project::expand_files", p)?;
                    }
                    Ok(expand_files(&paths)?
                        .into_iter()
                        .map(Dynamic::from)
                        .collect::<Array>())
                })
            }
        });
    FuncRegistration::new("split_path")
        .with_comments(["/// [folder, file name] of a path (the folder absolute)."])
        .set_into_module(&mut m, |path: &str| {
            native(|| {
                let abs = root::absolute(Path::new(path))?;
                let dir = abs
                    .parent()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default();
                let name = abs
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                Ok(vec![Dynamic::from(dir), Dynamic::from(name)])
            })
        });
    FuncRegistration::new("rel")
        .with_comments(["/// `path` relative to the project `root`; an error when it lies outside the project, lexically or through a symbolic link (a linked folder included)."])
        .set_into_module(&mut m, |root: &str, path: &str| native(|| relative(root, path)));
    FuncRegistration::new("plan")
        .with_comments(["/// A new, empty write plan for the project at `root`."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str| native(|| Ok(new_plan(&confined(&s, "project::plan", root)?, "talm")))
        });
    FuncRegistration::new("plan")
        .with_comments(["/// A new, empty write plan for the folder `root`; `label` names the command if a killed run's writes are completed later."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str, label: &str| {
            native(|| Ok(new_plan(&confined(&s, "project::plan", root)?, label)))
        } });
    FuncRegistration::new("recover")
        .with_comments(["/// Finishes or discards what killed talm runs left in the folder `root`; returns the commands whose interrupted writes were completed."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str| {
            native(|| {
                let r = crate::project::txn::recover(Path::new(&confined(&s, "project::recover", root)?))?;
                Ok(r.completed.into_iter().map(Dynamic::from).collect::<Array>())
            })
        } });
    engine.register_static_module("project", m.into());

    engine.register_type_with_name::<PlanHandle>("Plan");
    FuncRegistration::new("write")
        .with_comments(["/// Plans writing `content` to `rel` with mode \"secret\" (0600) or \"public\" (0644); `note` is printed when written."])
        .register_into_engine(engine, |p: &mut PlanHandle, rel: &str, content: &str, mode: &str, note: &str| {
            native(|| {
                let path = inside(&p.root, rel)?;
                lock(p).write(path, content, Mode::parse(mode)?, note);
                Ok(())
            })
        });
    FuncRegistration::new("mkdir")
        .with_comments(["/// Plans creating the folder `rel`."])
        .register_into_engine(engine, |p: &mut PlanHandle, rel: &str| {
            native(|| {
                let path = inside(&p.root, rel)?;
                lock(p).mkdir(path);
                Ok(())
            })
        });
    FuncRegistration::new("remove")
        .with_comments(["/// Plans removing the file `rel` (and folders it leaves empty)."])
        .register_into_engine(engine, |p: &mut PlanHandle, rel: &str, note: &str| {
            native(|| {
                let path = inside(&p.root, rel)?;
                lock(p).remove(path, note);
                Ok(())
            })
        });
    FuncRegistration::new("say")
        .with_comments(["/// Plans printing `note` on stderr when the plan reaches this point."])
        .register_into_engine(engine, |p: &mut PlanHandle, note: &str| lock(p).say(note));
    FuncRegistration::new("commit")
        .with_comments(["/// Carries out the plan; returns how many steps it took."])
        .register_into_engine(engine, |p: &mut PlanHandle| {
            native(|| Ok(lock(p).commit()? as i64))
        });
}
