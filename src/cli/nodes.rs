//! Flags of the commands that look at or change nodes.

use clap::Args;
use serde::Serialize;

use super::common::{Connection, Endpoints, NodeArgs, ProjectFlags};
use super::values::{GoDuration, OutputFormat, Progress, RebootMode, UpgradeRebootMode, WipeMode};

#[derive(Debug, Args, Serialize)]
pub struct UpgradeArgs {
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
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::node_files))]
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
    /// Stage the upgrade: written to META, installed during the next boot
    #[arg(short = 's', long)]
    pub stage: bool,
    /// Skip the etcd checks a control plane makes before upgrading
    #[arg(short = 'F', long)]
    pub force: bool,
    /// Keep the node's data through the upgrade
    #[arg(short = 'p', long)]
    pub preserve: bool,
    /// How the node reboots into the new version (powercycle: no kexec)
    #[arg(short = 'm', long, default_value = "default")]
    pub reboot_mode: UpgradeRebootMode,
    /// Use the legacy MachineService.Upgrade even on Talos v1.13 and later (talosctl deprecates
    /// it; Talos 1.18 removes it). --stage, --force and --preserve take that path too
    #[arg(long)]
    pub legacy: bool,
    /// Install the new version without rebooting: it runs after the node's next reboot
    #[arg(long)]
    pub no_reboot: bool,
    /// Where the installer image is pulled: system (etcd and kubelet images), cri (Kubernetes
    /// workloads) or inmem (the in-memory containerd)
    #[arg(long, default_value = "system", value_parser = ["system", "cri", "inmem"])]
    pub namespace: String,
    /// On a failed wait, print the node's kernel log (implies --wait)
    #[arg(long)]
    #[serde(rename = "kernel_log")]
    pub debug: bool,
    /// How long the post-upgrade check waits for each node to run the new version
    #[arg(long, default_value = "1m30s", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub post_upgrade_reconcile_window: GoDuration,
    /// Follow each node until it is back on a new boot (--wait=false: return once accepted)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wait: bool,
    /// How the wait reports progress
    #[arg(long, default_value = "auto")]
    pub progress: Progress,
    /// How long to wait for each node to come back
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
    /// Drain the Kubernetes node before its reboot (cordon, evict its pods) and uncordon it
    /// once it is back Ready; implies --wait
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub drain: bool,
    /// How long the drain may take
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub drain_timeout: GoDuration,
    /// Do not check afterwards that each node runs the new version
    #[arg(long)]
    pub skip_post_upgrade_verify: bool,
    /// Roll through the nodes: control planes one at a time, then workers --max-parallel at a
    /// time, the cluster health check passing after each before the next; stops at the first
    /// failure and prints how to resume
    #[arg(long)]
    pub rolling: bool,
    /// With --rolling: how many workers upgrade at once, a count or a percentage of the
    /// workers such as 25% (control planes always one at a time)
    #[arg(long, default_value = "1", value_name = "N|N%", value_parser = parse_at_once, requires = "rolling")]
    pub max_parallel: String,
    /// With --rolling: a Rhai file defining before(node) and/or after(node); returning false
    /// (or failing) stops the roll
    #[arg(long, value_name = "FILE.rhai", requires = "rolling")]
    pub hook: Option<String>,
    /// With --rolling: skip the nodes already running the target version (after a stopped roll)
    #[arg(long, requires = "rolling")]
    pub resume: bool,
    /// With --rolling: how long the cluster health check may take after each node or batch
    #[arg(long, default_value = "10m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub health_timeout: GoDuration,
}

#[derive(Debug, Args, Serialize)]
pub struct RebootArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Reboot mode
    #[arg(short = 'm', long, default_value = "default")]
    pub mode: RebootMode,
    /// On a failed wait, print the node's kernel log (implies --wait)
    #[arg(long)]
    #[serde(rename = "kernel_log")]
    pub debug: bool,
    /// Drain the Kubernetes node before the reboot (cordon, evict its pods) and uncordon it
    /// once it is back Ready; implies --wait
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub drain: bool,
    /// How long the drain may take
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub drain_timeout: GoDuration,
    #[command(flatten)]
    #[serde(flatten)]
    pub back: WaitBackArgs,
}

/// `--max-parallel`: a count of at least 1 or a percentage from 1% to 100%.
fn parse_at_once(text: &str) -> Result<String, String> {
    match crate::runtime::fleet::rolling::AtOnce::parse(text) {
        Some(a) if a.of(100).is_some() => Ok(a.to_string()),
        _ => Err(format!(
            "{text:?} is neither a number of nodes (1 or more) nor a percentage from 1% to 100%"
        )),
    }
}

/// `cordon` and `uncordon`: the nodes whose Kubernetes nodes change.
#[derive(Debug, Args, Serialize)]
pub struct CordonArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

/// Waiting for a node that goes down to come back (reboot, rollback).
#[derive(Debug, Args, Serialize)]
pub struct WaitBackArgs {
    /// Follow each node until it is back on a new boot, as talosctl reboot does (--wait=false: return once accepted)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wait: bool,
    /// How long to wait for each node to come back
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
}

#[derive(Debug, Args, Serialize)]
pub struct ResetArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Leave etcd and Kubernetes gracefully first
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub graceful: bool,
    /// Reboot after the reset (instead of powering off)
    #[arg(long)]
    pub reboot: bool,
    /// What to wipe (default: only STATE and EPHEMERAL)
    #[arg(long)]
    pub wipe_mode: Option<WipeMode>,
    /// System partitions to wipe (default: STATE,EPHEMERAL, keeping META)
    #[arg(long, value_delimiter = ',', value_name = "LABELS")]
    pub system_labels_to_wipe: Vec<String>,
    /// User disks to wipe
    #[arg(long, value_delimiter = ',', value_name = "DISKS")]
    pub user_disks_to_wipe: Vec<String>,
    /// Wait until the reset is done, as talosctl does: the node stops its services, and with
    /// --reboot is back in maintenance mode (--wait=false: return once accepted)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wait: bool,
    /// How long to wait
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
    /// On a failed wait, print the node's kernel log (implies --wait)
    #[arg(long)]
    #[serde(rename = "kernel_log")]
    pub debug: bool,
}

#[derive(Debug, Args, Serialize)]
pub struct LogsArgs {
    /// The service (`kernel` for the kernel log)
    pub service: String,
    /// Only the last N lines
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub tail: Option<i64>,
    /// Keep printing new lines until Ctrl-C (talosctl's -f; -f is talm's --file)
    #[arg(short = 'F', long)]
    pub follow: bool,
    /// A Kubernetes container (namespace k8s.io) instead of a Talos service
    #[arg(short = 'k', long)]
    pub kubernetes: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct DmesgArgs {
    /// Only new messages (as talosctl's --tail, with --follow); --tail N: the last N lines
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub tail: Option<i64>,
    /// Keep printing new kernel messages until Ctrl-C (talosctl's -f; -f is talm's --file)
    #[arg(short = 'F', long)]
    pub follow: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct VersionArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Print a short client line (`Talos vX.Y.Z`) instead of the client block
    #[arg(long)]
    pub short: bool,
    /// Print only the client version; ask no node
    #[arg(long = "client")]
    pub client_only: bool,
}

#[derive(Debug, Args, Serialize)]
pub struct GetArgs {
    /// Resource kind: a type, its display name or an alias (links, disks, machineconfig...)
    #[arg(add = clap_complete::engine::ArgValueCandidates::new(crate::completion::kinds))]
    pub kind: String,
    /// A resource ID (all of the kind when left out)
    pub id: Option<String>,
    /// Namespace (default: the kind's own)
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Output format: table, yaml, json or jsonpath=EXPR (e.g. -o jsonpath='{.spec.mtu}')
    #[arg(short = 'o', long, default_value = "table", value_parser = OutputFormat::parse)]
    pub output: OutputFormat,
    /// Print what exists, then every change as it happens, until Ctrl-C
    #[arg(short = 'w', long)]
    pub watch: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct EventsArgs {
    /// Show this many past events first (-1: all the node keeps)
    #[arg(
        long,
        default_value_t = 0,
        allow_negative_numbers = true,
        value_name = "N"
    )]
    pub tail: i64,
    /// Show the events after this event ID
    #[arg(long, value_name = "ID")]
    pub since: Option<String>,
    /// Show the events of this long ago until now (e.g. 5m)
    #[arg(long, value_name = "DURATION", value_parser = GoDuration::parse)]
    pub duration: Option<GoDuration>,
    /// Only the events of this actor (the ID reboot, reset or upgrade print)
    #[arg(long, value_name = "ID")]
    pub actor_id: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct SupportArgs {
    /// Output file to write the support archive to (an existing one is replaced only when you answer y)
    #[arg(short = 'O', long, default_value = "support.zip", value_name = "FILE")]
    pub output: String,
    /// Number of workers per node
    #[arg(short = 'w', long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=32))]
    pub num_workers: u32,
    /// Verbose output: a line per collected file instead of progress bars
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}
