//! From parsed flags to a running command: find and check the project where the command needs
//! one, turn the flags into the bundled script's `ARGS`, and run it.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{CommandFactory, FromArgMatches};
use rhai::{Array, Dynamic, Map};

use crate::cli::{Cli, Command, GenCommand, Global};
use crate::error::hinted;
use crate::project::{chart::Chart, drift, root};

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

/// Finds the project for a command that works on one, loads Chart.yaml and runs the drift
/// checks; returns the absolute root.
pub fn load_project(g: &Global, root_explicit: bool) -> Result<String> {
    let start = root::absolute(Path::new(&g.root))?;
    let root = if root_explicit {
        start
    } else {
        root::detect(&start)?.unwrap_or(start)
    };
    let chart = Chart::load(&root)?;
    drift::check(&root, chart.strict_charts || g.strict_charts)?;
    Ok(root.display().to_string())
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
            let _ = crate::runtime::run_bundled("init", a)?;
        }
        Command::Talosconfig(t) => {
            let root = load_project(&cli.global, root_explicit)?;
            if let Some(tc) = cli.global.talosconfig.take() {
                a.insert("talosconfig".into(), inside_root(&tc, &root)?.into());
            }
            a.insert("root".into(), root.into());
            a.insert("endpoints".into(), strings(&t.endpoints.endpoints).into());
            let _ = crate::runtime::run_bundled("talosconfig", a)?;
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
            let _ = crate::runtime::run_bundled("gen_config", a)?;
        }
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "talm", &mut std::io::stdout());
        }
    }
    Ok(0)
}
