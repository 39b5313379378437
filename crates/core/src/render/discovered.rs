//! What a node file holds that only the node's discovery gives (the install disk, the hostname,
//! the resolvers, the links' addresses and routes): a render without facts (`--offline`) would
//! drop it, so `talm template -I` names each such loss instead of writing the file.

use anyhow::Result;
use serde_yaml_ng::Value;

/// The multi-document kinds that carry a link's addresses and routes.
const LINK_KINDS: [&str; 5] = [
    "LinkConfig",
    "BondConfig",
    "VLANConfig",
    "BridgeConfig",
    "DummyLinkConfig",
];

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn filled(v: Option<&Value>) -> bool {
    match v {
        Some(Value::Sequence(s)) => !s.is_empty(),
        Some(Value::Mapping(m)) => !m.is_empty(),
        Some(Value::Null) | None => false,
        Some(_) => true,
    }
}

/// The v1alpha1 document (the one with `machine:`), if any.
fn machine(docs: &[Value]) -> Option<&Value> {
    docs.iter().find(|d| d.get("machine").is_some())
}

/// The multi-document of `kind` named `name` ("" for the unnamed kinds).
fn typed<'a>(docs: &'a [Value], kind: &str, name: &str) -> Option<&'a Value> {
    docs.iter().find(|d| {
        d.get("kind").and_then(Value::as_str) == Some(kind)
            && d.get("name").and_then(Value::as_str).unwrap_or("") == name
    })
}

/// A legacy interface entry's name: `interface`, else its deviceSelector as written.
fn iface_name(i: &Value) -> String {
    match (i.get("interface"), i.get("deviceSelector")) {
        (Some(Value::String(s)), _) => s.clone(),
        (_, Some(sel)) => serde_json::to_string(sel).unwrap_or_default(),
        _ => String::new(),
    }
}

fn interfaces(docs: &[Value]) -> Vec<Value> {
    machine(docs)
        .and_then(|m| get(m, &["machine", "network", "interfaces"]))
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default()
}

/// What `old` (a node file's body) holds from discovery that `new` (the same file rendered
/// without facts) no longer holds, each as it is named to the user, in file order. A body
/// that does not read as YAML holds nothing to lose.
pub fn losses(old: &str, new: &str) -> Result<Vec<String>> {
    let Ok(old_docs) = talm_base::yaml::stream(old) else {
        return Ok(Vec::new());
    };
    let new_docs = talm_base::yaml::stream(new)?;
    let mut out = Vec::new();
    let scalar = |path: &[&str]| {
        (
            text(machine(&old_docs).and_then(|m| get(m, path))),
            text(machine(&new_docs).and_then(|m| get(m, path))),
        )
    };
    if let (Some(was), now) = scalar(&["machine", "install", "disk"]) {
        if now.as_ref() != Some(&was) {
            out.push(format!("the install disk (machine.install.disk: {was})"));
        }
    }
    if let (Some(was), now) = scalar(&["machine", "network", "hostname"]) {
        if now.as_ref() != Some(&was) {
            out.push(format!("the hostname (machine.network.hostname: {was})"));
        }
    }
    let was = text(typed(&old_docs, "HostnameConfig", "").and_then(|d| d.get("hostname")));
    let now = text(typed(&new_docs, "HostnameConfig", "").and_then(|d| d.get("hostname")));
    if let Some(was) = was {
        if now.as_ref() != Some(&was) {
            out.push(format!("the hostname (HostnameConfig hostname: {was})"));
        }
    }
    let ns = ["machine", "network", "nameservers"];
    let was = machine(&old_docs).and_then(|m| get(m, &ns));
    if filled(was) && was != machine(&new_docs).and_then(|m| get(m, &ns)) {
        out.push("the nameservers (machine.network.nameservers)".into());
    }
    let was = typed(&old_docs, "ResolverConfig", "").and_then(|d| d.get("nameservers"));
    if filled(was)
        && was != typed(&new_docs, "ResolverConfig", "").and_then(|d| d.get("nameservers"))
    {
        out.push("the nameservers (ResolverConfig)".into());
    }
    let mut links = Vec::new();
    for d in &old_docs {
        let Some(kind) = d.get("kind").and_then(Value::as_str) else {
            continue;
        };
        if !LINK_KINDS.contains(&kind) {
            continue;
        }
        let name = d.get("name").and_then(Value::as_str).unwrap_or("");
        let now = typed(&new_docs, kind, name);
        if ["addresses", "routes"]
            .iter()
            .any(|k| filled(d.get(*k)) && d.get(*k) != now.and_then(|n| n.get(*k)))
        {
            links.push(format!("{name} ({kind})"));
        }
    }
    let new_ifaces = interfaces(&new_docs);
    for i in interfaces(&old_docs) {
        let name = iface_name(&i);
        let now = new_ifaces.iter().find(|n| iface_name(n) == name);
        if ["addresses", "routes"]
            .iter()
            .any(|k| filled(i.get(*k)) && i.get(*k) != now.and_then(|n| n.get(*k)))
        {
            links.push(format!("{name} (machine.network.interfaces)"));
        }
    }
    if !links.is_empty() {
        out.push(format!("the addresses and routes of {}", links.join(", ")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISCOVERED: &str = "machine:\n  install:\n    disk: /dev/nvme0n1\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: node1\n---\napiVersion: v1alpha1\nkind: ResolverConfig\nnameservers:\n  - address: 192.0.2.53\n---\napiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\naddresses:\n  - address: 192.0.2.10/24\nroutes:\n  - gateway: 192.0.2.1\n";

    #[test]
    fn every_discovered_value_the_render_drops_is_named() {
        let offline = "machine:\n  install:\n    disk: /dev/sda\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: talos-4f53c\n---\napiVersion: v1alpha1\nkind: ResolverConfig\nnameservers: []\n";
        assert_eq!(
            losses(DISCOVERED, offline).unwrap(),
            [
                "the install disk (machine.install.disk: /dev/nvme0n1)",
                "the hostname (HostnameConfig hostname: node1)",
                "the nameservers (ResolverConfig)",
                "the addresses and routes of eth0 (LinkConfig)",
            ]
        );
        assert!(losses(DISCOVERED, DISCOVERED).unwrap().is_empty());
    }

    #[test]
    fn the_legacy_document_is_read_too() {
        let old = "machine:\n  network:\n    hostname: node1\n    nameservers: [192.0.2.53]\n    interfaces:\n      - interface: eth0\n        addresses: [192.0.2.10/24]\n  install:\n    disk: /dev/sda\n";
        let new = "machine:\n  network:\n    hostname: talos-x\n  install:\n    disk: /dev/sda\n";
        assert_eq!(
            losses(old, new).unwrap(),
            [
                "the hostname (machine.network.hostname: node1)",
                "the nameservers (machine.network.nameservers)",
                "the addresses and routes of eth0 (machine.network.interfaces)",
            ]
        );
    }
}
