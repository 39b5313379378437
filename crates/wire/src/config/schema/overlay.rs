//! The Go facts Talos's JSON schemas do not carry, laid over the type tree: hidden fields,
//! fields without `omitempty` and their zero text, value structs, pointers, lists kept when
//! empty, and how lists merge (`merge:"replace"`, keyed lists).

use super::{field, Field, ListMerge, Schema, Ty, Zero, LEGACY};

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

/// Adds the hidden fields and sets the Go facts on the schema's fields.
pub(super) fn apply(s: &mut Schema) {
    for (def, name, after, ty) in HIDDEN {
        let d = s.defs.entry(def.to_string()).or_default();
        if d.field(name).is_none() {
            let at = d.fields.iter().position(|f| f.name == *after);
            let at = at.map_or(d.fields.len(), |i| i + 1);
            d.fields.insert(at, field(name, ty()));
        }
    }
    apply_overlay(s);
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
