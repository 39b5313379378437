//! The command line: clap definitions (flags defined once, feeding help and completions), and
//! the dispatch that turns parsed flags into a bundled script's `ARGS`.

use std::ffi::OsString;
use std::path::Path;

use anyhow::Result;
use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use rhai::{Array, Dynamic, Map};

use crate::project::{chart::Chart, drift, root};

#[derive(Debug, Parser)]
#[command(
    name = "talm",
    about = "Manage Talos the GitOps Way!",
    version = crate::version::current(),
    propagate_version = true
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts, before or after the command name.
#[derive(Debug, Args)]
pub struct Global {
    /// Path to the talosconfig (default: Chart.yaml globalOptions.talosconfig, else <root>/talosconfig)
    #[arg(long, global = true, value_name = "PATH")]
    pub talosconfig: Option<String>,
    /// Project root (default: detected from the files given, else the current directory)
    #[arg(long, global = true, default_value = ".", value_name = "DIR")]
    pub root: String,
    /// talosconfig context to use
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// Target nodes (comma-separated or repeated)
    #[arg(long, global = true, value_delimiter = ',', value_name = "IP")]
    pub nodes: Vec<String>,
    /// Turn chart and preset drift warnings into errors
    #[arg(long, global = true)]
    pub strict_charts: bool,
}

/// `-e/--endpoints` for commands that talk to nodes (on `init`, `-e` means --encrypt).
#[derive(Debug, Args)]
pub struct Endpoints {
    /// Override the talosconfig endpoints (comma-separated or repeated)
    #[arg(short = 'e', long, value_delimiter = ',', value_name = "IP")]
    pub endpoints: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a cluster project from a preset, or encrypt, decrypt or update one
    Init(InitArgs),
    /// Regenerate talosconfig with a new client certificate from the secrets bundle
    Talosconfig(TalosconfigArgs),
    /// Print a shell completion script
    Completion {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Preset to create the project from (generic, cozystack, talm)
    #[arg(short = 'p', long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Cluster name (a DNS-1123 subdomain)
    #[arg(short = 'N', long, value_name = "NAME")]
    pub name: Option<String>,
    /// Endpoints of the talosconfig context; exactly one also sets values.yaml endpoint to https://E:6443
    #[arg(long, value_delimiter = ',', value_name = "IP")]
    pub endpoints: Vec<String>,
    /// Cluster control-plane URL written to values.yaml endpoint (scheme, host and port)
    #[arg(long, value_name = "URL")]
    pub cluster_endpoint: Option<String>,
    /// Installer image written to values.yaml image
    #[arg(long, value_name = "REF")]
    pub image: Option<String>,
    /// Talos version contract for the secrets bundle (e.g. v1.12)
    #[arg(long, value_name = "VERSION")]
    pub talos_version: Option<String>,
    /// Overwrite existing files; with --update, accept every preset change
    #[arg(long)]
    pub force: bool,
    /// Re-sync the talm library chart and the preset files of an existing project
    #[arg(short = 'u', long, conflicts_with_all = ["encrypt", "decrypt"])]
    pub update: bool,
    /// Encrypt secrets.yaml, talosconfig, kubeconfig and values-secret.yaml with talm.key
    #[arg(short = 'e', long, conflicts_with = "decrypt")]
    pub encrypt: bool,
    /// Decrypt the encrypted files back to their plain copies
    #[arg(short = 'd', long)]
    pub decrypt: bool,
}

#[derive(Debug, Args)]
pub struct TalosconfigArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
}

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
    let cli = Cli::from_arg_matches(&matches)?;
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
            a.insert("root".into(), root.into());
            a.insert("endpoints".into(), strings(&t.endpoints.endpoints).into());
            let _ = crate::runtime::run_bundled("talosconfig", a)?;
        }
        Command::Completion { shell } => {
            let mut cmd = Cli::command();
            clap_complete::generate(*shell, &mut cmd, "talm", &mut std::io::stdout());
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn nodes_has_no_short_flag() {
        let err = Cli::command()
            .try_get_matches_from(["talm", "-n", "x", "talosconfig"])
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::UnknownArgument);
    }
}
