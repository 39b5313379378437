//! Talos's strategic merge (`config/merge`) on YAML values guided by the schema type tree, and
//! the application of `$patch: delete` selectors.

use anyhow::{anyhow, bail, Result};
use serde_yaml_ng::{Mapping, Value};

use super::decode::{scalar_text, Selector};
use super::encode::key_string;
use super::schema::{schema, Field, ListMerge, Ty, LEGACY};

/// Merges `right` into `left`, both values of type `ty`.
pub fn merge(left: &mut Value, right: &Value, ty: &Ty) -> Result<()> {
    merge_value(left, right, ty, false)
}

fn merge_value(l: &mut Value, r: &Value, ty: &Ty, pointer: bool) -> Result<()> {
    if r.is_null() {
        return Ok(());
    }
    if l.is_null() {
        if !is_zero_scalar(r) || pointer || r.is_bool() {
            *l = r.clone();
        }
        return Ok(());
    }
    match (ty, &mut *l, r) {
        (Ty::Obj(name), Value::Mapping(lm), Value::Mapping(rm)) => {
            let def = schema().def(name);
            for (k, rv) in rm {
                match def.field(&key_string(k)) {
                    Some(f) => merge_field(lm, k, rv, f)?,
                    None => merge_entry(lm, k, rv, &Ty::Any)?,
                }
            }
            Ok(())
        }
        (Ty::List(_), Value::Sequence(ls), Value::Sequence(rs)) => {
            ls.extend(rs.iter().cloned());
            Ok(())
        }
        (Ty::Map(inner), Value::Mapping(lm), Value::Mapping(rm)) => {
            for (k, rv) in rm {
                merge_entry(lm, k, rv, inner)?;
            }
            Ok(())
        }
        (Ty::Any, Value::Mapping(lm), Value::Mapping(rm)) => {
            for (k, rv) in rm {
                if let Some(lv) = lm.get(k).filter(|v| !v.is_null()) {
                    if go_type(lv) != go_type(rv) && !rv.is_null() {
                        bail!(
                            "merge map key map[string]interface {{}}[{}]: merge type mismatch left {} right {}",
                            key_string(k),
                            go_type(lv),
                            go_type(rv)
                        );
                    }
                }
                merge_entry(lm, k, rv, &Ty::Any)?;
            }
            Ok(())
        }
        (Ty::Any, Value::Sequence(ls), Value::Sequence(rs)) => {
            ls.extend(rs.iter().cloned());
            Ok(())
        }
        (_, l, r) => {
            if r.is_bool() || pointer || !is_zero_scalar(r) {
                *l = r.clone();
            }
            Ok(())
        }
    }
}

fn merge_entry(lm: &mut Mapping, k: &Value, rv: &Value, ty: &Ty) -> Result<()> {
    match lm.get_mut(k) {
        Some(lv) if !lv.is_null() => merge_value(lv, rv, ty, false),
        _ => {
            lm.insert(k.clone(), rv.clone());
            Ok(())
        }
    }
}

fn merge_field(lm: &mut Mapping, k: &Value, rv: &Value, f: &Field) -> Result<()> {
    if rv.is_null() {
        return Ok(());
    }
    if f.args {
        if let (Some(Value::Mapping(la)), Value::Mapping(ra)) = (lm.get_mut(k), rv) {
            for (ak, av) in ra {
                la.insert(ak.clone(), av.clone());
            }
            return Ok(());
        }
    }
    match f.merge {
        ListMerge::Replace => {
            lm.insert(k.clone(), rv.clone());
            Ok(())
        }
        ListMerge::Keyed(key) => {
            let Ty::List(item) = &f.ty else {
                bail!("keyed merge on a non-list field {}", f.name)
            };
            let Value::Sequence(rs) = rv else {
                return merge_default(lm, k, rv, f);
            };
            let slot = lm.entry(k.clone()).or_insert(Value::Sequence(Vec::new()));
            if !slot.is_sequence() {
                *slot = Value::Sequence(Vec::new());
            }
            // Cannot fail: the slot was made a sequence just above.
            let ls = slot.as_sequence_mut().expect("sequence");
            for r in rs {
                match ls.iter().position(|l| keyed_match(l, r, key)) {
                    Some(i) => merge_value(&mut ls[i], r, item, false)?,
                    None => ls.push(r.clone()),
                }
            }
            Ok(())
        }
        ListMerge::Append => merge_default(lm, k, rv, f),
    }
}

fn merge_default(lm: &mut Mapping, k: &Value, rv: &Value, f: &Field) -> Result<()> {
    match lm.get_mut(k) {
        Some(lv) => merge_value(lv, rv, &f.ty, f.pointer),
        None => {
            let mut lv = Value::Null;
            merge_value(&mut lv, rv, &f.ty, f.pointer)?;
            if !lv.is_null() {
                lm.insert(k.clone(), lv);
            }
            Ok(())
        }
    }
}

/// Whether two keyed-list items are the same item (Talos's custom `Merge` methods).
fn keyed_match(l: &Value, r: &Value, key: &str) -> bool {
    let text = |v: &Value| {
        let t = v.get(key).map(scalar_text).unwrap_or_default();
        if t.is_empty() && key == "vlanId" {
            "0".to_string()
        } else {
            t
        }
    };
    if key == "interface" {
        let ri = text(r);
        if !ri.is_empty() {
            return text(l) == ri;
        }
        return match (l.get("deviceSelector"), r.get("deviceSelector")) {
            (Some(a), Some(b)) if !a.is_null() && !b.is_null() => a == b,
            _ => false,
        };
    }
    text(l) == text(r)
}

fn is_zero_scalar(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        _ => false,
    }
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Mapping(_) => "map[string]interface {}",
        Value::Sequence(_) => "[]interface {}",
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int",
        Value::Null => "<nil>",
        Value::Tagged(t) => go_type(&t.value),
    }
}

/// What applying a delete selector did.
#[derive(Debug, PartialEq)]
pub enum Deleted {
    Path,
    /// The whole document is to be removed.
    Document,
}

/// Applies a delete selector to its document (of definition `def`).
pub fn apply_delete(doc: &mut Value, def: &str, sel: &Selector) -> Result<Deleted> {
    let p = sel.path.join(".");
    if sel.path.is_empty() {
        if def == LEGACY {
            bail!("patch delete: path '' in document '/v1alpha1': can't delete the root of the legacy document");
        }
        return Ok(Deleted::Document);
    }
    let res = delete_path(
        doc,
        &Ty::Obj(def.to_string()),
        &sel.path,
        &sel.key,
        &sel.value,
    );
    res.map_err(|e| {
        if sel.name.is_empty() {
            anyhow!(
                "patch delete: path '{p}' in document '{}/{}': failed to delete path '{p}': {e}",
                sel.api_version,
                sel.kind
            )
        } else {
            anyhow!(
                "named patch delete: document {}/{}: failed to delete path '{p}': {e}",
                sel.api_version,
                sel.kind
            )
        }
    })?;
    Ok(Deleted::Path)
}

const LOOKUP_FAILED: &str = "lookup failed";

fn delete_path(v: &mut Value, ty: &Ty, path: &[String], key: &str, value: &str) -> Result<()> {
    let (first, rest) = path.split_first().ok_or_else(|| anyhow!("path is empty"))?;
    match (ty, v) {
        (Ty::Obj(name), Value::Mapping(m)) => {
            let f = schema()
                .def(name)
                .field(first)
                .ok_or_else(|| anyhow!(LOOKUP_FAILED))?;
            let k = Value::String(first.clone());
            if rest.is_empty() {
                m.remove(&k);
                return Ok(());
            }
            match m.get_mut(&k) {
                Some(child) => delete_path(child, &f.ty, rest, key, value),
                None => bail!(LOOKUP_FAILED),
            }
        }
        (Ty::Map(_) | Ty::Any, Value::Mapping(m)) => {
            let inner = match ty {
                Ty::Map(inner) => (**inner).clone(),
                _ => Ty::Any,
            };
            let k = m
                .keys()
                .find(|k| key_string(k) == *first)
                .cloned()
                .ok_or_else(|| anyhow!(LOOKUP_FAILED))?;
            if rest.is_empty() {
                m.remove(&k);
                return Ok(());
            }
            delete_path(
                // Cannot fail: the key comes from iterating this mapping.
                m.get_mut(&k).expect("key present"),
                &inner,
                rest,
                key,
                value,
            )
        }
        (_, Value::Sequence(s)) => {
            if !rest.is_empty() {
                bail!("searching for complex paths in slices is not supported");
            }
            if !first.starts_with('[') {
                bail!("searching for non-integer keys in slices is not supported");
            }
            let Ty::List(item) = ty else {
                bail!(LOOKUP_FAILED)
            };
            let Ty::Obj(item_def) = &**item else {
                bail!(LOOKUP_FAILED)
            };
            let fty = schema().def(item_def).field(key).map(|f| f.ty.clone());
            let Some(fty) = fty else { bail!(LOOKUP_FAILED) };
            let pos = s.iter().position(|e| match e.get(key) {
                Some(Value::String(s)) => s == value,
                Some(other @ (Value::Number(_) | Value::Bool(_))) if fty == Ty::Str => {
                    scalar_text(other) == value
                }
                None if fty == Ty::Str => value.is_empty(),
                _ => false,
            });
            match pos {
                Some(i) => {
                    s.remove(i);
                    Ok(())
                }
                None => bail!(LOOKUP_FAILED),
            }
        }
        _ => bail!(LOOKUP_FAILED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    fn merged(left: &str, right: &str) -> Value {
        let mut l = y(left);
        merge(&mut l, &y(right), &Ty::Obj(LEGACY.into())).unwrap();
        l
    }

    #[test]
    fn scalars_zero_never_overwrites_bools_always_do() {
        let out = merged(
            "machine: {network: {hostname: a}, install: {disk: /dev/sda, wipe: true}}",
            "machine: {network: {hostname: ''}, install: {disk: /dev/vda, wipe: false}}",
        );
        assert_eq!(
            out,
            y("machine: {network: {hostname: a}, install: {disk: /dev/vda, wipe: false}}")
        );
    }

    #[test]
    fn lists_append_except_replace_fields() {
        let out = merged(
            "machine: {certSANs: [a]}\ncluster: {network: {podSubnets: [p1], serviceSubnets: [s1]}, apiServer: {auditPolicy: {rules: [x]}}}",
            "machine: {certSANs: [b]}\ncluster: {network: {podSubnets: [p2]}, apiServer: {auditPolicy: {rules: [y]}}}",
        );
        assert_eq!(
            out,
            y("machine: {certSANs: [a, b]}\ncluster: {network: {podSubnets: [p2], serviceSubnets: [s1]}, apiServer: {auditPolicy: {rules: [y]}}}")
        );
    }

    #[test]
    fn keyed_lists_merge_by_key() {
        let out = merged(
            "machine: {network: {interfaces: [{interface: eth0, dhcp: true, vlans: [{vlanId: 1, addresses: [a]}]}, {deviceSelector: {busPath: x}, mtu: 1}]}}\ncluster: {apiServer: {admissionControl: [{name: P, configuration: {a: 1}}]}}",
            "machine: {network: {interfaces: [{interface: eth0, vlans: [{vlanId: 1, addresses: [b]}, {vlanId: 2}]}, {deviceSelector: {busPath: x}, mtu: 2}, {interface: eth1}]}}\ncluster: {apiServer: {admissionControl: [{name: P, configuration: {b: 2}}, {name: Q}]}}",
        );
        assert_eq!(
            out,
            y("machine: {network: {interfaces: [{interface: eth0, dhcp: true, vlans: [{vlanId: 1, addresses: [a, b]}, {vlanId: 2}]}, {deviceSelector: {busPath: x}, mtu: 2}, {interface: eth1}]}}\ncluster: {apiServer: {admissionControl: [{name: P, configuration: {a: 1, b: 2}}, {name: Q}]}}")
        );
    }

    #[test]
    fn extra_args_replace_per_key_and_maps_merge() {
        let out = merged(
            "machine: {sysctls: {a: '1', b: '2'}, kubelet: {extraArgs: {x: [1, 2], y: z}}}",
            "machine: {sysctls: {b: '3', c: ''}, kubelet: {extraArgs: {x: [3]}}}",
        );
        assert_eq!(
            out,
            y("machine: {sysctls: {a: '1', b: '3', c: ''}, kubelet: {extraArgs: {x: [3], y: z}}}")
        );
    }

    #[test]
    fn config_files_keyed_by_mount_path() {
        let mut l = y("configFiles: [{content: a, mountPath: /a}]\nenvironment: [A=1]");
        let r = y("configFiles: [{content: b, mountPath: /a}, {content: c, mountPath: /c}]\nenvironment: [B=2]");
        merge(
            &mut l,
            &r,
            &Ty::Obj("extensions.ServiceConfigV1Alpha1".into()),
        )
        .unwrap();
        assert_eq!(l, y("configFiles: [{content: b, mountPath: /a}, {content: c, mountPath: /c}]\nenvironment: [A=1, B=2]"));
    }

    #[test]
    fn unstructured_type_mismatch_is_an_error() {
        let mut l = y("machine: {kubelet: {extraConfig: {a: 1}}}");
        let r = y("machine: {kubelet: {extraConfig: {a: x}}}");
        let err = merge(&mut l, &r, &Ty::Obj(LEGACY.into())).unwrap_err();
        assert!(
            err.to_string()
                .contains("merge type mismatch left int right string"),
            "{err}"
        );
    }

    #[test]
    fn delete_paths() {
        let sel = |path: &str, key: &str, value: &str| Selector {
            path: path.split('.').map(String::from).collect(),
            idx: 0,
            api_version: String::new(),
            kind: "v1alpha1".into(),
            name: String::new(),
            key: key.into(),
            value: value.into(),
        };
        let mut doc = y("machine: {network: {interfaces: [{interface: eth0}, {interface: eth1}]}, nodeLabels: {a.b/c: ''}}");
        apply_delete(
            &mut doc,
            LEGACY,
            &sel("machine.network.interfaces.[0]", "interface", "eth1"),
        )
        .unwrap();
        apply_delete(&mut doc, LEGACY, &sel("machine.nodeLabels.a.b/c", "", "")).unwrap_err();
        let mut labels = sel("x", "", "");
        labels.path = vec!["machine".into(), "nodeLabels".into(), "a.b/c".into()];
        apply_delete(&mut doc, LEGACY, &labels).unwrap();
        assert_eq!(
            doc,
            y("machine: {network: {interfaces: [{interface: eth0}]}, nodeLabels: {}}")
        );
        let err =
            apply_delete(&mut doc, LEGACY, &sel("machine.kubelet.image", "", "")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "patch delete: path 'machine.kubelet.image' in document '/v1alpha1': failed to delete path 'machine.kubelet.image': lookup failed"
        );
    }
}
