//! `config::` script functions: Talos machine configs (base generation for now).

use rhai::{Dynamic, Engine, FuncRegistration, Map, Module};

use super::native;
use super::opts::{list, text};
use crate::config::generate::{self, Input, MachineType, Options};
use crate::secrets::{bundle::Bundle, contract::Contract};

fn some(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("generate")
        .with_comments([
            "/// Base Talos machine configs from a secrets bundle: `opts` holds `cluster_name`, `endpoint`, `kubernetes_version` (without `v`, \"\" = no images), `talos_version` (contract, \"\" = current), `secrets` (bundle YAML text), `secrets_file` (its name for errors), `machine_type` (controlplane|worker) and optionally `additional_sans`, `dns_domain`, `install_disk`, `install_image`. Returns the YAML text.",
        ])
        .set_into_module(&mut m, |opts: Map| {
            native(|| {
                let file = some(text(&opts, "secrets_file")).unwrap_or_else(|| "secrets.yaml".into());
                let input = Input {
                    cluster_name: text(&opts, "cluster_name"),
                    endpoint: text(&opts, "endpoint"),
                    kubernetes_version: text(&opts, "kubernetes_version"),
                    contract: Contract::parse(&text(&opts, "talos_version"))?,
                    bundle: Bundle::load(&text(&opts, "secrets"), &file)?,
                    options: Options {
                        additional_sans: list(&opts, "additional_sans"),
                        dns_domain: some(text(&opts, "dns_domain")),
                        install_disk: some(text(&opts, "install_disk")),
                        install_image: some(text(&opts, "install_image")),
                        ..Options::default()
                    },
                };
                let kind = MachineType::parse(&text(&opts, "machine_type"))?;
                Ok(generate::to_text(&generate::generate(&input, kind)?))
            })
        });
    FuncRegistration::new("default_kubernetes_version")
        .with_comments(["/// The Kubernetes version configs are generated for when none is given."])
        .set_into_module(&mut m, || {
            Dynamic::from(generate::DEFAULT_KUBERNETES_VERSION)
        });
    engine.register_static_module("config", m.into());
}
