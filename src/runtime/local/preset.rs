//! `preset::` script functions: the embedded presets and library, stamping and overrides,
//! the lock and merge baseline, and the three-way merge used by `init --update`.

use std::collections::BTreeMap;

use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::project::merge::{self, Merged};
use crate::project::{lock, presets};
use crate::runtime::native;

fn to_map(files: BTreeMap<String, String>) -> Map {
    files
        .into_iter()
        .map(|(k, v)| (k.into(), Dynamic::from(v)))
        .collect()
}

fn from_map(m: &Map) -> BTreeMap<String, String> {
    m.iter()
        .filter_map(|(k, v)| v.clone().into_string().ok().map(|s| (k.to_string(), s)))
        .collect()
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("names")
        .with_comments(["/// The presets this binary carries, generic first."])
        .set_into_module(&mut m, || {
            presets::names()
                .into_iter()
                .map(Dynamic::from)
                .collect::<Array>()
        });
    FuncRegistration::new("check")
        .with_comments(["/// Fails unless `name` is an embedded preset."])
        .set_into_module(&mut m, |name: &str| native(|| presets::check(name)));
    FuncRegistration::new("files")
        .with_comments(["/// The preset's files keyed by project path, Chart.yaml stamped with `cluster` and this talm's version."])
        .set_into_module(&mut m, |name: &str, cluster: &str| {
            native(|| {
                presets::check(name)?;
                Ok(to_map(presets::stamped_preset(name, cluster, &crate::version::chart_version())))
            })
        });
    FuncRegistration::new("library")
        .with_comments(["/// The library chart's files keyed by project path (`charts/talm/...`)."])
        .set_into_module(&mut m, || {
            to_map(presets::vendored_library(&crate::version::chart_version()))
        });
    FuncRegistration::new("declares_image")
        .with_comments(["/// Whether a values.yaml text has a top-level `image:` line."])
        .set_into_module(&mut m, |values: &str| presets::declares_image(values));
    FuncRegistration::new("override")
        .with_comments(["/// values.yaml text with every top-level `key:` line set to the quoted `value`; comments kept."])
        .set_into_module(&mut m, |values: &str, key: &str, value: &str| {
            presets::override_value(values, key, value)
        });
    FuncRegistration::new("restamp")
        .with_comments(["/// Chart.yaml text with its top-level name and version replaced."])
        .set_into_module(&mut m, |chart: &str, name: &str, version: &str| {
            presets::stamp_chart(chart, name, version)
        });
    FuncRegistration::new("lock")
        .with_comments(["/// The `.talm-preset.lock` text for the preset."])
        .set_into_module(&mut m, |name: &str| {
            native(|| Ok(lock::render(name, &presets::preset_hash(name)?)))
        });
    FuncRegistration::new("read_lock")
        .with_comments([
            "/// The preset recorded in a `.talm-preset.lock` text (\"\" if unreadable).",
        ])
        .set_into_module(&mut m, |text: &str| {
            lock::parse(text).map(|l| l.preset).unwrap_or_default()
        });
    FuncRegistration::new("base")
        .with_comments(["/// The `.talm-preset.base` text holding the merge baseline of `files`."])
        .set_into_module(&mut m, |files: Map| lock::render_base(&from_map(&files)));
    FuncRegistration::new("parse_base")
        .with_comments(["/// The files recorded in a `.talm-preset.base` text."])
        .set_into_module(&mut m, |text: &str| {
            native(|| Ok(to_map(lock::parse_base(text)?)))
        });
    FuncRegistration::new("load_base")
        .with_comments(["/// The files recorded in the `.talm-preset.base` of the project at `root` (none when it is missing); a damaged file (not YAML, not UTF-8, wrong entries) is an error that says how to rebuild it."])
        .set_into_module(&mut m, |root: &str| {
            native(|| {
                let path = crate::project::confine::inside(root, lock::BASE_FILE)?;
                let bytes = match crate::input::try_read(&path, crate::input::Kind::Text) {
                    Ok(b) => Some(b),
                    Err(e) if e.missing() => None,
                    Err(e) => return Err(e.into_error()),
                };
                Ok(to_map(lock::read_base(bytes.as_deref())?))
            })
        });
    FuncRegistration::new("merged_files")
        .with_comments(["/// The files merged three-way on update (Chart.yaml, values.yaml)."])
        .set_into_module(&mut m, || {
            lock::MERGED_FILES
                .iter()
                .map(|f| Dynamic::from(f.to_string()))
                .collect::<Array>()
        });
    FuncRegistration::new("merge")
        .with_comments(["/// Three-way merge: #{clean, text, marked}; on conflict `text` keeps the user's lines."])
        .set_into_module(&mut m, |base: &str, user: &str, new: &str| {
            let mut out = Map::new();
            match merge::three_way(base, user, new) {
                Merged::Clean(text) => {
                    out.insert("clean".into(), true.into());
                    out.insert("text".into(), text.into());
                    out.insert("marked".into(), "".into());
                }
                Merged::Conflict { keep_user, marked } => {
                    out.insert("clean".into(), false.into());
                    out.insert("text".into(), keep_user.into());
                    out.insert("marked".into(), marked.into());
                }
            }
            out
        });
    FuncRegistration::new("diff")
        .with_comments(["/// A unified diff from `old` to `new`, labelled with `path`."])
        .set_into_module(&mut m, |path: &str, old: &str, new: &str| {
            let patch = diffy::create_patch(old, new);
            let text = diffy::PatchFormatter::new().fmt_patch(&patch).to_string();
            text.replacen("--- original", &format!("--- {path} (yours)"), 1)
                .replacen("+++ modified", &format!("+++ {path} (preset)"), 1)
        });
    engine.register_static_module("preset", m.into());
}
