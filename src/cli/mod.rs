//! The command line: clap definitions only (flags defined once, feeding help, completions and
//! the scripts' `ARGS`). Flags belong to the commands that use them: node commands take the
//! connection flags, project commands `--root`, and the simulator neither.

pub mod bundles;
pub mod capture;
mod carry;
pub mod change;
pub mod cluster;
mod common;
pub mod inspect;
mod migrate;
mod nodes;
mod project;
mod tools;
pub mod typos;
pub mod values;

use clap::{Parser, Subcommand};

pub use carry::{carry, first_value, subcommand_word, Before};

pub use common::{
    Connection, Endpoints, NodeArgs, ProjectFlags, RenderArgs, ScriptLimitArgs, ValueArgs,
};
pub use migrate::MigrateArgs;
pub use nodes::{
    CordonArgs, DmesgArgs, EventsArgs, GetArgs, LogsArgs, RebootArgs, ResetArgs, SupportArgs,
    UpgradeArgs, VersionArgs,
};
pub use project::{
    ApplyArgs, GenCommand, GenConfigArgs, InitArgs, KubeconfigArgs, TalosconfigArgs, TemplateArgs,
};
pub use tools::{ReplArgs, RunArgs, ScanArgs, SimArgs};

#[derive(Debug, Parser)]
#[command(
    name = "talm",
    about = "Manage Talos the GitOps Way!",
    version = crate::version::current(),
    propagate_version = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Connection flags before the subcommand; `carry` moves them behind it before parsing,
    /// so they are declared here for `talm --help` and completion only.
    #[command(flatten)]
    pub before: Before,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a cluster project from a preset, or encrypt, decrypt or update one
    Init(InitArgs),
    /// Adopt a project made by the Go talm: back up its Go templates, switch to talm's, prove every node's config is unchanged
    Migrate(MigrateArgs),
    /// Regenerate talosconfig with a new client certificate from the secrets bundle
    Talosconfig(TalosconfigArgs),
    /// Render node configs from the project's templates, values and node facts
    Template(TemplateArgs),
    /// Generate Talos configs without a project (as `talosctl gen`)
    #[command(subcommand)]
    Gen(GenCommand),
    /// Apply node files to their nodes: render, merge the file's body and side-patches, send
    Apply(ApplyArgs),
    /// Bootstrap etcd on a control-plane node (once per cluster), or recover it from a snapshot
    Bootstrap(cluster::BootstrapArgs),
    /// Check the cluster's health (etcd, API, nodes, Kubernetes) as the node sees it
    Health(cluster::HealthArgs),
    /// Look at and manage the etcd cluster: members, status, snapshot, leave, alarms...
    #[command(subcommand)]
    Etcd(cluster::EtcdCommand),
    /// Fetch the cluster's admin kubeconfig from a control-plane node
    Kubeconfig(KubeconfigArgs),
    /// Rotate the cluster CAs (Talos and Kubernetes APIs); a dry run unless --dry-run=false
    RotateCa(cluster::RotateCaArgs),
    /// Upgrade Talos on nodes (image from values.yaml unless --image), then check the version
    Upgrade(UpgradeArgs),
    /// Reboot nodes
    Reboot(RebootArgs),
    /// Mark the nodes' Kubernetes nodes unschedulable (as kubectl cordon)
    Cordon(CordonArgs),
    /// Mark the nodes' Kubernetes nodes schedulable again (as kubectl uncordon)
    Uncordon(CordonArgs),
    /// Reset nodes (wipes STATE and EPHEMERAL, keeps META unless told otherwise)
    Reset(ResetArgs),
    /// Restart a container of nodes (its service or the kubelet starts it again)
    Restart(change::RestartArgs),
    /// Boot nodes into their previous Talos (the other boot entry)
    Rollback(change::RollbackArgs),
    /// Power nodes off
    Shutdown(change::ShutdownArgs),
    /// Wipe block devices of nodes
    #[command(subcommand)]
    Wipe(change::WipeCommand),
    /// Write or delete META tags of nodes
    #[command(subcommand)]
    Meta(change::MetaCommand),
    /// Edit the machine config of nodes in $EDITOR and apply it
    Edit(change::EditArgs),
    /// Patch the machine config of nodes (strategic merge or JSON6902) and apply it
    Patch(change::PatchArgs),
    /// The whole bring-up guide against simulated nodes in this process, by playbook
    Demo {
        /// Folder for the new project (default: a fresh temporary folder)
        #[arg(long, value_name = "DIR")]
        dir: Option<String>,
        /// Loopback addresses of the simulated nodes, comma-separated; each listens on port
        /// 50000 (the first is the control-plane endpoint)
        #[arg(
            long,
            value_name = "IPS",
            value_delimiter = ',',
            default_value = "127.0.0.11,127.0.0.12,127.0.0.13"
        )]
        nodes: Vec<String>,
    },
    /// Print a service's log (`kernel` for the kernel log)
    Logs(LogsArgs),
    /// Print the kernel log of nodes
    Dmesg(DmesgArgs),
    /// Stream the events of nodes (sequences, services, machine status) until Ctrl-C
    Events(EventsArgs),
    /// List the services of nodes, or one service's state and events
    #[command(alias = "services")]
    Service(inspect::ServiceArgs),
    /// List the containers of nodes (Talos's own, or Kubernetes' with -k)
    #[command(alias = "c")]
    Containers(inspect::ContainersArgs),
    /// CPU and memory of the containers of nodes
    Stats(inspect::ContainersArgs),
    /// List the processes of nodes
    #[command(aliases = ["p", "ps"])]
    Processes(inspect::ProcessesArgs),
    /// Memory of nodes, as free does
    #[command(aliases = ["m", "free"])]
    Memory(inspect::MemoryArgs),
    /// List the mounts of nodes
    #[command(alias = "mount")]
    Mounts(inspect::DataArgs),
    /// Sockets of nodes, as netstat does
    #[command(alias = "ss")]
    Netstat(inspect::NetstatArgs),
    /// Capture the network packets of a node's link (decoded, or a pcap file with -o)
    #[command(alias = "tcpdump")]
    Pcap(capture::PcapArgs),
    /// Run a debug container on a node from an image (pulled first), attached to this terminal
    Debug(change::DebugArgs),
    /// Print a file of a node
    #[command(alias = "cat")]
    Read(inspect::ReadArgs),
    /// List a folder of a node
    #[command(alias = "ls")]
    List(inspect::ListArgs),
    /// Copy a file or folder from a node (a tar.gz on stdout with `-`)
    #[command(alias = "cp")]
    Copy(inspect::CopyArgs),
    /// Disk usage of folders of a node, as du does
    #[command(alias = "du")]
    Usage(inspect::UsageArgs),
    /// The time of nodes against their NTP server
    Time(inspect::TimeArgs),
    /// The cgroups of a node with their usage
    #[command(alias = "cg")]
    Cgroups(inspect::CgroupsArgs),
    /// Inspect internals of Talos: the controller runtime's dependencies
    #[command(subcommand)]
    Inspect(inspect::InspectCommand),
    /// Images in the containerd of nodes
    #[command(subcommand, visible_alias = "images")]
    Image(inspect::ImageCommand),
    /// A live terminal view of nodes: summary, services, logs (q quits)
    Dashboard(inspect::DashboardArgs),
    /// Dump debug information about nodes into a zip: logs, dmesg, resources, config without secrets
    Support(SupportArgs),
    /// Find Talos API endpoints on a network (TCP connect + TLS probe, no nmap)
    Scan(ScanArgs),
    /// Run a Rhai playbook: talm run FILE.rhai|NAME [ARGS...] (--list: the bundled ones)
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
    #[command(alias = "g")]
    Get(GetArgs),
    /// Record what templates read from a node (disks, links, addresses, routes...) as a --facts file
    Discover(NodeArgs),
    /// Run simulated Talos nodes on loopback addresses until interrupted (SIGUSR1 powers switched-off nodes back on)
    Sim(SimArgs),
    /// Print a shell completion script (dynamic: nodes, endpoints, node files, presets, kinds)
    Completion {
        /// The shell to complete for
        shell: clap_complete::Shell,
        /// Candidates without their descriptions
        #[arg(long)]
        no_descriptions: bool,
    },
    /// A project script: `talm NAME` runs `<project>/scripts/NAME.rhai`
    #[command(external_subcommand)]
    External(Vec<String>),
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
    fn nodes_take_short_n() {
        let m = Cli::command()
            .try_get_matches_from(["talm", "discover", "-n", "10.0.0.1,10.0.0.2"])
            .unwrap();
        let cli = Cli::from_arg_matches(&m).unwrap();
        let Command::Discover(d) = cli.command else {
            panic!("{cli:?}")
        };
        assert_eq!(d.conn.nodes, ["10.0.0.1", "10.0.0.2"]);
    }
}

#[cfg(test)]
mod scoped {
    use super::*;
    use clap::CommandFactory;

    fn help(sub: &str) -> String {
        Cli::command()
            .find_subcommand_mut(sub)
            .unwrap()
            .render_long_help()
            .to_string()
    }

    #[test]
    fn flags_belong_to_the_commands_that_use_them() {
        let sim = help("sim");
        for flag in [
            "--talosconfig",
            "--nodes",
            "--strict-charts",
            "--root",
            "--context",
        ] {
            assert!(!sim.contains(flag), "sim --help lists {flag}:\n{sim}");
        }
        let version = help("version");
        for flag in ["--talosconfig", "--nodes", "--root", "--call-timeout"] {
            assert!(version.contains(flag), "version --help lacks {flag}");
        }
        assert!(!help("scan").contains("--talosconfig"));
        assert!(!help("gen").contains("--nodes"));
    }
}
