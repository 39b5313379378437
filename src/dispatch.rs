//! Running an [`Invocation`]: find and check the project it needs, open its session, hand its
//! `ARGS` to the script. Parsing and deciding happen in `crate::invocation`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::CommandFactory;
use rhai::{Dynamic, Map};

use crate::cli::{Cli, ProjectFlags};
use crate::error::hinted;
use crate::invocation::{from_cli, Action, Invocation, Prep, Project, SessionSpec};
use crate::project::{chart::Chart, drift, root};
use crate::runtime::{playbooks, Limits, Runner, Scope, Session, Settings};

/// Parses the arguments and runs the command; returns the exit code.
pub fn dispatch(args: impl IntoIterator<Item = OsString>) -> Result<i32> {
    let typed: Vec<OsString> = args.into_iter().collect();
    if let Some(script) = crate::cli::subcommand_word(&typed).filter(|w| RENDERING.contains(w)) {
        // The word is the command's and its script's name: the script, the stdlib modules its
        // render imports and its project's templates compile on the other core while clap
        // builds the command line's definition and parses it (about 2 ms of a one-shot
        // `talm template`).
        crate::sandbox::prewarm_stdlib(crate::runtime::bundled(script));
        if let Some(root) = early_root(&typed) {
            crate::render::cache::prefetch(&root);
        }
    }
    let line = command_line(&typed);
    let habit = crate::cli::typos::habit(&typed);
    let parsed = with_command(|cmd| {
        let args = crate::cli::carry(typed, cmd)?;
        Ok::<_, anyhow::Error>(parse(cmd, args))
    })?;
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            if let Some(ours) = crate::cli::values::explained(&e) {
                return Err(ours);
            }
            let e = match habit {
                Some(tip) => crate::cli::typos::with_tip(e, tip),
                None => e,
            };
            let code = usage_exit_code(&e);
            let _ = e.print();
            return Ok(code);
        }
    };
    let mut inv = from_cli(cli)?;
    if let Action::Script {
        script: "upgrade",
        args,
        ..
    } = &mut inv.action
    {
        // What a stopped roll prints to run the command again with --resume.
        if let Some(m) = args.as_object_mut() {
            m.insert("command_line".into(), line.into());
        }
    }
    run(inv)
}

/// The command line as typed, shell-quoted, with the program named `talm`.
fn command_line(args: &[OsString]) -> String {
    let mut words = vec!["talm".to_string()];
    for a in args.iter().skip(1) {
        let a = a.to_string_lossy();
        let plain = !a.is_empty()
            && a.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@%+".contains(c));
        words.push(if plain {
            a.into_owned()
        } else {
            format!("'{}'", a.replace('\'', "'\\''"))
        });
    }
    words.join(" ")
}

/// Spare definitions of the command line: a parse needs one mutably, and building or copying
/// the whole tree for each command of a playbook cost more than the parse. A few are kept, not
/// one per thread (a fleet's pool has many threads, and each is a quarter MiB).
///
/// Listed in [`crate::caches::KEPT`].
static SPARE_COMMANDS: std::sync::Mutex<Vec<clap::Command>> = std::sync::Mutex::new(Vec::new());
const SPARES_KEPT: usize = 2;

/// `f` with a definition of the command line of its own: a spare one, else one built now (as
/// costly as a copy, so a one-shot command builds one and copies none), kept as a spare after.
fn with_command<R>(f: impl FnOnce(&mut clap::Command) -> R) -> R {
    let spare = SPARE_COMMANDS.lock().ok().and_then(|mut s| s.pop());
    let mut cmd = spare.unwrap_or_else(Cli::command);
    let out = f(&mut cmd);
    if let Ok(mut spares) = SPARE_COMMANDS.lock() {
        if spares.len() < SPARES_KEPT {
            spares.push(cmd);
        }
    }
    out
}

/// `Cli::try_parse_from` over `cmd`.
fn parse(cmd: &mut clap::Command, args: Vec<OsString>) -> Result<Cli, clap::Error> {
    use clap::FromArgMatches;
    cmd.try_get_matches_from_mut(args)
        .and_then(|mut m| Cli::from_arg_matches_mut(&mut m).map_err(|e| e.format(cmd)))
}

/// The bundled scripts that render templates of their project, each the script of the talm
/// command of the same name.
const RENDERING: &[&str] = &["template", "apply"];

/// Runs what the command line decided.
pub fn run(inv: Invocation) -> Result<i32> {
    let scripted = matches!(
        inv.action,
        Action::Script { .. }
            | Action::Playbook { .. }
            | Action::Repl { .. }
            | Action::External { .. }
    );
    let rendering = match &inv.action {
        Action::Script { script, .. } if RENDERING.contains(script) => Some(*script),
        _ => None,
    };
    let renders = rendering.is_some();
    if let Some(script) = rendering {
        // Built on the other core from now on: the standard package, the command's script,
        // then the stdlib modules the preset logic imports.
        crate::sandbox::prewarm_stdlib(crate::runtime::bundled(script));
    } else if scripted {
        // Built on the other core while the project is found and checked.
        crate::sandbox::prewarm_package();
    }
    let root = find_project(&inv.project, renders)?;
    let mut settings = settings(inv.session.as_ref(), root.as_deref())?;
    if matches!(
        inv.action,
        Action::Playbook { .. } | Action::Repl { .. } | Action::External { .. }
    ) {
        // Scripts the user wrote (or types) stay inside their project.
        settings.scope = Scope::Project;
    }
    let session = Session::new(settings);
    let root_text = root
        .as_ref()
        .map(|r| r.display().to_string())
        .unwrap_or_default();
    let in_project = matches!(
        inv.project,
        Project::Required { .. } | Project::Optional { .. } | Project::Adopt(_)
    );
    let script_args = |v: serde_json::Value| -> Result<Map> {
        let mut m: Map = rhai::serde::to_dynamic(v)?
            .try_cast::<Map>()
            .unwrap_or_default();
        if in_project {
            m.insert("root".into(), root_text.clone().into());
        }
        Ok(m)
    };
    match inv.action {
        Action::Script { script, args, prep } => {
            let mut a = script_args(args)?;
            prepare(&mut a, prep, &root_text)?;
            let _ = crate::runtime::run_bundled(script, a, &session)?;
        }
        Action::Playbook {
            file,
            args,
            max_ops,
        } => {
            let limits = Limits::playbook(max_ops);
            let path = Path::new(&file);
            // A file of that name wins over a bundled playbook.
            let bundled = match path.is_file() {
                true => None,
                false => playbooks::named(&file),
            };
            if let Some(p) = bundled {
                let _ = crate::runtime::run_playbook(p, script_args(args)?, &limits, &session)?;
            } else if !path.exists() {
                return Err(hinted(
                    format!("playbook {file}: no such file"),
                    format!(
                        "give the path of a .rhai file, or the name of a playbook bundled with talm: {} (`talm run --list`)",
                        playbooks::names()
                    ),
                ));
            } else {
                let _ = crate::runtime::run_file(path, script_args(args)?, &limits, &session)?;
            }
        }
        Action::Repl { args, max_ops } => {
            return crate::runtime::repl::run(
                script_args(args)?,
                &Limits::playbook(max_ops),
                &session,
            );
        }
        Action::External { name, args } => {
            let script = root
                .as_ref()
                .map(|r| r.join("scripts").join(format!("{name}.rhai")));
            let Some(script) = script.filter(|p| p.is_file()) else {
                if let Some(e) =
                    crate::cli::typos::unknown_command(&name, &scripts_of(root.as_deref()))
                {
                    let _ = e.print();
                    return Ok(usage_exit_code(&e));
                }
                return Err(hinted(
                    format!("unknown command {name:?}"),
                    "see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`",
                ));
            };
            let limits = Limits::playbook(Limits::max_ops_from_env()?);
            let _ = crate::runtime::run_file(&script, script_args(args)?, &limits, &session)?;
        }
        Action::ListPlaybooks => crate::output::write(playbooks::listing().as_bytes())?,
        Action::Help(topic) => help(&topic)?,
        Action::Completion {
            shell,
            descriptions,
        } => crate::completion::script(shell, descriptions)?,
        Action::Demo { dir, nodes } => {
            return crate::demo::run(dir.as_deref(), &nodes, Runner::new(dispatch))
        }
        Action::Sim(opts) => return crate::sim::serve::run(&opts),
        Action::Nothing => {}
    }
    Ok(0)
}

/// The names of a project's scripts (`scripts/NAME.rhai`, run as `talm NAME`).
fn scripts_of(root: Option<&Path>) -> Vec<String> {
    let Some(Ok(entries)) = root.map(|r| std::fs::read_dir(r.join("scripts"))) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".rhai").map(str::to_string)
        })
        .collect()
}

/// Fills in what a script's flags need once the project is known.
fn prepare(a: &mut Map, prep: Prep, root: &str) -> Result<()> {
    match prep {
        Prep::None => {}
        Prep::TalosconfigInsideRoot => {
            let given = a
                .get("talosconfig")
                .and_then(|v| v.clone().into_string().ok());
            if let Some(tc) = given {
                a.insert("talosconfig".into(), inside_root(&tc, root)?.into());
            }
        }
        Prep::ReadSecrets(path) => {
            let text = match path {
                Some(p) => crate::project::fsutil::read_text(Path::new(&p))?,
                None => String::new(),
            };
            a.insert("secrets_text".into(), Dynamic::from(text));
        }
        Prep::ReadPatches(args) => {
            let mut texts = rhai::Array::new();
            for arg in args {
                let text = match arg.strip_prefix('@') {
                    Some(f) => crate::project::fsutil::read_text(Path::new(f)).map_err(|e| {
                        crate::error::hinted(
                            format!("reading patch {f}: {e:#}"),
                            "patches are inline YAML/JSON or @FILE",
                        )
                    })?,
                    None => arg,
                };
                texts.push(Dynamic::from(text));
            }
            a.insert("patch_texts".into(), Dynamic::from(texts));
        }
    }
    Ok(())
}

/// `talm help [TOPIC]`: a command's help, or the Rhai API's.
fn help(topic: &[String]) -> Result<()> {
    let mut cmd = Cli::command();
    let text = match topic.first().map(String::as_str) {
        None => cmd.render_long_help().to_string(),
        Some("api") => {
            crate::runtime::repl::api_help(topic.get(1).map(String::as_str).unwrap_or(""))
        }
        Some(name) => match cmd.find_subcommand_mut(name) {
            Some(sub) => sub.render_long_help().to_string(),
            None => {
                return Err(hinted(
                    format!("no command {name:?}"),
                    "`talm help` lists the commands; `talm help api` the Rhai API",
                ))
            }
        },
    };
    crate::output::write(text.as_bytes())
}

/// The session's settings: the project root, and the talosconfig (`--talosconfig` from the
/// working directory, else the project's per Chart.yaml, else `./talosconfig`), context and
/// call deadline nodes are reached with.
fn settings(spec: Option<&SessionSpec>, root: Option<&Path>) -> Result<Settings> {
    let default = SessionSpec::default();
    let spec = spec.unwrap_or(&default);
    let talosconfig = match (&spec.talosconfig, root) {
        (Some(p), _) => root::absolute(Path::new(p))?,
        (None, Some(r)) => r.join(Chart::load(r)?.talosconfig()),
        // Outside a project, as talosctl: $TALOSCONFIG, else ./talosconfig.
        (None, None) => match std::env::var_os("TALOSCONFIG").filter(|v| !v.is_empty()) {
            Some(p) => root::absolute(Path::new(&p))?,
            None => root::absolute(Path::new("talosconfig"))?,
        },
    };
    let outputs = spec
        .outputs
        .iter()
        .map(|o| root::absolute(Path::new(o)))
        .collect::<Result<_>>()?;
    Ok(Settings {
        root: root.map(Path::to_path_buf),
        talosconfig,
        context: spec.context.clone(),
        timeout: spec.timeout,
        outputs,
        skip_verify: spec.skip_verify,
        scope: Scope::Command,
        runner: Runner::new(dispatch),
    })
}

/// The project a command works in, found and checked, or `None`. A command that `renders` has
/// its project's templates compiling on the other core from the moment a killed run's leftovers
/// are recovered (when the raw command line did not start them already).
fn find_project(p: &Project, renders: bool) -> Result<Option<PathBuf>> {
    match p {
        Project::None | Project::Create => Ok(None),
        Project::Required { flags, files } => {
            let root = locate(flags.root.as_deref(), files.first().map(String::as_str))?;
            check_project(&root, flags, renders)?;
            Ok(Some(root))
        }
        Project::Adopt(flags) => {
            let root = locate(flags.root.as_deref(), None)?;
            crate::project::txn::recover(&root)?;
            Chart::load(&root)?;
            Ok(Some(root))
        }
        Project::Optional { flags, files } => {
            if let Some(first) = files.first() {
                let root = root_from_file(first, flags.root.as_deref())?;
                check_project(&root, flags, renders)?;
                return Ok(Some(root));
            }
            match root::detect(&start(flags.root.as_deref())?)? {
                Some(r) if r.join("Chart.yaml").exists() => {
                    check_project(&r, flags, renders)?;
                    Ok(Some(r))
                }
                _ => Ok(None),
            }
        }
    }
}

/// The root a command works in, not yet checked: the first `-f` file's, else `--root`, else
/// the first folder with a project at or above the working directory (or the working
/// directory itself).
fn locate(root_flag: Option<&str>, first_file: Option<&str>) -> Result<PathBuf> {
    if let Some(first) = first_file {
        return root_from_file(first, root_flag);
    }
    let start = start(root_flag)?;
    Ok(if root_flag.is_some() {
        start
    } else {
        root::detect(&start)?.unwrap_or(start)
    })
}

/// Where a rendering command will find its project, read off the raw command line before clap
/// parses it, so that its templates compile on the other core meanwhile: `None` when the line
/// names none plainly, or when a write of another run waits in it (the checks complete that
/// before anything reads the templates). A wrong guess costs a thread's work, never a render:
/// each render checks the compiled project is fresh.
fn early_root(args: &[OsString]) -> Option<PathBuf> {
    let root = locate(
        crate::cli::first_value(args, "root", None),
        crate::cli::first_value(args, "file", Some('f')),
    )
    .ok()?;
    (root.join("Chart.yaml").is_file() && !crate::project::txn::pending(&root)).then_some(root)
}

fn start(root_flag: Option<&str>) -> Result<PathBuf> {
    root::absolute(Path::new(root_flag.unwrap_or(".")))
}

/// The first `-f` file anchors the project root; an explicit `--root` must agree.
fn root_from_file(first: &str, root_flag: Option<&str>) -> Result<PathBuf> {
    let path = root::absolute(Path::new(first))?;
    let dir = if path.is_dir() {
        path.clone()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or(path.clone())
    };
    let found = root::detect(&dir)?.ok_or_else(|| {
        hinted(
            format!("failed to detect project root for first file {first} (Chart.yaml and secrets.yaml not found)"),
            "the first -f file anchors the project root; place it inside a `talm init`'d project, or reorder the -f chain so a rooted file comes first",
        )
    })?;
    if let Some(given) = root_flag {
        let given = root::absolute(Path::new(given))?;
        if given != found {
            return Err(hinted(
                format!(
                    "conflicting project roots: --root={}, but detected root={}",
                    given.display(),
                    found.display()
                ),
                "drop --root, or pass files from that project",
            ));
        }
    }
    Ok(found)
}

/// Completes or discards what a killed run left, loads Chart.yaml and runs the drift checks.
/// For a command that `renders`, the templates start compiling on the other core once the
/// files are whole again (the checks only read).
fn check_project(root: &Path, flags: &ProjectFlags, renders: bool) -> Result<()> {
    crate::project::txn::recover(root)?;
    crate::project::txn::recover(&root.join("nodes"))?;
    if renders {
        crate::render::cache::prefetch(root);
    }
    let chart = Chart::load(root)?;
    if crate::project::migrate::detect::looks_go(root) {
        crate::output::err("WARN: this project's templates are the Go talm's (templates/_helpers.tpl), which talm does not render; run `talm migrate --dry-run` to see how it moves to talm's own preset");
    }
    drift::check(root, chart.strict_charts || flags.strict_charts)
}

/// A path given on the command line as a path relative to the project root; files outside the
/// project are refused, since scripts work inside it.
fn inside_root(path: &str, root: &str) -> Result<String> {
    let abs = root::absolute(Path::new(path))?;
    abs.strip_prefix(root)
        .map(|r| r.display().to_string())
        .map_err(|_| {
            hinted(
                format!("{path} is outside the project at {root}"),
                "keep the talosconfig inside the project folder (globalOptions.talosconfig in Chart.yaml)",
            )
        })
}

/// How a command line clap did not take ends: 0 after `--help` or `--version`, 1 for a usage
/// error, as talosctl's cobra commands exit (clap's own convention is 2).
fn usage_exit_code(e: &clap::Error) -> i32 {
    if e.use_stderr() {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    #[test]
    fn a_rendering_command_finds_its_project_before_clap_unless_a_write_waits_there() {
        let dir = tempfile::tempdir().unwrap();
        let root = root::absolute(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("nodes")).unwrap();
        std::fs::write(root.join("Chart.yaml"), "name: x\n").unwrap();
        std::fs::write(root.join("secrets.yaml"), "").unwrap();
        std::fs::write(root.join("nodes/a.yaml"), "").unwrap();
        let node = root.join("nodes/a.yaml").display().to_string();
        let by_root = line(&[
            "talm",
            "template",
            "--root",
            root.to_str().unwrap(),
            "-t",
            "x",
        ]);
        assert_eq!(early_root(&by_root).as_deref(), Some(root.as_path()));
        let by_file = line(&["talm", "apply", "-f", &node, "-i"]);
        assert_eq!(early_root(&by_file).as_deref(), Some(root.as_path()));
        // Not a project: nothing to compile ahead.
        let empty = tempfile::tempdir().unwrap();
        let elsewhere = line(&["talm", "template", "--root", empty.path().to_str().unwrap()]);
        assert_eq!(early_root(&elsewhere), None);
        // A killed run's committed write: recovered by the checks before templates are read.
        let staging = root.join(format!("{}1-dead", crate::project::txn::STAGING_PREFIX));
        std::fs::create_dir(&staging).unwrap();
        std::fs::write(staging.join("journal"), "").unwrap();
        assert_eq!(early_root(&by_file), None);
    }
}
