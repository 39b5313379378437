//! Natives behind `talm support` that playbooks can use too: `archive::zip(path, entries)`
//! writes a ZIP archive atomically and 0600, only to a file the command line named (or inside
//! the project); `progress::bars(sources, opts)` shows how far each source (node) has got —
//! bars on a terminal, a line per finished source otherwise, a line per step when verbose; and
//! `n.resources_yaml(type, namespace, redact)` lists resources as the support bundle holds them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rhai::{Array, Blob, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::error::hinted;
use crate::project::fsutil;
use crate::runtime::native;
use crate::runtime::node::Node;
use crate::runtime::opts::options;
use crate::runtime::session::Session;
use crate::talos::{block_on, resources};

/// Where `path` may be written: a file the command line named as an output, or a path inside
/// the session's project (links followed).
fn writable(session: &Session, path: &str) -> Result<PathBuf> {
    session.named_or_inside(
        "archive::zip",
        path,
        "scripts write archives only where the user said: the command's output flag (e.g. talm support -O FILE) or the project folder",
    )
}

/// An entry's content: text or a blob.
fn bytes_of(name: &str, v: Dynamic) -> Result<Vec<u8>> {
    if v.is_blob() {
        return Ok(v.cast::<Blob>());
    }
    v.into_string().map(String::into_bytes).map_err(|t| {
        anyhow::anyhow!("archive entry {name:?}: content must be a string or a blob, not {t}")
    })
}

/// The entries of `archive::zip`: a map (name → content, in name order), or a list of
/// `[name, content]` pairs or `#{name, data}` maps (in their order).
fn entries_of(v: Dynamic) -> Result<Vec<(String, Vec<u8>)>> {
    if let Some(m) = v.clone().try_cast::<Map>() {
        return m
            .into_iter()
            .map(|(k, x)| Ok((k.to_string(), bytes_of(&k, x)?)))
            .collect();
    }
    let Some(list) = v.try_cast::<Array>() else {
        return Err(hinted(
            "archive::zip: entries must be a map or a list",
            "give #{\"dir/file\": text} or [[\"dir/file\", text], ...]",
        ));
    };
    list.into_iter()
        .map(|item| {
            let (name, data) = if let Some(pair) = item.clone().try_cast::<Array>() {
                let mut it = pair.into_iter();
                (it.next().unwrap_or_default(), it.next().unwrap_or_default())
            } else if let Some(m) = item.clone().try_cast::<Map>() {
                let get = |k: &str| m.get(k).cloned().unwrap_or_default();
                (get("name"), get("data"))
            } else {
                anyhow::bail!(
                    "archive::zip: entry {item} is neither [name, content] nor #{{name, data}}"
                );
            };
            let name = name.into_string().map_err(|t| {
                anyhow::anyhow!("archive::zip: entry name must be a string, not {t}")
            })?;
            let data = bytes_of(&name, data)?;
            Ok((name, data))
        })
        .collect()
}

fn zip(session: &Session, path: &str, entries: Dynamic) -> Result<i64> {
    let target = writable(session, path)?;
    if target.is_dir() {
        return Err(hinted(
            format!("archive::zip: {path} is a folder"),
            "name a file, e.g. -O support.zip",
        ));
    }
    let entries = entries_of(entries)?;
    let bytes = crate::zip::write(&entries, crate::zip::DosTime::now())?;
    fsutil::write_atomic(&target, &bytes, fsutil::Mode::Secret)?;
    Ok(entries.len() as i64)
}

options! {
    /// `progress::bars(sources, #{verbose})`.
    pub struct BarsOpts for "progress::bars" {
        /// A line per step instead of bars.
        verbose: bool,
    }
}

/// How progress is shown.
enum Show {
    /// A bar per source on the terminal.
    Bars(MultiProgress),
    /// A line when a source is done (not a terminal).
    Done,
    /// A line per step.
    Steps,
}

struct Source {
    name: String,
    total: u64,
    done: u64,
    bar: Option<ProgressBar>,
}

/// Progress of several sources, shared by the threads working on them.
#[derive(Clone)]
pub struct Progress(Arc<Mutex<(Show, Vec<Source>)>>);

fn bars(sources: Array, o: &BarsOpts) -> Result<Progress> {
    use std::io::IsTerminal;
    let show = if o.verbose {
        Show::Steps
    } else if std::io::stderr().is_terminal() {
        Show::Bars(MultiProgress::with_draw_target(ProgressDrawTarget::stderr()))
    } else {
        Show::Done
    };
    let style =
        ProgressStyle::with_template("{elapsed:>4} [{bar:20}] {percent:>3}% {prefix}: {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=>-");
    let mut list = Vec::new();
    for s in sources {
        let m = s
            .try_cast::<Map>()
            .ok_or_else(|| anyhow::anyhow!("progress::bars: each source is #{{source, total}}"))?;
        let name = m.get("source").map(|v| v.to_string()).unwrap_or_default();
        let total = m
            .get("total")
            .and_then(|v| v.as_int().ok())
            .unwrap_or(0)
            .max(0) as u64;
        let bar = match &show {
            Show::Bars(multi) => {
                let b = multi.add(ProgressBar::new(total));
                b.set_style(style.clone());
                b.set_prefix(name.clone());
                b.set_message("initializing...");
                Some(b)
            }
            _ => None,
        };
        list.push(Source {
            name,
            total,
            done: 0,
            bar,
        });
    }
    Ok(Progress(Arc::new(Mutex::new((show, list)))))
}

impl Progress {
    /// One step of `source` done (`what` says which).
    fn step(&self, source: &str, what: &str) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (show, list) = &mut *g;
        let Some(s) = list.iter_mut().find(|s| s.name == source) else {
            return;
        };
        s.done += 1;
        match show {
            Show::Steps => eprintln!("{source}: {what}"),
            Show::Done if s.done == s.total => {
                eprintln!("{source}: {}/{} collected", s.done, s.total)
            }
            Show::Done => {}
            Show::Bars(_) => {
                if let Some(b) = &s.bar {
                    b.set_message(what.to_string());
                    b.inc(1);
                }
            }
        }
    }

    /// Stops the bars where they are; what is printed next starts on a line of its own.
    fn finish(&self) {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (show, list) = &*g;
        for s in list {
            if let Some(b) = &s.bar {
                b.abandon();
            }
        }
        if matches!(show, Show::Bars(_)) && !list.is_empty() {
            eprintln!();
        }
    }
}

fn resources_yaml(n: &Node, ty: &str, namespace: &str, redact: bool) -> Result<String> {
    let items = n.with(|c| block_on(c.list(namespace, ty)))?;
    Ok(resources::bundle_documents(&items, redact))
}

pub fn register(engine: &mut Engine, session: &Session) {
    let mut archive = Module::new();
    FuncRegistration::new("name_problem")
        .with_comments(["/// Why `name` cannot be an entry of `archive::zip` (absolute, `..`, empty parts, a backslash or NUL), or \"\" when it can."])
        .set_into_module(&mut archive, |name: &str| {
            crate::zip::check_name(name)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        });
    FuncRegistration::new("zip")
        .with_comments(["/// Writes a ZIP archive of `entries` — a map name → content (name order), or a list of [name, content] pairs (their order); content is text or a blob — to `path`, atomically and readable by you only (0600). `path` must be a file the command line names as output, or inside the project. Returns the number of entries."])
        .set_into_module(&mut archive, {
            let session = session.clone();
            move |path: &str, entries: Dynamic| native(|| zip(&session, path, entries))
        });
    engine.register_static_module("archive", archive.into());

    engine.register_type_with_name::<Progress>("Progress");
    let mut progress = Module::new();
    FuncRegistration::new("bars")
        .with_comments(["/// Progress of several sources, from [#{source, total}, ...]: a bar each on a terminal, else a line when a source is done; with `opts.verbose` a line per step. Call `p.step(source, what)` per step, `p.finish()` at the end."])
        .set_into_module(&mut progress, |sources: Array, opts: Map| {
            native(|| bars(sources, &BarsOpts::read(&opts)?))
        });
    engine.register_static_module("progress", progress.into());
    FuncRegistration::new("step")
        .with_comments(["/// One step of `source` done; `what` names it (shown on its bar, or as a line when verbose)."])
        .register_into_engine(engine, |p: &mut Progress, source: &str, what: &str| p.step(source, what));
    FuncRegistration::new("finish")
        .with_comments(["/// Stops the progress display, leaving the bars as they are."])
        .register_into_engine(engine, |p: &mut Progress| p.finish());

    FuncRegistration::new("resources_yaml")
        .with_comments(["/// Every resource of `type` in `namespace` as `talosctl support` writes them: YAML documents {metadata, spec}, `---` between; with `redact` each spec is `<REDACTED>`. \"\" when there are none."])
        .register_into_engine(engine, |n: &mut Node, ty: &str, namespace: &str, redact: bool| {
            native(|| resources_yaml(n, ty, namespace, redact))
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Settings;

    #[test]
    fn zip_writes_only_named_outputs_or_inside_the_project() {
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("b.zip");
        let project = dir.path().join("p");
        std::fs::create_dir(&project).unwrap();
        let session = Session::new(Settings {
            outputs: vec![named.clone()],
            root: Some(project.clone()),
            ..Default::default()
        });
        let mut m = Map::new();
        m.insert("n/a.txt".into(), "hello".into());
        assert_eq!(
            zip(&session, named.to_str().unwrap(), Dynamic::from(m.clone())).unwrap(),
            1
        );
        let inside = project.join("x.zip");
        zip(&session, inside.to_str().unwrap(), Dynamic::from(m.clone())).unwrap();
        let read = crate::zip::read(&std::fs::read(&named).unwrap()).unwrap();
        assert_eq!(read, [("n/a.txt".to_string(), b"hello".to_vec())]);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&named).unwrap().permissions().mode() & 0o777,
            0o600
        );

        let other = dir.path().join("other.zip");
        let err = zip(&session, other.to_str().unwrap(), Dynamic::from(m.clone())).unwrap_err();
        assert!(
            err.to_string()
                .contains("neither a file the command line names"),
            "{err}"
        );
        assert!(!other.exists());
        // A link inside the project that leads out of it is no way around.
        std::os::unix::fs::symlink(dir.path(), project.join("out")).unwrap();
        let via = project.join("out/other.zip");
        assert!(zip(&session, via.to_str().unwrap(), Dynamic::from(m)).is_err());
        assert!(!other.exists());
    }

    #[test]
    fn entries_keep_list_order() {
        let list: Array = vec![
            Dynamic::from(vec![Dynamic::from("z"), Dynamic::from("1")]),
            Dynamic::from(vec![
                Dynamic::from("a"),
                Dynamic::from(Blob::from(vec![0u8, 1])),
            ]),
        ];
        let got = entries_of(Dynamic::from(list)).unwrap();
        assert_eq!(
            got,
            [
                ("z".to_string(), b"1".to_vec()),
                ("a".to_string(), vec![0, 1])
            ]
        );
        assert!(entries_of(Dynamic::from(5_i64)).is_err());
    }
}
