//! talm's output, whole, where talosctl v1.13 defines it. `get`: the YAML writer's COSI
//! metadata (untagged scalars), the JSON writer (the YAML read back: keys sorted, `version` a
//! number, an empty owner null, 4-space indent), the JSONPath writer (one line per result, maps
//! and lists as 4-space JSON) and print columns holding lists (compact JSON on one line).
//! `version`: the client block always, a node that does not answer a warning.

use crate::common::sim::Nodes;
use crate::common::{net, Dir};

/// One maintenance node and the timestamp its resources carry.
fn node() -> (Nodes, String, Dir, String) {
    let ip = net::subnet(24).host(7);
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let stamp = d
        .talm([
            "get",
            "nodeaddress",
            "current",
            "-n",
            &ip,
            "-i",
            "-o",
            "jsonpath={.metadata.created}",
        ])
        .ok()
        .stdout
        .trim()
        .to_string();
    (nodes, ip, d, stamp)
}

#[test]
fn yaml_prints_cosi_metadata_untagged() {
    let (_nodes, ip, d, stamp) = node();
    d.talm([
        "get",
        "nodeaddress",
        "current",
        "-n",
        &ip,
        "-i",
        "-o",
        "yaml",
    ])
    .expect()
    .replace(&ip, "$IP")
    .replace(&stamp, "$STAMP")
    .stdout(
        "\
node: $IP
metadata:
    namespace: network
    type: NodeAddresses.net.talos.dev
    id: current
    version: 1
    owner: network.NodeAddressController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    addresses:
        - $IP/24
    sortAlgorithm: v1
",
    )
    .run();
}

#[test]
fn json_is_the_yaml_read_back_with_sorted_keys() {
    let (_nodes, ip, d, stamp) = node();
    d.talm([
        "get",
        "nodeaddress",
        "current",
        "-n",
        &ip,
        "-i",
        "-o",
        "json",
    ])
    .expect()
    .replace(&ip, "$IP")
    .replace(&stamp, "$STAMP")
    .stdout(
        r#"{
    "metadata": {
        "created": "$STAMP",
        "id": "current",
        "namespace": "network",
        "owner": "network.NodeAddressController",
        "phase": "running",
        "type": "NodeAddresses.net.talos.dev",
        "updated": "$STAMP",
        "version": 1
    },
    "node": "$IP",
    "spec": {
        "addresses": [
            "$IP/24"
        ],
        "sortAlgorithm": "v1"
    }
}
"#,
    )
    .run();
}

#[test]
fn jsonpath_prints_each_result_on_its_own_line() {
    let (_nodes, ip, d, _) = node();
    d.talm([
        "get",
        "nodeaddress",
        "current",
        "-n",
        &ip,
        "-i",
        "-o",
        "jsonpath=v{.metadata.version}{.spec}",
    ])
    .expect()
    .replace(&ip, "$IP")
    .stdout(
        r#"v
1
{
    "addresses": [
        "$IP/24"
    ],
    "sortAlgorithm": "v1"
}
"#,
    )
    .run();
    // A key the resource lacks is an error, as client-go's jsonpath in talosctl.
    d.talm([
        "get",
        "nodeaddress",
        "current",
        "-n",
        &ip,
        "-i",
        "-o",
        "jsonpath={.spec.missing}",
    ])
    .expect()
    .stderr("Error: error finding result for jsonpath: missing is not found\nhint: -o yaml shows the keys the resource has (node, metadata, spec)\n")
    .status(1)
    .run();
}

#[test]
fn a_column_holding_a_list_prints_compact_json() {
    let (_nodes, ip, d, _) = node();
    let node = format!("{:<w$}", "NODE", w = ip.len() + 3);
    d.talm(["get", "resolvers", "-n", &ip, "-i"])
        .expect()
        .stdout(format!(
            r#"{node}NAMESPACE   TYPE             ID          VERSION   RESOLVERS               SEARCH DOMAINS
{ip}   network     ResolverStatus   resolvers   1         ["1.1.1.1","8.8.8.8"]   []
"#
        ))
        .run();
}

#[test]
fn version_warns_of_a_node_that_does_not_answer_while_another_does() {
    let lan = net::subnet(24);
    let (a, b) = (lan.host(8), lan.host(9));
    let nodes = Nodes::start(&[&a, &b], |_| {});
    nodes.node(&b).set_faults(talm::sim::net::faults::Faults {
        fail: [("Version".to_string(), "Unavailable: down".to_string())].into(),
        ..Default::default()
    });
    let d = Dir::new();
    let both = format!("{a},{b}");
    d.talm(["version", "--short", "-i", "-n", &both])
        .expect()
        .replace(&a, "$A")
        .replace(&b, "$B")
        .stdout(
            "\
Client:
Talos v1.13.7
Server:
\tNODE:        $A
\tTag:         v1.13.7
\tSHA:         simulated
\tBuilt:       
\tGo version:  go1.26.5
\tOS/Arch:     linux/amd64
\tEnabled:     
",
        )
        .stderr(
            "\
WARNING: 1 error occurred:
\t* node $B: Version: rpc error: code = Unavailable desc = down

",
        )
        .status(0)
        .run();
    // With no node answering, it is that node's error.
    d.talm(["version", "--short", "-i", "-n", &b])
        .expect()
        .replace(&b, "$B")
        .stdout("Client:\nTalos v1.13.7\nServer:\n")
        .stderr("Error: node $B: Version: rpc error: code = Unavailable desc = down\n")
        .status(1)
        .run();
}
