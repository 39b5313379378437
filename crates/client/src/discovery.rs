//! Discovery: one pass over a node gathers every fact presets read (disks, links, addresses,
//! routes, hostname, resolvers, machine type and config when authorized, version) into a
//! snapshot, the same structure `talm discover` writes and `template --facts` reads.

use super::client::Client;
use super::errors::{self, Kind};
use super::resources;
use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};
use talm_wire::facts::Facts;

/// A fact a render may look up: its lookup kind, COSI type, namespace and, for singletons, ID.
pub struct Fact {
    pub kind: &'static str,
    pub ty: &'static str,
    pub namespace: &'static str,
    pub id: Option<&'static str>,
}

const fn fact(
    kind: &'static str,
    ty: &'static str,
    namespace: &'static str,
    id: Option<&'static str>,
) -> Fact {
    Fact {
        kind,
        ty,
        namespace,
        id,
    }
}

/// What discovery reads, in the order the snapshot lists it.
pub const FACTS: &[Fact] = &[
    fact("disks", "Disks.block.talos.dev", "runtime", None),
    fact(
        "systemdisk",
        "SystemDisks.block.talos.dev",
        "runtime",
        Some("system-disk"),
    ),
    fact("links", "LinkStatuses.net.talos.dev", "network", None),
    fact(
        "addresses",
        "AddressStatuses.net.talos.dev",
        "network",
        None,
    ),
    fact("routes", "RouteStatuses.net.talos.dev", "network", None),
    fact(
        "hostname",
        "HostnameStatuses.net.talos.dev",
        "network",
        Some("hostname"),
    ),
    fact(
        "nodeaddress",
        "NodeAddresses.net.talos.dev",
        "network",
        None,
    ),
    fact(
        "resolvers",
        "ResolverStatuses.net.talos.dev",
        "network",
        Some("resolvers"),
    ),
    fact(
        "machinetype",
        "MachineTypes.config.talos.dev",
        "config",
        Some("machine-type"),
    ),
    fact(
        "machineconfig",
        "MachineConfigs.config.talos.dev",
        "config",
        Some("v1alpha1"),
    ),
];

/// Reads one fact; an absent singleton is no entry, and the machine config is skipped when the
/// connection may not read it (maintenance mode, or a reader certificate).
async fn read(client: &Client, f: &Fact) -> Result<Vec<Value>> {
    match f.id {
        Some(id) => {
            if f.kind == "machineconfig" && client.is_insecure() {
                return Ok(Vec::new());
            }
            match client.get(f.namespace, f.ty, id).await {
                Ok(r) => Ok(r.iter().map(resources::to_value).collect()),
                Err(e) if f.kind == "machineconfig" && denied(&e) => Ok(Vec::new()),
                Err(e) => Err(e),
            }
        }
        None => Ok(client
            .list(f.namespace, f.ty)
            .await?
            .iter()
            .map(resources::to_value)
            .collect()),
    }
}

fn denied(e: &anyhow::Error) -> bool {
    errors::kind(e) == Some(Kind::Denied)
}

/// The version map of a Version reply: tag, sha, built, go_version, os, arch, platform, mode.
pub fn version_value(v: &talm_wire::proto::machine::Version) -> Value {
    let mut m = Mapping::new();
    if let Some(i) = &v.version {
        m.insert("tag".into(), i.tag.clone().into());
        m.insert("sha".into(), i.sha.clone().into());
        m.insert("built".into(), i.built.clone().into());
        m.insert("go_version".into(), i.go_version.clone().into());
        m.insert("os".into(), i.os.clone().into());
        m.insert("arch".into(), i.arch.clone().into());
    }
    if let Some(p) = &v.platform {
        m.insert("platform".into(), p.name.clone().into());
        m.insert("mode".into(), p.mode.clone().into());
    }
    m.insert(
        "rbac".into(),
        v.features.as_ref().is_some_and(|f| f.rbac).into(),
    );
    Value::Mapping(m)
}

/// Every fact of the node behind `client`, read concurrently over the one connection.
pub async fn discover(client: &Client) -> Result<Facts> {
    let tasks: Vec<_> = FACTS
        .iter()
        .map(|f| {
            let c = client.clone();
            tokio::spawn(async move { read(&c, f).await })
        })
        .collect();
    let version = client.version().await;
    let mut facts = Facts {
        node: client.node.clone(),
        ..Facts::default()
    };
    for (f, task) in FACTS.iter().zip(tasks) {
        let items = task.await??;
        if !items.is_empty() {
            facts.resources.insert(f.kind.to_string(), items);
        }
    }
    // Talos before 1.13 answers Version with Unimplemented in maintenance mode.
    facts.version = match version {
        Ok(v) => Some(version_value(&v)),
        Err(e) if errors::kind(&e) == Some(Kind::MaintenanceUnimplemented) => None,
        Err(e) => return Err(e),
    };
    Ok(facts)
}
