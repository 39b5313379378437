//! The simulated node's resource definitions and namespaces against Talos v1.13's own list
//! (`tests/fixtures/talos/resources-v1.13`): `get rd` lists every type Talos registers with its
//! namespace, aliases, columns and sensitivity as talm's registry declares them, `get namespaces`
//! every namespace with its description, and each type answers a List; then exact tables.

use std::collections::HashMap;

use serde_json::Value;
use talm::proto::cosi::resource as cosi;

use crate::common::sim::*;
use crate::common::{column, net, Dir};

fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/talos/resources-v1.13/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path).unwrap()
}

/// The fixture's rows, split at tabs.
fn rows(name: &str) -> Vec<Vec<String>> {
    fixture(name)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

/// `talm get KIND -o json` of the node at `ip`: each resource's ID and spec.
fn specs(d: &Dir, ip: &str, kind: &str) -> HashMap<String, Value> {
    let out = d
        .talm(["get", kind, "-n", ip, "-i", "-o", "json"])
        .ok()
        .stdout;
    serde_json::Deserializer::from_str(&out)
        .into_iter::<Value>()
        .map(|v| {
            let v = v.unwrap();
            (
                v["metadata"]["id"].as_str().unwrap().to_string(),
                v["spec"].clone(),
            )
        })
        .collect()
}

fn texts(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

#[test]
fn get_rd_and_namespaces_list_everything_talos_registers() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let registry = talm::registry::registry();

    let rds = specs(&d, &ip, "rd");
    let types = rows("types.txt");
    assert_eq!(rds.len(), types.len(), "no type beyond Talos's");
    for row in &types {
        let [go, ty, ns] = &row[..] else {
            panic!("a row of types.txt: {row:?}")
        };
        let spec = rds
            .get(&ty.to_ascii_lowercase())
            .unwrap_or_else(|| panic!("{go} ({ty}) is listed"));
        let def = registry.find(ty).unwrap();
        assert_eq!(spec["type"], ty.as_str());
        assert_eq!(spec["defaultNamespace"], ns.as_str(), "{ty}");
        assert_eq!(def.namespace, *ns, "{ty}: the data's namespace");
        assert_eq!(spec["displayType"], def.display.as_str(), "{ty}");
        let (aliases, all) = (texts(&spec["aliases"]), texts(&spec["allAliases"]));
        if def.no_automatic_aliases {
            assert_eq!(aliases, def.aliases, "{ty}");
            assert_eq!(all, def.aliases, "{ty}");
        } else {
            let plural = ty.split('.').next().unwrap().to_ascii_lowercase();
            assert_eq!(all[0], plural, "{ty}");
            assert!(aliases.contains(&def.display.to_ascii_lowercase().as_str()));
        }
        for a in &def.aliases {
            assert!(aliases.contains(&a.as_str()), "{ty}: alias {a}");
            assert!(all.contains(&a.as_str()), "{ty}: alias {a}");
        }
        let columns: Vec<(&str, &str)> = spec["printColumns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["name"].as_str().unwrap(), c["jsonPath"].as_str().unwrap()))
            .collect();
        let declared: Vec<(&str, &str)> = def
            .columns
            .iter()
            .map(|(n, p)| (n.as_str(), p.as_str()))
            .collect();
        assert_eq!(columns, declared, "{ty}");
        let sensitivity = if def.sensitive { "sensitive" } else { "" };
        assert_eq!(spec["sensitivity"], sensitivity, "{ty}");
    }

    let namespaces = specs(&d, &ip, "namespaces");
    let listed = rows("namespaces.txt");
    assert_eq!(
        namespaces.len(),
        listed.len(),
        "no namespace beyond Talos's"
    );
    for row in &listed {
        let [name, description] = &row[..] else {
            panic!("a row of namespaces.txt: {row:?}")
        };
        let spec = namespaces
            .get(name)
            .unwrap_or_else(|| panic!("namespace {name} is listed"));
        assert_eq!(spec["description"], description.as_str(), "{name}");
    }
}

#[test]
fn every_registered_type_answers_a_list() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.install_control_plane(&ip);
    let c = nodes.connect(&ip, admin()).unwrap();
    for row in rows("types.txt") {
        let (ty, ns) = (&row[1], &row[2]);
        let listed: Vec<cosi::Resource> =
            talm::talos::block_on(c.list(ns, ty)).unwrap_or_else(|e| panic!("{ty} in {ns}: {e:#}"));
        for r in listed {
            assert_eq!(r.metadata.unwrap().namespace, *ns, "{ty}");
        }
    }
}

#[test]
fn get_rd_of_one_type_as_a_table() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let node = column(3, &["NODE", &ip]);
    for (id, aliases) in [
        ("nodenames.kubernetes.talos.dev", "nodename"),
        ("members.cluster.talos.dev", "member"),
        ("mountstatuses.runtime.talos.dev", "mounts"),
    ] {
        let id_column = column(3, &["ID", id]);
        d.talm(["get", "rd", id, "-n", &ip, "-i"])
            .expect()
            .stdout(format!(
                "{}NAMESPACE   TYPE                 {}VERSION   ALIASES\n\
                 {}meta        ResourceDefinition   {}1         {aliases}\n",
                node("NODE"),
                id_column("ID"),
                node(&ip),
                id_column(id),
            ))
            .run();
    }
}

#[test]
fn get_namespaces_as_a_table_and_ns_is_ambiguous_as_on_talos() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let node = column(3, &["NODE", &ip]);
    let mut want = format!(
        "{}NAMESPACE   TYPE        {:<17}VERSION\n",
        node("NODE"),
        "ID"
    );
    for ns in [
        "cluster",
        "cluster-raw",
        "config",
        "controlplane",
        "cri",
        "etcd",
        "files",
        "hardware",
        "k8s",
        "kubespan",
        "meta",
        "network",
        "network-config",
        "perf",
        "runtime",
        "secrets",
        "security",
    ] {
        want += &format!("{}meta        Namespace   {ns:<17}1\n", node(&ip));
    }
    d.talm(["get", "namespaces", "-n", &ip, "-i"])
        .expect()
        .stdout(want)
        .run();
    // Talos v1.13 registers two more types whose initials read `ns` (NodeStatus,
    // NetworkStatus), so talosctl finds three definitions for it, and so does talm.
    d.talm(["get", "ns", "-n", &ip, "-i"])
        .expect()
        .stderr(
            "Error: node $A: resource type \"ns\" is ambiguous: [\"Namespaces.meta.cosi.dev\", \
             \"NetworkStatuses.net.talos.dev\", \"NodeStatuses.kubernetes.talos.dev\"]\n",
        )
        .replace(&ip, "$A")
        .status(1)
        .run();
}
