//! `secrets::` script functions: the secrets bundle, the talosconfig, `talm.key` and the
//! `ENC[AGE,...]` encryption of project files. Everything works on text in memory; writing
//! is the plan's job.

use rhai::{Array, Engine, FuncRegistration, Map, Module};

use crate::runtime::native;
use crate::runtime::opts::options;
use crate::secrets::{bundle::Bundle, contract::Contract, crypt, talosconfig, twins};

options! {
    /// `secrets::generate(#{...})`.
    pub struct GenerateOpts for "secrets::generate" {
        /// The version contract ("" = current).
        talos_version: String,
    }
}

options! {
    /// `secrets::talosconfig(bundle, #{...})`.
    pub struct TalosconfigOpts for "secrets::talosconfig" {
        /// The context name (the cluster).
        name: String,
        endpoints: Vec<String>,
        /// The bundle's name in errors (default secrets.yaml).
        file: String,
    }
}

pub fn register(engine: &mut Engine, session: &crate::runtime::session::Session) {
    let mut m = Module::new();
    FuncRegistration::new("generate")
        .with_comments([
            "/// A new secrets bundle (YAML text); `opts.talos_version` picks the version contract (default: current).",
        ])
        .set_into_module(&mut m, |opts: Map| {
            native(|| {
                let contract = Contract::parse(&GenerateOpts::read(&opts)?.talos_version)?;
                Bundle::generate(contract, time::OffsetDateTime::now_utc())?.to_yaml()
            })
        });
    FuncRegistration::new("check_bundle")
        .with_comments([
            "/// Fails unless `text` is a valid secrets bundle; `file` names it in the error.",
        ])
        .set_into_module(&mut m, |text: &str, file: &str| {
            native(|| Bundle::load(text, file).map(|_| ()))
        });
    FuncRegistration::new("talosconfig")
        .with_comments(["/// A talosconfig (YAML text) from a bundle (YAML text) with a fresh os:admin client certificate: `opts.name` names the context (the cluster), `opts.endpoints` lists its endpoints, `opts.file` names the bundle in errors."])
        .set_into_module(&mut m, |bundle: &str, opts: Map| {
            native(|| {
                let o = TalosconfigOpts::read(&opts)?;
                let file = match o.file {
                    f if f.is_empty() => "secrets.yaml".to_string(),
                    f => f,
                };
                let b = Bundle::load(bundle, &file)?;
                let v = talosconfig::generate(&b, &o.name, &o.endpoints, time::OffsetDateTime::now_utc())
                    .map_err(|e| e.context(file.clone()))?;
                Ok(crate::yaml::to_string(&v))
            })
        });
    FuncRegistration::new("check_talosconfig")
        .with_comments([
            "/// Fails unless `text` is a usable talosconfig; `file` names it in the error.",
        ])
        .set_into_module(&mut m, |text: &str, file: &str| {
            native(|| talosconfig::load(text, file).map(|_| ()))
        });
    FuncRegistration::new("talosconfig_context")
        .with_comments(["/// The current context name of a talosconfig text (\"\" if none)."])
        .set_into_module(&mut m, |text: &str| {
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text)
                .ok()
                .and_then(|v| {
                    v.get("context")
                        .and_then(|c| c.as_str())
                        .map(str::to_string)
                })
                .unwrap_or_default()
        });
    FuncRegistration::new("carry_over")
        .with_comments(["/// A regenerated talosconfig keeping the old one's endpoints, nodes, extra contexts and current context."])
        .set_into_module(&mut m, |new: &str, old: &str, old_file: &str| {
            native(|| {
                let old = talosconfig::load(old, old_file)?;
                let new: serde_yaml_ng::Value = serde_yaml_ng::from_str(new)?;
                Ok(crate::yaml::to_string(&talosconfig::carry_over(&new, &old)))
            })
        });
    FuncRegistration::new("new_key")
        .with_comments(["/// A new age identity in age-keygen's file format."])
        .set_into_module(&mut m, crypt::new_key_file);
    FuncRegistration::new("check_key")
        .with_comments(["/// Fails unless `text` holds an age identity; `file` names it."])
        .set_into_module(&mut m, |text: &str, file: &str| {
            native(|| crypt::parse_key(text, file).map(|_| ()))
        });
    FuncRegistration::new("encrypt_text")
        .with_comments(["/// Seals every scalar value of the YAML `plain` text in place (comments and quoting kept) after checking it is a whole file of `kind` (\"bundle\", \"talosconfig\", \"kubeconfig\", \"values\"); values unchanged since `previous` (the old encrypted text, or \"\") keep their ciphertext."])
        .set_into_module(&mut m, |key: &str, plain: &str, plain_file: &str, previous: &str, kind: &str| {
            native(|| {
                twins::check(kind.parse()?, plain, plain_file)?;
                let id = crypt::parse_key(key, "talm.key")?;
                let prev = (!previous.is_empty()).then_some(previous);
                crypt::encrypt_yaml(&id, plain, plain_file, prev)
            })
        });
    FuncRegistration::new("decrypt_text")
        .with_comments(["/// Opens every `ENC[AGE,...]` value of an encrypted YAML text in place; every envelope must be whole and the result a whole file of `kind` (see encrypt_text); `file` names it in errors."])
        .set_into_module(&mut m, |key: &str, text: &str, file: &str, kind: &str| {
            native(|| {
                let kind = kind.parse()?;
                let id = crypt::parse_key(key, "talm.key")?;
                let plain = crypt::decrypt_yaml(&id, text, file)?;
                twins::check(kind, &plain, file)?;
                Ok(plain)
            })
        });
    FuncRegistration::new("newer_twin_losses")
        .with_comments(["/// What encrypting `plain` over `enc` (files of the project at `root`) would lose when `enc` is the newer file (after a `git pull`, say): the key paths its values hold that the plain file does not; [] otherwise."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str, plain: &str, enc: &str, key: &str| {
            native(|| {
                s.check_inside("secrets::newer_twin_losses", root)?;
                let p = crate::project::confine::inside(root, plain)?;
                let e = crate::project::confine::inside(root, enc)?;
                let mtime = |f: &std::path::Path| std::fs::metadata(f).and_then(|m| m.modified()).ok();
                let (Some(pm), Some(em)) = (mtime(&p), mtime(&e)) else {
                    return Ok(Array::new());
                };
                if em <= pm {
                    return Ok(Array::new());
                }
                let id = crypt::parse_key(key, "talm.key")?;
                let enc_text = crate::project::fsutil::read_text(&e)?;
                // A twin that does not open is replaced: there is nothing in it to keep.
                let Ok(opened) = crypt::decrypt_yaml(&id, &enc_text, enc) else {
                    return Ok(Array::new());
                };
                let plain_text = crate::project::fsutil::read_text(&p)?;
                Ok(twins::losses(&opened, &plain_text)
                    .into_iter()
                    .map(|l| rhai::Dynamic::from(l.to_string().replace("only in the plain file", &format!("only in {enc}"))))
                    .collect::<Array>())
            })
        } });
    FuncRegistration::new("losses")
        .with_comments(["/// What replacing the plain text `old` with `new` would lose, one line per key path (`~ path` changed, `- path` dropped); values are never shown."])
        .set_into_module(&mut m, |old: &str, new: &str| {
            twins::losses(old, new)
                .into_iter()
                .map(|l| rhai::Dynamic::from(l.to_string()))
                .collect::<Array>()
        });
    FuncRegistration::new("new_key_for")
        .with_comments(["/// A new age identity for the project at `root`, refused while encrypted files exist there: they were sealed to the lost talm.key, and a new key would leave them unopenable next to files sealed to it."])
        .set_into_module(&mut m, { let s = session.clone(); move |root: &str| native(|| {
            s.check_inside("secrets::new_key_for", root)?;
            crate::secrets::crypt::new_key_for(std::path::Path::new(root))
        }) });
    FuncRegistration::new("key_hint")
        .with_comments(["/// The two ways out when talm.key is missing for `encrypted_file`."])
        .set_into_module(&mut m, |encrypted_file: &str| {
            crypt::key_recovery_hint(encrypted_file)
        });
    crate::runtime::local::playbook::add_secret_files(&mut m, session);
    engine.register_static_module("secrets", m.into());
}
