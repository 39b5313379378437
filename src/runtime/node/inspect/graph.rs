//! `talm inspect dependencies`: the controller runtime's dependency graph as talosctl v1.13
//! renders it (`formatters.RenderGraph`) with the DOT writer it uses (emicklei/dot): node and
//! subgraph numbers in creation order, nodes and subgraphs sorted by ID, edges by their source's
//! ID, attributes sorted, TAB indentation.

use std::collections::BTreeMap;

use anyhow::Result;

use crate::proto::cosi::resource as cosi;
use crate::proto::inspect::{ControllerDependencyEdge, DependencyEdgeType};
use crate::talos::block_on;
use crate::talos::client::Client;
use crate::talos::resources::{matches_definition, to_value};

type Attrs = BTreeMap<&'static str, String>;

/// A node of the graph: its number and attributes.
struct DotNode {
    seq: usize,
    attrs: Attrs,
}

/// A cluster subgraph: its number, label and nodes.
struct Cluster {
    seq: usize,
    label: String,
    nodes: BTreeMap<String, DotNode>,
}

/// A directed graph as emicklei/dot keeps one: every edge belongs to the root.
#[derive(Default)]
struct Dot {
    seq: usize,
    nodes: BTreeMap<String, DotNode>,
    clusters: BTreeMap<String, Cluster>,
    edges: BTreeMap<String, Vec<(usize, usize, Attrs)>>,
}

impl Dot {
    fn next(&mut self) -> usize {
        self.seq += 1;
        self.seq
    }

    /// The root's node `id`, made when absent; `attrs` are set on it.
    fn node(&mut self, id: &str, attrs: &[(&'static str, &str)]) -> usize {
        if !self.nodes.contains_key(id) {
            let seq = self.next();
            let attrs = Attrs::from([("label", id.to_string())]);
            self.nodes.insert(id.into(), DotNode { seq, attrs });
        }
        let n = self.nodes.get_mut(id).expect("just made");
        for (k, v) in attrs {
            n.attrs.insert(k, v.to_string());
        }
        n.seq
    }

    /// The cluster `label`, made when absent.
    fn cluster(&mut self, label: &str) {
        if !self.clusters.contains_key(label) {
            let seq = self.next();
            let c = Cluster {
                seq,
                label: label.into(),
                nodes: BTreeMap::new(),
            };
            self.clusters.insert(label.into(), c);
        }
    }

    /// Node `id` of cluster `label` (or of the root when it has one by that ID).
    fn cluster_node(&mut self, label: &str, id: &str, attrs: &[(&'static str, &str)]) -> usize {
        self.cluster(label);
        if !self.clusters[label].nodes.contains_key(id) {
            if let Some(n) = self.nodes.get(id) {
                return n.seq;
            }
            let seq = self.next();
            let attrs = Attrs::from([("label", id.to_string())]);
            let c = self.clusters.get_mut(label).expect("just made");
            c.nodes.insert(id.into(), DotNode { seq, attrs });
        }
        let n = self
            .clusters
            .get_mut(label)
            .and_then(|c| c.nodes.get_mut(id))
            .expect("just made");
        for (k, v) in attrs {
            n.attrs.insert(k, v.to_string());
        }
        n.seq
    }

    fn edge(&mut self, from_id: &str, from: usize, to: usize, attrs: Attrs) {
        self.edges
            .entry(from_id.into())
            .or_default()
            .push((from, to, attrs));
    }

    fn write(&self) -> String {
        let mut o = String::from("digraph  {\n\t");
        for c in self.clusters.values() {
            o += &format!("subgraph cluster_s{} {{\n\t\t", c.seq);
            o += &format!("label={};\n\t\t", quote(&c.label));
            for n in c.nodes.values() {
                o += &format!("n{}{};\n\t\t", n.seq, bracketed(&n.attrs));
            }
            o += "\n\t}\n\t";
        }
        o += "\n\t";
        for n in self.nodes.values() {
            o += &format!("n{}{};\n\t", n.seq, bracketed(&n.attrs));
        }
        for list in self.edges.values() {
            for (from, to, attrs) in list {
                o += &format!("n{from}->n{to}{};\n\t", bracketed(attrs));
            }
        }
        o += "\n}\n";
        o
    }
}

/// `[k="v",...]`, keys sorted; nothing when there are none.
fn bracketed(attrs: &Attrs) -> String {
    if attrs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = attrs
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect();
    format!("[{}]", parts.join(","))
}

/// A string as Go's `%q` writes it.
fn quote(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o += "\\\"",
            '\\' => o += "\\\\",
            '\n' => o += "\\n",
            '\t' => o += "\\t",
            '\r' => o += "\\r",
            c if (c as u32) < 0x20 || c == '\u{7f}' => o += &format!("\\x{:02x}", c as u32),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

const BOX: &[(&str, &str)] = &[("shape", "box")];
const NOTE: &[(&str, &str)] = &[
    ("shape", "note"),
    ("fillcolor", "azure2"),
    ("style", "filled"),
];

fn styled(style: &str, label: Option<&str>) -> Attrs {
    let mut a = Attrs::from([("style", style.to_string())]);
    if let Some(l) = label.filter(|l| !l.is_empty()) {
        a.insert("label", l.to_string());
    }
    a
}

/// The graph of controllers and resource types.
pub fn types_graph(edges: &[ControllerDependencyEdge]) -> String {
    let mut g = Dot::default();
    for e in edges {
        g.node(&e.controller_name, BOX);
        g.node(&e.resource_type, NOTE);
    }
    for e in edges {
        let (c, t) = (
            g.node(&e.controller_name, &[]),
            g.node(&e.resource_type, &[]),
        );
        let id = Some(e.resource_id.as_str());
        match e.edge_type() {
            DependencyEdgeType::OutputExclusive => {
                g.edge(&e.controller_name, c, t, styled("bold", None))
            }
            DependencyEdgeType::OutputShared => {
                g.edge(&e.controller_name, c, t, styled("solid", None))
            }
            DependencyEdgeType::InputStrong => g.edge(&e.resource_type, t, c, styled("solid", id)),
            DependencyEdgeType::InputWeak => g.edge(&e.resource_type, t, c, styled("dotted", id)),
            DependencyEdgeType::InputDestroyReady => {}
        }
    }
    g.write()
}

/// `namespace/type/id` of a listed resource, and its owner.
fn ident(r: &cosi::Resource) -> (String, String, String) {
    let md = r.metadata.clone().unwrap_or_default();
    (
        format!("{}/{}/{}", md.namespace, md.r#type, md.id),
        md.id,
        md.owner,
    )
}

/// The graph of controllers and the live resources of each type (`--with-resources`): each
/// type's resources are listed once, in the edge's namespace or the type's default one; a type
/// that cannot be listed is left out, one that is not registered fails the command.
pub fn resources_graph(c: &Client, edges: &[ControllerDependencyEdge]) -> Result<String> {
    let defs: Vec<serde_yaml_ng::Value> =
        block_on(c.list("meta", "ResourceDefinitions.meta.cosi.dev"))?
            .iter()
            .map(to_value)
            .collect();
    let mut resources: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for e in edges {
        if resources.contains_key(&e.resource_type) {
            continue;
        }
        let hits: Vec<_> = defs
            .iter()
            .filter_map(|d| matches_definition(d, &e.resource_type))
            .collect();
        let def = match hits.as_slice() {
            [d] => d,
            [] => anyhow::bail!("resource type {:?} not found", e.resource_type),
            _ => anyhow::bail!("resource type {:?} is ambiguous", e.resource_type),
        };
        let ns = match e.resource_namespace.as_str() {
            "" => def.namespace.as_str(),
            ns => ns,
        };
        if let Ok(items) = block_on(c.list(ns, &def.ty)) {
            resources.insert(e.resource_type.clone(), items.iter().map(ident).collect());
        }
    }
    let mut g = Dot::default();
    for e in edges {
        g.node(&e.controller_name, BOX);
    }
    for (ty, list) in &resources {
        g.cluster(ty);
        for (rid, _, _) in list {
            g.cluster_node(ty, rid, NOTE);
        }
    }
    for e in edges {
        for (rid, id, owner) in resources.get(&e.resource_type).into_iter().flatten() {
            if !e.resource_id.is_empty() && *id != e.resource_id {
                continue;
            }
            let t = e.edge_type();
            let output = matches!(
                t,
                DependencyEdgeType::OutputExclusive | DependencyEdgeType::OutputShared
            );
            if output && e.controller_name != *owner {
                continue;
            }
            let c = g.node(&e.controller_name, &[]);
            let r = g.cluster_node(&e.resource_type, rid, &[]);
            match t {
                DependencyEdgeType::OutputExclusive | DependencyEdgeType::OutputShared => {
                    g.edge(&e.controller_name, c, r, styled("solid", None))
                }
                DependencyEdgeType::InputStrong => g.edge(rid, r, c, styled("solid", None)),
                DependencyEdgeType::InputWeak => g.edge(rid, r, c, styled("dotted", None)),
                DependencyEdgeType::InputDestroyReady => {}
            }
        }
    }
    Ok(g.write())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(c: &str, t: DependencyEdgeType, ty: &str, id: &str) -> ControllerDependencyEdge {
        ControllerDependencyEdge {
            controller_name: c.into(),
            edge_type: t as i32,
            resource_namespace: String::new(),
            resource_type: ty.into(),
            resource_id: id.into(),
        }
    }

    /// emicklei/dot's layout: numbers in creation order, nodes sorted by ID, edges by source.
    #[test]
    fn writes_dot_as_emicklei_dot() {
        let g = types_graph(&[
            edge("b.Ctrl", DependencyEdgeType::OutputExclusive, "Xs.t", ""),
            edge("a.Ctrl", DependencyEdgeType::InputWeak, "Xs.t", "x\"1"),
            edge("a.Ctrl", DependencyEdgeType::InputDestroyReady, "Ys.t", ""),
        ]);
        assert_eq!(
            g,
            "digraph  {\n\t\n\
             \tn2[fillcolor=\"azure2\",label=\"Xs.t\",shape=\"note\",style=\"filled\"];\n\
             \tn4[fillcolor=\"azure2\",label=\"Ys.t\",shape=\"note\",style=\"filled\"];\n\
             \tn3[label=\"a.Ctrl\",shape=\"box\"];\n\
             \tn1[label=\"b.Ctrl\",shape=\"box\"];\n\
             \tn2->n3[label=\"x\\\"1\",style=\"dotted\"];\n\
             \tn1->n2[style=\"bold\"];\n\
             \t\n}\n"
        );
    }
}
