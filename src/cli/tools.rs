//! Flags of the commands around the cluster: scanning, playbooks, the REPL, the simulator.

use clap::Args;
use serde::Serialize;

use super::common::{Connection, ProjectFlags, ScriptLimitArgs};
use super::values::GoDuration;

#[derive(Debug, Args, Serialize)]
pub struct ScanArgs {
    /// An IPv4 range (CIDR, at most a /16) or one address
    pub cidr: String,
    /// The Talos API port
    #[arg(long, default_value_t = 50000)]
    pub port: u16,
    /// How long to wait for each connection
    #[arg(long, default_value = "500ms", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub timeout: GoDuration,
    /// Addresses probed at once (1 to 4096)
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=4096))]
    pub concurrency: u16,
}

#[derive(Debug, Args, Serialize)]
pub struct ReplArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub conn: Connection,
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: ScriptLimitArgs,
}

#[derive(Debug, Args, Serialize)]
pub struct RunArgs {
    #[command(flatten)]
    #[serde(flatten)]
    pub conn: Connection,
    #[command(flatten)]
    #[serde(flatten)]
    pub project: ProjectFlags,
    #[command(flatten)]
    #[serde(flatten)]
    pub limits: ScriptLimitArgs,
    /// List the playbooks bundled with talm and what each does
    #[arg(long, conflicts_with_all = ["file", "args"])]
    pub list: bool,
    /// The playbook: a .rhai file, or the name of one bundled with talm (`--list`); a file of
    /// that name in the working folder wins
    #[arg(required_unless_present = "list")]
    pub file: Option<String>,
    /// Arguments for the playbook (its `ARGS.args`)
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// A node address (loopback, e.g. 127.0.0.11); repeat for more nodes
    #[arg(long = "node", value_name = "IP", value_delimiter = ',')]
    pub node: Vec<String>,
    /// Many nodes at once: a range FIRST-LAST (127.200.0.1-127.200.19.136) or a CIDR block
    /// (127.200.0.0/22) of loopback addresses, one node each; repeatable. The open-file limit
    /// is raised to its hard limit for them
    #[arg(long = "node-range", value_name = "RANGE")]
    pub node_range: Vec<String>,
    /// Port every node listens on
    #[arg(long, default_value_t = 50000)]
    pub port: u16,
    /// A YAML file describing each node's hardware and faults
    #[arg(long, value_name = "FILE")]
    pub config: Option<String>,
    /// How long a rebooting node stays down
    #[arg(long, default_value = "1s", value_name = "DURATION", value_parser = GoDuration::parse)]
    pub reboot_delay: GoDuration,
}

impl SimArgs {
    /// The simulator's own options (the simulator does not know about clap).
    pub fn options(&self) -> crate::sim::serve::Options {
        crate::sim::serve::Options {
            nodes: self.node.clone(),
            ranges: self.node_range.clone(),
            port: self.port,
            config: self.config.clone(),
            reboot_delay: self.reboot_delay.value,
        }
    }
}
