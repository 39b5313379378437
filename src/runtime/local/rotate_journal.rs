//! `rotate_journal::` script functions: `talm rotate-ca`'s journal (`project::rotation`) as
//! scripts see it: started before the first node is touched, told each node and step done (each
//! time written whole), read back by a rerun to resume, and removed when the rotation is done.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::project::rotation::{Ca, CaPair, Change, Flags, Rotation};
use crate::project::txn::pause_point;
use crate::runtime::native;
use crate::runtime::session::Session;

/// A rotation's journal, shared between the script and the runtime, and where it is kept.
#[derive(Clone)]
pub struct Journal {
    root: PathBuf,
    state: Arc<Mutex<Rotation>>,
}

impl Journal {
    fn lock(&self) -> std::sync::MutexGuard<'_, Rotation> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Changes the journal with `f`, then writes it.
    fn update<T>(&self, f: impl FnOnce(&mut Rotation) -> T) -> Result<(T, Rotation)> {
        let mut state = self.lock();
        let out = f(&mut state);
        state.save(&self.root)?;
        Ok((out, state.clone()))
    }
}

fn field<'a>(m: &'a Map, key: &str, what: &str) -> Result<&'a Dynamic> {
    m.get(key)
        .ok_or_else(|| anyhow!("{what}: the map has no `{key}`"))
}

fn text_of(m: &Map, key: &str, what: &str) -> Result<String> {
    field(m, key, what)?
        .clone()
        .into_string()
        .map_err(|t| anyhow!("{what}.{key} is {t}, not a string"))
}

fn strings_of(m: &Map, key: &str, what: &str) -> Result<Vec<String>> {
    field(m, key, what)?
        .clone()
        .into_typed_array::<String>()
        .map_err(|t| anyhow!("{what}.{key} is not a list of strings ({t})"))
}

fn bool_of(m: &Map, key: &str, what: &str) -> Result<bool> {
    field(m, key, what)?
        .as_bool()
        .map_err(|t| anyhow!("{what}.{key} is {t}, not a bool"))
}

/// #{talos, kubernetes, control_plane_nodes, worker_nodes} as the journal keeps them.
fn flags_of(m: &Map) -> Result<Flags> {
    Ok(Flags {
        talos: bool_of(m, "talos", "flags")?,
        kubernetes: bool_of(m, "kubernetes", "flags")?,
        control_plane_nodes: strings_of(m, "control_plane_nodes", "flags")?,
        worker_nodes: strings_of(m, "worker_nodes", "flags")?,
    })
}

fn pair_of(d: &Dynamic, what: &str) -> Result<CaPair> {
    let m = d
        .read_lock::<Map>()
        .ok_or_else(|| anyhow!("{what} is not a map #{{crt, key}}"))?;
    Ok(CaPair {
        crt: text_of(&m, "crt", what)?,
        key: text_of(&m, "key", what)?,
    })
}

/// #{old: #{crt, key}, fresh: #{crt, key}} (`new` is a Rhai keyword), or () for a CA not
/// rotated.
fn change_of(d: &Dynamic, what: &str) -> Result<Option<Change>> {
    if d.is_unit() {
        return Ok(None);
    }
    let m = d
        .read_lock::<Map>()
        .ok_or_else(|| anyhow!("{what} is not a map #{{old, fresh}} or ()"))?;
    Ok(Some(Change {
        old: pair_of(field(&m, "old", what)?, &format!("{what}.old"))?,
        new: pair_of(field(&m, "fresh", what)?, &format!("{what}.fresh"))?,
    }))
}

fn pair_map(p: &CaPair) -> Map {
    let mut m = Map::new();
    m.insert("crt".into(), p.crt.clone().into());
    m.insert("key".into(), p.key.clone().into());
    m
}

fn change_map(c: &Change) -> Dynamic {
    let mut m = Map::new();
    m.insert("old".into(), pair_map(&c.old).into());
    m.insert("fresh".into(), pair_map(&c.new).into());
    m.into()
}

fn strings(list: &[String]) -> Array {
    list.iter().cloned().map(Dynamic::from).collect()
}

/// Starts a journal from the script's #{flags, talos, kubernetes, talosconfig}, written at once.
fn start(root: &str, spec: &Map) -> Result<Journal> {
    let flags = field(spec, "flags", "the rotation")?;
    let flags = flags
        .read_lock::<Map>()
        .ok_or_else(|| anyhow!("the rotation's flags are not a map"))?;
    let flags = flags_of(&flags)?;
    let r = Rotation::new(
        flags,
        change_of(field(spec, "talos", "the rotation")?, "talos")?,
        change_of(field(spec, "kubernetes", "the rotation")?, "kubernetes")?,
        text_of(spec, "talosconfig", "the rotation")?,
    )?;
    r.save(Path::new(root))?;
    Ok(Journal {
        root: PathBuf::from(root),
        state: Arc::new(Mutex::new(r)),
    })
}

fn load(root: &str) -> Result<Dynamic> {
    Ok(match Rotation::load(Path::new(root))? {
        Some(r) => Dynamic::from(Journal {
            root: PathBuf::from(root),
            state: Arc::new(Mutex::new(r)),
        }),
        None => Dynamic::UNIT,
    })
}

/// Records `node` done in the current step; then the test-only pause point
/// `rotate-ca <ca> step <n> node <count done>`.
fn node_done(j: &Journal, node: &str) -> Result<()> {
    let ((), now) = j.update(|r| r.node_done(node))?;
    pause_point(&format!(
        "rotate-ca {} step {} node {}",
        now.at.ca.name(),
        now.at.step,
        now.at.done.len()
    ));
    Ok(())
}

pub fn register(engine: &mut Engine, session: &Session) {
    let mut m = Module::new();
    FuncRegistration::new("load")
        .with_comments(["/// The journal of the rotate-ca unfinished in the project `root` (.talm/rotate-ca.yaml), or () when there is none."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str| {
                native(|| {
                    s.check_inside("rotate_journal::load", root)?;
                    load(root)
                })
            }
        });
    FuncRegistration::new("start")
        .with_comments(["/// Starts the journal of a rotation in the project `root` from #{flags: #{talos, kubernetes, control_plane_nodes, worker_nodes}, talos, kubernetes (each #{old: #{crt, key}, fresh: #{crt, key}} or ()), talosconfig}; written (0600) before it returns."])
        .set_into_module(&mut m, {
            let s = session.clone();
            move |root: &str, spec: Map| {
                native(|| {
                    s.check_inside("rotate_journal::start", root)?;
                    start(root, &spec)
                })
            }
        });
    FuncRegistration::new("step_name")
        .with_comments(["/// What rotate-ca prints as it starts `step` (1 to 3) of the CA \"talos\" or \"kubernetes\"."])
        .set_into_module(&mut m, |ca: &str, step: i64| {
            native(|| Ok(Ca::parse(ca)?.step_name(u8::try_from(step).unwrap_or(0))))
        });
    engine.register_static_module("rotate_journal", m.into());

    engine.register_type_with_name::<Journal>("RotationJournal");
    engine.register_get("ca", |j: &mut Journal| j.lock().at.ca.name().to_string());
    engine.register_get("step", |j: &mut Journal| i64::from(j.lock().at.step));
    engine.register_get("done", |j: &mut Journal| strings(&j.lock().at.done));
    engine.register_get("talosconfig", |j: &mut Journal| {
        j.lock().talosconfig.clone()
    });
    engine.register_get("control_plane_nodes", |j: &mut Journal| {
        strings(&j.lock().flags.control_plane_nodes)
    });
    engine.register_get("worker_nodes", |j: &mut Journal| {
        strings(&j.lock().flags.worker_nodes)
    });
    engine.register_get("resume_line", |j: &mut Journal| j.lock().resume_line());
    FuncRegistration::new("change")
        .with_comments(["/// The journaled change of the CA \"talos\" or \"kubernetes\": #{old: #{crt, key}, fresh: #{crt, key}}, or () when it is not rotated."])
        .register_into_engine(engine, |j: &mut Journal, ca: &str| {
            native(|| {
                let ca = Ca::parse(ca)?;
                Ok(j.lock().change(ca).map(change_map).unwrap_or(Dynamic::UNIT))
            })
        });
    FuncRegistration::new("check_flags")
        .with_comments(["/// Fails, naming the journal, when #{talos, kubernetes, control_plane_nodes, worker_nodes} contradict the flags the rotation was started with."])
        .register_into_engine(engine, |j: &mut Journal, flags: Map| {
            native(|| j.lock().check_flags(&flags_of(&flags)?))
        });
    FuncRegistration::new("refuse_dry_run")
        .with_comments(["/// Fails: a dry run cannot show an unfinished rotation."])
        .register_into_engine(engine, |j: &mut Journal| {
            native(|| j.lock().refuse_dry_run())
        });
    FuncRegistration::new("node_done")
        .with_comments([
            "/// Journals the current step done on `node` (written before it returns).",
        ])
        .register_into_engine(engine, |j: &mut Journal, node: &str| {
            native(|| node_done(j, node))
        });
    FuncRegistration::new("advance")
        .with_comments(["/// Journals the current step done on every node: the next step, or the first of the next CA; false when the rotation's last step was the current one."])
        .register_into_engine(engine, |j: &mut Journal| {
            native(|| Ok(j.update(|r| r.advance())?.0))
        });
    FuncRegistration::new("finish")
        .with_comments(["/// The rotation is done: removes its journal."])
        .register_into_engine(engine, |j: &mut Journal| {
            native(|| Rotation::remove(&j.root))
        });
}
