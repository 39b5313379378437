//! Drift detection: does the project's vendored library (`charts/talm/`) or its preset baseline
//! (`.talm-preset.lock`) differ from what this binary carries? Warnings, or errors when strict.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;

use super::{lock, presets};
use talm_base::error::{hinted, Hinted};

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Clean,
    NoBaseline(String),
    Drift { message: String, preset: String },
}

/// Lists the differences between two file sets, at most five, sorted.
fn summary(vendored: &BTreeMap<String, String>, embedded: &BTreeMap<String, String>) -> String {
    let mut items = Vec::new();
    for (k, v) in vendored {
        match embedded.get(k) {
            None => items.push(format!("extra: {k}")),
            Some(e) if e != v => items.push(format!("modified: {k}")),
            _ => {}
        }
    }
    for k in embedded.keys() {
        if !vendored.contains_key(k) {
            items.push(format!("missing: {k}"));
        }
    }
    items.sort();
    let more = items.len().saturating_sub(5);
    items.truncate(5);
    let mut s = items.join(", ");
    if more > 0 {
        s.push_str(&format!(", +{more} more"));
    }
    s
}

fn recorded_preset(root: &Path) -> String {
    super::fsutil::read_text(&root.join(lock::LOCK_FILE))
        .ok()
        .and_then(|t| lock::parse(&t).ok())
        .map(|l| l.preset)
        .unwrap_or_else(|| "<preset>".into())
}

/// Compares `charts/talm/` with the embedded library.
pub fn library(root: &Path) -> Result<Outcome> {
    let dir = root.join("charts/talm");
    if !dir.is_dir() {
        return Ok(Outcome::NoBaseline(format!(
            "{} does not exist",
            dir.display()
        )));
    }
    let mut vendored = BTreeMap::new();
    for (rel, path) in super::fsutil::files_below(&dir)? {
        let content =
            std::fs::read(&path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        vendored.insert(rel, String::from_utf8_lossy(&content).into_owned());
    }
    let vendored = presets::normalized_library(vendored);
    if presets::hash_files(&vendored) == presets::library_hash() {
        return Ok(Outcome::Clean);
    }
    let embedded = presets::normalized_library(presets::library_files());
    let preset = recorded_preset(root);
    Ok(Outcome::Drift {
        message: format!(
            "project's vendored charts/talm/ library differs from the copy built into talm {} ({}); run `talm init --update --preset {preset}` to re-sync (or ignore if this is intentional)",
            talm_wire::version::current(),
            summary(&vendored, &embedded)
        ),
        preset,
    })
}

/// Compares the preset hash in `.talm-preset.lock` with the embedded preset.
pub fn preset(root: &Path) -> Result<Outcome> {
    let path = root.join(lock::LOCK_FILE);
    let text = match talm_base::input::try_read_text(&path, talm_base::input::Kind::Text) {
        Ok(t) => t,
        Err(e) if e.missing() => {
            return Ok(Outcome::NoBaseline(format!(
                "{} does not exist",
                path.display()
            )))
        }
        Err(e) => return Err(e.into_error()),
    };
    let lock = lock::parse(&text)?;
    let embedded = presets::preset_hash(&lock.preset)?;
    if embedded == lock.preset_hash {
        return Ok(Outcome::Clean);
    }
    Ok(Outcome::Drift {
        message: format!(
            "project's {p} preset differs from the copy built into talm {}; run `talm init --update --preset {p}` to pull the new preset defaults (your templates/ edits are preserved via the interactive diff)",
            talm_wire::version::current(),
            p = lock.preset
        ),
        preset: lock.preset,
    })
}

/// Runs both checks, library first. Non-strict: one `WARN:` line on stderr per finding.
/// Strict: the first finding, a missing baseline, or a failed check is an error.
pub fn check(root: &Path, strict: bool) -> Result<()> {
    if !talm_wire::version::is_release(talm_wire::version::current()) {
        return Ok(());
    }
    for outcome in [library(root), preset(root)] {
        match (outcome, strict) {
            (Ok(Outcome::Clean), _) | (Ok(Outcome::NoBaseline(_)), false) => {}
            (Ok(Outcome::NoBaseline(why)), true) => {
                return Err(hinted(
                    format!("drift baseline missing under strict mode: {why}"),
                    "run `talm init --update --preset <preset>` to record a baseline, or unset strictCharts / drop --strict-charts",
                ))
            }
            (Err(e), false) => talm_base::output::err(&format!("WARN: could not check drift: {e}")),
            (Err(e), true) => {
                return Err(hinted(
                    format!("drift check failed under strict mode: {e}"),
                    "repair .talm-preset.lock and charts/talm/ with `talm init --update --preset <preset>`, or unset strictCharts / drop --strict-charts",
                ))
            }
            (Ok(Outcome::Drift { message, .. }), false) => {
                talm_base::output::err(&format!("WARN: {message}"))
            }
            (Ok(Outcome::Drift { message, preset }), true) => {
                return Err(Hinted {
                    message: message.replace(" (or ignore if this is intentional)", ""),
                    hints: vec![format!("run `talm init --update --preset {preset}`, or unset strictCharts / drop --strict-charts to downgrade this to a warning")],
                }
                .into())
            }
        }
    }
    Ok(())
}
