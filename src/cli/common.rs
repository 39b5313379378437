//! Flag groups several commands share: how to reach nodes, which project, how to render.

use clap::Args;
use clap_complete::engine::ArgValueCandidates;
use serde::Serialize;

use super::values::GoDuration;

/// Where a node command gets its credentials and nodes, and how long each call may take.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct Connection {
    /// Path to the talosconfig (default: Chart.yaml globalOptions.talosconfig, else <root>/talosconfig)
    #[arg(long, value_name = "PATH")]
    pub talosconfig: Option<String>,
    /// talosconfig context to use
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Target nodes (comma-separated or repeated)
    #[arg(
        short = 'n',
        long,
        value_delimiter = ',',
        value_name = "IP",
        value_parser = talm_base::address::parse_flag,
        add = ArgValueCandidates::new(crate::completion::nodes)
    )]
    pub nodes: Vec<String>,
    /// Deadline for connecting to a node and for each call (e.g. 30s, 2m)
    #[arg(long, value_name = "DURATION", env = "TALM_CALL_TIMEOUT", value_parser = GoDuration::parse)]
    pub call_timeout: Option<GoDuration>,
    /// Skip verifying the node's certificate against the talosconfig CA (the client certificate is still presented)
    #[arg(long)]
    pub skip_verify: bool,
}

/// Which project a command works in.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct ProjectFlags {
    /// Project root (default: detected from the files given, else the current directory)
    #[arg(long, value_name = "DIR")]
    pub root: Option<String>,
    /// Turn chart and preset drift warnings into errors
    #[arg(long)]
    pub strict_charts: bool,
}

/// `-e/--endpoints` for commands that talk to nodes (on `init`, `-e` means --encrypt).
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct Endpoints {
    /// Override the talosconfig endpoints (comma-separated or repeated)
    #[arg(short = 'e', long, value_delimiter = ',', value_name = "IP", value_parser = talm_base::address::parse_flag, add = ArgValueCandidates::new(crate::completion::endpoints))]
    pub endpoints: Vec<String>,
}

/// How a command finds and reaches its nodes.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct NodeArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub conn: Connection,
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoints: Endpoints,
    /// Node files whose modelines give nodes and endpoints
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH", add = ArgValueCandidates::new(crate::completion::node_files))]
    pub files: Vec<String>,
    /// Connect in maintenance mode (no client certificate, server not verified)
    #[arg(short = 'i', long)]
    pub insecure: bool,
}

/// What a render reads besides the templates, shared by `template` and `apply` so both render
/// alike: value sources, version contract, Kubernetes version, secrets bundle.
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct RenderArgs {
    #[command(flatten)]
    pub values: ValueArgs,
    /// Talos version contract (default: Chart.yaml templateOptions.talosVersion)
    #[arg(long, value_name = "VERSION")]
    pub talos_version: Option<String>,
    /// Kubernetes version (default: Chart.yaml templateOptions.kubernetesVersion)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes_version: Option<String>,
    /// Secrets bundle for the whole config (default: Chart.yaml templateOptions.withSecrets, secrets.yaml)
    #[arg(long, value_name = "FILE")]
    pub with_secrets: Option<String>,
    /// Print the equivalent `talosctl gen config` calls with the rendered patches, and stop
    /// (default: Chart.yaml templateOptions.debug)
    #[arg(long)]
    #[serde(rename = "gen_debug")]
    pub debug: bool,
}

/// Value sources shared by `template` and `apply` (after Chart.yaml's own lists).
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct ValueArgs {
    /// Values files (YAML maps; `*.encrypted.yaml` are opened with talm.key in memory)
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<String>,
    /// Set values: a.b[0].c=x,d=y (Helm syntax; numbers and booleans are typed)
    #[arg(long, value_name = "PAIRS")]
    pub set: Vec<String>,
    /// Set values, all as strings
    #[arg(long, value_name = "PAIRS")]
    pub set_string: Vec<String>,
    /// Set a value from a file's content: key=path
    #[arg(long, value_name = "KEY=PATH")]
    pub set_file: Vec<String>,
    /// Set values from JSON: a whole object, or key=json
    #[arg(long, value_name = "JSON")]
    pub set_json: Vec<String>,
    /// Set a value literally, commas and dots included: key=value
    #[arg(long, value_name = "KEY=VALUE")]
    pub set_literal: Vec<String>,
}

/// The bounds of a playbook, project script or REPL session (templates keep their strict ones).
#[derive(Debug, Args, Clone, Default, Serialize)]
pub struct ScriptLimitArgs {
    /// Operation limit of the script (default 1000000000; 0 = no limit); Ctrl-C always stops it
    #[arg(long, value_name = "N", env = "TALM_MAX_OPS")]
    pub max_ops: Option<u64>,
}
