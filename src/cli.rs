//! The command line: clap definitions only (flags defined once, feeding help and completions).

use clap::{Args, Parser, Subcommand};

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
    /// Render node configs from the project's templates, values and node facts
    Template(TemplateArgs),
    /// Generate Talos configs without a project (as `talosctl gen`)
    #[command(subcommand)]
    Gen(GenCommand),
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

/// Value sources shared by `template` and `apply` (after Chart.yaml's own lists).
#[derive(Debug, Args, Clone, Default)]
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

#[derive(Debug, Args)]
pub struct TemplateArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Templates to render (e.g. templates/controlplane.yaml)
    #[arg(
        short = 't',
        long = "template",
        value_delimiter = ',',
        value_name = "PATH"
    )]
    pub templates: Vec<String>,
    /// Node files: each one's modeline drives one render
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH")]
    pub files: Vec<String>,
    /// Rewrite each -f file with its render (atomically, keeping comments above the modeline)
    #[arg(short = 'I', long)]
    pub in_place: bool,
    #[command(flatten)]
    pub values: ValueArgs,
    /// Talos version contract (default: Chart.yaml templateOptions.talosVersion)
    #[arg(long, value_name = "VERSION")]
    pub talos_version: Option<String>,
    /// Kubernetes version (default: Chart.yaml templateOptions.kubernetesVersion)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes_version: Option<String>,
    /// Print the whole machine config (the generated base with the render merged in)
    #[arg(long)]
    pub full: bool,
    /// Secrets bundle for --full (default: Chart.yaml templateOptions.withSecrets, secrets.yaml)
    #[arg(long, value_name = "FILE")]
    pub with_secrets: Option<String>,
    /// Render without a node: every lookup is empty
    #[arg(long)]
    pub offline: bool,
    /// Render from node facts recorded by `talm discover` instead of a live node
    #[arg(long, value_name = "FILE")]
    pub facts: Option<String>,
    /// Connect to nodes in maintenance mode (no client certificate)
    #[arg(short = 'i', long)]
    pub insecure: bool,
    /// Print the values of encrypted value files instead of `***`
    #[arg(long)]
    pub show_secrets: bool,
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// Generate controlplane.yaml, worker.yaml and talosconfig for a cluster
    Config(GenConfigArgs),
}

#[derive(Debug, Args)]
pub struct GenConfigArgs {
    /// Cluster name
    pub cluster_name: String,
    /// Cluster control-plane URL, e.g. https://10.0.0.1:6443
    pub endpoint: String,
    /// Use this secrets bundle instead of generating one
    #[arg(long, value_name = "FILE")]
    pub with_secrets: Option<String>,
    /// Talos version contract to generate for (e.g. v1.12); default: the current one
    #[arg(long, value_name = "VERSION")]
    pub talos_version: Option<String>,
    /// Kubernetes version of the component images (default: 1.36.2)
    #[arg(long, value_name = "VERSION")]
    pub kubernetes_version: Option<String>,
    /// Folder to write into, or `-` for stdout with a single output type
    #[arg(short = 'o', long, default_value = ".", value_name = "PATH")]
    pub output: String,
    /// Which files to write
    #[arg(
        short = 't',
        long,
        value_delimiter = ',',
        default_value = "controlplane,worker,talosconfig",
        value_parser = ["controlplane", "worker", "talosconfig"]
    )]
    pub output_types: Vec<String>,
    /// Extra certificate SANs for the API server and apid
    #[arg(long, value_delimiter = ',', value_name = "SAN")]
    pub additional_sans: Vec<String>,
    /// Cluster DNS domain (default: cluster.local)
    #[arg(long, value_name = "DOMAIN")]
    pub dns_domain: Option<String>,
    /// Disk to install Talos to
    #[arg(long, value_name = "PATH")]
    pub install_disk: Option<String>,
    /// Installer image
    #[arg(long, value_name = "REF")]
    pub install_image: Option<String>,
    /// Overwrite existing files
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct TalosconfigArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

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
