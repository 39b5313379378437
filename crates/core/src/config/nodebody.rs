//! Merging a node file's body onto the rendered config, idempotently: what the render already
//! says is pruned from the body first (so re-templated node files never duplicate list items),
//! `$patch: delete` directives that the render consumed or that target nothing are dropped, and
//! what is left is applied with Talos's patcher.

use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};

use super::{encode, patch};
use talm_base::error::hinted;

/// Paths whose lists or objects replace rather than merge: the body wins there, untouched.
const REPLACE_PATHS: &[&[&str]] = &[
    &["cluster", "network", "podSubnets"],
    &["cluster", "network", "serviceSubnets"],
    &["cluster", "apiServer", "auditPolicy"],
];
const REPLACE_LEAVES: &[&[&str]] = &[&["ingress"], &["portSelector", "ports"]];

/// Keys that identify list items at a path (first present, non-empty one wins).
fn identity_keys(path: &[String]) -> &'static [&'static str] {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["machine", "network", "interfaces"] => &["interface", "deviceSelector"],
        ["machine", "network", "interfaces", "vlans"] => &["vlanId"],
        ["cluster", "apiServer", "admissionControl"] => &["name"],
        _ => &[],
    }
}

/// Whether a node file has nothing but comments, blank lines and document markers.
pub fn effectively_empty(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#') || l == "---" || l == "...")
}

fn is_delete(v: &Value) -> bool {
    matches!(v, Value::Mapping(m) if m.len() == 1 && m.get("$patch").and_then(Value::as_str) == Some("delete"))
}

fn doc_identity(doc: &Value) -> String {
    let s = |k: &str| doc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let (api, kind, name) = (s("apiVersion"), s("kind"), s("name"));
    if api.is_empty() && kind.is_empty() {
        return "v1alpha1".into();
    }
    if name.is_empty() {
        format!("{api}/{kind}")
    } else {
        format!("{api}/{kind}/{name}")
    }
}

/// Removes every `{$patch: delete}` value below `v`, recording the key paths.
fn strip_deletes(v: &mut Value, path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
    if let Value::Mapping(m) = v {
        let keys: Vec<Value> = m.keys().cloned().collect();
        for k in keys {
            let key = encode::key_string(&k);
            path.push(key);
            if m.get(&k).is_some_and(is_delete) {
                m.remove(&k);
                found.push(path.clone());
            } else if let Some(child) = m.get_mut(&k) {
                strip_deletes(child, path, found);
            }
            path.pop();
        }
    }
}

fn lookup<'a>(v: &'a Value, path: &[String]) -> Option<&'a Value> {
    path.iter()
        .try_fold(v, |cur, k| cur.as_mapping()?.get(k.as_str()))
}

/// Drops body directives the render consumed (`consumed`) or whose target the render lacks.
fn drop_dead_deletes(
    body: &mut Value,
    rendered: Option<&Value>,
    consumed: &[Vec<String>],
    id: &str,
) {
    let mut found = Vec::new();
    let mut probe = body.clone();
    strip_deletes(&mut probe, &mut Vec::new(), &mut found);
    for path in found {
        let mut full = vec![id.to_string()];
        full.extend(path.iter().cloned());
        let dead = consumed.contains(&full) || rendered.and_then(|r| lookup(r, &path)).is_none();
        if dead {
            remove_at(body, &path);
        }
    }
}

fn remove_at(v: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for k in parents {
        match cur.as_mapping_mut().and_then(|m| m.get_mut(k.as_str())) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_mapping_mut() {
        m.remove(last.as_str());
    }
}

fn is_replace(path: &[String]) -> bool {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    REPLACE_PATHS.iter().any(|r| p == *r) || REPLACE_LEAVES.iter().any(|r| p.ends_with(r))
}

/// Prunes from `body` what `rendered` already says; returns whether anything is left.
fn prune(body: &mut Value, rendered: &Value, path: &mut Vec<String>) -> bool {
    let (Value::Mapping(b), Value::Mapping(r)) = (&mut *body, rendered) else {
        return body != rendered;
    };
    let keys: Vec<Value> = b.keys().cloned().collect();
    for k in keys {
        let key = encode::key_string(&k);
        let Some(rv) = r.get(&k) else { continue };
        path.push(key);
        let keep = if is_replace(path) {
            true
        } else {
            // Cannot fail: the key was taken from this mapping just above.
            let bv = b.get_mut(&k).expect("key listed above");
            match (&mut *bv, rv) {
                (x, y) if *x == *y => false,
                (Value::Mapping(_), Value::Mapping(_)) => prune(bv, rv, path),
                (Value::Sequence(items), Value::Sequence(ritems)) => {
                    prune_list(items, ritems, path);
                    !items.is_empty()
                }
                _ => true,
            }
        };
        path.pop();
        if !keep {
            b.remove(&k);
        }
    }
    !b.is_empty()
}

fn prune_list(items: &mut Vec<Value>, rendered: &[Value], path: &mut Vec<String>) {
    let keys = identity_keys(path);
    let mut out = Vec::new();
    for mut item in std::mem::take(items) {
        if !item.is_mapping() {
            if !rendered.contains(&item) {
                out.push(item);
            }
            continue;
        }
        let ident = keys.iter().find_map(|k| {
            item.get(*k)
                .filter(|v| !v.is_null() && v.as_str() != Some(""))
                .map(|v| (*k, v.clone()))
        });
        let counterpart = match &ident {
            Some((k, v)) => rendered.iter().find(|r| r.get(*k) == Some(v)),
            None => rendered.iter().find(|r| **r == item),
        };
        match counterpart {
            None => out.push(item),
            Some(r) => {
                if prune(&mut item, r, path) {
                    if let (Some((k, v)), Value::Mapping(m)) = (&ident, &mut item) {
                        if !m.contains_key(*k) {
                            let mut with_id = Mapping::new();
                            with_id.insert(Value::from(*k), v.clone());
                            with_id.extend(std::mem::take(m));
                            *m = with_id;
                        }
                    }
                    out.push(item);
                }
            }
        }
    }
    *items = out;
}

fn docs(text: &str, file: &str) -> Result<Vec<Value>> {
    talm_base::yaml::documents(text).map_err(|e| talm_base::yaml::syntax_error(&e, file))
}

/// Merges the node file body `body` (file `file`) onto the rendered config text.
pub fn merge(rendered: &str, body: &str, file: &str) -> Result<String> {
    if effectively_empty(body) {
        return Ok(rendered.to_string());
    }
    let wrap = |e: anyhow::Error| e.context(format!("merging node file {file:?} as patch"));
    let mut rdocs = docs(rendered, "rendered config").map_err(wrap)?;
    let mut consumed = Vec::new();
    for d in &mut rdocs {
        let id = doc_identity(d);
        let mut path = vec![id];
        strip_deletes(d, &mut path, &mut consumed);
    }
    let cleaned = || encode::encode(&rdocs);
    let mut bdocs = docs(body, file).map_err(wrap)?;
    let patch_text = if bdocs.iter().all(Value::is_mapping) {
        let mut kept = Vec::new();
        for mut d in bdocs.drain(..) {
            let id = doc_identity(&d);
            let matching = rdocs.iter().find(|r| doc_identity(r) == id);
            drop_dead_deletes(&mut d, matching, &consumed, &id);
            let typed = d.get("kind").is_some();
            let header: Vec<(Value, Value)> = ["apiVersion", "kind", "name"]
                .iter()
                .filter_map(|k| d.get(*k).map(|v| (Value::from(*k), v.clone())))
                .collect();
            let left = match matching {
                Some(r) => prune(&mut d, r, &mut Vec::new()),
                None => d.as_mapping().is_some_and(|m| !m.is_empty()),
            };
            if left {
                if typed {
                    if let Value::Mapping(m) = &mut d {
                        let mut with_header: Mapping = header.into_iter().collect();
                        with_header.extend(std::mem::take(m));
                        *m = with_header;
                    }
                }
                kept.push(d);
            }
        }
        if kept.is_empty() {
            return Ok(cleaned());
        }
        kept.iter()
            .map(|d| serde_yaml_ng::to_string(d).map_err(anyhow::Error::from))
            .collect::<Result<Vec<_>>>()?
            .join("---\n")
    } else {
        body.to_string()
    };
    // The render's documents are patched as they are; only when that fails is their encoding
    // patched, for the error with its line.
    patch::load_patch(&patch_text)
        .and_then(|p| {
            let p = std::slice::from_ref(&p);
            patch::apply_docs(rdocs.clone(), p).or_else(|_| patch::apply(&cleaned(), p))
        })
        .map_err(|e| {
            hinted(
                format!("merging node file {file:?} as patch: applying patch from {file:?}: {e:#}"),
                format!("check what the render gives with `talm template -f \"{file}\" --full`, then fix the node file's body"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RENDERED: &str = "version: v1alpha1\nmachine:\n  type: worker\n  certSANs: [a, b]\n  network:\n    interfaces:\n      - interface: eth0\n        addresses: [10.0.0.1/24]\n        mtu: 1500\n  nodeLabels:\n    x: {$patch: delete}\ncluster:\n  network:\n    podSubnets: [10.244.0.0/16]\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: n1\n";

    fn parsed(text: &str) -> Vec<Value> {
        docs(text, "t").unwrap()
    }

    #[test]
    fn empty_bodies_change_nothing() {
        assert!(effectively_empty("# talm: nodes=[]\n\n---\n# x\n"));
        assert_eq!(
            merge(RENDERED, "# only comments\n", "n.yaml").unwrap(),
            RENDERED
        );
    }

    #[test]
    fn a_body_equal_to_the_render_merges_to_the_render() {
        let out = merge(RENDERED, RENDERED, "n.yaml").unwrap();
        let expected = {
            let mut d = parsed(RENDERED);
            d[0]["machine"]
                .as_mapping_mut()
                .unwrap()
                .remove("nodeLabels");
            d
        };
        assert_eq!(
            parsed(&out)[0]["machine"]["certSANs"],
            expected[0]["machine"]["certSANs"]
        );
        assert_eq!(
            parsed(&out)[0]["machine"]["network"]["interfaces"]
                .as_sequence()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(parsed(&out).len(), 2);
    }

    #[test]
    fn new_values_land_and_lists_do_not_duplicate() {
        let body = "machine:\n  certSANs: [a, c]\n  network:\n    interfaces:\n      - interface: eth0\n        mtu: 9000\n        addresses: [10.0.0.1/24]\ncluster:\n  network:\n    podSubnets: [10.244.0.0/16]\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: n1\n";
        let out = parsed(&merge(RENDERED, body, "n.yaml").unwrap());
        let sans: Vec<&str> = out[0]["machine"]["certSANs"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(sans, ["a", "b", "c"]);
        let ifs = out[0]["machine"]["network"]["interfaces"]
            .as_sequence()
            .unwrap();
        assert_eq!(ifs.len(), 1);
        assert_eq!(ifs[0]["mtu"], Value::from(9000));
        assert_eq!(ifs[0]["addresses"].as_sequence().unwrap().len(), 1);
        assert_eq!(
            out[0]["cluster"]["network"]["podSubnets"]
                .as_sequence()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn dead_deletes_are_dropped_and_live_ones_apply() {
        let body = "machine:\n  nodeLabels:\n    x: {$patch: delete}\n  sysctls:\n    nope: {$patch: delete}\n  certSANs: {$patch: delete}\n";
        let out = parsed(&merge(RENDERED, body, "n.yaml").unwrap());
        // certSANs is always written (Talos emits `[]`), now empty; the dead deletes did no harm.
        assert_eq!(out[0]["machine"]["certSANs"], Value::Sequence(vec![]));
        assert!(out[0]["machine"].get("nodeLabels").is_none());
    }

    #[test]
    fn a_body_that_is_not_yaml_is_named() {
        let err = merge(RENDERED, "machine: [\n", "nodes/n.yaml").unwrap_err();
        assert!(format!("{err:#}").contains("nodes/n.yaml"), "{err:#}");
    }
}
