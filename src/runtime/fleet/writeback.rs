//! The install-image writeback of an upgrade, node by node: `nodefile::writeback(files, nodes,
//! image)` notes which of the upgrade's nodes each `-f` file names (its modeline), and
//! `nodefile::done(w, n)` rewrites the files whose nodes are now all done, so a roll stopped by a
//! failure, a veto or Ctrl-C leaves every file naming the image its nodes run. Files naming none
//! of the upgrade's nodes (the nodes came from --nodes) are written by `nodefile::rest(w)` once
//! the whole upgrade is done.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use rhai::{Array, Dynamic, FuncRegistration, Map, Module};

use crate::project::{fsutil, install_image, modeline};
use crate::runtime::native;
use crate::runtime::node::Node;
use crate::runtime::session::Session;

/// One node file of the upgrade.
struct File {
    /// As the command line named it (what the lines say).
    shown: String,
    path: PathBuf,
    /// The upgrade's nodes it names that are not done yet.
    waiting: BTreeSet<String>,
    written: bool,
}

struct State {
    image: String,
    files: Vec<File>,
}

/// The writeback of one upgrade (copies share it).
#[derive(Clone)]
pub struct Writeback(Arc<Mutex<State>>);

/// Where a node file may be rewritten: inside the project, or named on the command line.
pub(in crate::runtime) fn rewritable(session: &Session, what: &str, path: &str) -> Result<PathBuf> {
    session.named_or_inside(
        what,
        path,
        "node files are rewritten only where the user pointed: the command's -f files or the project folder",
    )
}

fn new(session: &Session, files: &[String], nodes: &[String], image: &str) -> Result<Writeback> {
    let targets: BTreeSet<&str> = nodes.iter().map(String::as_str).collect();
    let mut out = Vec::new();
    for f in files {
        let path = rewritable(session, "nodefile::writeback", f)?;
        let text = fsutil::read_text(&path)?;
        let named = modeline::find(&text, f)
            .map(|nf| nf.modeline.nodes)
            .unwrap_or_default();
        let waiting: BTreeSet<String> = named
            .into_iter()
            .filter(|n| targets.contains(n.as_str()))
            .collect();
        out.push(File {
            shown: f.clone(),
            path,
            waiting,
            written: false,
        });
    }
    Ok(Writeback(Arc::new(Mutex::new(State {
        image: image.to_string(),
        files: out,
    }))))
}

/// Writes one file; its `#{file, result}` ("updated", "same", "no-key").
fn write(f: &mut File, image: &str) -> Result<Dynamic> {
    let synced = install_image::sync_file(&f.path, image)?;
    f.written = true;
    let mut m = Map::new();
    m.insert("file".into(), f.shown.clone().into());
    m.insert("result".into(), synced.name().into());
    Ok(m.into())
}

impl Writeback {
    /// `node` is done: the files whose upgrade nodes are now all done are written.
    fn done(&self, node: &str) -> Result<Array> {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let State { image, files } = &mut *st;
        let mut out = Array::new();
        for f in files.iter_mut() {
            if f.waiting.remove(node) && f.waiting.is_empty() && !f.written {
                out.push(write(f, image)?);
            }
        }
        Ok(out)
    }

    /// The whole upgrade is done: every file not written yet is.
    fn rest(&self) -> Result<Array> {
        let mut st = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let State { image, files } = &mut *st;
        let mut out = Array::new();
        for f in files.iter_mut().filter(|f| !f.written) {
            out.push(write(f, image)?);
        }
        Ok(out)
    }
}

fn strings(a: Array) -> Vec<String> {
    a.into_iter()
        .filter_map(|d| {
            if let Some(n) = d.read_lock::<Node>() {
                return Some(n.name.clone());
            }
            d.into_string().ok()
        })
        .collect()
}

/// Adds `writeback`, `done` and `rest` to the `nodefile` module.
pub fn add(m: &mut Module, session: &Session) {
    FuncRegistration::new("writeback")
        .with_comments(["/// The node-by-node writeback of an upgrade to `image`: `files` (the -f files, folders expanded) and `nodes` (the upgrade's node handles or names). Each file is written by `nodefile::done(w, n)` once every node of the upgrade that its modeline names is done; `nodefile::rest(w)` writes the others at the end."])
        .set_into_module(m, {
            let session = session.clone();
            move |files: Array, nodes: Array, image: &str| {
                native(|| new(&session, &strings(files), &strings(nodes), image))
            }
        });
    FuncRegistration::new("done")
        .with_comments(["/// Node `n` (a handle or a name) is done: writes machine.install.image into the files whose upgrade nodes are all done now. Returns #{file, result} per file written (result \"updated\", \"same\" or \"no-key\")."])
        .set_into_module(m, |w: Writeback, n: Dynamic| {
            native(|| {
                let name = strings(vec![n]).pop().unwrap_or_default();
                w.done(&name)
            })
        });
    FuncRegistration::new("rest")
        .with_comments(["/// The upgrade is done: writes every file not written yet. Returns #{file, result} per file."])
        .set_into_module(m, |w: Writeback| native(|| w.rest()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_file(dir: &std::path::Path, name: &str, nodes: &str) -> String {
        let path = dir.join(name);
        std::fs::write(
            &path,
            format!("# talm: nodes=[{nodes}], endpoints=[], templates=[]\nmachine:\n  install:\n    image: old\n"),
        )
        .unwrap();
        path.display().to_string()
    }

    #[test]
    fn a_file_is_written_once_every_node_it_names_is_done() {
        let dir = tempfile::tempdir().unwrap();
        let a = node_file(dir.path(), "a.yaml", "\"1.1.1.1\"");
        let ab = node_file(dir.path(), "ab.yaml", "\"1.1.1.1\", \"2.2.2.2\"");
        let other = node_file(dir.path(), "other.yaml", "\"3.3.3.3\"");
        let session = Session::new(crate::runtime::session::Settings {
            outputs: [&a, &ab, &other].map(std::path::PathBuf::from).to_vec(),
            ..Default::default()
        });
        let w = new(
            &session,
            &[a.clone(), ab.clone(), other.clone()],
            &["1.1.1.1".into(), "2.2.2.2".into()],
            "new",
        )
        .unwrap();
        let names = |r: Array| -> Vec<String> {
            r.into_iter()
                .map(|m| m.cast::<Map>()["file"].to_string())
                .collect()
        };
        let image = |p: &str| std::fs::read_to_string(p).unwrap().contains("image: new");
        assert_eq!(names(w.done("1.1.1.1").unwrap()), [a.as_str()]);
        assert_eq!((image(&a), image(&ab), image(&other)), (true, false, false));
        assert_eq!(names(w.done("2.2.2.2").unwrap()), [ab.as_str()]);
        assert!(w.done("2.2.2.2").unwrap().is_empty());
        assert_eq!(names(w.rest().unwrap()), [other.as_str()]);
        assert!(image(&other));
        assert!(w.rest().unwrap().is_empty());
    }
}
