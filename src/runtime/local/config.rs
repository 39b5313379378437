//! `config::` script functions: Talos machine configs: base generation, merging node-file bodies,
//! the drift preview, the declared-resources gate and secret redaction.

use std::collections::BTreeSet;

use rhai::{Array, Dynamic, Engine, FuncRegistration, Map, Module};

use crate::config::generate::{self, Input, MachineType, Options};
use crate::runtime::native;
use crate::runtime::opts::options;
use crate::secrets::{bundle::Bundle, contract::Contract};

fn some(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

options! {
    /// `config::generate(#{...})`.
    pub struct GenerateOpts for "config::generate" {
        cluster_name: String,
        endpoint: String,
        /// Without `v`; "" = no images.
        kubernetes_version: String,
        /// The contract; "" = current.
        talos_version: String,
        /// The bundle's YAML text.
        secrets: String,
        /// The bundle's name in errors (default secrets.yaml).
        secrets_file: String,
        /// controlplane or worker.
        machine_type: String,
        additional_sans: Vec<String>,
        dns_domain: String,
        install_disk: String,
        install_image: String,
    }
}

options! {
    /// `config::drift(current, desired, #{...})`.
    pub struct DriftOpts for "config::drift" {
        node: String,
        show_secrets: bool,
        /// User secret values to redact.
        secrets: Vec<String>,
    }
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("generate")
        .with_comments([
            "/// Base Talos machine configs from a secrets bundle: `opts` holds `cluster_name`, `endpoint`, `kubernetes_version` (without `v`, \"\" = no images), `talos_version` (contract, \"\" = current), `secrets` (bundle YAML text), `secrets_file` (its name for errors), `machine_type` (controlplane|worker) and optionally `additional_sans`, `dns_domain`, `install_disk`, `install_image`. Returns the YAML text.",
        ])
        .set_into_module(&mut m, |opts: Map| {
            native(|| {
                let o = GenerateOpts::read(&opts)?;
                let file = some(o.secrets_file).unwrap_or_else(|| "secrets.yaml".into());
                let input = Input {
                    cluster_name: o.cluster_name,
                    endpoint: o.endpoint,
                    kubernetes_version: o.kubernetes_version,
                    contract: Contract::parse(&o.talos_version)?,
                    bundle: Bundle::load(&o.secrets, &file)?,
                    options: Options {
                        additional_sans: o.additional_sans,
                        dns_domain: some(o.dns_domain),
                        install_disk: some(o.install_disk),
                        install_image: some(o.install_image),
                        ..Options::default()
                    },
                };
                let kind = MachineType::parse(&o.machine_type)?;
                Ok(generate::to_text(&generate::generate(&input, kind)?))
            })
        });
    FuncRegistration::new("default_kubernetes_version")
        .with_comments(["/// The Kubernetes version configs are generated for when none is given."])
        .set_into_module(&mut m, || {
            Dynamic::from(generate::DEFAULT_KUBERNETES_VERSION)
        });
    FuncRegistration::new("check_documents")
        .with_comments(["/// Fails unless `text` parses as YAML and decodes as Talos config documents (strictly: known kinds, known keys); `file` names where it was going."])
        .set_into_module(&mut m, |text: &str, file: &str| {
            native(|| {
                crate::config::decode::decode(text, true).map(|_| ()).map_err(|e| {
                    crate::error::hinted(
                        format!("{file}: the render does not decode as Talos config documents: {e}"),
                        format!("{file} was left as it was; fix the template or the values behind the line shown (run without -I to see the render)"),
                    )
                })
            })
        });
    FuncRegistration::new("merge_body")
        .with_comments(["/// Merges a node file's (or side-patch's) body onto a rendered config (`file` names it in errors); what the render already says is pruned first."])
        .set_into_module(&mut m, |rendered: &str, body: &str, file: &str| {
            native(|| crate::config::nodebody::merge(rendered, body, file))
        });
    FuncRegistration::new("drift")
        .with_comments(["/// The drift preview of sending `desired` to a node running `current`: `opts` has `node`, `show_secrets`, `secrets` (user secret values to redact)."])
        .set_into_module(&mut m, |current: &str, desired: &str, opts: Map| {
            native(|| {
                let o = DriftOpts::read(&opts)?;
                let secrets: BTreeSet<String> = o.secrets.into_iter().collect();
                let p = crate::config::drift::preview(current, desired, &o.node, o.show_secrets, &secrets)?;
                Ok(p.trim_end().to_string())
            })
        });
    FuncRegistration::new("declared")
        .with_comments(["/// The declared-resources gate: links and disks `config` names, checked against a node's discovered `facts`. Returns #{blockers, warnings, report}."])
        .set_into_module(&mut m, |config: &str, facts: Dynamic| {
            native(|| {
                let facts = crate::render::dynamic::to_facts(&facts)?;
                let found = crate::config::declared::check(config, &facts)?;
                let mut out = Map::new();
                out.insert("blockers".into(), (found.iter().filter(|f| f.blocker).count() as i64).into());
                out.insert("warnings".into(), (found.iter().filter(|f| !f.blocker).count() as i64).into());
                out.insert("report".into(), crate::config::declared::report(&found).trim_end().to_string().into());
                Ok(out)
            })
        });
    FuncRegistration::new("redact")
        .with_comments(["/// `text` with the secret values of `config` (secret fields, private keys) and the extra `secrets` replaced by `***`."])
        .set_into_module(&mut m, |text_: &str, config: &str, secrets: Array| {
            native(|| redact_with(text_, &[config], secrets))
        });
    FuncRegistration::new("redact")
        .with_comments(["/// `text` with the secret values of every config in `configs` and the extra `secrets` replaced by `***` (each config is read as it was parsed before, not joined into a new text)."])
        .set_into_module(&mut m, |text_: &str, configs: Array, secrets: Array| {
            native(|| {
                let configs: Vec<String> = configs
                    .into_iter()
                    .map(|c| c.into_string().map_err(|t| anyhow::anyhow!("config::redact: configs must be strings, got {t}")))
                    .collect::<anyhow::Result<_>>()?;
                let configs: Vec<&str> = configs.iter().map(String::as_str).collect();
                redact_with(text_, &configs, secrets)
            })
        });
    FuncRegistration::new("redact_secrets")
        .with_comments(["/// A machine config (`text`, any number of documents) with its secret fields — tokens, CA keys, encryption secrets, registry credentials, WireGuard and VIP keys, disk passphrases — replaced by `replacement`, as Talos's `RedactSecrets` does; comments and layout kept where possible."])
        .set_into_module(&mut m, |text_: &str, replacement: &str| {
            native(|| crate::config::redact::redact_secrets(text_, replacement))
        });
    engine.register_static_module("config", m.into());
}

/// `text` with the secret values of `configs` and the extra `secrets` replaced by `***`.
fn redact_with(text: &str, configs: &[&str], secrets: Array) -> anyhow::Result<String> {
    let mut all = BTreeSet::new();
    for config in configs {
        all.extend(crate::config::drift::secret_values(config)?);
    }
    all.extend(secrets.into_iter().filter_map(|d| d.into_string().ok()));
    Ok(crate::config::drift::redact(text, &all))
}

#[cfg(test)]
mod tests {
    use crate::runtime::run_test_script;

    #[test]
    fn redact_reads_each_config_given() {
        let script = r#"
            let a = "machine:\n  token: tok1\n";
            let b = "machine:\n  token: tok2\n";
            [config::redact("x tok1 s3 tok2", [a, b], ["s3"]), config::redact("tok1 tok2", a, [])]
        "#;
        let out = run_test_script("t.rhai", script).unwrap();
        let out: Vec<String> = rhai::serde::from_dynamic(&out).unwrap();
        assert_eq!(out, ["x *** *** ***", "*** tok2"]);
        let err = run_test_script("t.rhai", "config::redact(\"x\", [1], [])").unwrap_err();
        assert!(err.to_string().contains("configs must be strings"), "{err}");
    }
}
