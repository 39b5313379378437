//! Flags of `talm migrate`: adopting a project made by the Go talm.

use clap::Args;
use serde::Serialize;

use super::values::GoDuration;

#[derive(Debug, Args, Serialize)]
pub struct MigrateArgs {
    /// Project root (default: detected from the current directory)
    #[arg(long, value_name = "DIR")]
    pub root: Option<String>,
    /// Print what was detected, the plan, the edits and the per-node proof, then stop; nothing is changed
    #[arg(long)]
    pub dry_run: bool,
    /// The preset the project was made from (default: detected from its templates)
    #[arg(short = 'p', long, value_name = "NAME", add = clap_complete::engine::ArgValueCandidates::new(crate::completion::presets))]
    pub preset: Option<String>,
    /// Go on although the Go templates hold custom edits or extra files (they are saved under migrate/)
    #[arg(long)]
    pub force: bool,
    /// Finish although talm's render differs from a node's config
    #[arg(long)]
    pub accept_changes: bool,
    /// Also compare each node's running config (drift preview) with talm's render
    #[arg(long)]
    pub online: bool,
    /// Path to the talosconfig (default: Chart.yaml globalOptions.talosconfig, else <root>/talosconfig)
    #[arg(long, value_name = "PATH")]
    pub talosconfig: Option<String>,
    /// talosconfig context to use
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Deadline for connecting to a node and for each call (e.g. 30s, 2m)
    #[arg(long, value_name = "DURATION", env = "TALM_CALL_TIMEOUT", value_parser = GoDuration::parse)]
    pub call_timeout: Option<GoDuration>,
}
