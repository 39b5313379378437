//! The talosconfig file as talosctl reads it: parsed and checked (a current context that
//! exists, base64 PEM in `ca`/`crt`/`key`), with errors that say how to get a good one back.

use anyhow::Result;
use serde_yaml_ng::Value;

use crate::pki;
use talm_base::error::hinted;

/// How to get a good talosconfig back when `file` is damaged: a committed encrypted twin comes
/// back from git; a plain one (which `talm talosconfig` and `talm init -d` would read and
/// refuse again) is moved aside first.
fn way_out(file: &str) -> String {
    match file.strip_suffix(".encrypted") {
        Some(plain) => format!(
            "restore {file} from git (`git checkout -- {file}`) or a backup; or move it aside and run `talm talosconfig` to write a new {plain} (sealed into a new {file}) from the secrets bundle"
        ),
        None => format!(
            "move it aside (`mv {file} {file}.damaged`), then run `talm init -d` to restore it from {file}.encrypted, or `talm talosconfig` to write a new one from the secrets bundle"
        ),
    }
}

/// Parses a talosconfig and checks its shape: a current context that exists, and `ca`/`crt`/`key`
/// holding base64 PEM where present.
pub fn load(text: &str, file: &str) -> Result<Value> {
    let value = talm_base::yaml::parse(text, file)?;
    let way_out = way_out(file);
    let bad = |what: String| hinted(format!("{file}: {what}"), way_out.clone());
    let root = value
        .as_mapping()
        .ok_or_else(|| bad("not a talosconfig (expected `context:` and `contexts:`)".into()))?;
    let contexts = root
        .get("contexts")
        .and_then(Value::as_mapping)
        .ok_or_else(|| bad("has no `contexts:` mapping".into()))?;
    if let Some(cur) = root.get("context").and_then(Value::as_str) {
        if !cur.is_empty() && !contexts.contains_key(cur) {
            return Err(bad(format!(
                "current context {cur:?} is not among its contexts"
            )));
        }
    }
    for (name, ctx) in contexts {
        let name = name.as_str().unwrap_or("?");
        let ctx = ctx
            .as_mapping()
            .ok_or_else(|| bad(format!("context {name:?} is not a mapping")))?;
        for field in ["ca", "crt", "key"] {
            if let Some(v) = ctx.get(field).and_then(Value::as_str) {
                let ok = pki::unb64(v)
                    .ok()
                    .and_then(|pem| pki::pem_decode(&pem))
                    .is_some();
                if !ok {
                    return Err(bad(format!(
                        "contexts.{name}.{field} is not base64-encoded PEM"
                    )));
                }
            }
        }
    }
    Ok(value)
}
