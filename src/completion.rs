//! Shell completion. `talm completion SHELL` prints the script a shell sources; that script
//! calls talm back with the words typed so far (clap's protocol: `TALM_COMPLETE=SHELL talm --
//! WORDS...`, the cursor's word index in `_CLAP_COMPLETE_INDEX`) and talm answers with the
//! candidates, the dynamic ones included: nodes and endpoints from the talosconfig, node files
//! with a modeline in the project, the embedded presets, the kinds `get` knows.
//! `--no-descriptions` makes the script call back through `TALM_COMPLETE_NO_DESCRIPTIONS`,
//! which answers values alone.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::engine::CompletionCandidate;

use crate::cli::Cli;

/// The variable the scripts set to ask for candidates with descriptions.
pub const VAR: &str = "TALM_COMPLETE";
/// The same, for candidates without descriptions (`talm completion SHELL --no-descriptions`).
pub const VAR_PLAIN: &str = "TALM_COMPLETE_NO_DESCRIPTIONS";

/// Whether candidates carry descriptions in this process's answer.
static DESCRIPTIONS: AtomicBool = AtomicBool::new(true);
/// The words of the command line being completed (after `--`).
static WORDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// The command tree completion walks: without descriptions, every help text is dropped.
fn command(descriptions: bool) -> clap::Command {
    fn plain(c: clap::Command) -> clap::Command {
        c.about(None)
            .long_about(None)
            .mut_args(|a| a.help(None).long_help(None))
            .mut_subcommands(plain)
    }
    let c = Cli::command();
    if descriptions {
        c
    } else {
        plain(c)
    }
}

/// Answers a completion request when the environment holds one (the callback of a sourced
/// script, or `TALM_COMPLETE=bash talm` printing the script); returns the exit code then.
pub fn respond(args: &[OsString]) -> Option<i32> {
    for (var, descriptions) in [(VAR, true), (VAR_PLAIN, false)] {
        match std::env::var_os(var) {
            Some(v) if !v.is_empty() && v != "0" => {}
            _ => continue,
        }
        DESCRIPTIONS.store(descriptions, Ordering::SeqCst);
        if let Some(dash) = args.iter().position(|a| a == "--") {
            *WORDS.lock().unwrap_or_else(|e| e.into_inner()) = args[dash + 1..]
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
        }
        let cwd = std::env::current_dir().ok();
        let done = clap_complete::CompleteEnv::with_factory(move || command(descriptions))
            .var(var)
            .try_complete(args.to_vec(), cwd.as_deref());
        return Some(match done {
            Ok(_) => 0,
            // The shell went away (a closed pipe): nothing to tell anyone.
            Err(e) if e.kind() == clap::error::ErrorKind::Io => 0,
            Err(e) => {
                let _ = e.print();
                1
            }
        });
    }
    None
}

/// `talm completion SHELL [--no-descriptions]`: the registration script of `shell`, calling
/// back the binary as it was invoked.
pub fn script(shell: clap_complete::Shell, descriptions: bool) -> Result<()> {
    let name = shell.to_string();
    let shells = clap_complete::env::Shells::builtins();
    let completer = shells
        .completer(&name)
        .ok_or_else(|| crate::error::plain(format!("no completion for shell {name}")))?;
    let program = std::env::args_os()
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("talm"));
    let program = if program.components().count() > 1 {
        crate::project::root::absolute(&program)?
    } else {
        program
    };
    let var = if descriptions { VAR } else { VAR_PLAIN };
    let mut text = Vec::new();
    completer.write_registration(var, "talm", "talm", &program.to_string_lossy(), &mut text)?;
    crate::output::write(&text)
}

/// The value of `--flag` in the words being completed (`--flag V` or `--flag=V`), the last one.
fn typed(flag: &str) -> Option<String> {
    let words = WORDS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut found = None;
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        if w == flag {
            if let Some(v) = it.peek() {
                found = Some((*v).clone());
            }
        } else if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
            found = Some(v.to_string());
        }
    }
    found
}

fn candidate(value: impl Into<OsString>, help: impl Into<String>) -> CompletionCandidate {
    let c = CompletionCandidate::new(value);
    if DESCRIPTIONS.load(Ordering::SeqCst) {
        c.help(Some(help.into().into()))
    } else {
        c
    }
}

/// The project the words point at (`--root`), else the one around the working directory.
fn project_root() -> Option<PathBuf> {
    let start = match typed("--root") {
        Some(r) => crate::project::root::absolute(Path::new(&r)).ok()?,
        None => std::env::current_dir().ok()?,
    };
    crate::project::root::detect(&start).ok().flatten()
}

/// The talosconfig completion reads: `--talosconfig` if it exists, then `$TALOSCONFIG`, then
/// the project's (Chart.yaml globalOptions.talosconfig, else `talosconfig`).
fn talosconfig() -> Option<PathBuf> {
    let given = typed("--talosconfig")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("TALOSCONFIG").map(PathBuf::from));
    for p in given {
        if p.is_file() {
            return Some(p);
        }
    }
    let root = project_root()?;
    let rel = crate::project::chart::Chart::load(&root)
        .map(|c| c.talosconfig())
        .unwrap_or_else(|_| "talosconfig".into());
    Some(root.join(rel)).filter(|p| p.is_file())
}

/// Every distinct value of `key` (`nodes` or `endpoints`) across the talosconfig's contexts.
fn from_contexts(key: &str) -> Vec<CompletionCandidate> {
    let Some(path) = talosconfig() else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Vec::new();
    };
    let Ok(doc) = serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&text) else {
        return Vec::new();
    };
    let mut seen: Vec<(String, String)> = Vec::new();
    if let Some(contexts) = doc.get("contexts").and_then(|c| c.as_mapping()) {
        for (name, ctx) in contexts {
            let name = name.as_str().unwrap_or_default();
            for v in ctx
                .get(key)
                .and_then(|l| l.as_sequence())
                .into_iter()
                .flatten()
            {
                if let Some(v) = v.as_str() {
                    if !seen.iter().any(|(s, _)| s == v) {
                        seen.push((v.to_string(), name.to_string()));
                    }
                }
            }
        }
    }
    seen.into_iter()
        .map(|(v, ctx)| candidate(v, format!("context {ctx}")))
        .collect()
}

/// `--nodes` candidates: the nodes of every talosconfig context.
pub fn nodes() -> Vec<CompletionCandidate> {
    from_contexts("nodes")
}

/// `-e/--endpoints` candidates: the endpoints of every talosconfig context.
pub fn endpoints() -> Vec<CompletionCandidate> {
    from_contexts("endpoints")
}

/// `-f` candidates: the project's YAML files that start with a modeline, as paths from the
/// working directory (the vendored charts are skipped).
pub fn node_files() -> Vec<CompletionCandidate> {
    let Some(root) = project_root() else {
        return Vec::new();
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| root.clone());
    let Ok(files) = crate::project::fsutil::files_below(&root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (rel, path) in files {
        let hidden = rel.split('/').any(|part| part.starts_with('.'));
        if hidden || rel.starts_with("charts/") {
            continue;
        }
        if !(rel.ends_with(".yaml") || rel.ends_with(".yml")) {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let Ok(nf) = crate::project::modeline::find(&text, &rel) else {
            continue;
        };
        let shown = match path.strip_prefix(&cwd) {
            Ok(p) => p.display().to_string(),
            Err(_) => path.display().to_string(),
        };
        out.push(candidate(shown, format!("nodes={:?}", nf.modeline.nodes)));
    }
    out
}

/// `--preset` candidates: the presets compiled in.
pub fn presets() -> Vec<CompletionCandidate> {
    crate::project::presets::names()
        .into_iter()
        .map(|n| candidate(n, "preset"))
        .collect()
}

/// `get` kind candidates: the lower-case names and aliases of the resource types a node serves.
pub fn kinds() -> Vec<CompletionCandidate> {
    let mut out: Vec<CompletionCandidate> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for d in crate::sim::cosi::facts::defs() {
        let names = std::iter::once(d.display.to_lowercase())
            .chain(d.aliases.iter().map(|a| a.to_string()));
        for n in names {
            if !seen.contains(&n) {
                seen.push(n.clone());
                out.push(candidate(n, &d.ty));
            }
        }
    }
    out
}
