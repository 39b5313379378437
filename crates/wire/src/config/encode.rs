//! The Talos encoder (comments off): every mapping in struct order per the schema type tree,
//! map keys sorted bytewise, empty `omitempty` values dropped, absent non-`omitempty` fields
//! written as their zero value, 4-space layout, documents joined with `---\n`.

use serde_yaml_ng::{Mapping, Value};

use super::schema::{schema, Def, Field, Ty, Zero, LEGACY};

/// Encodes config documents the way Talos does.
pub fn encode(docs: &[Value]) -> String {
    docs.iter()
        .map(|d| talm_base::yaml::to_string(&shape_doc(d)))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// A document's `(apiVersion, kind, name)`; the legacy document is `("", "v1alpha1", "")`.
pub fn doc_id(doc: &Value) -> (String, String, String) {
    let get = |k: &str| match doc.get(k) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    };
    let kind = get("kind");
    let kind = if kind.is_empty() {
        "v1alpha1".to_string()
    } else {
        kind
    };
    (get("apiVersion"), kind, get("name"))
}

/// The definition describing a document, if the kind is known.
pub fn doc_def(doc: &Value) -> Option<&'static str> {
    let (api, kind, _) = doc_id(doc);
    if kind == "v1alpha1" && api.is_empty() {
        return Some(LEGACY);
    }
    schema().doc_def(&api, &kind)
}

/// One document in encoder shape (unknown kinds are left as they are).
pub fn shape_doc(doc: &Value) -> Value {
    match doc_def(doc) {
        Some(def) => shape(doc, &Ty::Obj(def.to_string())),
        None => doc.clone(),
    }
}

/// Re-shapes a value of type `ty` into what the Go types would encode.
pub fn shape(v: &Value, ty: &Ty) -> Value {
    match (ty, v) {
        (_, Value::Tagged(t)) => shape(&t.value, ty),
        (Ty::Obj(name), Value::Mapping(m)) => Value::Mapping(shape_obj(m, schema().def(name))),
        (Ty::List(item), Value::Sequence(s)) => {
            Value::Sequence(s.iter().map(|x| shape(x, item)).collect())
        }
        (Ty::Map(val), Value::Mapping(m)) => Value::Mapping(sorted(m, |x| shape(x, val))),
        (Ty::Any, Value::Mapping(m)) => Value::Mapping(sorted(m, |x| shape(x, &Ty::Any))),
        (Ty::Any, Value::Sequence(s)) => {
            Value::Sequence(s.iter().map(|x| shape(x, &Ty::Any)).collect())
        }
        (Ty::Str, Value::Number(n)) => Value::String(n.to_string()),
        (Ty::Str, Value::Bool(b)) => Value::String(b.to_string()),
        (Ty::Arg, Value::Number(n)) => Value::String(n.to_string()),
        (Ty::Arg, Value::Bool(b)) => Value::String(b.to_string()),
        (Ty::Arg, Value::Sequence(s)) => {
            Value::Sequence(s.iter().map(|x| shape(x, &Ty::Str)).collect())
        }
        _ => v.clone(),
    }
}

fn sorted(m: &Mapping, f: impl Fn(&Value) -> Value) -> Mapping {
    let mut entries: Vec<(String, &Value, &Value)> =
        m.iter().map(|(k, v)| (key_string(k), k, v)).collect();
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    entries
        .into_iter()
        .map(|(_, k, v)| (k.clone(), f(v)))
        .collect()
}

/// A mapping key as text.
pub fn key_string(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => serde_yaml_ng::to_string(other).unwrap_or_default(),
    }
}

fn shape_obj(m: &Mapping, def: &Def) -> Mapping {
    let mut out = Mapping::new();
    for f in &def.fields {
        let present = m.get(f.name.as_str()).filter(|v| !v.is_null());
        match present {
            Some(v) => {
                let v = shape(v, &f.ty);
                if f.zero.is_some() || !is_empty(f, &v) {
                    out.insert(Value::String(f.name.clone()), v);
                }
            }
            None => {
                if let Some(z) = f.zero {
                    out.insert(Value::String(f.name.clone()), zero_value(z, &f.ty));
                }
            }
        }
    }
    // Keys the type does not know (rejected by the strict decoder) keep their place at the end.
    for (k, v) in m {
        if def.field(&key_string(k)).is_none() {
            out.insert(k.clone(), v.clone());
        }
    }
    out
}

/// Whether an `omitempty` field's value counts as empty for the Talos encoder.
fn is_empty(f: &Field, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty() && !f.pointer,
        Value::Bool(b) => !b && !f.pointer,
        Value::Number(n) => !f.pointer && n.as_f64() == Some(0.0),
        Value::Sequence(s) => s.is_empty() && !f.keep_empty,
        Value::Mapping(m) => match &f.ty {
            Ty::Map(_) => m.is_empty(),
            Ty::Obj(_) => f.value_struct && m.values().all(Value::is_null),
            _ => false,
        },
        Value::Tagged(t) => is_empty(f, &t.value),
    }
}

fn zero_value(z: Zero, ty: &Ty) -> Value {
    match z {
        Zero::Str => Value::String(String::new()),
        Zero::Null => Value::Null,
        Zero::List => Value::Sequence(Vec::new()),
        Zero::Int => Value::Number(0.into()),
        Zero::Struct => shape(&Value::Mapping(Mapping::new()), ty),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(src: &str) -> String {
        let docs: Vec<Value> = src
            .split("---\n")
            .map(|d| serde_yaml_ng::from_str(d).unwrap())
            .collect();
        encode(&docs)
    }

    #[test]
    fn struct_order_and_zero_values() {
        let out = enc("machine:\n  kubelet:\n    extraMounts:\n      - source: /a\n        options: [x]\n        destination: /b\n        type: bind\n  sysctls: {b: '1', a: 2}\nversion: v1alpha1\n");
        assert_eq!(
            out,
            "version: v1alpha1\nmachine:\n    type: \"\"\n    token: \"\"\n    certSANs: []\n    kubelet:\n        extraMounts:\n            - destination: /b\n              type: bind\n              source: /a\n              options:\n                - x\n    sysctls:\n        a: \"2\"\n        b: \"1\"\ncluster: null\n"
        );
    }

    #[test]
    fn omitempty_rules() {
        let out = enc("version: v1alpha1\ndebug: false\nmachine:\n  type: worker\n  token: t\n  certSANs: []\n  network: {}\n  registries: {}\n  nodeLabels: {}\n  install: {disk: ''}\ncluster:\n  discovery: {enabled: true}\n");
        assert_eq!(
            out,
            "version: v1alpha1\ndebug: false\nmachine:\n    type: worker\n    token: t\n    certSANs: []\n    network: {}\n    install:\n        wipe: null\ncluster:\n    controlPlane: null\n    discovery:\n        enabled: true\n        registries:\n            kubernetes: {}\n            service: {}\n"
        );
    }

    #[test]
    fn multi_doc_and_unknown_kind() {
        let out = enc("kind: HostnameConfig\napiVersion: v1alpha1\nauto: stable\n---\nkind: Foo\napiVersion: v1\nz: 1\na: 2\n");
        assert_eq!(
            out,
            "apiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n---\nkind: Foo\napiVersion: v1\nz: 1\na: 2\n"
        );
    }
}
