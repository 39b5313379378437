//! `MachineService.GenerateClientConfiguration` as machined answers it: on a control plane, for
//! an admin, a client certificate issued by the machine CA for the requested roles and lifetime,
//! returned with the CA and a talosconfig whose context is named after the cluster
//! (`<role>@<cluster>` for a single role).

use std::collections::BTreeSet;

use base64::Engine as _;
use serde_yaml_ng::{Mapping, Value};
use tonic::Status;

use crate::node::{denied, is_admin, Node};
use talm_wire::pki::unb64;
use talm_wire::pki::{self, PrivateKey};
use talm_wire::proto::machine;

const API: &str = "generate client configuration";

fn b64(bytes: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// The talosconfig Talos writes: one context, no endpoints, the CA and the client pair.
fn talosconfig(context: &str, ca: &str, crt: &str, key: &str) -> String {
    let mut ctx = Mapping::new();
    ctx.insert("endpoints".into(), Value::Sequence(vec![]));
    ctx.insert("ca".into(), b64(ca.as_bytes()));
    ctx.insert("crt".into(), b64(crt.as_bytes()));
    ctx.insert("key".into(), b64(key.as_bytes()));
    let mut contexts = Mapping::new();
    contexts.insert(context.into(), Value::Mapping(ctx));
    let mut root = Mapping::new();
    root.insert("context".into(), context.into());
    root.insert("contexts".into(), Value::Mapping(contexts));
    talm_base::yaml::to_string(&Value::Mapping(root))
}

pub fn generate(
    node: &Node,
    req: &machine::GenerateClientConfigurationRequest,
    roles: &[String],
) -> Result<machine::GenerateClientConfiguration, Status> {
    if !is_admin(roles) {
        return Err(denied());
    }
    let cfg = node.state().config.clone().ok_or_else(|| {
        Status::unimplemented(format!("machine type is not set, cannot use {API} API"))
    })?;
    if !cfg.is_control_plane() {
        return Err(Status::unimplemented(format!(
            "{API} is only available on control plane nodes"
        )));
    }
    let ttl = req
        .crt_ttl
        .map(|d| time::Duration::new(d.seconds, d.nanos))
        .unwrap_or_default();
    if ttl <= time::Duration::ZERO {
        return Err(Status::invalid_argument("crt_ttl should be positive"));
    }
    // Talos keeps unknown roles and drops empty ones; a set, sorted.
    let wanted: BTreeSet<&str> = req
        .roles
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect();
    let wanted: Vec<&str> = wanted.into_iter().collect();
    let internal = |e: anyhow::Error| Status::internal(format!("{e:#}"));
    let (ca_b64, key_b64) = cfg.machine_ca();
    let ca = unb64(&ca_b64).map_err(internal)?;
    let ca_key = PrivateKey::from_pem(&unb64(&key_b64).map_err(internal)?).map_err(internal)?;
    let now = time::OffsetDateTime::now_utc();
    let cert = pki::client_cert_for(&ca, &ca_key, &wanted, now, ttl).map_err(internal)?;
    let key = cert.key.to_talos_pem().map_err(internal)?;
    let cluster = cfg.cluster_name();
    let context = match wanted.as_slice() {
        [one] => format!("{}@{cluster}", one.strip_prefix("os:").unwrap_or(one)),
        _ => cluster,
    };
    Ok(machine::GenerateClientConfiguration {
        metadata: None,
        talosconfig: talosconfig(&context, &ca, &cert.cert_pem, &key).into_bytes(),
        ca: ca.into_bytes(),
        crt: cert.cert_pem.into_bytes(),
        key: key.into_bytes(),
    })
}
