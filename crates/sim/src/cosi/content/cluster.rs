//! The node's place in its cluster, as Talos's discovery reports it: its Identity, the
//! Affiliates discovery knows (itself and the other configured nodes of the same cluster) and
//! the Members made of those with a node name. Discovery off (`cluster.discovery.enabled`
//! false) leaves the identity alone.

use serde_yaml_ng::Value;

use super::{map, res, s, texts, Ctx, Peer};
use crate::cosi::facts::Res;
use crate::node::state::State;

/// The API server port control planes advertise.
const API_SERVER_PORT: u64 = 6443;

/// The node's discovery identity: made at its first configuration, persisted on STATE, and
/// made anew after a reset wipes it.
pub fn identity(st: &State) -> String {
    node_id(&format!("{}#{}", st.node_id, st.resets))
}

/// Discovery's node ID for a node: 32 bytes in base62 (43 characters), as Talos generates it
/// once per installation.
pub fn node_id(seed: &str) -> String {
    use sha2::Digest;
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut digits: Vec<u8> = sha2::Sha256::digest(format!("node-id/{seed}").as_bytes()).to_vec();
    // Base62 of the 256-bit number, most significant digit first.
    let mut out = Vec::new();
    while digits.iter().any(|d| *d != 0) {
        let mut rem = 0u32;
        for d in digits.iter_mut() {
            let cur = (rem << 8) | u32::from(*d);
            *d = (cur / 62) as u8;
            rem = cur % 62;
        }
        out.push(ALPHABET[rem as usize]);
    }
    while out.len() < 43 {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

fn discovery_enabled(ctx: &Ctx) -> bool {
    ctx.st
        .config
        .as_ref()
        .and_then(|c| c.v1alpha1())
        .and_then(|d| d.get("cluster")?.get("discovery")?.get("enabled"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn is_control_plane(p: &Peer) -> bool {
    matches!(p.machine_type.as_str(), "controlplane" | "init")
}

fn control_plane(p: &Peer) -> Option<Value> {
    is_control_plane(p).then(|| map(vec![("port", Value::from(API_SERVER_PORT))]))
}

fn affiliate(p: &Peer) -> Res {
    let mut spec = vec![
        ("nodeId", s(&p.node_id)),
        ("addresses", texts(&p.ips)),
        ("hostname", s(&p.hostname)),
        ("nodename", s(p.hostname.to_lowercase())),
        ("operatingSystem", s(format!("Talos ({})", p.version))),
        ("machineType", s(&p.machine_type)),
    ];
    if let Some(cp) = control_plane(p) {
        spec.push(("controlPlane", cp));
    }
    res(
        "cluster",
        "Affiliates.cluster.talos.dev",
        p.node_id.clone(),
        "cluster.AffiliateMergeController",
        map(spec),
        1,
    )
}

fn member(p: &Peer) -> Res {
    let mut spec = vec![
        ("nodeId", s(&p.node_id)),
        ("addresses", texts(&p.ips)),
        ("hostname", s(&p.hostname)),
        ("machineType", s(&p.machine_type)),
        ("operatingSystem", s(format!("Talos ({})", p.version))),
    ];
    if let Some(cp) = control_plane(p) {
        spec.push(("controlPlane", cp));
    }
    res(
        "cluster",
        "Members.cluster.talos.dev",
        p.hostname.to_lowercase(),
        "cluster.MemberController",
        map(spec),
        1,
    )
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    if ctx.st.in_maintenance() {
        return Vec::new();
    }
    let mut out = vec![res(
        "cluster",
        "Identities.cluster.talos.dev",
        "local",
        "cluster.NodeIdentityController",
        map(vec![("nodeId", s(identity(ctx.st)))]),
        1,
    )];
    if !discovery_enabled(ctx) {
        return out;
    }
    for p in ctx.cluster() {
        if p.hostname.is_empty() {
            continue;
        }
        out.push(affiliate(&p));
        out.push(member(&p));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configured, hw};
    use super::*;

    #[test]
    fn members_list_the_nodes_of_the_same_cluster() {
        let hw = hw();
        let st = configured("controlplane", "CA");
        let worker = Peer {
            identity: "CA".into(),
            node_id: node_id("w"),
            hostname: "w1".into(),
            machine_type: "worker".into(),
            version: "v1.13.7".into(),
            ips: vec!["127.0.0.12".into()],
            etcd: false,
        };
        let stranger = Peer {
            identity: "other".into(),
            node_id: node_id("x"),
            ..worker.clone()
        };
        let peers = [worker, stranger];
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &peers,
            unhealthy: &[],
            api: None,
        });
        let members: Vec<&Res> = r.iter().filter(|r| r.ty.starts_with("Members")).collect();
        let ids: Vec<&str> = members.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["node-controlplane", "w1"]);
        assert_eq!(
            serde_yaml_ng::to_string(&members[0].spec).unwrap(),
            format!(
                "nodeId: {}\naddresses:\n- 127.0.0.11\nhostname: node-controlplane\nmachineType: controlplane\noperatingSystem: Talos (v1.13.7)\ncontrolPlane:\n  port: 6443\n",
                identity(&st)
            )
        );
        assert_eq!(
            serde_yaml_ng::to_string(&members[1].spec).unwrap(),
            format!(
                "nodeId: {}\naddresses:\n- 127.0.0.12\nhostname: w1\nmachineType: worker\noperatingSystem: Talos (v1.13.7)\n",
                node_id("w")
            )
        );
        let a = r.iter().find(|r| r.ty.starts_with("Affiliates")).unwrap();
        assert_eq!(
            super::super::testing::keys(&a.spec),
            [
                "nodeId",
                "addresses",
                "hostname",
                "nodename",
                "operatingSystem",
                "machineType",
                "controlPlane"
            ]
        );
        assert_eq!(identity(&st).len(), 43);
        let mut reset = st.clone();
        reset.resets += 1;
        assert_ne!(
            identity(&reset),
            identity(&st),
            "a reset makes a new identity"
        );
    }
}
