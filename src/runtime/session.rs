//! The state one engine's natives work in: the project root, the talosconfig, context and
//! call deadline nodes are reached with, and the output files the command line named. Every engine gets its own session (a playbook's
//! `talm([...])` runs its command in a fresh one); `use_project` changes only its own.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use anyhow::Result;

use crate::error::hinted;

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
}

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
