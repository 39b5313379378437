//! `yaml::` and `json::` script functions: parse text into Rhai values and write values back.
//! Every engine has them, the sandbox of templates and preset logic too (the library's preset
//! logic prints a running config's legacy interfaces with `yaml::to_string`).

use rhai::{Dynamic, Engine, FuncRegistration, Module};

use super::native;

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("parse")
        .with_comments([
            "/// Parses YAML text (`file` names it in errors) into maps, arrays and scalars.",
        ])
        .set_into_module(&mut m, |text: &str, file: &str| {
            native(|| {
                let v = talm_base::yaml::parse(text, file)?;
                Ok(rhai::serde::to_dynamic(v)?)
            })
        });
    FuncRegistration::new("parse")
        .with_comments(["/// Parses YAML text into maps, arrays and scalars."])
        .set_into_module(&mut m, |text: &str| {
            native(|| {
                Ok(rhai::serde::to_dynamic(talm_base::yaml::parse(
                    text, "<text>",
                )?)?)
            })
        });
    FuncRegistration::new("to_string")
        .with_comments(["/// Writes a value as YAML in the Talos layout (4-space indent)."])
        .set_into_module(&mut m, |value: Dynamic| {
            native(|| {
                let v: serde_yaml_ng::Value = rhai::serde::from_dynamic(&value)?;
                Ok(talm_base::yaml::to_string(&v))
            })
        });
    engine.register_static_module("yaml", m.into());
    let mut j = Module::new();
    FuncRegistration::new("parse")
        .with_comments(["/// Parses JSON text into maps, arrays and scalars."])
        .set_into_module(&mut j, |text: &str| {
            native(|| {
                let v: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| talm_base::error::plain(format!("invalid JSON: {e}")))?;
                Ok(rhai::serde::to_dynamic(v)?)
            })
        });
    FuncRegistration::new("to_string")
        .with_comments(["/// Writes a value as JSON (keys in order)."])
        .set_into_module(&mut j, |value: Dynamic| {
            native(|| {
                let v: serde_json::Value = rhai::serde::from_dynamic(&value)?;
                Ok(serde_json::to_string(&v)?)
            })
        });
    engine.register_static_module("json", j.into());
}
