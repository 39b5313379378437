//! From parsed flags to a running command: find and check the project where the command needs
//! one, turn the flags into the bundled script's `ARGS`, and run it.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use rhai::{Array, Dynamic, Map};

use crate::cli::{Cli, Command, GenCommand, Global, NodeArgs, RenderArgs, ValueArgs};

/// Runs a bundled command script; the result is not used.
fn bundled(name: &str, args: Map) -> Result<()> {
    crate::runtime::run_bundled(name, args).map(|_| ())
}
use crate::error::hinted;
use crate::project::{chart::Chart, drift, root};
use crate::sandbox::Limits;
use crate::talos::duration::{self, Zero};

fn strings(v: &[String]) -> Array {
    v.iter().map(|s| Dynamic::from(s.clone())).collect()
}

fn opt(v: &Option<String>) -> Dynamic {
    Dynamic::from(v.clone().unwrap_or_default())
}

fn explicit(matches: &clap::ArgMatches, id: &str) -> bool {
    let here = matches.value_source(id) == Some(ValueSource::CommandLine);
    here || matches
        .subcommand()
        .is_some_and(|(_, sub)| explicit(sub, id))
}

/// The common part of every script's ARGS.
fn base_args(g: &Global, root_explicit: bool) -> Map {
    let mut a = Map::new();
    a.insert("root".into(), g.root.clone().into());
    a.insert("root_explicit".into(), root_explicit.into());
    a.insert("talosconfig".into(), opt(&g.talosconfig));
    a.insert("context".into(), opt(&g.context));
    a.insert("nodes".into(), strings(&g.nodes).into());
    a.insert("strict_charts".into(), g.strict_charts.into());
    a
}

/// The value flags as a script map.
fn value_args(v: &ValueArgs) -> Map {
    let mut m = Map::new();
    m.insert("values".into(), strings(&v.values).into());
    m.insert("set".into(), strings(&v.set).into());
    m.insert("set_string".into(), strings(&v.set_string).into());
    m.insert("set_file".into(), strings(&v.set_file).into());
    m.insert("set_json".into(), strings(&v.set_json).into());
    m.insert("set_literal".into(), strings(&v.set_literal).into());
    m
}

/// The render flags shared by `template` and `apply`.
fn render_args(a: &mut Map, r: &RenderArgs) {
    a.insert("values".into(), value_args(&r.values).into());
    a.insert("talos_version".into(), opt(&r.talos_version));
    a.insert("talos_version_set".into(), r.talos_version.is_some().into());
    a.insert("kubernetes_version".into(), opt(&r.kubernetes_version));
    a.insert(
        "kubernetes_version_set".into(),
        r.kubernetes_version.is_some().into(),
    );
    a.insert("with_secrets".into(), opt(&r.with_secrets));
}

/// The first `-f` file anchors the project root; an explicit `--root` must agree.
fn root_from_file(first: &str, g: &Global, root_explicit: bool) -> Result<String> {
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
    if root_explicit {
        let given = root::absolute(Path::new(&g.root))?;
        if given != found {
            return Err(hinted(
                format!(
                    "conflicting project roots: global --root={}, but detected root={}",
                    given.display(),
                    found.display()
                ),
                "drop --root, or pass files from that project",
            ));
        }
    }
    Ok(found.display().to_string())
}

/// Completes or discards what a killed run left in a known root, loads Chart.yaml and runs the
/// drift checks.
fn check_project(root: &str, g: &Global) -> Result<()> {
    crate::project::txn::recover(Path::new(root))?;
    crate::project::txn::recover(&Path::new(root).join("nodes"))?;
    let chart = Chart::load(Path::new(root))?;
    drift::check(Path::new(root), chart.strict_charts || g.strict_charts)
}

/// Finds the project for a command that works on one, loads Chart.yaml and runs the drift
/// checks; returns the absolute root.
pub fn load_project(g: &Global, root_explicit: bool) -> Result<String> {
    let start = root::absolute(Path::new(&g.root))?;
    let root = if root_explicit {
        start
    } else {
        root::detect(&start)?.unwrap_or(start)
    };
    let root = root.display().to_string();
    check_project(&root, g)?;
    Ok(root)
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

/// Where node commands get their credentials: `--talosconfig` (from the working directory),
/// else the project's (Chart.yaml `globalOptions.talosconfig`, else `talosconfig` at the root),
/// else `./talosconfig`; with `--context` and `--call-timeout`.
fn set_node_defaults(g: &Global, root: Option<&str>) -> Result<()> {
    let talosconfig = match (&g.talosconfig, root) {
        (Some(p), _) => root::absolute(Path::new(p))?,
        (None, Some(r)) => Path::new(r).join(Chart::load(Path::new(r))?.talosconfig()),
        (None, None) => root::absolute(Path::new("talosconfig"))?,
    };
    let timeout = match &g.call_timeout {
        None => None,
        Some(t) => Some(duration::flag(
            "--call-timeout",
            t,
            Zero::Refused("every connection and call would give up at once; give e.g. 30s or 2m"),
        )?),
    };
    crate::runtime::api_playbook::set_root(root.unwrap_or(""));
    crate::runtime::api_talos::set_defaults(crate::runtime::api_talos::Defaults {
        talosconfig,
        context: g.context.clone().unwrap_or_default(),
        timeout,
    });
    Ok(())
}

/// The project a node command runs in, if any: the first -f file's, else the one at or above
/// --root; drift is checked when there is one.
fn node_project(g: &Global, root_explicit: bool, files: &[String]) -> Result<Option<String>> {
    if let Some(first) = files.first() {
        let root = root_from_file(first, g, root_explicit)?;
        check_project(&root, g)?;
        return Ok(Some(root));
    }
    let start = root::absolute(Path::new(&g.root))?;
    match root::detect(&start)? {
        Some(r) if Path::new(&r).join("Chart.yaml").exists() => {
            let r = r.display().to_string();
            check_project(&r, g)?;
            Ok(Some(r))
        }
        _ => Ok(None),
    }
}

/// Enters the project a node command runs in (if any): drift checked, connection defaults
/// set, `root` in ARGS ("" outside a project). Returns the root.
fn enter(g: &Global, root_explicit: bool, files: &[String], a: &mut Map) -> Result<Option<String>> {
    let root = node_project(g, root_explicit, files)?;
    set_node_defaults(g, root.as_deref())?;
    a.insert("root".into(), root.clone().unwrap_or_default().into());
    Ok(root)
}

/// ARGS shared by commands that talk to nodes.
fn node_args(a: &mut Map, n: &NodeArgs) {
    a.insert("endpoints".into(), strings(&n.endpoints.endpoints).into());
    a.insert("files".into(), strings(&n.files).into());
    a.insert("insecure".into(), n.insecure.into());
}

/// Parses the arguments and runs the command; returns the exit code.
pub fn dispatch(args: impl IntoIterator<Item = OsString>) -> Result<i32> {
    let matches = match Cli::command().try_get_matches_from(args) {
        Ok(m) => m,
        Err(e) => {
            let code = e.exit_code();
            let _ = e.print();
            return Ok(code);
        }
    };
    let mut cli = Cli::from_arg_matches(&matches)?;
    let root_explicit = explicit(&matches, "root");
    let mut a = base_args(&cli.global, root_explicit);
    match &cli.command {
        Command::Init(i) => {
            a.insert("preset".into(), opt(&i.preset));
            a.insert("name".into(), opt(&i.name));
            a.insert("endpoints".into(), strings(&i.endpoints).into());
            a.insert("cluster_endpoint".into(), opt(&i.cluster_endpoint));
            a.insert("image".into(), opt(&i.image));
            a.insert("talos_version".into(), opt(&i.talos_version));
            a.insert("force".into(), i.force.into());
            a.insert("update".into(), i.update.into());
            a.insert("encrypt".into(), i.encrypt.into());
            a.insert("decrypt".into(), i.decrypt.into());
            a.insert("version".into(), crate::version::chart_version().into());
            bundled("init", a)?;
        }
        Command::Talosconfig(t) => {
            let root = load_project(&cli.global, root_explicit)?;
            if let Some(tc) = cli.global.talosconfig.take() {
                a.insert("talosconfig".into(), inside_root(&tc, &root)?.into());
            }
            a.insert("root".into(), root.into());
            a.insert("endpoints".into(), strings(&t.endpoints.endpoints).into());
            bundled("talosconfig", a)?;
        }
        Command::Template(t) => {
            let root = match t.files.first() {
                Some(first) => root_from_file(first, &cli.global, root_explicit)?,
                None => load_project(&cli.global, root_explicit)?,
            };
            if !t.files.is_empty() {
                check_project(&root, &cli.global)?;
            }
            set_node_defaults(&cli.global, Some(&root))?;
            a.insert("root".into(), root.into());
            a.insert("endpoints".into(), strings(&t.endpoints.endpoints).into());
            a.insert("templates".into(), strings(&t.templates).into());
            a.insert("files".into(), strings(&t.files).into());
            a.insert("in_place".into(), t.in_place.into());
            render_args(&mut a, &t.render);
            a.insert("offline".into(), t.offline.into());
            a.insert("full".into(), t.full.into());
            a.insert("facts".into(), opt(&t.facts));
            a.insert("insecure".into(), t.insecure.into());
            a.insert("show_secrets".into(), t.show_secrets.into());
            a.insert("allow_private_keys".into(), t.allow_private_keys.into());
            bundled("template", a)?;
        }
        Command::Gen(GenCommand::Config(g)) => {
            a.insert("cluster_name".into(), g.cluster_name.clone().into());
            a.insert("endpoint".into(), g.endpoint.clone().into());
            a.insert("with_secrets".into(), opt(&g.with_secrets));
            // The bundle named on the command line is read here: scripts only read inside projects.
            let secrets_text = match &g.with_secrets {
                Some(path) => crate::project::fsutil::read_text(Path::new(path))?,
                None => String::new(),
            };
            a.insert("secrets_text".into(), secrets_text.into());
            a.insert("talos_version".into(), opt(&g.talos_version));
            a.insert("kubernetes_version".into(), opt(&g.kubernetes_version));
            a.insert("output".into(), g.output.clone().into());
            a.insert("output_types".into(), strings(&g.output_types).into());
            a.insert("additional_sans".into(), strings(&g.additional_sans).into());
            a.insert("dns_domain".into(), opt(&g.dns_domain));
            a.insert("install_disk".into(), opt(&g.install_disk));
            a.insert("install_image".into(), opt(&g.install_image));
            a.insert("force".into(), g.force.into());
            bundled("gen_config", a)?;
        }
        Command::Version(v) => {
            enter(&cli.global, root_explicit, &v.node.files, &mut a)?;
            node_args(&mut a, &v.node);
            a.insert("short".into(), v.short.into());
            a.insert("client_version".into(), crate::version::current().into());
            bundled("version", a)?;
        }
        Command::Get(g) => {
            enter(&cli.global, root_explicit, &g.node.files, &mut a)?;
            node_args(&mut a, &g.node);
            a.insert("kind".into(), g.kind.clone().into());
            a.insert("id".into(), opt(&g.id));
            a.insert("namespace".into(), opt(&g.namespace));
            a.insert("output".into(), g.output.clone().into());
            bundled("get", a)?;
        }
        Command::Apply(t) => {
            if t.files.is_empty() {
                return Ok(0);
            }
            let try_zero = "--timeout is how long a try-mode config stays before it is rolled back; give e.g. 1m";
            duration::flag("--timeout", &t.timeout, Zero::Refused(try_zero))?;
            enter(&cli.global, root_explicit, &t.files, &mut a)?;
            a.insert("endpoints".into(), strings(&t.endpoints.endpoints).into());
            a.insert("files".into(), strings(&t.files).into());
            a.insert("insecure".into(), t.insecure.into());
            render_args(&mut a, &t.render);
            a.insert("dry_run".into(), t.dry_run.into());
            a.insert("mode".into(), t.mode.clone().into());
            a.insert("timeout".into(), t.timeout.clone().into());
            a.insert(
                "skip_resource_validation".into(),
                t.skip_resource_validation.into(),
            );
            a.insert("skip_drift_preview".into(), t.skip_drift_preview.into());
            a.insert(
                "show_secrets_in_drift".into(),
                t.show_secrets_in_drift.into(),
            );
            bundled("apply", a)?;
        }
        Command::Kubeconfig(k) => {
            enter(&cli.global, root_explicit, &k.node.files, &mut a)?;
            node_args(&mut a, &k.node);
            a.insert("path".into(), opt(&k.path));
            a.insert("merge".into(), k.merge.into());
            bundled("kubeconfig", a)?;
        }
        Command::Upgrade(u) => {
            let zero = if u.no_wait || u.stage {
                Zero::Allowed
            } else {
                Zero::Refused("the upgrade waits for the node up to --timeout; to not wait at all, pass --no-wait")
            };
            duration::flag("--timeout", &u.timeout, zero)?;
            enter(&cli.global, root_explicit, &u.files, &mut a)?;
            a.insert("endpoints".into(), strings(&u.endpoints.endpoints).into());
            a.insert("files".into(), strings(&u.files).into());
            a.insert("insecure".into(), u.insecure.into());
            a.insert("image".into(), opt(&u.image));
            a.insert("allow_downgrade".into(), u.allow_downgrade.into());
            a.insert("stage".into(), u.stage.into());
            a.insert("force".into(), u.force.into());
            a.insert("wait".into(), (!u.no_wait).into());
            a.insert("timeout".into(), u.timeout.clone().into());
            bundled("upgrade", a)?;
        }
        Command::Reboot(r) => {
            enter(&cli.global, root_explicit, &r.node.files, &mut a)?;
            node_args(&mut a, &r.node);
            a.insert("mode".into(), r.mode.clone().into());
            a.insert("wait".into(), r.wait.into());
            bundled("reboot", a)?;
        }
        Command::Reset(r) => {
            enter(&cli.global, root_explicit, &r.node.files, &mut a)?;
            node_args(&mut a, &r.node);
            a.insert("graceful".into(), r.graceful.into());
            a.insert("reboot".into(), r.reboot.into());
            a.insert("wipe_mode".into(), opt(&r.wipe_mode));
            a.insert(
                "system_labels".into(),
                strings(&r.system_labels_to_wipe).into(),
            );
            a.insert("user_disks".into(), strings(&r.user_disks_to_wipe).into());
            bundled("reset", a)?;
        }
        Command::Demo { dir } => return crate::demo::run(dir.as_deref()),
        Command::Help { topic } => {
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
            // A closed pipe (`talm help api | head`) is not an error.
            let _ = std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes());
        }
        Command::Logs(l) => {
            enter(&cli.global, root_explicit, &l.node.files, &mut a)?;
            node_args(&mut a, &l.node);
            a.insert("service".into(), l.service.clone().into());
            a.insert("tail".into(), l.tail.unwrap_or(-1).into());
            a.insert("kubernetes".into(), l.kubernetes.into());
            bundled("logs", a)?;
        }
        Command::Dmesg(l) => {
            enter(&cli.global, root_explicit, &l.node.files, &mut a)?;
            node_args(&mut a, &l.node);
            a.insert("service".into(), "kernel".into());
            a.insert("tail".into(), l.tail.unwrap_or(-1).into());
            a.insert("kubernetes".into(), false.into());
            bundled("logs", a)?;
        }
        Command::Services(n) => {
            enter(&cli.global, root_explicit, &n.files, &mut a)?;
            node_args(&mut a, n);
            bundled("services", a)?;
        }
        Command::Scan(sc) => {
            a.insert("cidr".into(), sc.cidr.clone().into());
            a.insert("port".into(), i64::from(sc.port).into());
            duration::flag(
                "--timeout",
                &sc.timeout,
                Zero::Refused("--timeout is how long each address gets to answer; give e.g. 500ms"),
            )?;
            a.insert("timeout".into(), sc.timeout.clone().into());
            a.insert("concurrency".into(), (sc.concurrency as i64).into());
            bundled("scan", a)?;
        }
        Command::Run(r) => {
            enter(&cli.global, root_explicit, &[], &mut a)?;
            a.insert("args".into(), strings(&r.args).into());
            let limits = Limits::playbook(r.limits.max_ops);
            let _ = crate::runtime::run_file(Path::new(&r.file), a, &limits)?;
        }
        Command::Repl(r) => {
            enter(&cli.global, root_explicit, &[], &mut a)?;
            return crate::runtime::repl::run(a, &Limits::playbook(r.limits.max_ops));
        }
        Command::External(words) => {
            let root = enter(&cli.global, root_explicit, &[], &mut a)?;
            let name = words.first().cloned().unwrap_or_default();
            let script = root
                .as_deref()
                .map(|r| Path::new(r).join("scripts").join(format!("{name}.rhai")));
            let Some(script) = script.filter(|p| p.is_file()) else {
                return Err(hinted(
                    format!("unknown command {name:?}"),
                    "see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`",
                ));
            };
            a.insert("args".into(), strings(&words[1..]).into());
            let limits = Limits::playbook(Limits::max_ops_from_env()?);
            let _ = crate::runtime::run_file(&script, a, &limits)?;
        }
        Command::Bootstrap(b) => {
            enter(&cli.global, root_explicit, &b.files, &mut a)?;
            node_args(&mut a, b);
            bundled("bootstrap", a)?;
        }
        Command::Discover(d) => {
            enter(&cli.global, root_explicit, &d.files, &mut a)?;
            node_args(&mut a, d);
            bundled("discover", a)?;
        }
        Command::Sim(s) => return crate::sim::cli::run(s),
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "talm", &mut std::io::stdout());
        }
    }
    Ok(0)
}
