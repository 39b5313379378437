//! Flags of the commands that make and render a project: init, talosconfig, template, gen,
//! apply, kubeconfig.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::common::{Connection, Endpoints, NodeArgs, ProjectFlags, RenderArgs};
use super::values::{ApplyMode, GenOutputType, GoDuration};

#[derive(Debug, Args, Serialize)]
pub struct InitArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    /// Preset to create the project from (generic, cozystack, talm)
    #[arg(short = 'p', long, value_name = "NAME", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::presets))]
    pub preset: Option<String>,
    /// Cluster name (a DNS-1123 subdomain)
    #[arg(short = 'N', long, value_name = "NAME")]
    pub name: Option<String>,
    /// Endpoints of the talosconfig context; exactly one also sets values.yaml endpoint to https://E:6443
    #[arg(long, value_delimiter = ',', value_name = "IP", value_parser = talm_base::address::parse_flag)]
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

#[derive(Debug, Args, Serialize)]
pub struct TalosconfigArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoints: Endpoints,
    /// Where to write the talosconfig, inside the project (default: Chart.yaml globalOptions.talosconfig, else <root>/talosconfig)
    #[arg(long, value_name = "PATH")]
    pub talosconfig: Option<String>,
}

#[derive(Debug, Args, Serialize)]
pub struct TemplateArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub conn: Connection,
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
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
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::node_files))]
    pub files: Vec<String>,
    /// Rewrite each -f file with its render (atomically, keeping comments above the modeline)
    #[arg(short = 'I', long)]
    pub in_place: bool,
    /// Render up to N node files at once (default 1), each against its own nodes; the first
    /// failure stops new ones from starting. Printed renders keep the order of the files
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub parallel: Option<u32>,
    #[command(flatten)]
    #[serde(flatten)]
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

#[derive(Debug, Args, Serialize)]
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
        default_value = "controlplane,worker,talosconfig"
    )]
    pub output_types: Vec<GenOutputType>,
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

#[derive(Debug, Args, Serialize)]
pub struct ApplyArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub conn: Connection,
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub endpoints: Endpoints,
    /// Node file (the anchor) followed by side-patches merged on top, in order; a folder (or
    /// --parallel) applies every node file given on its own, each to the nodes of its modeline
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::node_files))]
    pub files: Vec<String>,
    /// Apply up to N node files at once (default 1), each on its own; the first failure stops
    /// new ones from starting. Applying to all control planes at once can cost etcd quorum
    /// (a reboot or a bad config on every member together): keep control planes at 1
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub parallel: Option<u32>,
    /// Connect in maintenance mode (no client certificate, server not verified)
    #[arg(short = 'i', long)]
    pub insecure: bool,
    /// With -i: the maintenance server certificate's fingerprint must be one of these
    /// (base64 SHA-256 of its public key, as talosctl)
    #[arg(long = "cert-fingerprint", value_name = "FP", value_delimiter = ',')]
    pub cert_fingerprint: Vec<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub render: RenderArgs,
    /// Ask the node what would change, change nothing
    #[arg(long)]
    pub dry_run: bool,
    /// How the node takes the config
    #[arg(short = 'm', long, default_value = "auto")]
    pub mode: ApplyMode,
    /// Try mode: roll back after this long unless confirmed by another apply
    #[arg(long, default_value = "1m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
    /// Skip checking that the links and disks the config names exist on the node
    #[arg(long)]
    pub skip_resource_validation: bool,
    /// Skip the preview of what changes against the node's current config
    #[arg(long)]
    pub skip_drift_preview: bool,
    /// Show secret values in the drift preview and the node's reply
    #[arg(long)]
    pub show_secrets_in_drift: bool,
    /// Skip re-reading the applied config to compare it with what was sent (on by default, as
    /// the Go talm; --skip-post-apply-verify=false checks, for --mode no-reboot)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub skip_post_apply_verify: bool,
}

#[derive(Debug, Args, Serialize)]
pub struct KubeconfigArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// With --login: the file to merge into (default: $KUBECONFIG, else ~/.kube/config)
    pub path: Option<String>,
    /// Merge into an existing file instead of replacing it (--merge=false replaces)
    #[arg(short = 'm', long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub merge: bool,
    /// Overwrite clashing clusters and users when merging (talm's default; --force=false renames them -1, -2...)
    #[arg(short = 'F', long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub force: bool,
    /// The name of the merged context
    #[arg(long, value_name = "NAME")]
    pub force_context_name: Option<String>,
    /// Merge into your own kubeconfig (PATH, else $KUBECONFIG or ~/.kube/config) instead of the project's
    #[arg(short = 'l', long)]
    pub login: bool,
}
