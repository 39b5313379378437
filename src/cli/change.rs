//! Flags of the commands that change nodes: restart, rollback, shutdown, wipe, meta, edit,
//! patch and image pull (service actions, reboot and reset live with their siblings).

use clap::{Args, Subcommand};
use serde::Serialize;

use super::common::NodeArgs;
use super::values::{ApplyMode, GoDuration};

#[derive(Debug, Args, Serialize)]
pub struct RestartArgs {
    /// The container: a Talos one (apid, trustd, kubelet, etcd...) or, with -k, a Kubernetes one
    pub id: String,
    /// A Kubernetes container (namespace k8s.io), as `containers -k` lists them
    #[arg(short = 'k', long)]
    pub kubernetes: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct RollbackArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub back: super::nodes::WaitBackArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ShutdownArgs {
    /// Skip cordoning and draining the Kubernetes node
    #[arg(long)]
    pub force: bool,
    /// Wait until the node stops its services, as talosctl does (--wait=false: return once
    /// accepted)
    #[arg(long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, value_name = "BOOL")]
    pub wait: bool,
    /// How long to wait
    #[arg(long, default_value = "30m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
    /// On a failed wait, print the node's kernel log (implies --wait)
    #[arg(long)]
    #[serde(rename = "kernel_log")]
    pub debug: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Subcommand)]
pub enum WipeCommand {
    /// Wipe block devices (disks or partitions) not used by a volume
    Disk(WipeDiskArgs),
}

/// `--method`: talosctl's upper-case names, with its refusal.
fn wipe_method(s: &str) -> Result<String, String> {
    match s {
        "FAST" | "ZEROES" => Ok(s.to_string()),
        other => Err(format!("invalid wipe method {other:?}")),
    }
}

#[derive(Debug, Args, Serialize)]
pub struct WipeDiskArgs {
    /// Devices without /dev/ (sdb, vda5)
    #[arg(required = true, value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// FAST (file system and partition signatures) or ZEROES (the whole device)
    #[arg(long, default_value = "FAST", value_parser = wipe_method)]
    pub method: String,
    /// Remove a wiped partition from its disk's partition table
    #[arg(long)]
    pub drop_partition: bool,
    #[arg(long, hide = true)]
    pub skip_volume_check: bool,
    #[arg(long, hide = true)]
    pub skip_secondary_check: bool,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Subcommand)]
pub enum MetaCommand {
    /// Write a META tag (KEY 0-255: 12, 0x0c, 0o14, 0b1100)
    Write(MetaWriteArgs),
    /// Delete a META tag
    Delete(MetaDeleteArgs),
}

#[derive(Debug, Args, Serialize)]
pub struct MetaWriteArgs {
    pub key: String,
    pub value: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct MetaDeleteArgs {
    pub key: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ImagePullArgs {
    /// The image reference (nginx, ghcr.io/org/app:v1, ...@sha256:...)
    pub image: String,
    /// cri (Kubernetes images), system (etcd, kubelet, installer) or inmem
    #[arg(long, default_value = "cri", value_parser = ["cri", "system", "inmem"])]
    pub namespace: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct DebugArgs {
    /// The image reference the node pulls and runs (docker.io/library/alpine:latest, ...)
    pub image: String,
    /// Arguments to pass to the container (default: the image's entrypoint)
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
    /// Namespace to use: system (CRI containerd) or inmem for the in-memory containerd instance
    #[arg(long, default_value = "inmem", value_parser = ["cri", "system", "inmem"])]
    pub namespace: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct ImageRemoveArgs {
    /// The image's name as `image list` shows it (docker.io/library/nginx:latest, ...)
    pub image: String,
    /// cri (Kubernetes images), system (etcd, kubelet, installer) or inmem
    #[arg(long, default_value = "cri", value_parser = ["cri", "system", "inmem"])]
    pub namespace: String,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

/// Flags `edit` and `patch` share: how the changed config is applied.
#[derive(Debug, Args, Serialize)]
pub struct ConfigApplyFlags {
    /// How to apply the changed config
    #[arg(short = 'm', long, default_value = "auto")]
    pub mode: ApplyMode,
    /// Only show what would change
    #[arg(long)]
    pub dry_run: bool,
    /// How long a try-mode config stays before it is rolled back
    #[arg(long, default_value = "1m", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
}

#[derive(Debug, Args, Serialize)]
pub struct EditArgs {
    /// The resource to edit: machineconfig (the only one that can be)
    pub resource: String,
    /// The resource's namespace (default: the one its type lives in)
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub apply: ConfigApplyFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct PatchArgs {
    /// The resource to patch: machineconfig
    pub resource: String,
    /// A patch: inline YAML/JSON (strategic merge or JSON6902) or @file (repeatable)
    #[arg(short = 'p', long = "patch", value_name = "PATCH")]
    pub patches: Vec<String>,
    /// A patch file (as -p @FILE)
    #[arg(long, value_name = "FILE")]
    pub patch_file: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub apply: ConfigApplyFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub node: NodeArgs,
}

impl PatchArgs {
    /// The patch arguments in order, `--patch-file` last as `@FILE`.
    pub fn patch_args(&self) -> Vec<String> {
        let mut all = self.patches.clone();
        if let Some(f) = &self.patch_file {
            all.push(format!("@{f}"));
        }
        all
    }
}
