//! Flags of `pcap` (alias `tcpdump`): a packet capture on one node's link.

use clap::Args;
use serde::Serialize;

use super::common::{Connection, Endpoints, NodeArgs, ProjectFlags};
use super::values::GoDuration;

#[derive(Debug, Args, Serialize)]
pub struct PcapArgs {
    /// Interface name to capture packets on
    #[arg(short = 'i', long, default_value = "eth0", value_name = "NAME")]
    pub interface: String,
    /// Put the interface into promiscuous mode
    #[arg(long)]
    pub promiscuous: bool,
    /// Maximum packet size to capture (deprecated in talosctl: no longer sent)
    #[arg(short = 's', long, value_name = "BYTES")]
    pub snaplen: Option<u32>,
    /// Unset: decode the packets to stdout; a path: write the raw pcap file there; `-`: the raw
    /// file to stdout
    #[arg(short = 'o', long, default_value = "", value_name = "PATH")]
    pub output: String,
    /// BPF filter to apply, in `tcpdump -dd` format
    #[arg(long, default_value = "", value_name = "INSTRUCTIONS")]
    pub bpf_filter: String,
    /// How long to capture (default: until stopped)
    #[arg(long, value_name = "DURATION", value_parser = GoDuration::parse)]
    pub duration: Option<GoDuration>,
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
    #[arg(short = 'f', long = "file", value_delimiter = ',', value_name = "PATH")]
    pub files: Vec<String>,
}

impl PcapArgs {
    /// The node flags of the command: no maintenance mode (`-i` is the interface, as in
    /// talosctl, and a node in maintenance mode captures nothing for a client).
    pub fn node(&self) -> NodeArgs {
        NodeArgs {
            conn: self.conn.clone(),
            project: self.project.clone(),
            endpoints: self.endpoints.clone(),
            files: self.files.clone(),
            insecure: false,
        }
    }
}
