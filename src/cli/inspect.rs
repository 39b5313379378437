//! Flags of the commands that look into nodes (talosctl's names, short flags and aliases):
//! containers, stats, processes, memory, mounts, netstat, read, list, copy, usage, time,
//! cgroups, service, image, dashboard.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::common::NodeArgs;
use super::values::{GoDuration, OutputFormat};

#[derive(Debug, Args, Serialize)]
pub struct ContainersArgs {
    /// Kubernetes containers (CRI) instead of Talos's own
    #[arg(short = 'k', long)]
    pub kubernetes: bool,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

/// `processes --sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProcessSort {
    Rss,
    Cpu,
}

impl ProcessSort {
    /// `cpu`, or anything else for resident memory: talosctl sorts by rss unless told cpu.
    fn parse(text: &str) -> Result<ProcessSort, std::convert::Infallible> {
        Ok(match text {
            "cpu" => ProcessSort::Cpu,
            _ => ProcessSort::Rss,
        })
    }
}

#[derive(Debug, Args, Serialize)]
pub struct ProcessesArgs {
    /// Column to sort by, descending: rss or cpu (anything else sorts by rss, as talosctl)
    #[arg(short = 's', long, default_value = "rss", value_parser = ProcessSort::parse)]
    pub sort: ProcessSort,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct MemoryArgs {
    /// Every field of /proc/meminfo
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct DataArgs {
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct NetstatArgs {
    /// A pod (`namespace/pod`): only its network namespace
    #[arg(default_value = "")]
    pub pod: String,
    /// Every socket
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Listening sockets only
    #[arg(short = 'l', long)]
    pub listening: bool,
    /// Every protocol
    #[arg(short = 'v', long)]
    pub verbose: bool,
    /// The Uid and Inode columns
    #[arg(short = 'x', long)]
    pub extend: bool,
    /// The PID/Program name column
    #[arg(short = 'p', long)]
    pub programs: bool,
    /// The Timer column
    #[arg(short = 'o', long)]
    pub timers: bool,
    /// Sockets of every pod's network namespace too
    #[arg(short = 'k', long)]
    pub pods: bool,
    /// TCP sockets
    #[arg(short = 't', long)]
    pub tcp: bool,
    /// UDP sockets
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// UDP-Lite sockets
    #[arg(short = 'U', long)]
    pub udplite: bool,
    /// Raw sockets
    #[arg(short = 'w', long)]
    pub raw: bool,
    /// IPv4 only
    #[arg(short = '4', long)]
    pub ipv4: bool,
    /// IPv6 only
    #[arg(short = '6', long)]
    pub ipv6: bool,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ReadArgs {
    /// The file on the node
    pub path: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ListArgs {
    /// The folder on the node
    #[arg(default_value = "/")]
    pub path: String,
    /// Long format: mode, size, modification time
    #[arg(short = 'l', long)]
    pub long: bool,
    /// Everything below, however deep
    #[arg(short = 'r', long)]
    pub recurse: bool,
    /// How many levels down
    #[arg(short = 'd', long, default_value_t = 1)]
    pub depth: i64,
    /// Sizes and times for people (2.1 MB, 3 days ago)
    #[arg(short = 'H', long)]
    pub humanize: bool,
    /// Only these types: f (file), d (folder), l (link); repeatable
    #[arg(short = 't', long = "type", value_name = "TYPE")]
    #[serde(rename = "type")]
    pub types: Vec<String>,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct CopyArgs {
    /// The file or folder on the node
    pub source: String,
    /// A local folder to unpack into, or `-` for the tar.gz on stdout
    pub destination: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct UsageArgs {
    /// Folders on the node (default /)
    pub paths: Vec<String>,
    /// How many levels down to report (talosctl sends one more)
    #[arg(short = 'd', long, default_value_t = 1)]
    pub depth: i64,
    /// Report files too, not only folders
    #[arg(short = 'a', long)]
    pub all: bool,
    /// Only entries at least this many bytes (negative: at most)
    #[arg(short = 't', long, default_value_t = 0, allow_negative_numbers = true)]
    pub threshold: i64,
    /// Sizes for people (2.1 MB)
    #[arg(short = 'H', long)]
    pub humanize: bool,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct TimeArgs {
    /// Check against this NTP server instead of the node's own
    #[arg(short = 'c', long, default_value = "", value_name = "SERVER")]
    pub check: String,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct CgroupsArgs {
    /// Columns preset: cpu, cpuset, io, memory, process, psi, swap
    #[arg(long, default_value = "")]
    pub preset: String,
    /// A columns schema file (not supported: talosctl's are Go templates)
    #[arg(long, default_value = "", value_name = "FILE")]
    pub schema_file: String,
    /// Do not name pod and container cgroups through the CRI
    #[arg(long)]
    pub skip_cri_resolve: bool,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ServiceArgs {
    /// A service (all of them when left out)
    #[arg(default_value = "")]
    pub id: String,
    /// `status` (the default when an ID is given), `start`, `stop` or `restart`
    #[arg(default_value = "", value_parser = ["", "status", "start", "stop", "restart"])]
    pub action: String,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Subcommand)]
pub enum InspectCommand {
    /// Inspect controller-resource dependencies as graphviz graph (pipe it through `dot -Tpng`)
    Dependencies(DependenciesArgs),
}

#[derive(Debug, Args, Serialize)]
pub struct DependenciesArgs {
    /// Display live resource information with dependencies
    #[arg(long)]
    pub with_resources: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Subcommand)]
pub enum ImageCommand {
    /// The images of a containerd namespace on nodes
    #[command(visible_aliases = ["l", "ls"])]
    List(ImageListArgs),
    /// Pull an image into the containerd of nodes
    #[command(visible_alias = "p")]
    Pull(super::change::ImagePullArgs),
    /// List the default Kubernetes images of a Kubernetes version (the project's by default)
    #[command(name = "k8s-bundle", visible_alias = "default")]
    K8sBundle(super::bundles::K8sBundleArgs),
    /// List the system images of a Talos version (the project's by default)
    #[command(name = "talos-bundle")]
    TalosBundle(super::bundles::TalosBundleArgs),
    /// Remove an image from the containerd of nodes
    #[command(visible_alias = "rm")]
    Remove(super::change::ImageRemoveArgs),
}

#[derive(Debug, Args, Serialize)]
pub struct ImageListArgs {
    /// cri (Kubernetes images), system (etcd, kubelet, installer) or inmem
    #[arg(long, default_value = "cri", value_parser = ["cri", "system", "inmem"])]
    pub namespace: String,
    /// Output format: table, yaml, json or jsonpath=EXPR
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct DashboardArgs {
    /// How often the screens refresh
    #[arg(short = 'd', long, default_value = "3s", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub update_interval: GoDuration,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}
