//! The state one engine's natives work in: the project root (and, for playbooks, the
//! confinement to it), the talosconfig, context and call deadline nodes are reached with, and
//! the output files the command line named. Every engine gets its own session (a playbook's
//! `talm([...])` runs its command in a fresh one); `use_project` changes only its own.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Result;

use crate::error::hinted;
use crate::project::{confine, root};

/// Whose paths a session's natives take.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// A bundled command: its paths come from the command line the user typed and are taken
    /// as the shell takes them.
    #[default]
    Command,
    /// A playbook, a project script or the REPL: every folder and file a project native names
    /// must lie inside the session's project, links followed.
    Project,
}

const PLAYBOOK_HINT: &str = "playbooks read and write only inside their project: name paths inside it (project().root), or switch to another talm project with use_project(DIR); talm([...]) runs a command line as you would type it";

/// What a session holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The project's absolute root; `None` outside a project.
    pub root: Option<PathBuf>,
    /// The talosconfig `node(addr)` reads unless told otherwise.
    pub talosconfig: PathBuf,
    /// Its context ("" = the current one).
    pub context: String,
    /// `--call-timeout`, else the default deadline.
    pub timeout: Option<Duration>,
    /// Files the command line names as outputs (absolute): where natives like `archive::zip`
    /// may write outside the project.
    pub outputs: Vec<PathBuf>,
    /// `--skip-verify`: nodes reached through the talosconfig are not verified against its CA
    /// (the client certificate is still presented).
    pub skip_verify: bool,
    /// Whether project natives are confined to `root`.
    pub scope: Scope,
    /// What runs a playbook's `talm([...])`: handed down by the dispatcher, so the runtime never
    /// calls back up into it.
    pub runner: Runner,
}

/// A command line's argv (with `talm` first) to its exit code.
type RunFn = dyn Fn(Vec<std::ffi::OsString>) -> Result<i32> + Send + Sync;

/// The command runner a session carries; empty where no dispatcher handed one down (unit tests).
#[derive(Clone, Default)]
pub struct Runner(Option<Arc<RunFn>>);

impl Runner {
    pub fn new(f: impl Fn(Vec<std::ffi::OsString>) -> Result<i32> + Send + Sync + 'static) -> Self {
        Runner(Some(Arc::new(f)))
    }

    /// Runs `argv` as the user would type it.
    pub fn run(&self, argv: Vec<std::ffi::OsString>) -> Result<i32> {
        match &self.0 {
            Some(f) => f(argv),
            None => Err(hinted(
                "talm([...]) cannot run commands in this engine",
                "run the playbook with `talm run`",
            )),
        }
    }
}

impl std::fmt::Debug for Runner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Runner"
        } else {
            "Runner(none)"
        })
    }
}

/// Two sessions' settings agree whatever runner they carry: there is one dispatcher.
impl PartialEq for Runner {
    fn eq(&self, _: &Runner) -> bool {
        true
    }
}

impl Eq for Runner {}

/// One engine's session, shared by the natives registered on it (and the `parallel()`
/// workers running its closures).
#[derive(Clone, Debug, Default)]
pub struct Session(Arc<RwLock<Settings>>);

impl Session {
    pub fn new(settings: Settings) -> Session {
        Session(Arc::new(RwLock::new(settings)))
    }

    /// The settings in force now.
    pub fn settings(&self) -> Settings {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Makes `root` the project this session works in, with its talosconfig.
    pub fn use_project(&self, root: PathBuf) {
        let mut s = self.0.write().unwrap_or_else(|e| e.into_inner());
        s.talosconfig = root.join("talosconfig");
        s.root = Some(root);
    }

    /// The project root as text, or an error saying there is none.
    pub fn root(&self) -> Result<String> {
        match &self.settings().root {
            Some(r) => Ok(r.display().to_string()),
            None => Err(hinted(
                "no project here",
                "run inside a talm project (a folder with Chart.yaml), or pass --root",
            )),
        }
    }

    /// The project root a playbook works in (its natives are confined to it), or `None` for a
    /// bundled command; an error when a playbook has no project.
    fn confinement(&self, what: &str) -> Result<Option<PathBuf>> {
        let s = self.settings();
        if s.scope == Scope::Command {
            return Ok(None);
        }
        match s.root {
            Some(r) => Ok(Some(r)),
            None => Err(hinted(
                format!("{what}: a playbook works inside its project, and there is none here"),
                "run it inside a talm project (or with --root), or create one with talm([\"init\", \"--root\", DIR]) and use_project(DIR)",
            )),
        }
    }

    /// Checks a folder or file a native names (`project::read(root, ..)`'s `root`): for a
    /// playbook it must lie inside the project once links are followed.
    pub fn check_inside(&self, what: &str, path: &str) -> Result<()> {
        let Some(r) = self.confinement(what)? else {
            return Ok(());
        };
        let abs = root::absolute(Path::new(path))?;
        if abs.starts_with(&r) {
            return confine::check(&r, &abs)
                .map_err(|e| hinted(format!("{what}: {e}"), PLAYBOOK_HINT));
        }
        Err(hinted(
            format!("{what}: {path} is outside the project at {}", r.display()),
            PLAYBOOK_HINT,
        ))
    }

    /// A local path a native writes to (`n.copy_to(path, dest)`'s `dest`), taken as the shell
    /// takes it (from the working directory); for a playbook it must lie inside the project.
    pub fn local_path(&self, what: &str, path: &str) -> Result<PathBuf> {
        self.check_inside(what, path)?;
        Ok(PathBuf::from(path))
    }

    /// A local file a native reads or writes for its command: one the command line named (an
    /// output or input of the command), or one inside the project, links followed. Anything
    /// else is refused naming `what` and `path`, with `hint` saying where files may be.
    pub fn named_or_inside(&self, what: &str, path: &str, hint: &str) -> Result<PathBuf> {
        let abs = root::absolute(Path::new(path))?;
        let s = self.settings();
        let real = confine::resolve(&abs);
        let named = s.outputs.iter().any(|o| confine::resolve(o) == real);
        let in_project = s
            .root
            .as_ref()
            .is_some_and(|r| abs.starts_with(r) && confine::check(r, &abs).is_ok());
        if named || in_project {
            return Ok(abs);
        }
        Err(hinted(
            format!(
                "{what}: {path} is neither a file the command line names nor inside the project"
            ),
            hint,
        ))
    }

    /// Makes `dir` the session's project (`use_project`): for a playbook it must be a talm
    /// project (Chart.yaml and secrets), which its natives are then confined to.
    pub fn switch_project(&self, dir: &str) -> Result<()> {
        let abs = root::absolute(Path::new(dir))?;
        if self.settings().scope == Scope::Project && !root::is_root(&abs) {
            return Err(hinted(
                format!("use_project: {} is not a talm project (it has no Chart.yaml and secrets.yaml or secrets.encrypted.yaml)", abs.display()),
                "a playbook switches only to a talm project: create it first with talm([\"init\", \"--root\", DIR]), or run the playbook inside it",
            ));
        }
        self.use_project(abs);
        Ok(())
    }

    /// The call deadline: `asked`, else the session's, else the default.
    pub fn timeout(&self, asked: Option<Duration>) -> Duration {
        asked
            .or(self.settings().timeout)
            .unwrap_or(crate::talos::DEFAULT_TIMEOUT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_independent() {
        let a = Session::default();
        let b = Session::default();
        a.use_project(PathBuf::from("/p"));
        assert_eq!(a.root().unwrap(), "/p");
        assert_eq!(a.settings().talosconfig, PathBuf::from("/p/talosconfig"));
        assert!(b.root().is_err());
        let shared = a.clone();
        shared.use_project(PathBuf::from("/q"));
        assert_eq!(a.root().unwrap(), "/q");
    }

    #[test]
    fn playbooks_stay_inside_their_project() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p");
        std::fs::create_dir_all(p.join("nodes")).unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, p.join("link")).unwrap();
        let s = Session::new(Settings {
            root: Some(p.clone()),
            scope: Scope::Project,
            ..Default::default()
        });
        let shown = |path: &Path| path.display().to_string();
        assert!(s.check_inside("t", &shown(&p)).is_ok());
        assert!(s.check_inside("t", &shown(&p.join("nodes/a.yaml"))).is_ok());
        let err = s.check_inside("t", &shown(&outside)).unwrap_err();
        assert!(
            err.to_string().contains("is outside the project at"),
            "{err}"
        );
        let err = s.check_inside("t", &shown(&p.join("link/x"))).unwrap_err();
        assert!(err.to_string().contains("through a symbolic link"), "{err}");
        assert_eq!(
            s.local_path("t", &shown(&p.join("out"))).unwrap(),
            p.join("out")
        );
        assert!(s.local_path("t", &shown(&p.join("../x"))).is_err());
        assert!(s.local_path("t", "/etc").is_err());
        assert!(s.switch_project(&shown(&outside)).is_err());
        // A bundled command takes paths as given.
        let cmd = Session::new(Settings {
            root: Some(p.clone()),
            ..Default::default()
        });
        assert!(cmd.check_inside("t", "/etc").is_ok());
        assert_eq!(cmd.local_path("t", "/etc").unwrap(), PathBuf::from("/etc"));
        // A playbook without a project has nothing to work in.
        let none = Session::new(Settings {
            scope: Scope::Project,
            ..Default::default()
        });
        assert!(none.check_inside("t", "/tmp").is_err());
    }

    #[test]
    fn deadline_order() {
        let s = Session::new(Settings {
            timeout: Some(Duration::from_secs(5)),
            ..Default::default()
        });
        assert_eq!(s.timeout(None), Duration::from_secs(5));
        assert_eq!(
            s.timeout(Some(Duration::from_secs(1))),
            Duration::from_secs(1)
        );
        assert_eq!(
            Session::default().timeout(None),
            crate::talos::DEFAULT_TIMEOUT
        );
    }
}
