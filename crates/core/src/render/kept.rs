//! Renders kept by everything they read. `talm apply` renders a node's templates again after
//! `talm template` rendered them from the same discovery, and a fleet's playbook runs both for
//! every node in one process: a render whose compiled project, templates, values, versions and
//! facts are those of a kept one returns the kept text without running the preset logic, Tera
//! or the output check again. A render whose scripts printed (`print`, `warn`) is not kept, so
//! its lines show every time; a failed one is not kept either.

use std::hash::Hash;
use std::sync::{Arc, Weak};

use super::cache::Compiled;
use super::pipeline::Request;
use talm_base::caches::digest::digest;
use talm_base::caches::memo::Memo;

/// Renders kept: a fleet's template step renders every node before its apply step renders
/// them again. A node's patch is a few KiB.
const KEPT: usize = 512;

/// What a render read: its compiled project (the same templates; an edited one compiles anew)
/// and a 128-bit keyed digest of the rest.
#[derive(Clone)]
struct Key {
    project: Weak<Compiled>,
    digest: (u64, u64),
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        // A project dropped since is never the same as one compiled later at its address.
        self.digest == other.digest
            && Weak::ptr_eq(&self.project, &other.project)
            && self.project.strong_count() > 0
    }
}

/// Listed in [`talm_base::caches::KEPT`].
static RENDERS: Memo<Key, Arc<str>> = Memo::new(KEPT);

/// What a render reads besides its project; the facts' part is computed once per facts.
fn request_digest(req: &Request<'_>) -> (u64, u64) {
    let facts = req.facts.digest();
    digest(|h| {
        req.templates.hash(h);
        talm_base::yaml::ordered::hash(&req.values, h);
        facts.hash(h);
        req.chart_name.hash(h);
        req.chart_version.hash(h);
        req.talos_version.hash(h);
        req.kubernetes_version.hash(h);
    })
}

/// Why a render's text is not kept.
enum Unkept {
    Failed(anyhow::Error),
    /// Its scripts printed: the text is returned, and the next render prints again.
    Printed(String),
}

/// The text `render` gives for `req` with `project`, kept or rendered now.
pub fn render(
    project: &Arc<Compiled>,
    req: &Request<'_>,
    render: impl FnOnce() -> anyhow::Result<String>,
) -> anyhow::Result<String> {
    let key = Key {
        project: Arc::downgrade(project),
        digest: request_digest(req),
    };
    let kept = RENDERS.get_or_try(key, |_| {
        let before = crate::sandbox::lines_said();
        let text = render().map_err(Unkept::Failed)?;
        if crate::sandbox::lines_said() != before {
            return Err(Unkept::Printed(text));
        }
        Ok(Arc::from(text))
    });
    match kept {
        Ok(text) => Ok(text.to_string()),
        Err(Unkept::Printed(text)) => Ok(text),
        Err(Unkept::Failed(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use talm_wire::facts::Facts;

    fn project() -> (tempfile::TempDir, Arc<Compiled>) {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("templates");
        std::fs::create_dir_all(&t).unwrap();
        std::fs::write(t.join("n.yaml"), "machine: {}\n").unwrap();
        let compiled = crate::render::cache::load(dir.path()).unwrap();
        (dir, compiled)
    }

    fn request<'a>(root: &'a std::path::Path, mtu: u32, d: &str) -> Request<'a> {
        let facts = format!(
            "resources:\n  links:\n    - metadata: {{id: eth0}}\n      spec: {{mtu: {mtu}}}\n"
        );
        Request {
            root,
            templates: vec!["templates/n.yaml".into()],
            facts: Arc::new(Facts::parse(&facts, "f").unwrap()),
            values: serde_yaml_ng::from_str(&format!("d: {d}")).unwrap(),
            chart_name: "c".into(),
            chart_version: "0.1.0".into(),
            talos_version: "v1.12".into(),
            kubernetes_version: "1.34.0".into(),
        }
    }

    #[test]
    fn a_render_of_the_same_inputs_is_kept_and_any_change_renders_anew() {
        let (dir, p) = project();
        let runs = Cell::new(0);
        let go = |p: &Arc<Compiled>, req: &Request<'_>| {
            render(p, req, || {
                runs.set(runs.get() + 1);
                Ok(format!("run {}\n", runs.get()))
            })
            .unwrap()
        };
        let first = go(&p, &request(dir.path(), 1500, "x"));
        // Read anew (another discovery of the same node, another command): kept.
        assert_eq!(go(&p, &request(dir.path(), 1500, "x")), first);
        assert_eq!(runs.get(), 1);
        // A fact, a value, a version or the templates asked for: rendered anew.
        go(&p, &request(dir.path(), 9000, "x"));
        go(&p, &request(dir.path(), 1500, "y"));
        let mut req = request(dir.path(), 1500, "x");
        req.talos_version = "v1.13".into();
        go(&p, &req);
        req.templates.push("templates/n.yaml".into());
        go(&p, &req);
        assert_eq!(runs.get(), 5);
        // Another compiled project (templates edited, or another folder) with the same inputs.
        let (other, q) = project();
        go(&q, &request(dir.path(), 1500, "x"));
        assert_eq!(runs.get(), 6);
        drop(other);
        // The same values or facts in another order print otherwise: rendered anew.
        let mut req = request(dir.path(), 1500, "x");
        req.values = serde_yaml_ng::from_str("{d: x, e: y}").unwrap();
        go(&p, &req);
        req.values = serde_yaml_ng::from_str("{e: y, d: x}").unwrap();
        go(&p, &req);
        assert_eq!(runs.get(), 8);
        let facts = |f: &str| Arc::new(Facts::parse(f, "f").unwrap());
        req.facts = facts("resources:\n  links:\n    - {metadata: {id: eth0}, spec: {mtu: 1}}\n");
        go(&p, &req);
        req.facts = facts("resources:\n  links:\n    - {spec: {mtu: 1}, metadata: {id: eth0}}\n");
        go(&p, &req);
        assert_eq!(runs.get(), 10);
        // A failed render is not kept.
        let req = request(dir.path(), 1400, "x");
        assert!(render(&p, &req, || anyhow::bail!("broken")).is_err());
        go(&p, &req);
        assert_eq!(runs.get(), 11);
    }

    #[test]
    fn a_render_whose_scripts_printed_prints_every_time() {
        let (dir, p) = project();
        let req = request(dir.path(), 1280, "printed");
        let runs = Cell::new(0);
        let engine = crate::sandbox::engine(&crate::sandbox::Limits::TEMPLATE);
        for _ in 0..2 {
            render(&p, &req, || {
                runs.set(runs.get() + 1);
                engine.run(r#"warn("no default route")"#).unwrap();
                Ok("machine: {}\n".into())
            })
            .unwrap();
        }
        assert_eq!(runs.get(), 2);
    }
}
