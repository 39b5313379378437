//! `migrate::` script functions behind `talm migrate`: detection of a Go-talm project, the
//! plan, custom template edits, the staging copy the node proof renders through, the
//! comparison, and the backup-then-switch.

use std::path::Path;
use std::sync::Arc;

use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::project::migrate::{detect, edits, plan, switch};
use crate::runtime::native;

/// A staging copy made by `migrate::stage` (`switch::Staged`): removed when the script lets
/// go of it, however the script ends (a failure included), since it holds copies of the
/// project's secrets; a killed run's copy goes at the next talm run in the project.
#[derive(Clone)]
pub struct Stage(Arc<switch::Staged>);

pub fn register(engine: &mut Engine) {
    engine.register_type_with_name::<Stage>("Stage");
    FuncRegistration::new("path")
        .with_comments(["/// The folder of a staging copy."])
        .with_namespace(rhai::FnNamespace::Global)
        .register_into_engine(engine, |s: &mut Stage| s.0.path().display().to_string());
    let mut m = Module::new();
    FuncRegistration::new("detect")
        .with_comments(["/// What the project at `root` is (`preset`: the --preset flag or \"\"): #{from_go (bool), preset, report}."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| {
                let d = detect::detect(Path::new(root), preset)?;
                let mut out = Map::new();
                out.insert("from_go".into(), (d.kind == detect::Kind::Go).into());
                out.insert("preset".into(), d.preset.clone().into());
                out.insert("report".into(), d.report().into());
                Ok(out)
            })
        });
    FuncRegistration::new("plan")
        .with_comments(["/// The migration plan of the project at `root` as printed (what is replaced, written, kept; Chart.yaml; values keys)."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| {
                let d = detect::detect(Path::new(root), preset)?;
                plan::report(Path::new(root), &d)
            })
        });
    FuncRegistration::new("edits")
        .with_comments(["/// Custom edits of the Go templates: #{any (bool), report (hunks with file and line, where each goes in talm)}."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| {
                let d = detect::detect(Path::new(root), preset)?;
                let e = edits::find(Path::new(root), &d.tree, &d.preset)?;
                let mut out = Map::new();
                out.insert("any".into(), e.any().into());
                out.insert("report".into(), e.report().into());
                Ok(out)
            })
        });
    FuncRegistration::new("save_edits")
        .with_comments(["/// Saves the edited and extra Go template files and the edit report under a new `migrate/edits-<ts>/`; returns its project-relative path."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| {
                let d = detect::detect(Path::new(root), preset)?;
                let e = edits::find(Path::new(root), &d.tree, &d.preset)?;
                e.save(Path::new(root), &d.tree)
            })
        });
    FuncRegistration::new("stage")
        .with_comments(["/// A private copy of the project's render inputs with talm's templates of `preset`, in a git-ignored 0700 folder inside the project (`.path()` is its root); it is removed when the script drops it or ends."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| Ok(Stage(Arc::new(switch::stage(Path::new(root), preset)?))))
        });
    FuncRegistration::new("node_files")
        .with_comments(["/// The project's node files (nodes/*.yaml), absolute paths, sorted."])
        .set_into_module(&mut m, |root: &str| {
            native(|| {
                Ok(switch::node_files(Path::new(root))?
                    .into_iter()
                    .map(Dynamic::from)
                    .collect::<Array>())
            })
        });
    FuncRegistration::new("compare")
        .with_comments(["/// `before` (a node file's body, or the node's running config) against `after` (talm's render), as documents: \"\" when the same, else the drift preview headed with `node`."])
        .set_into_module(&mut m, |before: &str, after: &str, node: &str| {
            native(|| Ok(switch::compare(before, after, node)?.unwrap_or_default()))
        });
    FuncRegistration::new("carry_out")
        .with_comments(["/// Backs up templates/, charts/ and the Go lock under migrate/backup-<ts>/, then writes talm's templates, library, lock and baseline in one transaction; returns the backup's path."])
        .set_into_module(&mut m, |root: &str, preset: &str| {
            native(|| {
                let d = detect::detect(Path::new(root), preset)?;
                switch::switch(Path::new(root), &d)
            })
        });
    engine.register_static_module("migrate", m.into());
}
