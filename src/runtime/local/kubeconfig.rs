//! Kubeconfig files from scripts: `kubeconfig::merge` (go-kubeconfig's merge, as talosctl
//! merges), `kubeconfig::server_url` and `kubeconfig::set_server` (pointing clusters at the
//! project's Kubernetes endpoint).

use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::project::kubeconfig;
use crate::runtime::native;
use crate::runtime::opts::options;

options! {
    /// `kubeconfig::merge(existing, fresh, #{...})`.
    pub struct MergeOpts for "kubeconfig::merge" {
        /// Overwrite clashing clusters and users instead of renaming them.
        force: bool,
        /// The merged context's name.
        context_name: String,
        /// The existing file, named in errors.
        file: String,
    }
}

fn strings(list: Vec<String>) -> Array {
    list.into_iter().map(Dynamic::from).collect()
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("merge")
        .with_comments(["/// Merges the `fresh` kubeconfig text into `existing` as talosctl does (go-kubeconfig): a clashing cluster or user is overwritten with `force`, else renamed `-1`, `-2`...; the merged context becomes current. Returns #{text, messages (the `renamed ...` lines), clusters (merged names), context}."])
        .set_into_module(&mut m, |existing: &str, fresh: &str, opts: Map| {
            native(|| {
                let o = MergeOpts::read(&opts)?;
                let r = kubeconfig::merge(existing, fresh, o.force, &o.context_name, &o.file)?;
                let mut out = Map::new();
                out.insert("text".into(), r.text.into());
                out.insert("messages".into(), strings(r.messages).into());
                out.insert("clusters".into(), strings(r.clusters).into());
                out.insert("context".into(), r.context.into());
                Ok(out)
            })
        });
    FuncRegistration::new("server_url")
        .with_comments(["/// The Kubernetes API URL of an endpoint: `https://<host>:6443` (IPv6 bracketed); a full https URL with a port is kept."])
        .set_into_module(&mut m, |endpoint: &str| kubeconfig::server_url(endpoint));
    FuncRegistration::new("set_server")
        .with_comments(["/// Points the clusters named in `names` at `url`: #{text, updated (the clusters changed)}."])
        .set_into_module(&mut m, |text: &str, names: Array, url: &str| {
            native(|| {
                let names: Vec<String> = names.into_iter().filter_map(|d| d.into_string().ok()).collect();
                let (text, updated) = kubeconfig::set_server(text, &names, url)?;
                let mut out = Map::new();
                out.insert("text".into(), text.into());
                out.insert("updated".into(), strings(updated).into());
                Ok(out)
            })
        });
    engine.register_static_module("kubeconfig", m.into());
}
