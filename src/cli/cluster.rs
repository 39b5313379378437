//! Flags of the cluster commands: `health`, the `etcd` family, `bootstrap` (with recovery
//! from a snapshot) and `rotate-ca`, as talosctl defines them.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::common::NodeArgs;
use super::values::GoDuration;

#[derive(Debug, Args, Serialize)]
pub struct HealthArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Timeout to wait for the cluster to be ready
    #[arg(long, default_value = "20m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub wait_timeout: GoDuration,
    /// IPs of the control-plane nodes (default: discovered by the node)
    #[arg(long, value_delimiter = ',', value_name = "IPS")]
    pub control_plane_nodes: Vec<String>,
    /// IPs of the worker nodes
    #[arg(long, value_delimiter = ',', value_name = "IPS")]
    pub worker_nodes: Vec<String>,
    /// IP of the init node (counted as a control plane)
    #[arg(long, value_name = "IP")]
    pub init_node: Option<String>,
    /// Run the checks on the node (false: from this client, over each node's API)
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub server: bool,
    /// With --server=false: the Kubernetes API's host[:port] (6443 if no port) instead of the
    /// kubeconfig's server
    #[arg(long, value_name = "HOST[:PORT]")]
    pub k8s_endpoint: Option<String>,
}

/// `rotate-ca`: talosctl's flags, with talm's defaults (`--with-docs`/`--with-examples` off).
#[derive(Debug, Args, Serialize)]
pub struct RotateCaArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Rotate the Talos API CA
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub talos: bool,
    /// Rotate the Kubernetes API CA
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub kubernetes: bool,
    /// Only print what would be done (--dry-run=false changes the cluster)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub dry_run: bool,
    /// Path of the new talosconfig (default: the talosconfig in use)
    #[arg(short = 'o', long, value_name = "PATH")]
    pub output: Option<String>,
    /// IPs of the control-plane nodes
    #[arg(long, value_delimiter = ',', value_name = "IPS")]
    pub control_plane_nodes: Vec<String>,
    /// IPs of the worker nodes
    #[arg(long, value_delimiter = ',', value_name = "IPS")]
    pub worker_nodes: Vec<String>,
    /// IP of the init node (counted as a control plane)
    #[arg(long, value_name = "IP")]
    pub init_node: Option<String>,
    /// Kubernetes API endpoint instead of the kubeconfig's
    #[arg(long, value_name = "URL")]
    pub k8s_endpoint: Option<String>,
    /// Patch machine configs with the documentation of each field (talm: off)
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub with_docs: bool,
    /// Patch machine configs with the commented examples (talm: off)
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub with_examples: bool,
    /// Print the private keys of the current and new CAs and of the new talosconfig's client
    /// (talosctl prints them; talm shows `<hidden; --show-keys prints it>` without this flag)
    #[arg(long)]
    pub show_keys: bool,
}

#[derive(Debug, Args, Serialize)]
pub struct BootstrapArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
    /// Recover etcd from this snapshot (made by `talm etcd snapshot`)
    #[arg(long, value_name = "FILE")]
    pub recover_from: Option<String>,
    /// Take the snapshot without checking its SHA-256 trailer (a copy of etcd's data directory)
    #[arg(long)]
    pub recover_skip_hash_check: bool,
}

/// `talm etcd ...`.
#[derive(Debug, Subcommand)]
pub enum EtcdCommand {
    /// List the etcd members as the node sees them
    #[command(alias = "member")]
    Members(NodeArgs),
    /// The status of the nodes' etcd members
    Status(NodeArgs),
    /// Stream a snapshot of the node's etcd into a local file
    Snapshot(EtcdSnapshotArgs),
    /// Remove a member (by its hex ID) whose node is gone
    RemoveMember(EtcdRemoveArgs),
    /// Make the node's etcd leave the cluster (stops etcd and removes its data)
    Leave(NodeArgs),
    /// Move leadership away from the node's member
    ForfeitLeadership(NodeArgs),
    /// Defragment the node's etcd database
    Defrag(NodeArgs),
    /// List or disarm etcd alarms
    #[command(subcommand)]
    Alarm(EtcdAlarmCommand),
    /// Validate, enable or cancel an etcd downgrade
    #[command(subcommand)]
    Downgrade(EtcdDowngradeCommand),
}

#[derive(Debug, Subcommand)]
pub enum EtcdAlarmCommand {
    /// List the active alarms
    List(NodeArgs),
    /// Disarm every alarm
    Disarm(NodeArgs),
}

#[derive(Debug, Subcommand)]
pub enum EtcdDowngradeCommand {
    /// Check that the cluster can be downgraded to VERSION (MAJOR.MINOR)
    Validate(EtcdVersionArgs),
    /// Start a downgrade to VERSION (MAJOR.MINOR)
    Enable(EtcdVersionArgs),
    /// Cancel a downgrade in progress
    Cancel(NodeArgs),
}

#[derive(Debug, Args, Serialize)]
pub struct EtcdSnapshotArgs {
    /// Local file to write the snapshot to
    pub path: String,
    /// Replace the file if it exists, without asking
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct EtcdRemoveArgs {
    /// The member ID, in hex as `talm etcd members` prints it
    pub member_id: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct EtcdVersionArgs {
    /// The target version, MAJOR.MINOR
    #[arg(value_name = "VERSION")]
    pub target: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

impl EtcdCommand {
    /// The action name the script reads, its node flags and its extra arguments.
    pub fn parts(&self) -> (&'static str, &NodeArgs, serde_json::Value) {
        use serde_json::json;
        match self {
            EtcdCommand::Members(n) => ("members", n, json!({})),
            EtcdCommand::Status(n) => ("status", n, json!({})),
            EtcdCommand::Snapshot(s) => (
                "snapshot",
                &s.node,
                json!({ "path": s.path, "force": s.force }),
            ),
            EtcdCommand::RemoveMember(r) => (
                "remove-member",
                &r.node,
                json!({ "member_id": r.member_id }),
            ),
            EtcdCommand::Leave(n) => ("leave", n, json!({})),
            EtcdCommand::ForfeitLeadership(n) => ("forfeit-leadership", n, json!({})),
            EtcdCommand::Defrag(n) => ("defrag", n, json!({})),
            EtcdCommand::Alarm(EtcdAlarmCommand::List(n)) => ("alarm list", n, json!({})),
            EtcdCommand::Alarm(EtcdAlarmCommand::Disarm(n)) => ("alarm disarm", n, json!({})),
            EtcdCommand::Downgrade(EtcdDowngradeCommand::Validate(v)) => (
                "downgrade validate",
                &v.node,
                json!({ "version": v.target }),
            ),
            EtcdCommand::Downgrade(EtcdDowngradeCommand::Enable(v)) => {
                ("downgrade enable", &v.node, json!({ "version": v.target }))
            }
            EtcdCommand::Downgrade(EtcdDowngradeCommand::Cancel(n)) => {
                ("downgrade cancel", n, json!({}))
            }
        }
    }
}
