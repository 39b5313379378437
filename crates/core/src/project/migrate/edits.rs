//! Custom template edits: each Go template of the project against the pristine file of its
//! version (the nearest one by lines when none matches exactly), as hunks with file and line
//! numbers and a hint of where the same logic goes in talm's own presets; files no Go release
//! wrote are listed as extra. Both stop a migration unless `--force`.

use std::path::Path;

use anyhow::{Context, Result};

use super::backup::{copy_entries, fresh_dir, Entry, Kind as EntryKind};
use super::digests::{self, split_lines, table, Known, Lines};
use super::lcs;
use crate::project::presets;

/// The nearest pristine file to a text.
#[derive(Debug, Clone)]
pub struct Nearest {
    pub lines: Lines,
    pub known: Option<Known>,
    pub runs: Vec<lcs::Run>,
}

/// The pristine file at `path` closest to `text` by changed lines (only `preset`'s when
/// given; the library's files belong to every preset).
pub fn nearest(path: &str, text: &str, preset: Option<&str>) -> Option<Nearest> {
    let mine: Vec<String> = split_lines(text)
        .iter()
        .map(|l| digests::line_hash(l))
        .collect();
    table()
        .candidates(path)
        .into_iter()
        .filter(|(_, k)| match (preset, k) {
            (Some(p), Some(k)) => k.preset == p || k.preset == "talm" || path.ends_with(".yaml"),
            _ => true,
        })
        .map(|(l, k)| Nearest {
            runs: lcs::runs(&l.hashes, &mine),
            lines: l.clone(),
            known: k.cloned(),
        })
        .min_by_key(|n| lcs::distance(&n.runs))
}

/// One edited hunk.
#[derive(Debug, Clone)]
pub struct Hunk {
    pub file: String,
    /// 1-based first line in the project's file, and the lines there (may be none).
    pub line: usize,
    pub added: Vec<String>,
    /// 1-based first line and count of the pristine lines replaced or removed.
    pub pristine_line: usize,
    pub removed: usize,
    pub hint: &'static str,
}

/// Everything in `templates/` and `charts/` that is not a pristine Go file.
#[derive(Debug, Clone, Default)]
pub struct Edits {
    pub hunks: Vec<Hunk>,
    /// Files diffed against a nearest candidate: (file, versions of that candidate).
    pub bases: Vec<(String, String)>,
    /// Files and links no Go release wrote there.
    pub extras: Vec<String>,
}

/// Where logic like `added` goes in talm's presets.
fn hint(added: &[String], removed: usize) -> &'static str {
    let text = added.join("\n");
    if added.iter().all(|l| l.trim().is_empty()) && removed > 0 {
        "a removal of something the preset emits: drop it in the node file's body (`$patch: delete`) or a side-patch node file"
    } else if text.contains(".Values.") {
        "a values key: set it in values.yaml (talm's presets read the same keys); logic computed from it goes in a `_context.rhai` function"
    } else if [
        "define ", "include ", "{{- if", "{{ if", "range ", "lookup ",
    ]
    .iter()
    .any(|k| text.contains(k))
    {
        "template logic: a `_context.rhai` function (charts/talm/templates/_context.rhai) feeding config.tera"
    } else {
        "static config: a side-patch node file (`talm apply -f nodes/X.yaml -f patch.yaml`) or the node file's body"
    }
}

/// The template files a Go project has, with the pristine file each should equal.
fn is_go_template(rel: &str) -> bool {
    rel.starts_with("templates/") || rel.starts_with("charts/talm/templates/")
}

/// Compares the project's `tree` with the pristine Go files of `preset`.
pub fn find(root: &Path, tree: &[Entry], preset: &str) -> Result<Edits> {
    let mut out = Edits::default();
    for e in tree {
        if e.kind == EntryKind::Link {
            out.extras.push(format!("{} (a link)", e.rel));
            continue;
        }
        if !table().ships(&e.rel) {
            out.extras.push(e.rel.clone());
            continue;
        }
        let bytes = std::fs::read(root.join(&e.rel))
            .with_context(|| format!("reading {}", root.join(&e.rel).display()))?;
        let Ok(text) = String::from_utf8(bytes) else {
            // No line of it can be shown or carried over: named whole.
            out.extras
                .push(format!("{} (edited; not UTF-8 text)", e.rel));
            continue;
        };
        let text = if e.rel == "charts/talm/Chart.yaml" {
            presets::normalize_chart(&digests::lf(&text))
        } else {
            text
        };
        let sha = digests::sha256(&text);
        if table().find(&e.rel, &sha).is_some() || !is_go_template(&e.rel) {
            if table().find(&e.rel, &sha).is_none() {
                // charts/talm/Chart.yaml edited: no template logic, nothing to carry over.
                out.extras.push(format!("{} (edited)", e.rel));
            }
            continue;
        }
        let Some(n) = nearest(&e.rel, &text, Some(preset)) else {
            out.extras.push(format!(
                "{} (edited; no pristine text to compare with)",
                e.rel
            ));
            continue;
        };
        out.bases.push((
            e.rel.clone(),
            n.known
                .as_ref()
                .map(|k| k.versions.clone())
                .unwrap_or_default(),
        ));
        let mine = split_lines(&text);
        for r in &n.runs {
            let added: Vec<String> = mine[r.new_start..r.new_start + r.new_len].to_vec();
            out.hunks.push(Hunk {
                file: e.rel.clone(),
                line: r.new_start + 1,
                hint: hint(&added, r.old_len),
                added,
                pristine_line: r.old_start + 1,
                removed: r.old_len,
            });
        }
    }
    Ok(out)
}

impl Edits {
    /// Whether anything would be lost by the switch.
    pub fn any(&self) -> bool {
        !self.hunks.is_empty() || !self.extras.is_empty()
    }

    /// The listing printed by migrate.
    pub fn report(&self) -> String {
        if !self.any() {
            return "Custom template edits: none (every Go template is a released Go talm's)\n"
                .into();
        }
        let mut out = String::from("Custom template edits (talm's presets do not read Go templates; these would be lost):\n");
        for (file, versions) in &self.bases {
            out.push_str(&format!(
                "  {file}: compared with the nearest pristine text (Go talm {versions})\n"
            ));
        }
        for h in &self.hunks {
            let lines = match h.added.len() {
                0 => format!("{}:{} (after)", h.file, h.line.saturating_sub(1)),
                1 => format!("{}:{}", h.file, h.line),
                n => format!("{}:{}-{}", h.file, h.line, h.line + n - 1),
            };
            let removed = match h.removed {
                0 => String::new(),
                1 => format!(", replaces pristine line {}", h.pristine_line),
                n => format!(
                    ", replaces pristine lines {}-{}",
                    h.pristine_line,
                    h.pristine_line + n - 1
                ),
            };
            out.push_str(&format!("  {lines}{removed}\n"));
            for l in &h.added {
                out.push_str(&format!("    + {l}\n"));
            }
            out.push_str(&format!("    where it goes: {}\n", h.hint));
        }
        for x in &self.extras {
            out.push_str(&format!("  extra file no Go talm release wrote: {x}\n"));
        }
        out
    }

    /// Saves the edited and extra files and the report under a new `migrate/edits-<ts>/`;
    /// returns its project-relative path.
    pub fn save(&self, root: &Path, tree: &[Entry]) -> Result<String> {
        let (rel, dest) = fresh_dir(root, "edits")?;
        let touched: Vec<Entry> = tree
            .iter()
            .filter(|e| {
                self.hunks.iter().any(|h| h.file == e.rel)
                    || self
                        .extras
                        .iter()
                        .any(|x| x.split(' ').next() == Some(&e.rel))
            })
            .cloned()
            .collect();
        copy_entries(root, &touched, &dest)?;
        std::fs::write(dest.join("EDITS.txt"), self.report())
            .with_context(|| format!("writing {}", dest.join("EDITS.txt").display()))?;
        Ok(rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn go_text(rel: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/../../tests/fixtures/go-talm/{rel}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn nearest_picks_the_release_and_names_a_removed_line() {
        let text = go_text("v0.23.1/cozystack/templates/_helpers.tpl");
        let mut lines: Vec<&str> = text.lines().collect();
        let gone = lines.remove(20);
        let edited = lines.join("\n") + "\n";
        let n = nearest("templates/_helpers.tpl", &edited, Some("cozystack")).unwrap();
        assert_eq!(n.known.unwrap().versions, "v0.22.0..v0.23.1");
        assert_eq!(
            n.runs,
            vec![lcs::Run {
                old_start: 20,
                old_len: 1,
                new_start: 20,
                new_len: 0
            }],
            "{gone}"
        );
        assert!(hint(&[], 1).starts_with("a removal"));
        assert!(hint(&["  foo: {{ .Values.bar }}".into()], 0).starts_with("a values key"));
        assert!(hint(&["  disableSearchDomain: true".into()], 0).starts_with("static config"));
        // The generic candidates are not offered for a cozystack project.
        let g = nearest("templates/_helpers.tpl", &edited, Some("generic")).unwrap();
        assert_eq!(g.known.unwrap().preset, "generic");
    }
}
