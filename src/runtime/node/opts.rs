//! The option maps of the node API (`node`, `talos::targets`, `talos::scan` and the methods of
//! a Node), each declared once with its keys and types (`options!`).

use std::time::Duration;

use crate::cli::values::{ApplyMode, RebootMode, UpgradeRebootMode, WipeMode};
use crate::runtime::opts::options;

options! {
    /// `node(addr, #{...})`.
    pub struct NodeOpts for "node" {
        /// Maintenance mode: no client certificate, server not verified.
        insecure: bool,
        /// Reach the node through this endpoint (ignored when insecure).
        endpoint: String,
        /// Or through the first of these that answers.
        endpoints: Vec<String>,
        /// Do not verify the node's certificate (the client certificate is still presented).
        skip_verify: bool,
        /// The talosconfig (default: the project's).
        talosconfig: String,
        /// Its context (default: the current one).
        context: String,
        /// Deadline of the connection and of each call.
        timeout: Option<Duration>,
    }
}

options! {
    /// `talos::targets(#{...})`.
    pub struct TargetsOpts for "talos::targets" {
        nodes: Vec<String>,
        endpoints: Vec<String>,
        /// Node files whose modelines give nodes and endpoints.
        files: Vec<String>,
        insecure: bool,
        /// With `insecure`: the server certificate's fingerprint must be one of these.
        cert_fingerprints: Vec<String>,
        talosconfig: String,
        context: String,
        timeout: Option<Duration>,
    }
}

options! {
    /// `n.apply(config, #{...})`.
    pub struct ApplyOpts for "n.apply" {
        /// auto (default), no-reboot, reboot, staged or try.
        mode: ApplyMode,
        dry_run: bool,
        /// Try-mode rollback (default 1m).
        timeout: Option<Duration>,
        /// Send the text exactly as given, even when it looks like a patch (`edit machineconfig`
        /// sends what the user saved, as talosctl; the node judges it).
        as_is: bool,
    }
}

options! {
    /// `n.upgrade(#{...})`.
    pub struct UpgradeOpts for "n.upgrade" {
        /// The installer image (required).
        image: String,
        /// Write the upgrade to META and reboot; it is installed during the next boot.
        stage: bool,
        /// Skip the etcd checks a control plane makes before upgrading.
        force: bool,
        /// Keep the node's data (passed to the installer).
        preserve: bool,
        /// default or powercycle (no kexec).
        reboot_mode: UpgradeRebootMode,
        /// Follow the upgrade until the node is back RUNNING on a new boot (talosctl's tracker).
        wait: bool,
        /// How long `wait` waits (default 30m).
        timeout: Option<Duration>,
        /// The legacy MachineService.Upgrade even on a node with LifecycleService.
        legacy: bool,
        /// Install only: no reboot (the node runs the new version after its next one).
        no_reboot: bool,
        /// The containerd the installer image is pulled into: system (default), cri or inmem.
        namespace: String,
        /// After a failed wait, print the node's kernel log (talosctl's `--debug`).
        kernel_log: bool,
        /// Drain the node's Kubernetes node before the reboot and uncordon it once back Ready.
        drain: bool,
        /// How long the drain may take (default 5m).
        drain_timeout: Option<Duration>,
    }
}

options! {
    /// `n.reboot(#{...})`.
    pub struct RebootOpts for "n.reboot" {
        /// default, powercycle or force.
        mode: RebootMode,
        /// Follow the reboot until the node is back RUNNING on a new boot (talosctl's tracker).
        wait: bool,
        /// How long `wait` waits (default 30m).
        timeout: Option<Duration>,
        /// After a failed wait, print the node's kernel log (talosctl's `--debug`).
        kernel_log: bool,
        /// Drain the node's Kubernetes node first and uncordon it once back Ready (implies wait).
        drain: bool,
        /// How long the drain may take (default 5m).
        drain_timeout: Option<Duration>,
    }
}

options! {
    /// `n.k8s_check(check, #{...})`.
    pub struct CheckOpts for "n.k8s_check" {
        /// The control planes' addresses.
        control_plane_nodes: Vec<String>,
        /// The workers' addresses.
        worker_nodes: Vec<String>,
        /// The API's host[:port] instead of the kubeconfig's server.
        k8s_endpoint: String,
    }
}

options! {
    /// `n.drain(#{...})`.
    pub struct DrainOpts for "n.drain" {
        /// How long the evictions may take (default 5m).
        timeout: Option<Duration>,
    }
}

options! {
    /// `n.logs(service, #{...})`.
    pub struct LogsOpts for "n.logs" {
        tail: Option<i64>,
        kubernetes: bool,
    }
}

options! {
    /// `n.reset(#{...})`: every option may be left out; the defaults are `talm reset`'s.
    pub struct ResetOpts for "n.reset" {
        /// Leave etcd and Kubernetes first (default true).
        graceful: Option<bool>,
        reboot: bool,
        /// all, system-disk or user-disks (absent: only the system labels are wiped).
        wipe_mode: Option<WipeMode>,
        /// Partitions to wipe (default STATE and EPHEMERAL, keeping META).
        system_labels: Vec<String>,
        user_disks: Vec<String>,
        /// Follow the reset until the node stops its services (with `reboot`: until it is back
        /// in maintenance mode), as talosctl's tracker.
        wait: bool,
        /// How long `wait` waits (default 30m).
        timeout: Option<Duration>,
        /// After a failed wait, print the node's kernel log (talosctl's `--debug`).
        kernel_log: bool,
    }
}

options! {
    /// `talos::scan(cidr, #{...})`.
    pub struct ScanOpts for "talos::scan" {
        port: Option<i64>,
        timeout: Option<Duration>,
        concurrency: Option<i64>,
    }
}
