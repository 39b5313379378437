//! The controllers of a simulated node's controller runtime, as Talos v1.13.7 declares them
//! (`controllers-v1.13.txt`, from `internal/app/machined/pkg/controllers/**`: each one's
//! `Name()`, `Inputs()` and `Outputs()`), a representative set across network, block, k8s,
//! etcd, secrets, runtime, config, cluster and time; and the dependency graph COSI exports
//! from them.

use std::sync::OnceLock;

use talm_wire::proto::inspect::{ControllerDependencyEdge, DependencyEdgeType};

const DATA: &str = include_str!("controllers-v1.13.txt");

/// Every edge of the data file, in its order (controllers by name, outputs then inputs).
fn declared() -> &'static [ControllerDependencyEdge] {
    /// Parsed once; the file is part of the binary (listed in `caches::KEPT`).
    static EDGES: OnceLock<Vec<ControllerDependencyEdge>> = OnceLock::new();
    EDGES.get_or_init(|| parse(DATA).unwrap_or_else(|e| panic!("controllers-v1.13.txt: {e}")))
}

fn parse(text: &str) -> Result<Vec<ControllerDependencyEdge>, String> {
    let mut edges = Vec::new();
    let mut controller = "";
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            controller = line.trim();
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        let (edge_type, ns, ty, id) = match f.as_slice() {
            ["out", "exclusive", ty] => (DependencyEdgeType::OutputExclusive, "", *ty, ""),
            ["out", "shared", ty] => (DependencyEdgeType::OutputShared, "", *ty, ""),
            ["in", kind, ns, ty, rest @ ..] if rest.len() <= 1 => {
                let t = match *kind {
                    "strong" => DependencyEdgeType::InputStrong,
                    "weak" => DependencyEdgeType::InputWeak,
                    "destroy-ready" => DependencyEdgeType::InputDestroyReady,
                    k => return Err(format!("line {}: input kind {k:?}", i + 1)),
                };
                (t, *ns, *ty, rest.first().copied().unwrap_or(""))
            }
            _ => return Err(format!("line {}: {line:?}", i + 1)),
        };
        if controller.is_empty() {
            return Err(format!("line {}: an edge before any controller", i + 1));
        }
        edges.push(ControllerDependencyEdge {
            controller_name: controller.into(),
            edge_type: edge_type as i32,
            resource_namespace: ns.into(),
            resource_type: ty.into(),
            resource_id: id.into(),
        });
    }
    Ok(edges)
}

/// The graph as COSI's dependency database exports it (cosi-project/runtime v1.14.1,
/// `Database.Export`): outputs first (exclusive, then shared), then inputs, whose kinds are
/// not compared; within those by controller, namespace, type and ID.
pub fn dependency_edges() -> Vec<ControllerDependencyEdge> {
    let rank = |t: DependencyEdgeType| match t {
        DependencyEdgeType::OutputExclusive => 0,
        DependencyEdgeType::OutputShared => 1,
        _ => 2,
    };
    let mut edges = declared().to_vec();
    edges.sort_by(|a, b| {
        (rank(a.edge_type()), &a.controller_name)
            .cmp(&(rank(b.edge_type()), &b.controller_name))
            .then_with(|| a.resource_namespace.cmp(&b.resource_namespace))
            .then_with(|| a.resource_type.cmp(&b.resource_type))
            .then_with(|| a.resource_id.cmp(&b.resource_id))
    });
    edges
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    /// Every type a controller names is one a v1.13 node registers, inputs name registered
    /// namespaces, no type has two exclusive writers (COSI refuses that), and there are 30 to
    /// 60 controllers, sorted by name.
    #[test]
    fn the_data_is_what_a_v1_13_runtime_accepts() {
        let reg = talm_wire::registry::registry();
        let mut exclusive = BTreeMap::new();
        let mut names = Vec::new();
        for e in declared() {
            assert!(reg.find(&e.resource_type).is_some(), "{}", e.resource_type);
            if e.edge_type().as_str_name().starts_with("INPUT") {
                assert!(reg.namespace(&e.resource_namespace).is_some(), "{e:?}");
            }
            if e.edge_type() == DependencyEdgeType::OutputExclusive {
                let prev = exclusive.insert(e.resource_type.clone(), e.controller_name.clone());
                assert!(prev.is_none(), "{e:?}");
            }
            if names.last() != Some(&e.controller_name) {
                names.push(e.controller_name.clone());
            }
        }
        assert!((30..=60).contains(&names.len()), "{}", names.len());
        let sorted: Vec<String> = names
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(names, sorted);
    }

    #[test]
    fn outputs_come_first_then_inputs_by_controller() {
        let e = dependency_edges();
        let is_input =
            |e: &ControllerDependencyEdge| e.edge_type().as_str_name().starts_with("INPUT");
        let first_input = e.iter().position(is_input).unwrap();
        assert!(!e[..first_input].iter().any(is_input));
        assert!(e[first_input..].iter().all(is_input));
        assert!(e[..first_input]
            .windows(2)
            .all(|w| w[0].edge_type <= w[1].edge_type || w[0].edge_type == 0));
        assert!(e[first_input..]
            .windows(2)
            .all(|w| w[0].controller_name <= w[1].controller_name));
    }

    #[test]
    fn bad_lines_are_refused() {
        assert!(parse("  out exclusive X\n").is_err());
        assert!(parse("c\n  in maybe runtime X\n").is_err());
        assert!(parse("c\n  out bold X\n").is_err());
    }
}
