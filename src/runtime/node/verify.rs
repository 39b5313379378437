//! The checks `apply` makes around sending a config, as the Go talm: `verify::talos_version`
//! (the pre-flight warning when the configured contract is newer than the node's Talos) and
//! `verify::post_apply` (what the node runs afterwards against what was sent).

use std::collections::BTreeSet;

use rhai::{Engine, FuncRegistration, Map, Module};

use crate::runtime::native;
use crate::runtime::opts::options;

options! {
    /// `verify::post_apply(current, sent, #{...})`.
    pub struct PostApplyOpts for "verify::post_apply" {
        /// The node, named in the report's header.
        node: String,
        /// Print secret values instead of redacting them.
        show_secrets: bool,
        /// User secret values to redact.
        secrets: Vec<String>,
    }
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("talos_version")
        .with_comments(["/// The pre-flight warning (with its hint line) when the `configured` talosVersion (\"\" = the newest contract) is newer by major.minor than the node's `running` Talos tag; \"\" otherwise or when either cannot be read."])
        .set_into_module(&mut m, |configured: &str, running: &str| {
            crate::config::preflight::talos_version(configured, running).unwrap_or_default()
        });
    FuncRegistration::new("post_apply")
        .with_comments(["/// Compares the config the node runs (`current`) with the one sent: #{count (documents that differ), report (headed `talm: post-apply divergence (node N)`, the differing paths)}. `opts` has `node`, `show_secrets`, `secrets`."])
        .set_into_module(&mut m, |current: &str, sent: &str, opts: Map| {
            native(|| {
                let o = PostApplyOpts::read(&opts)?;
                let secrets: BTreeSet<String> = o.secrets.into_iter().collect();
                let (report, count) = crate::config::drift::divergence(current, sent, &o.node, o.show_secrets, &secrets)?;
                let mut out = Map::new();
                out.insert("count".into(), (count as i64).into());
                out.insert("report".into(), report.trim_end().to_string().into());
                Ok(out)
            })
        });
    engine.register_static_module("verify", m.into());
}
