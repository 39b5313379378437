//! Field knowledge of Talos config documents: a type tree built once from Talos's JSON schemas
//! (v1.11–v1.13, properties in schema order = Go struct order) plus a small overlay of Go facts
//! the schemas do not carry (hidden fields, `omitempty`, pointers, `merge:"replace"`, keyed lists).

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value as Json;

const SCHEMAS: [&str; 3] = [
    include_str!("../../schemas/config.schema.v1.13.json"),
    include_str!("../../schemas/config.schema.v1.12.json"),
    include_str!("../../schemas/config.schema.v1.11.json"),
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
    static S: OnceLock<Schema> = OnceLock::new();
    S.get_or_init(build)
}

/// Fields the published schemas hide (`docgen:nodoc`): (definition, field, after field, type).
/// A hidden field: (definition, field, the field it follows, its type).
type Hidden = (&'static str, &'static str, &'static str, fn() -> Ty);

const HIDDEN: &[Hidden] = &[
    (LEGACY, "persist", "debug", || Ty::Bool),
    ("v1alpha1.MachineConfig", "disks", "network", || {
        Ty::List(Box::new(Ty::Any))
    }),
    (
        "v1alpha1.MachineConfig",
        "systemDiskEncryption",
        "registries",
        || Ty::Any,
    ),
    (
        "v1alpha1.ClusterConfig",
        "allowSchedulingOnMasters",
        "adminKubeconfig",
        || Ty::Bool,
    ),
    (
        "v1alpha1.InstallConfig",
        "extraKernelArgs",
        "diskSelector",
        || Ty::List(Box::new(Ty::Str)),
    ),
    ("v1alpha1.InstallConfig", "extensions", "image", || {
        Ty::List(Box::new(Ty::Any))
    }),
    ("v1alpha1.InstallConfig", "bootloader", "extensions", || {
        Ty::Bool
    }),
    ("v1alpha1.EtcdConfig", "subnet", "extraArgs", || Ty::Str),
    ("v1alpha1.Device", "cidr", "addresses", || Ty::Str),
    ("v1alpha1.Vlan", "cidr", "addresses", || Ty::Str),
];

/// Fields without `omitempty` and what they are written as when absent. Fields of custom Go
/// types (addresses, enums, durations) are left out: their zero text is not known here.
const NOT_OMITEMPTY: &[(&str, &[(&str, Zero)])] = &[
    (
        LEGACY,
        &[
            ("version", Zero::Str),
            ("machine", Zero::Null),
            ("cluster", Zero::Null),
        ],
    ),
    (
        "v1alpha1.MachineConfig",
        &[
            ("type", Zero::Str),
            ("token", Zero::Str),
            ("certSANs", Zero::List),
        ],
    ),
    ("v1alpha1.MachineSeccompProfile", &[("name", Zero::Str)]),
    ("v1alpha1.ClusterConfig", &[("controlPlane", Zero::Null)]),
    (
        "v1alpha1.LinuxIDMapping",
        &[
            ("containerID", Zero::Int),
            ("hostID", Zero::Int),
            ("size", Zero::Int),
        ],
    ),
    ("v1alpha1.ExtraMount", &[("destination", Zero::Str)]),
    ("v1alpha1.InstallConfig", &[("wipe", Zero::Null)]),
    ("v1alpha1.ControlPlaneConfig", &[("endpoint", Zero::Null)]),
    ("v1alpha1.AdmissionPluginConfig", &[("name", Zero::Str)]),
    (
        "v1alpha1.AuthorizationConfigAuthorizerConfig",
        &[("type", Zero::Str), ("name", Zero::Str)],
    ),
    ("v1alpha1.EtcdConfig", &[("ca", Zero::Null)]),
    (
        "v1alpha1.ClusterNetworkConfig",
        &[
            ("dnsDomain", Zero::Str),
            ("podSubnets", Zero::List),
            ("serviceSubnets", Zero::List),
        ],
    ),
    ("v1alpha1.EncryptionKey", &[("slot", Zero::Int)]),
    ("v1alpha1.EncryptionKeyKMS", &[("endpoint", Zero::Str)]),
    (
        "v1alpha1.MachineFile",
        &[
            ("content", Zero::Str),
            ("path", Zero::Str),
            ("op", Zero::Str),
        ],
    ),
    (
        "v1alpha1.ExtraHost",
        &[("ip", Zero::Str), ("aliases", Zero::List)],
    ),
    ("v1alpha1.DHCPOptions", &[("routeMetric", Zero::Int)]),
    ("v1alpha1.VIPEquinixMetalConfig", &[("apiToken", Zero::Str)]),
    ("v1alpha1.VIPHCloudConfig", &[("apiToken", Zero::Str)]),
    (
        "v1alpha1.Bond",
        &[("interfaces", Zero::List), ("mode", Zero::Str)],
    ),
    ("v1alpha1.Bridge", &[("interfaces", Zero::List)]),
    (
        "v1alpha1.Vlan",
        &[("routes", Zero::List), ("vlanId", Zero::Int)],
    ),
    (
        "v1alpha1.Route",
        &[("network", Zero::Str), ("gateway", Zero::Str)],
    ),
    (
        "v1alpha1.RegistryMirrorConfig",
        &[("endpoints", Zero::List)],
    ),
    (
        "v1alpha1.VolumeMountConfig",
        &[("hostPath", Zero::Str), ("mountPath", Zero::Str)],
    ),
    (
        "v1alpha1.ClusterInlineManifest",
        &[("name", Zero::Str), ("contents", Zero::Str)],
    ),
    (
        "v1alpha1.ClusterDiscoveryConfig",
        &[("registries", Zero::Struct)],
    ),
    (
        "v1alpha1.DiscoveryRegistriesConfig",
        &[("kubernetes", Zero::Struct), ("service", Zero::Struct)],
    ),
    ("v1alpha1.LoggingConfig", &[("destinations", Zero::List)]),
    (
        "v1alpha1.LoggingDestination",
        &[("endpoint", Zero::Null), ("format", Zero::Str)],
    ),
    ("v1alpha1.KernelModuleConfig", &[("name", Zero::Str)]),
    ("block.EncryptionKey", &[("slot", Zero::Int)]),
    ("block.EncryptionKeyKMS", &[("endpoint", Zero::Str)]),
    ("block.EncryptionSpec", &[("keys", Zero::List)]),
    ("block.VirtiofsMountSpec", &[("tag", Zero::Str)]),
    (
        "hardware.PCIDriverRebindConfigV1Alpha1",
        &[("targetDriver", Zero::Str)],
    ),
    (
        "extensions.ConfigFile",
        &[("content", Zero::Str), ("mountPath", Zero::Str)],
    ),
    (
        "network.HCloudVIPConfigV1Alpha1",
        &[("apiToken", Zero::Str), ("link", Zero::Str)],
    ),
    ("network.Layer2VIPConfigV1Alpha1", &[("link", Zero::Str)]),
    (
        "network.KubespanEndpointsConfigV1Alpha1",
        &[("extraAnnouncedEndpoints", Zero::List)],
    ),
    (
        "network.StaticHostConfigV1Alpha1",
        &[("hostnames", Zero::List)],
    ),
    ("network.TCPProbeConfigV1Alpha1", &[("endpoint", Zero::Str)]),
    (
        "network.RuleConfigV1Alpha1",
        &[("ingress", Zero::List), ("portSelector", Zero::Struct)],
    ),
    ("network.RulePortSelector", &[("ports", Zero::List)]),
];

/// Non-pointer structs with `omitempty` (dropped when empty).
const VALUE_STRUCTS: &[(&str, &str)] = &[
    ("v1alpha1.MachineConfig", "registries"),
    ("network.BridgeConfigV1Alpha1", "stp"),
    ("network.BridgeConfigV1Alpha1", "vlan"),
    ("network.ResolverConfigV1Alpha1", "searchDomains"),
    ("network.LinkAliasConfigV1Alpha1", "selector"),
];

/// Pointer scalars other than booleans (their zero is kept); and the one plain `bool`.
const POINTER_SCALARS: &[(&str, &str)] = &[
    ("v1alpha1.NetworkKubeSpan", "mtu"),
    ("network.KubeSpanConfigV1Alpha1", "mtu"),
    ("network.AddressConfig", "routePriority"),
    ("block.ZswapConfigV1Alpha1", "maxPoolPercent"),
];
const POINTER_DEFS: &[&str] = &[
    "network.EthernetRingsConfig",
    "network.EthernetChannelsConfig",
];
const BOND_POINTERS: &[&str] = &[
    "miimon",
    "updelay",
    "downdelay",
    "arpInterval",
    "adActorSysPrio",
    "adUserPortKey",
    "resendIGMP",
    "minLinks",
    "lpInterval",
    "packetsPerSlave",
    "numPeerNotif",
    "tlbLogicalLb",
    "allSlavesActive",
    "peerNotifDelay",
    "missedMax",
];
const PLAIN_BOOLS: &[(&str, &str)] = &[("v1alpha1.VolumeMountConfig", "readonly")];

const KEEP_EMPTY: &[(&str, &str)] = &[
    ("v1alpha1.MachineConfig", "seccompProfiles"),
    ("v1alpha1.ClusterConfig", "extraManifests"),
    ("v1alpha1.ClusterConfig", "inlineManifests"),
];

const REPLACE: &[(&str, &str)] = &[
    ("v1alpha1.ClusterNetworkConfig", "podSubnets"),
    ("v1alpha1.ClusterNetworkConfig", "serviceSubnets"),
    ("v1alpha1.APIServerConfig", "auditPolicy"),
    ("network.RuleConfigV1Alpha1", "ingress"),
    ("network.RulePortSelector", "ports"),
];

const KEYED: &[(&str, &str, &str)] = &[
    ("v1alpha1.NetworkConfig", "interfaces", "interface"),
    ("v1alpha1.Device", "vlans", "vlanId"),
    ("v1alpha1.APIServerConfig", "admissionControl", "name"),
    (
        "extensions.ServiceConfigV1Alpha1",
        "configFiles",
        "mountPath",
    ),
];

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
    for (def, name, after, ty) in HIDDEN {
        let d = s.defs.entry(def.to_string()).or_default();
        if d.field(name).is_none() {
            let at = d.fields.iter().position(|f| f.name == *after);
            let at = at.map_or(d.fields.len(), |i| i + 1);
            d.fields.insert(at, field(name, ty()));
        }
    }
    apply_overlay(&mut s);
    s
}

fn field(name: &str, ty: Ty) -> Field {
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

fn apply_overlay(s: &mut Schema) {
    let mut set = |def: &str, name: &str, f: &dyn Fn(&mut Field)| {
        if let Some(field) = s
            .defs
            .get_mut(def)
            .and_then(|d| d.fields.iter_mut().find(|x| x.name == name))
        {
            f(field);
        }
    };
    for (def, fields) in NOT_OMITEMPTY {
        for (name, zero) in *fields {
            set(def, name, &|f| f.zero = Some(*zero));
        }
    }
    for (def, name) in VALUE_STRUCTS {
        set(def, name, &|f| f.value_struct = true);
    }
    for (def, name) in POINTER_SCALARS {
        set(def, name, &|f| f.pointer = true);
    }
    for name in BOND_POINTERS {
        set("network.BondConfigV1Alpha1", name, &|f| f.pointer = true);
    }
    for (def, name) in KEEP_EMPTY {
        set(def, name, &|f| f.keep_empty = true);
    }
    for (def, name) in REPLACE {
        set(def, name, &|f| f.merge = ListMerge::Replace);
    }
    for (def, name, key) in KEYED {
        set(def, name, &|f| f.merge = ListMerge::Keyed(key));
    }
    for (name, def) in s.defs.iter_mut() {
        let pointer_def = POINTER_DEFS.contains(&name.as_str());
        for f in &mut def.fields {
            // Talos booleans are `*bool`; PEM fields (`crt`, `key`) are written even when empty.
            if f.ty == Ty::Bool && !PLAIN_BOOLS.contains(&(name.as_str(), f.name.as_str())) {
                f.pointer = true;
            }
            if pointer_def {
                f.pointer = true;
            }
            // The schema describes `acceptedCAs` as one object; Go has a list of them.
            if f.name == "acceptedCAs" && matches!(f.ty, Ty::Obj(_)) {
                f.ty = Ty::List(Box::new(f.ty.clone()));
            }
            if f.name == "extraArgs" && name.starts_with("v1alpha1.") {
                f.args = true;
            }
            let pem = name.ends_with(".ca")
                || name.ends_with("CA")
                || name.ends_with("CAs")
                || name.ends_with(".serviceAccount")
                || name.ends_with(".clientIdentity");
            if pem && (f.name == "crt" || f.name == "key") {
                f.zero = Some(Zero::Str);
            }
        }
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
