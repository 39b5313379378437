//! `talm inspect dependencies` through the real binary: the simulated node's controller graph
//! as talosctl prints it (DOT by emicklei/dot, no node prefix), `--with-resources` with the
//! node's live resources, and one node only.

use std::collections::BTreeMap;

use super::cluster;
use crate::common::net;

/// The DOT text of the simulated node's graph, exactly as talosctl v1.13 prints it.
const GRAPH: &str = include_str!("dependencies.dot");

/// `n<seq>` of each labelled node in a DOT text.
fn numbers(dot: &str) -> BTreeMap<String, String> {
    dot.lines()
        .filter_map(|l| {
            let l = l.trim();
            let (n, rest) = l.split_once('[')?;
            if n.contains("->") || !n.starts_with('n') {
                return None;
            }
            let label = rest.split("label=\"").nth(1)?.split('"').next()?;
            Some((label.to_string(), n.to_string()))
        })
        .collect()
}

#[test]
fn dependencies_print_the_controller_graph_as_talosctl() {
    let [cp, worker] = net::addrs();
    let (nodes, d) = cluster(&cp, &worker);
    let out = d
        .talm(["inspect", "dependencies", "-n", &cp, "-e", &cp])
        .ok();
    assert_eq!(out.stdout, GRAPH);
    assert_eq!(out.stderr, "");

    // A node behind the endpoint answers the same graph.
    let w = d
        .talm(["inspect", "dependencies", "-n", &worker, "-e", &cp])
        .ok()
        .stdout;
    assert_eq!(w, GRAPH);

    // With resources: a cluster per type, a node per resource, the owner's output edge and the
    // readers' input edges.
    let r = d
        .talm([
            "inspect",
            "dependencies",
            "--with-resources",
            "-n",
            &cp,
            "-e",
            &cp,
        ])
        .ok()
        .stdout;
    assert!(r.starts_with("digraph  {\n\tsubgraph cluster_s"), "{r}");
    assert!(r.ends_with(";\n\t\n}\n"), "{r}");
    let n = numbers(&r);
    let disk = talm::sim::world::World::of(nodes.node(&cp)).hw.disks[0]
        .name
        .clone();
    let res = format!("runtime/Disks.block.talos.dev/{disk}");
    assert!(r.contains("\tlabel=\"Disks.block.talos.dev\";\n"), "{r}");
    assert!(
        r.contains(&format!(
            "\t\t{}[fillcolor=\"azure2\",label=\"{res}\",shape=\"note\",style=\"filled\"];\n",
            n[&res]
        )),
        "{r}"
    );
    let ctrl = |c: &str| {
        assert!(
            r.contains(&format!("\t{}[label=\"{c}\",shape=\"box\"];\n", n[c])),
            "{c}: {r}"
        );
        n[c].clone()
    };
    // block.DisksController owns the disk; block.SystemDiskController reads DiscoveredVolumes,
    // not disks, so no edge of it reaches the disk.
    assert!(r.contains(&format!(
        "\t{}->{}[style=\"solid\"];\n",
        ctrl("block.DisksController"),
        n[&res]
    )));
    let sys = ctrl("block.SystemDiskController");
    assert!(!r.contains(&format!("{}->{sys}", n[&res])), "{r}");
    // Types are not nodes of their own here, only cluster labels.
    assert!(!r.contains("[fillcolor=\"azure2\",label=\"Disks.block.talos.dev\""));

    // One node at a time, as talosctl.
    let two = format!("{cp},{worker}");
    d.talm(["inspect", "dependencies", "-n", &two, "-e", &cp])
        .fails_with("command \"inspect dependencies\" is not supported with multiple nodes");
}
