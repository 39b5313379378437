//! The journal of a `talm rotate-ca` under way (`.talm/rotate-ca.yaml`, 0600, never committed):
//! the flags that started it, each rotated CA's old and new certificate and key, the new
//! talosconfig, the step it is at and the nodes done in that step, so a run killed halfway is
//! carried on by the next one instead of leaving the project with a CA the nodes left.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::fsutil::{Mode, Plan};
use talm_base::error::hinted;

/// The folder of talm's own state in a project (ignored by git as a whole).
pub const STATE_DIR: &str = ".talm";
/// The journal, relative to the project root.
pub const JOURNAL: &str = ".talm/rotate-ca.yaml";
/// What `.talm/.gitignore` holds: nothing in the folder is committed.
const GITIGNORE: &str = "*\n";
/// The journal format this talm writes and reads.
const VERSION: u32 = 1;
/// Steps of each CA's rotation: accept the new CA, make it the issuing one, drop the old one.
pub const STEPS: u8 = 3;

/// A CA `rotate-ca` rotates, in the order it rotates them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ca {
    /// The Talos API CA (`machine.ca`).
    Talos,
    /// The Kubernetes API CA (`cluster.ca`).
    Kubernetes,
}

impl Ca {
    /// The CA named as scripts name it: "talos" or "kubernetes".
    pub fn parse(name: &str) -> Result<Ca> {
        match name {
            "talos" => Ok(Ca::Talos),
            "kubernetes" => Ok(Ca::Kubernetes),
            other => Err(talm_base::error::plain(format!(
                "unknown CA {other:?} (talos or kubernetes)"
            ))),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Ca::Talos => "talos",
            Ca::Kubernetes => "kubernetes",
        }
    }

    /// "Talos API" or "Kubernetes API".
    pub fn api(self) -> &'static str {
        match self {
            Ca::Talos => "Talos API",
            Ca::Kubernetes => "Kubernetes API",
        }
    }

    /// What `rotate-ca` prints as it starts `step` (1 to [`STEPS`]), without the dots.
    pub fn step_name(self, step: u8) -> String {
        let who = match self {
            Ca::Talos => "Talos",
            Ca::Kubernetes => "Kubernetes",
        };
        match step {
            1 => format!("Adding new {who} CA as accepted"),
            2 => format!("Making new {who} CA the issuing CA, old {who} CA the accepted CA"),
            _ => format!("Removing old {who} CA from the accepted CAs"),
        }
    }
}

/// The flags a rotation was started with, as a rerun must repeat them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Flags {
    pub talos: bool,
    pub kubernetes: bool,
    /// The control planes, the init node (`--init-node`) first.
    pub control_plane_nodes: Vec<String>,
    pub worker_nodes: Vec<String>,
}

/// Go's %q of a []string, as rotate-ca prints its topology.
fn quoted(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

fn sorted(list: &[String]) -> Vec<String> {
    let mut v = list.to_vec();
    v.sort();
    v.dedup();
    v
}

impl Flags {
    /// The CAs these flags rotate, in rotation order.
    pub fn cas(&self) -> Vec<Ca> {
        let mut out = Vec::new();
        if self.talos {
            out.push(Ca::Talos);
        }
        if self.kubernetes {
            out.push(Ca::Kubernetes);
        }
        out
    }

    /// "the Talos API CA", "the Talos API and Kubernetes API CAs".
    fn cas_text(&self) -> String {
        match self.cas().as_slice() {
            [one] => format!("the {} CA", one.api()),
            [a, b] => format!("the {} and {} CAs", a.api(), b.api()),
            _ => "no CA".into(),
        }
    }

    /// The command line that carries a rotation with these flags on (the node flags of the
    /// first run, `-n`/`-e` or `-f`, come before `rotate-ca`'s own).
    pub fn command(&self) -> String {
        let mut out = String::from("talm rotate-ca");
        if !self.talos {
            out.push_str(" --talos=false");
        }
        if !self.kubernetes {
            out.push_str(" --kubernetes=false");
        }
        if !self.control_plane_nodes.is_empty() {
            out.push_str(&format!(
                " --control-plane-nodes {}",
                self.control_plane_nodes.join(",")
            ));
        }
        if !self.worker_nodes.is_empty() {
            out.push_str(&format!(" --worker-nodes {}", self.worker_nodes.join(",")));
        }
        out.push_str(" --dry-run=false");
        out
    }

    /// Where `asked` contradicts these flags (the nodes compared as sets), one phrase each.
    fn differences(&self, asked: &Flags) -> Vec<String> {
        let mut out = Vec::new();
        if self.cas() != asked.cas() {
            out.push(format!(
                "it rotates {}, this run {}",
                self.cas_text(),
                asked.cas_text()
            ));
        }
        let nodes = [
            (
                "control plane",
                &self.control_plane_nodes,
                &asked.control_plane_nodes,
            ),
            ("worker", &self.worker_nodes, &asked.worker_nodes),
        ];
        for (role, journaled, given) in nodes {
            if sorted(journaled) != sorted(given) {
                out.push(format!(
                    "its {role} nodes are {}, this run names {}",
                    quoted(journaled),
                    quoted(given)
                ));
            }
        }
        out
    }
}

/// A certificate and its key, base64 PEM as machine configs hold them (key "" when unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaPair {
    pub crt: String,
    pub key: String,
}

/// One CA's rotation: the CA the nodes issued from when it started, and the one they move to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Change {
    pub old: CaPair,
    pub new: CaPair,
}

/// Where a rotation is: the CA, its step (1 to [`STEPS`]) and the nodes that step is done on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Position {
    pub ca: Ca,
    pub step: u8,
    pub done: Vec<String>,
}

/// The whole journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rotation {
    pub version: u32,
    pub flags: Flags,
    /// The Talos API CA's change, when it is rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub talos: Option<Change>,
    /// The Kubernetes API CA's change, when it is rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<Change>,
    /// The new talosconfig (a client certificate of the new Talos CA); "" when only the
    /// Kubernetes CA is rotated.
    #[serde(default)]
    pub talosconfig: String,
    pub at: Position,
}

/// The hint of every refusal over the journal: finish as started, or start over.
fn finish_hint(flags: &Flags) -> String {
    format!(
        "finish it with the same flags (`{}`, with the -n/-e or -f of the first run), or delete {JOURNAL} to start over",
        flags.command()
    )
}

impl Rotation {
    /// A rotation about to start: at the first step of its first CA, no node done.
    pub fn new(
        flags: Flags,
        talos: Option<Change>,
        kubernetes: Option<Change>,
        talosconfig: String,
    ) -> Result<Rotation> {
        let first = *flags.cas().first().ok_or_else(|| {
            talm_base::error::plain(
                "rotate-ca with --talos=false and --kubernetes=false rotates nothing",
            )
        })?;
        let r = Rotation {
            version: VERSION,
            flags,
            talos,
            kubernetes,
            talosconfig,
            at: Position {
                ca: first,
                step: 1,
                done: Vec::new(),
            },
        };
        r.check_whole().map_err(talm_base::error::plain)?;
        Ok(r)
    }

    /// What is wrong with a journal's content, if anything.
    fn check_whole(&self) -> std::result::Result<(), String> {
        if self.version != VERSION {
            return Err(format!(
                "it is version {}; this talm reads version {VERSION}",
                self.version
            ));
        }
        if !(1..=STEPS).contains(&self.at.step) {
            return Err(format!("step {} is not among 1 to {STEPS}", self.at.step));
        }
        if !self.flags.cas().contains(&self.at.ca) {
            return Err(format!(
                "it is at the {} CA, which its flags do not rotate",
                self.at.ca.api()
            ));
        }
        for ca in self.flags.cas() {
            if self.change(ca).is_none() {
                return Err(format!("it has no new {} CA", ca.api()));
            }
        }
        if self.flags.talos && self.talosconfig.is_empty() {
            return Err("it has no new talosconfig".into());
        }
        Ok(())
    }

    /// The journal of the project at `root`, if a rotation is unfinished there.
    pub fn load(root: &Path) -> Result<Option<Rotation>> {
        let path = root.join(JOURNAL);
        if !path.exists() {
            return Ok(None);
        }
        let text = super::fsutil::read_text(&path)?;
        let damaged = |what: String| {
            hinted(
                format!("{JOURNAL} is damaged: {what}"),
                format!("it journals an unfinished `talm rotate-ca`; delete {JOURNAL} to start the rotation over"),
            )
        };
        let r: Rotation = serde_yaml_ng::from_str(&text).map_err(|e| damaged(e.to_string()))?;
        r.check_whole().map_err(damaged)?;
        Ok(Some(r))
    }

    /// Writes the journal all or nothing (0600), with `.talm/.gitignore` keeping it out of git.
    pub fn save(&self, root: &Path) -> Result<()> {
        let text = serde_yaml_ng::to_string(self)?;
        let mut plan = Plan::new(root, "talm rotate-ca");
        let ignore = root.join(STATE_DIR).join(".gitignore");
        if !ignore.exists() {
            plan.mkdir(root.join(STATE_DIR));
            plan.write(ignore, GITIGNORE, Mode::Public, "");
        }
        plan.write(root.join(JOURNAL), text, Mode::Secret, "");
        plan.commit().map(|_| ())
    }

    /// Removes the journal of the project at `root` (the rotation is done).
    pub fn remove(root: &Path) -> Result<()> {
        let mut plan = Plan::new(root, "talm rotate-ca");
        plan.remove(root.join(JOURNAL), "");
        plan.commit().map(|_| ())
    }

    /// The change of `ca`, when it is rotated.
    pub fn change(&self, ca: Ca) -> Option<&Change> {
        match ca {
            Ca::Talos => self.talos.as_ref(),
            Ca::Kubernetes => self.kubernetes.as_ref(),
        }
    }

    /// Every node, in the order the steps take them: control planes, then workers.
    pub fn nodes(&self) -> Vec<String> {
        let mut out = self.flags.control_plane_nodes.clone();
        out.extend(self.flags.worker_nodes.iter().cloned());
        out
    }

    /// Records that the current step is done on `node`.
    pub fn node_done(&mut self, node: &str) {
        if !self.at.done.iter().any(|n| n == node) {
            self.at.done.push(node.to_string());
        }
    }

    /// Moves to the next step of the current CA, then to the first step of the next CA;
    /// `false` when the last step of the last CA was the current one (nothing moves).
    pub fn advance(&mut self) -> bool {
        if self.at.step < STEPS {
            self.at.step += 1;
            self.at.done.clear();
            return true;
        }
        match self.flags.cas().into_iter().find(|c| *c > self.at.ca) {
            Some(next) => {
                self.at = Position {
                    ca: next,
                    step: 1,
                    done: Vec::new(),
                };
                true
            }
            None => false,
        }
    }

    /// The line a resumed run starts with.
    pub fn resume_line(&self) -> String {
        let nodes = self.nodes();
        let done = nodes.iter().filter(|n| self.at.done.contains(n)).count();
        format!(
            "> Resuming the CA rotation journaled in {JOURNAL}: {}, step {} of {STEPS} ({:?}), {done} of {} nodes done",
            self.at.ca.api(),
            self.at.step,
            self.at.ca.step_name(self.at.step),
            nodes.len()
        )
    }

    /// Refuses a rerun whose flags contradict the ones the rotation was started with.
    pub fn check_flags(&self, asked: &Flags) -> Result<()> {
        let differences = self.flags.differences(asked);
        if differences.is_empty() {
            return Ok(());
        }
        Err(hinted(
            format!(
                "the CA rotation journaled in {JOURNAL} is unfinished and was started with other flags: {}",
                differences.join("; ")
            ),
            finish_hint(&self.flags),
        ))
    }

    /// Refuses a dry run while a rotation is unfinished: it would show a fresh rotation the
    /// cluster is no longer ready for.
    pub fn refuse_dry_run(&self) -> Result<()> {
        Err(hinted(
            format!(
                "the CA rotation journaled in {JOURNAL} is unfinished: a dry run cannot show it"
            ),
            finish_hint(&self.flags),
        ))
    }
}

/// The hint a failed command adds when it failed over a node's certificate or its CA (the
/// node's certificate from another CA, the client certificate refused, the server certificate
/// unusable) while the project around the working directory has an unfinished rotation.
pub fn hint_for(err: &anyhow::Error) -> Option<String> {
    use talm_base::error::node::{kind, Kind};
    let certificate = matches!(
        kind(err)?,
        Kind::ForeignCa | Kind::ClientCertRejected | Kind::BadServerCert
    );
    if !certificate {
        return None;
    }
    let root = super::root::detect(Path::new(".")).ok()??;
    unfinished_hint(&root)
}

/// The hint for a certificate error met while the project at `root` has an unfinished rotation:
/// the nodes may be between two CAs, which the rerun of `rotate-ca` finishes.
pub fn unfinished_hint(root: &Path) -> Option<String> {
    if !root.join(JOURNAL).exists() {
        return None;
    }
    let command = match Rotation::load(root) {
        Ok(Some(r)) => format!("`{}`", r.flags.command()),
        _ => "`talm rotate-ca`".to_string(),
    };
    Some(format!(
        "a CA rotation is unfinished ({JOURNAL}): the nodes may be between two CAs; {command} with the same flags as the first run resumes it"
    ))
}

#[cfg(test)]
#[path = "rotation_tests.rs"]
mod tests;
