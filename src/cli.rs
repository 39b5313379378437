//! The command line: clap definitions only (flags defined once, feeding help and completions).

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "talm",
    about = "Manage Talos the GitOps Way!",
    version = crate::version::current(),
    propagate_version = true,
    disable_help_subcommand = true
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
    #[arg(
        short = 'n',
        long,
        global = true,
        value_delimiter = ',',
        value_name = "IP",
        value_parser = crate::talos::address::parse_flag
    )]
    pub nodes: Vec<String>,
    /// Deadline for connecting to a node and for each call (e.g. 30s, 2m)
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        env = "TALM_CALL_TIMEOUT"
    )]
    pub call_timeout: Option<String>,
    /// Turn chart and preset drift warnings into errors
    #[arg(long, global = true)]
    pub strict_charts: bool,
}

/// `-e/--endpoints` for commands that talk to nodes (on `init`, `-e` means --encrypt).
#[derive(Debug, Args)]
pub struct Endpoints {
    /// Override the talosconfig endpoints (comma-separated or repeated)
    #[arg(short = 'e', long, value_delimiter = ',', value_name = "IP", value_parser = crate::talos::address::parse_flag)]
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
    /// Apply node files to their nodes: render, merge the file's body and side-patches, send
    Apply(ApplyArgs),
    /// Bootstrap etcd on a control-plane node (once per cluster)
    Bootstrap(NodeArgs),
    /// Fetch the cluster's admin kubeconfig from a control-plane node
    Kubeconfig(KubeconfigArgs),
    /// Upgrade Talos on nodes (image from values.yaml unless --image), then check the version
    Upgrade(UpgradeArgs),
    /// Reboot nodes
    Reboot(RebootArgs),
    /// Reset nodes (wipes STATE and EPHEMERAL, keeps META unless told otherwise)
    Reset(ResetArgs),
    /// The whole bring-up guide against three simulated nodes in this process, by playbook
    Demo {
        /// Folder for the new project (default: a fresh temporary folder)
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
    },
    /// Print a service's log (`kernel` for the kernel log)
    Logs(LogsArgs),
    /// Print the kernel log of nodes
    Dmesg(DmesgArgs),
    /// List the services of nodes and their state
    Services(NodeArgs),
    /// Find Talos API endpoints on a network (TCP connect + TLS probe, no nmap)
    Scan(ScanArgs),
    /// Run a Rhai playbook: talm run FILE.rhai [ARGS...]
    Run(RunArgs),
    /// An interactive Rhai session with the talm API
    Repl(ReplArgs),
    /// Help on a command, or on the Rhai API: `talm help api [NAME]`
    Help {
        /// `api`, `api NAME`, or a command name
        topic: Vec<String>,
    },
    /// Print the Talos version of nodes
    Version(VersionArgs),
    /// Print resources of nodes (talosctl's kinds and aliases: disks, links, addresses, routes...)
    Get(GetArgs),
    /// Record what templates read from a node (disks, links, addresses, routes...) as a --facts file
    Discover(NodeArgs),
    /// Run simulated Talos nodes on loopback addresses until interrupted
    Sim(SimArgs),
    /// Print a shell completion script
    Completion {
        /// The shell to complete for
        shell: clap_complete::Shell,
    },
    /// A project script: `talm NAME` runs `<project>/scripts/NAME.rhai`
    #[command(external_subcommand)]
    External(Vec<String>),
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
    #[arg(long, value_delimiter = ',', value_name = "IP", value_parser = crate::talos::address::parse_flag)]
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

/// What a render reads besides the templates, shared by `template` and `apply` so both render
/// alike: value sources, version contract, Kubernetes version, secrets bundle.
#[derive(Debug, Args, Clone, Default)]
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
    pub render: RenderArgs,
    /// Print the whole machine config (the generated base with the render merged in)
    #[arg(long)]
    pub full: bool,
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
    /// With --full and -I: write the cluster's private keys and tokens into the node files
    /// (refused without it: node files are meant to be committed)
    #[arg(long)]
    pub allow_private_keys: bool,
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
pub struct ApplyArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Node file (the anchor) followed by side-patches merged on top, in order
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH")]
    pub files: Vec<String>,
    /// Connect in maintenance mode (no client certificate, server not verified)
    #[arg(short = 'i', long)]
    pub insecure: bool,
    #[command(flatten)]
    pub render: RenderArgs,
    /// Ask the node what would change, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// How the node takes the config
    #[arg(short = 'm', long, default_value = "auto", value_parser = ["auto", "no-reboot", "reboot", "staged", "try"])]
    pub mode: String,
    /// Try mode: roll back after this long unless confirmed by another apply
    #[arg(long, default_value = "1m", value_name = "DURATION")]
    pub timeout: String,
    /// Skip checking that the links and disks the config names exist on the node
    #[arg(long)]
    pub skip_resource_validation: bool,
    /// Skip the preview of what changes against the node's current config
    #[arg(long)]
    pub skip_drift_preview: bool,
    /// Show secret values in the drift preview and the node's reply
    #[arg(long)]
    pub show_secrets_in_drift: bool,
}

#[derive(Debug, Args)]
pub struct KubeconfigArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Where to write (default: Chart.yaml globalOptions.kubeconfig, else <root>/kubeconfig)
    pub path: Option<String>,
    /// Merge into the file at the path instead of replacing it
    #[arg(short = 'm', long)]
    pub merge: bool,
}

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Node files whose modelines give nodes and endpoints
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH")]
    pub files: Vec<String>,
    /// Installer image (default: values.yaml image)
    #[arg(short = 'i', long, value_name = "REF")]
    pub image: Option<String>,
    /// Connect in maintenance mode
    #[arg(long)]
    pub insecure: bool,
    /// Allow an image older than the running Talos
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Stage the upgrade for the next reboot
    #[arg(short = 's', long)]
    pub stage: bool,
    /// Skip etcd health checks on control planes
    #[arg(short = 'F', long)]
    pub force: bool,
    /// Return once the upgrade is accepted, without waiting for the new version
    #[arg(long)]
    pub no_wait: bool,
    /// How long to wait for each node to come back on the new version
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
}

#[derive(Debug, Args)]
pub struct RebootArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Reboot mode
    #[arg(short = 'm', long, default_value = "default", value_parser = ["default", "powercycle"])]
    pub mode: String,
    /// Wait until the node is back
    #[arg(long)]
    pub wait: bool,
}

#[derive(Debug, Args)]
pub struct ResetArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Leave etcd and Kubernetes gracefully first
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub graceful: bool,
    /// Reboot after the reset (instead of powering off)
    #[arg(long)]
    pub reboot: bool,
    /// What to wipe: all, system-disk or user-disks (default: only STATE and EPHEMERAL)
    #[arg(long, value_parser = ["all", "system-disk", "user-disks"])]
    pub wipe_mode: Option<String>,
    /// System partitions to wipe (default: STATE,EPHEMERAL, keeping META)
    #[arg(long, value_delimiter = ',', value_name = "LABELS")]
    pub system_labels_to_wipe: Vec<String>,
    /// User disks to wipe
    #[arg(long, value_delimiter = ',', value_name = "DISKS")]
    pub user_disks_to_wipe: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The service (`kernel` for the kernel log)
    pub service: String,
    /// Only the last N lines
    #[arg(long, value_name = "N")]
    pub tail: Option<i64>,
    /// A Kubernetes container (namespace k8s.io) instead of a Talos service
    #[arg(short = 'k', long)]
    pub kubernetes: bool,
    #[command(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args)]
pub struct DmesgArgs {
    /// Only the last N lines
    #[arg(long, value_name = "N")]
    pub tail: Option<i64>,
    #[command(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// An IPv4 range (CIDR, at most a /16) or one address
    pub cidr: String,
    /// The Talos API port
    #[arg(long, default_value_t = 50000)]
    pub port: u16,
    /// How long to wait for each connection
    #[arg(long, default_value = "500ms", value_name = "DURATION")]
    pub timeout: String,
    /// Addresses probed at once
    #[arg(long, default_value_t = 256)]
    pub concurrency: usize,
}

/// The bounds of a playbook, project script or REPL session (templates keep their strict ones).
#[derive(Debug, Args)]
pub struct ScriptLimitArgs {
    /// Operation limit of the script (default 1000000000; 0 = no limit); Ctrl-C always stops it
    #[arg(long, value_name = "N", env = "TALM_MAX_OPS")]
    pub max_ops: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ReplArgs {
    #[command(flatten)]
    pub limits: ScriptLimitArgs,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub limits: ScriptLimitArgs,
    /// The playbook
    pub file: String,
    /// Arguments for the playbook (its `ARGS.args`)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// How a command finds and reaches its nodes.
#[derive(Debug, Args)]
pub struct NodeArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
    /// Node files whose modelines give nodes and endpoints
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH")]
    pub files: Vec<String>,
    /// Connect in maintenance mode (no client certificate, server not verified)
    #[arg(short = 'i', long)]
    pub insecure: bool,
}

#[derive(Debug, Args)]
pub struct VersionArgs {
    #[command(flatten)]
    pub node: NodeArgs,
    /// Print only the server tags
    #[arg(long)]
    pub short: bool,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// Resource kind: a type, its display name or an alias (links, disks, machineconfig...)
    pub kind: String,
    /// A resource ID (all of the kind when left out)
    pub id: Option<String>,
    /// Namespace (default: the kind's own)
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Output format
    #[arg(short = 'o', long, default_value = "table", value_parser = ["table", "yaml", "json"])]
    pub output: String,
    #[command(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// A node address (loopback, e.g. 127.0.0.11); repeat for more nodes
    #[arg(long = "node", value_name = "IP", value_delimiter = ',')]
    pub node: Vec<String>,
    /// Port every node listens on
    #[arg(long, default_value_t = 50000)]
    pub port: u16,
    /// A YAML file describing each node's hardware and faults
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// How long a rebooting node stays down
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub reboot_delay: String,
}

#[derive(Debug, Args)]
pub struct TalosconfigArgs {
    #[command(flatten)]
    pub endpoints: Endpoints,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, FromArgMatches};

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn nodes_take_short_n_anywhere() {
        let m = Cli::command()
            .try_get_matches_from(["talm", "discover", "-n", "10.0.0.1,10.0.0.2"])
            .unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        assert_eq!(cli.global.nodes, ["10.0.0.1", "10.0.0.2"]);
    }
}
