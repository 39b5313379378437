//! Field knowledge of Talos config documents: a type tree built once from Talos's JSON schemas
//! (v1.11–v1.13, properties in schema order = Go struct order) plus a small overlay of Go facts
//! the schemas do not carry (hidden fields, `omitempty`, pointers, `merge:"replace"`, keyed lists).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value as Json;

mod overlay;

const SCHEMAS: [&str; 3] = [
    include_str!("../../../schemas/config.schema.v1.13.json"),
    include_str!("../../../schemas/config.schema.v1.12.json"),
    include_str!("../../../schemas/config.schema.v1.11.json"),
];

/// The definition name of the legacy machine config document.
pub const LEGACY: &str = "v1alpha1.Config";

/// The type of a value at some place in a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    /// Unstructured or unknown: any YAML accepted, map keys written sorted.
    Any,
    Bool,
    Int,
    Float,
    Str,
    /// A command-line argument value: a string, or (Talos v1.13) a list of strings.
    Arg,
    /// A struct: the name of its definition.
    Obj(String),
    List(Box<Ty>),
    /// A map with string keys, written sorted.
    Map(Box<Ty>),
}

/// What a field without `omitempty` is written as when it is absent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Zero {
    Str,
    Null,
    List,
    Int,
    Struct,
}

/// How a list field merges.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ListMerge {
    Append,
    Replace,
    /// Matched items merge, others are appended; `interface` also matches on `deviceSelector`.
    Keyed(&'static str),
}

/// One struct field, in struct order.
#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub ty: Ty,
    /// `None` when the field is `omitempty`, else what an absent value is written as.
    pub zero: Option<Zero>,
    /// A pointer (or custom) scalar: its zero value is kept and overwrites on merge.
    pub pointer: bool,
    /// A non-pointer struct with `omitempty`: dropped when empty.
    pub value_struct: bool,
    /// `omitonlyifnil`: an empty list is still written.
    pub keep_empty: bool,
    pub merge: ListMerge,
    /// `Args`: the map's values are replaced key by key.
    pub args: bool,
}

/// A struct definition.
#[derive(Debug, Clone, Default)]
pub struct Def {
    pub fields: Vec<Field>,
}

impl Def {
    /// The field with this YAML name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// All definitions and the document kinds.
#[derive(Debug, Default)]
pub struct Schema {
    pub defs: HashMap<String, Def>,
    kinds: HashMap<(String, String), String>,
}

impl Schema {
    /// The definition for a document `apiVersion`/`kind`; the legacy document is `("", "v1alpha1")`.
    pub fn doc_def(&self, api_version: &str, kind: &str) -> Option<&str> {
        if api_version.is_empty() && kind == "v1alpha1" {
            return Some(LEGACY);
        }
        self.kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .map(String::as_str)
    }

    /// The definition named `name` (empty for unknown names).
    pub fn def(&self, name: &str) -> &Def {
        static EMPTY: OnceLock<Def> = OnceLock::new();
        self.defs
            .get(name)
            .unwrap_or_else(|| EMPTY.get_or_init(Def::default))
    }
}

/// The schema, built on first use.
pub fn schema() -> &'static Schema {
    /// Listed in [`talm_base::caches::KEPT`].
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    SCHEMA.get_or_init(build)
}

fn build() -> Schema {
    let mut s = Schema::default();
    for text in SCHEMAS {
        // Cannot fail: the schemas are compiled into the binary and parsed by the tests.
        let json: Json = serde_json::from_str(text).expect("embedded Talos schema is valid JSON");
        let Some(defs) = json.get("$defs").and_then(Json::as_object) else {
            continue;
        };
        for (name, def) in defs {
            add_def(&mut s, name, def);
            let enum0 = |k: &str| def.pointer(&format!("/properties/{k}/enum/0"))?.as_str();
            if let (Some(api), Some(kind)) = (enum0("apiVersion"), enum0("kind")) {
                s.kinds
                    .entry((api.to_string(), kind.to_string()))
                    .or_insert_with(|| name.clone());
            }
        }
    }
    overlay::apply(&mut s);
    s
}

pub(super) fn field(name: &str, ty: Ty) -> Field {
    Field {
        name: name.to_string(),
        ty,
        zero: None,
        pointer: false,
        value_struct: false,
        keep_empty: false,
        merge: ListMerge::Append,
        args: false,
    }
}

/// Adds (or merges, keeping relative order) the properties of one definition.
fn add_def(s: &mut Schema, name: &str, def: &Json) {
    let Some(props) = def.get("properties").and_then(Json::as_object) else {
        return;
    };
    let mut prev: Option<String> = None;
    for (pname, p) in props {
        let ty = ty_of(s, &format!("{name}.{pname}"), p);
        let d = s.defs.entry(name.to_string()).or_default();
        if d.field(pname).is_none() {
            let at = match &prev {
                Some(prev) => d
                    .fields
                    .iter()
                    .position(|f| &f.name == prev)
                    .map_or(0, |i| i + 1),
                None => 0,
            };
            d.fields.insert(at, field(pname, ty));
        }
        prev = Some(pname.clone());
    }
}

fn ty_of(s: &mut Schema, anon_name: &str, p: &Json) -> Ty {
    if let Some(alts) = p.get("oneOf").and_then(Json::as_array) {
        if alts
            .iter()
            .any(|a| a.get("type").and_then(Json::as_str) == Some("string"))
        {
            return Ty::Arg;
        }
    }
    if let Some(r) = p.get("$ref").and_then(Json::as_str) {
        return Ty::Obj(r.trim_start_matches("#/$defs/").to_string());
    }
    if let Some(e) = p.get("enum").and_then(Json::as_array) {
        return match e.first() {
            Some(Json::Bool(_)) => Ty::Bool,
            Some(Json::Number(n)) if n.is_i64() || n.is_u64() => Ty::Int,
            Some(Json::Number(_)) => Ty::Float,
            _ => Ty::Str,
        };
    }
    match p.get("type").and_then(Json::as_str) {
        Some("string") => Ty::Str,
        Some("boolean") => Ty::Bool,
        Some("integer") => Ty::Int,
        Some("number") => Ty::Float,
        Some("array") => match p.get("items") {
            Some(items) => Ty::List(Box::new(ty_of(s, anon_name, items))),
            None => Ty::List(Box::new(Ty::Any)),
        },
        Some("object") => {
            if p.get("properties").is_some() {
                add_def(s, anon_name, p);
                return Ty::Obj(anon_name.to_string());
            }
            let value = match (p.get("additionalProperties"), p.get("patternProperties")) {
                (Some(v @ Json::Object(_)), _) => Some(v),
                (_, Some(Json::Object(pp))) => pp.values().next(),
                _ => None,
            };
            match value {
                Some(v) => Ty::Map(Box::new(ty_of(s, anon_name, v))),
                None => Ty::Any,
            }
        }
        _ => Ty::Any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(def: &str) -> Vec<String> {
        schema()
            .def(def)
            .fields
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }

    #[test]
    fn legacy_order_has_hidden_fields() {
        assert_eq!(
            names(LEGACY),
            ["version", "debug", "persist", "machine", "cluster"]
        );
        let install = names("v1alpha1.InstallConfig");
        assert_eq!(
            &install[..4],
            ["disk", "diskSelector", "extraKernelArgs", "image"]
        );
        let machine = names("v1alpha1.MachineConfig");
        let pos = |n: &str| machine.iter().position(|x| x == n).unwrap();
        assert!(pos("pods") < pos("network") && pos("network") < pos("disks"));
        assert!(pos("disks") < pos("install") && pos("files") < pos("env"));
        assert!(pos("env") < pos("time") && pos("time") < pos("sysctls"));
        assert!(
            pos("sysfs") < pos("registries") && pos("registries") < pos("systemDiskEncryption")
        );
        assert!(pos("systemDiskEncryption") < pos("features"));
    }

    #[test]
    fn kinds_and_types() {
        let s = schema();
        assert_eq!(s.doc_def("", "v1alpha1"), Some(LEGACY));
        assert_eq!(
            s.doc_def("v1alpha1", "LinkConfig"),
            Some("network.LinkConfigV1Alpha1")
        );
        assert_eq!(s.doc_def("v1alpha1", "Nope"), None);
        let mount = names("v1alpha1.ExtraMount");
        assert_eq!(&mount[..4], ["destination", "type", "source", "options"]);
        let cp = s.def("v1alpha1.ClusterNetworkConfig");
        assert_eq!(cp.field("podSubnets").unwrap().merge, ListMerge::Replace);
        let m = s.def("v1alpha1.MachineConfig");
        assert_eq!(m.field("sysctls").unwrap().ty, Ty::Map(Box::new(Ty::Str)));
        assert_eq!(
            m.field("ca").unwrap().ty,
            Ty::Obj("v1alpha1.MachineConfig.ca".into())
        );
        assert_eq!(
            s.def("v1alpha1.MachineConfig.ca")
                .field("key")
                .unwrap()
                .zero,
            Some(Zero::Str)
        );
        assert!(
            s.def("v1alpha1.KubeletConfig")
                .field("extraArgs")
                .unwrap()
                .args
        );
    }
}
