//! Is this a Go-talm project, and which preset and Go talm versions made it? Signals in order:
//! `--preset`, the digest of `templates/_helpers.tpl`, a Go `.talm-preset.lock`, the nearest
//! pristine `_helpers.tpl` by lines, then the shape of values.yaml. Each signal is reported, and
//! which one decided.

use std::path::Path;

use anyhow::Result;

use super::backup::{entries, Entry, Kind as EntryKind};
use super::digests::{self, table};
use super::edits;
use crate::project::{lock, presets};
use talm_base::error::hinted;

/// What kind of project this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Go templates (`*.tpl`) under `templates/` or `charts/talm/templates/`.
    Go,
    /// Already ours: no `.tpl`, our templates.
    Ours,
}

/// What `.talm-preset.lock` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockSignal {
    Missing,
    /// Ours: the hash is one this binary's preset yields.
    Ours {
        preset: String,
    },
    /// A Go v0.33 lock: its preset and the Go versions that wrote that hash.
    Go {
        preset: String,
        versions: String,
    },
    /// A lock whose hash neither we nor any Go release wrote.
    Unknown {
        preset: String,
    },
    Unreadable,
}

/// Which signal decided the preset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decider {
    Flag,
    HelpersDigest,
    GoLock,
    NearestHelpers,
    ValuesShape,
}

impl Decider {
    fn text(self) -> &'static str {
        match self {
            Decider::Flag => "--preset",
            Decider::HelpersDigest => "the digest of templates/_helpers.tpl",
            Decider::GoLock => "the Go .talm-preset.lock",
            Decider::NearestHelpers => {
                "the nearest pristine templates/_helpers.tpl (the file was edited)"
            }
            Decider::ValuesShape => "the keys of values.yaml (a weak signal)",
        }
    }
}

/// The result of detection.
#[derive(Debug, Clone)]
pub struct Detection {
    pub kind: Kind,
    pub preset: String,
    pub decided_by: Decider,
    /// Versions of `templates/_helpers.tpl` (exact digest), if it matched one.
    pub templates: Option<String>,
    /// The preset whose `_helpers.tpl` that digest is.
    pub templates_preset: Option<String>,
    /// Versions of `charts/talm/templates/_helpers.tpl`, if it matched one.
    pub library: Option<String>,
    pub lock: LockSignal,
    /// Chart.yaml `version:` (meaningful only from Go v0.33.0; every earlier release wrote 0.1.0).
    pub stamp: String,
    /// Every file and link below `templates/` and `charts/`.
    pub tree: Vec<Entry>,
}

fn read(root: &Path, rel: &str) -> Option<String> {
    std::fs::read(root.join(rel))
        .ok()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
}

fn lock_signal(root: &Path) -> LockSignal {
    let Some(text) = read(root, lock::LOCK_FILE) else {
        return LockSignal::Missing;
    };
    let Ok(l) = lock::parse(&text) else {
        return LockSignal::Unreadable;
    };
    if presets::preset_hash(&l.preset).is_ok_and(|h| h == l.preset_hash) {
        return LockSignal::Ours { preset: l.preset };
    }
    match table().lock(&l.preset_hash) {
        Some((p, _, versions)) if *p == l.preset => LockSignal::Go {
            preset: l.preset,
            versions: versions.clone(),
        },
        _ => LockSignal::Unknown { preset: l.preset },
    }
}

/// The Chart.yaml top-level `version:`.
fn stamp(root: &Path) -> String {
    read(root, "Chart.yaml")
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("version:").map(|v| v.trim().to_string()))
        })
        .unwrap_or_default()
}

/// cozystack when values.yaml has keys only the cozystack preset reads, else generic.
fn preset_from_values(root: &Path) -> String {
    let text = read(root, "values.yaml").unwrap_or_default();
    let cozy = text.lines().any(|l| {
        [
            "image:",
            "clusterDomain:",
            "allocateNodeCIDRs:",
            "nr_hugepages:",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    });
    if cozy { "cozystack" } else { "generic" }.to_string()
}

/// Whether `root` still holds the Go talm's templates (a quick look: its two `_helpers.tpl`).
pub fn looks_go(root: &Path) -> bool {
    [
        "templates/_helpers.tpl",
        "charts/talm/templates/_helpers.tpl",
    ]
    .iter()
    .any(|rel| root.join(rel).is_file())
}

/// Detects the project at `root`; `flag` is `--preset` ("" when not given).
pub fn detect(root: &Path, flag: &str) -> Result<Detection> {
    let mut tree = entries(root, "templates")?;
    tree.extend(entries(root, "charts")?);
    let go = tree.iter().any(|e| {
        e.rel.ends_with(".tpl")
            && (e.rel.starts_with("templates/") || e.rel.starts_with("charts/talm/templates/"))
    });
    let ours = tree
        .iter()
        .any(|e| e.rel.ends_with(".tera") || e.rel.ends_with(".rhai"));
    let lock = lock_signal(root);
    if !go {
        if ours || matches!(lock, LockSignal::Ours { .. }) {
            let preset = match &lock {
                LockSignal::Ours { preset } => preset.clone(),
                _ => String::new(),
            };
            return Ok(Detection {
                kind: Kind::Ours,
                preset,
                decided_by: Decider::Flag,
                templates: None,
                templates_preset: None,
                library: None,
                lock,
                stamp: stamp(root),
                tree,
            });
        }
        return Err(hinted(
            format!(
                "{} has no Go templates (templates/*.tpl, charts/talm/templates/*.tpl) and no talm templates",
                root.display()
            ),
            "run `talm migrate` in the root of a project made by the Go talm (it holds Chart.yaml, values.yaml, templates/_helpers.tpl)",
        ));
    }
    let exact = |rel: &str| -> Option<digests::Known> {
        let text = read(root, rel)?;
        table().find(rel, &digests::sha256(&text)).cloned()
    };
    let helpers = exact("templates/_helpers.tpl");
    let library = exact("charts/talm/templates/_helpers.tpl").map(|k| k.versions);
    let (preset, decided_by) = if !flag.is_empty() {
        presets::check(flag)?;
        (flag.to_string(), Decider::Flag)
    } else if let Some(k) = &helpers {
        (k.preset.clone(), Decider::HelpersDigest)
    } else if let LockSignal::Go { preset, .. } = &lock {
        (preset.clone(), Decider::GoLock)
    } else if let Some(near) = read(root, "templates/_helpers.tpl")
        .and_then(|t| edits::nearest("templates/_helpers.tpl", &t, None))
        .and_then(|n| n.known.map(|k| k.preset))
    {
        (near, Decider::NearestHelpers)
    } else {
        (preset_from_values(root), Decider::ValuesShape)
    };
    if matches!(preset.as_str(), "cozystack" | "generic") {
        presets::check(&preset)?;
    } else {
        return Err(hinted(
            format!("cannot migrate a project of preset {preset:?}"),
            "pass --preset cozystack or --preset generic",
        ));
    }
    Ok(Detection {
        kind: Kind::Go,
        preset,
        decided_by,
        templates_preset: helpers.as_ref().map(|k| k.preset.clone()),
        templates: helpers.map(|k| k.versions),
        library,
        lock,
        stamp: stamp(root),
        tree,
    })
}

impl Detection {
    /// What was found, as printed.
    pub fn report(&self) -> String {
        let mut out = String::new();
        if self.kind == Kind::Ours {
            out.push_str("This project already uses talm's own templates: nothing to migrate.\n");
            return out;
        }
        out.push_str(&format!(
            "Go talm project: preset {} (decided by {})\n",
            self.preset,
            self.decided_by.text()
        ));
        let unmatched = "no released Go talm wrote this text (edited)";
        out.push_str(&format!(
            "  templates/_helpers.tpl: {}\n",
            self.templates.as_deref().unwrap_or(unmatched)
        ));
        out.push_str(&format!(
            "  charts/talm/templates/_helpers.tpl: {}\n",
            self.library.as_deref().unwrap_or(unmatched)
        ));
        if let Some(p) = self
            .templates_preset
            .as_ref()
            .filter(|p| **p != self.preset)
        {
            out.push_str(&format!(
                "  note: templates/_helpers.tpl is the Go {p} preset's; {} was taken as {}\n",
                self.decided_by.text(),
                self.preset
            ));
        }
        if let LockSignal::Go { preset, .. } = &self.lock {
            if *preset != self.preset {
                out.push_str(&format!(
                    "  note: the Go lock says preset {preset}, but the project is migrated as {}\n",
                    self.preset
                ));
            }
        }
        let lock = match &self.lock {
            LockSignal::Missing => "none (Go talm before v0.33.0 wrote none)".to_string(),
            LockSignal::Ours { preset } => format!("talm's own, preset {preset}"),
            LockSignal::Go { preset, versions } => {
                format!("written by Go talm {versions}, preset {preset}")
            }
            LockSignal::Unknown { preset } => {
                format!("preset {preset}, with a presetHash no release wrote")
            }
            LockSignal::Unreadable => "unreadable".to_string(),
        };
        out.push_str(&format!("  .talm-preset.lock: {lock}\n"));
        let stamp = if self.stamp == "0.1.0" {
            "0.1.0 (every Go release before v0.33.0 wrote 0.1.0)".to_string()
        } else {
            self.stamp.clone()
        };
        out.push_str(&format!("  Chart.yaml version: {stamp}\n"));
        let links: Vec<&str> = self
            .tree
            .iter()
            .filter(|e| e.kind == EntryKind::Link)
            .map(|e| e.rel.as_str())
            .collect();
        if !links.is_empty() {
            out.push_str(&format!(
                "  links (backed up as links, never followed): {}\n",
                links.join(", ")
            ));
        }
        out
    }
}
