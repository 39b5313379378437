//! The talosconfig file: generation from the secrets bundle (admin client certificate signed by
//! the OS CA) and carrying endpoints/nodes over from an older file; loading is wire's.

use anyhow::Result;
use base64::Engine as _;
use serde_yaml_ng::{Mapping, Value};
use time::OffsetDateTime;

use super::bundle::Bundle;
use super::pki;
use talm_base::error::hinted;

pub use talm_wire::talosconfig::load;

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// A talosconfig with one context named after the cluster, holding a fresh `os:admin` client
/// certificate from the bundle's OS CA and the given endpoints.
pub fn generate(
    bundle: &Bundle,
    cluster: &str,
    endpoints: &[String],
    now: OffsetDateTime,
) -> Result<Value> {
    let (ca_pem, ca_key) = bundle.os_ca()?;
    check_ca_valid(&ca_pem, now)?;
    let client = pki::client_cert(&ca_pem, &ca_key, &["os:admin"], now)?;
    let mut ctx = Mapping::new();
    ctx.insert(
        "endpoints".into(),
        Value::Sequence(endpoints.iter().map(|e| Value::String(e.clone())).collect()),
    );
    ctx.insert("ca".into(), b64(&ca_pem).into());
    ctx.insert("crt".into(), b64(&client.cert_pem).into());
    ctx.insert("key".into(), b64(&client.key.to_talos_pem()?).into());
    let mut contexts = Mapping::new();
    contexts.insert(cluster.into(), Value::Mapping(ctx));
    let mut root = Mapping::new();
    root.insert("context".into(), cluster.into());
    root.insert("contexts".into(), Value::Mapping(contexts));
    Ok(Value::Mapping(root))
}

/// Refuses a CA outside its validity window: a certificate issued from it would not be trusted.
fn check_ca_valid(ca_pem: &str, now: OffsetDateTime) -> Result<()> {
    let der = pki::pem_decode(ca_pem)
        .map(|(_, der)| der)
        .ok_or_else(|| anyhow::anyhow!("certs.os.crt is not PEM"))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| anyhow::anyhow!("certs.os.crt cannot be parsed: {e}"))?;
    let validity = cert.validity();
    let (from, until) = (
        validity.not_before.to_datetime(),
        validity.not_after.to_datetime(),
    );
    let day = |t: OffsetDateTime| t.date().to_string();
    if now < from {
        return Err(hinted(
            format!("the Talos API CA (certs.os) is not valid before {}: refusing to issue a client certificate from it", day(from)),
            "check this machine's clock (`date`); a CA from the future means the clock is behind",
        ));
    }
    if now > until {
        return Err(hinted(
            format!("the Talos API CA (certs.os) expired on {}: refusing to issue a client certificate from it, nodes would not trust it", day(until)),
            "rotate the cluster's Talos CA first (talosctl rotate-ca), then run `talm talosconfig` again; or check this machine's clock",
        ));
    }
    Ok(())
}

/// Carries an older talosconfig over a regenerated one: every context both have keeps its old
/// endpoints and nodes, contexts only the old one has stay as they were, and the old current
/// context stays current.
pub fn carry_over(new: &Value, old: &Value) -> Value {
    let mut out = new.clone();
    let (Some(out_map), Some(old_map)) = (out.as_mapping_mut(), old.as_mapping()) else {
        return new.clone();
    };
    if let Some(old_ctxs) = old_map.get("contexts").and_then(Value::as_mapping) {
        let mut merged = out_map
            .get("contexts")
            .and_then(Value::as_mapping)
            .cloned()
            .unwrap_or_default();
        for (name, old_ctx) in old_ctxs {
            match merged.get_mut(name).and_then(Value::as_mapping_mut) {
                Some(ctx) => {
                    for field in ["endpoints", "nodes"] {
                        if let Some(v) = old_ctx.get(field) {
                            ctx.insert(field.into(), v.clone());
                        }
                    }
                }
                None => {
                    merged.insert(name.clone(), old_ctx.clone());
                }
            }
        }
        out_map.insert("contexts".into(), Value::Mapping(merged));
    }
    if let Some(cur) = old_map.get("context") {
        out_map.insert("context".into(), cur.clone());
    }
    out
}
