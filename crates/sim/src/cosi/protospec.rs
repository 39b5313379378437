//! The `proto_spec` of a simulated resource: its spec encoded as the protobuf message Talos (or
//! COSI, for the `meta` namespace) marshals for that type, built from the same YAML spec the node
//! serves as `yaml_spec`, so both encodings always agree.

use std::net::IpAddr;

use prost::Message;
use serde_yaml_ng::Value;

use talm_wire::proto::common::{NetIp, NetIpPrefix};
use talm_wire::proto::cosi::resource::meta::{
    resource_definition_spec::{PrintColumn, Sensitivity},
    NamespaceSpec, ResourceDefinitionSpec,
};
use talm_wire::proto::resource::config::{MachineConfigSpec, MachineType, MachineTypeSpec};
use talm_wire::proto::talos::resource::definitions::block::{DiskSpec, SystemDiskSpec};
use talm_wire::proto::talos::resource::definitions::enums::{
    NethelpersDuplex as Duplex, NethelpersFamily as Family, NethelpersLinkType as LinkType,
    NethelpersOperationalState as OperState, NethelpersPort as Port,
    NethelpersRouteProtocol as Protocol, NethelpersRouteType as RouteType,
    NethelpersRoutingTable as Table, NethelpersScope as Scope,
};
use talm_wire::proto::talos::resource::definitions::network::{
    AddressStatusSpec, HostnameStatusSpec, LinkStatusSpec, NodeAddressSpec, ResolverStatusSpec,
    RouteStatusSpec,
};

pub(crate) fn text(v: &Value, key: &str) -> String {
    match v.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => String::new(),
    }
}

pub(crate) fn num(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

pub(crate) fn num32(v: &Value, key: &str) -> u32 {
    u32::try_from(num(v, key)).unwrap_or(u32::MAX)
}

pub(crate) fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub(crate) fn texts(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// `netip.Addr` as Talos encodes it; the zero address (empty text) is left out.
pub(crate) fn net_ip(s: &str) -> Option<NetIp> {
    s.parse::<IpAddr>()
        .ok()
        .map(|ip| NetIp { ip: ip_bytes(ip) })
}

/// `netip.Prefix` as Talos encodes it; the zero prefix (empty text) is left out.
fn net_prefix(s: &str) -> Option<NetIpPrefix> {
    let (ip, bits) = s.split_once('/')?;
    Some(NetIpPrefix {
        ip: ip_bytes(ip.parse().ok()?),
        prefix_length: bits.parse().ok()?,
    })
}

/// Colon-separated hex (`aa:bb:cc:dd:ee:ff`) as bytes.
fn hw_addr(s: &str) -> Vec<u8> {
    s.split(':')
        .filter_map(|b| u8::from_str_radix(b, 16).ok())
        .collect()
}

/// A comma-joined flag set (`UP,BROADCAST`) as the kernel's bits.
fn bits(s: &str, names: &[(&str, u32)]) -> u32 {
    s.split(',')
        .filter_map(|f| names.iter().find(|(n, _)| *n == f.trim()).map(|(_, b)| b))
        .fold(0, |acc, b| acc | b)
}

const LINK_FLAGS: &[(&str, u32)] = &[
    ("UP", 0x1),
    ("BROADCAST", 0x2),
    ("DEBUG", 0x4),
    ("LOOPBACK", 0x8),
    ("POINTTOPOINT", 0x10),
    ("NOTRAILERS", 0x20),
    ("RUNNING", 0x40),
    ("NOARP", 0x80),
    ("PROMISC", 0x100),
    ("ALLMULTI", 0x200),
    ("MASTER", 0x400),
    ("SLAVE", 0x800),
    ("MULTICAST", 0x1000),
    ("PORTSEL", 0x2000),
    ("AUTOMEDIA", 0x4000),
    ("DYNAMIC", 0x8000),
    ("LOWER_UP", 0x10000),
    ("DORMANT", 0x20000),
    ("ECHO", 0x40000),
];

const ADDRESS_FLAGS: &[(&str, u32)] = &[
    ("secondary", 0x1),
    ("nodad", 0x2),
    ("optimistic", 0x4),
    ("dadfailed", 0x8),
    ("homeaddress", 0x10),
    ("deprecated", 0x20),
    ("tentative", 0x40),
    ("permanent", 0x80),
    ("managetempaddr", 0x100),
    ("noprefixroute", 0x200),
    ("mcautojoin", 0x400),
    ("stableprivacy", 0x800),
];

fn family(s: &str) -> Family {
    match s {
        "inet4" => Family::FamilyInet4,
        "inet6" => Family::FamilyInet6,
        _ => Family::Unspecified,
    }
}

fn scope(s: &str) -> Scope {
    match s {
        "site" => Scope::ScopeSite,
        "link" => Scope::ScopeLink,
        "host" => Scope::ScopeHost,
        "nowhere" => Scope::ScopeNowhere,
        _ => Scope::ScopeGlobal,
    }
}

fn disk(v: &Value) -> Vec<u8> {
    DiskSpec {
        size: num(v, "size"),
        io_size: num(v, "io_size"),
        sector_size: num(v, "sector_size"),
        readonly: flag(v, "readonly"),
        model: text(v, "model"),
        serial: text(v, "serial"),
        modalias: text(v, "modalias"),
        wwid: text(v, "wwid"),
        bus_path: text(v, "bus_path"),
        sub_system: text(v, "sub_system"),
        transport: text(v, "transport"),
        rotational: flag(v, "rotational"),
        cdrom: flag(v, "cdrom"),
        dev_path: text(v, "dev_path"),
        pretty_size: text(v, "pretty_size"),
        secondary_disks: texts(v, "secondary_disks"),
        uuid: text(v, "uuid"),
        symlinks: texts(v, "symlinks"),
    }
    .encode_to_vec()
}

fn link(v: &Value) -> Vec<u8> {
    let link_type = match text(v, "type").as_str() {
        "ether" => LinkType::LinkEther,
        "loopback" => LinkType::LinkLoopbck,
        _ => LinkType::LinkNetrom,
    };
    let oper = match text(v, "operationalState").as_str() {
        "notPresent" => OperState::OperStateNotPresent,
        "down" => OperState::OperStateDown,
        "lowerLayerDown" => OperState::OperStateLowerLayerDown,
        "testing" => OperState::OperStateTesting,
        "dormant" => OperState::OperStateDormant,
        "up" => OperState::OperStateUp,
        _ => OperState::OperStateUnknown,
    };
    let port = match text(v, "port").as_str() {
        "AUI" => Port::Aui,
        "MII" => Port::Mii,
        "FIBRE" | "Fibre" => Port::Fibre,
        "BNC" => Port::Bnc,
        "DirectAttach" => Port::DirectAttach,
        "None" => Port::None,
        "Other" => Port::Other,
        _ => Port::TwistedPair,
    };
    let duplex = match text(v, "duplex").as_str() {
        "Half" => Duplex::Half,
        "Full" => Duplex::Full,
        _ => Duplex::Unknown,
    };
    LinkStatusSpec {
        index: num32(v, "index"),
        r#type: link_type as i32,
        link_index: num32(v, "linkIndex"),
        flags: bits(&text(v, "flags"), LINK_FLAGS),
        hardware_addr: hw_addr(&text(v, "hardwareAddr")),
        broadcast_addr: hw_addr(&text(v, "broadcastAddr")),
        mtu: num32(v, "mtu"),
        queue_disc: text(v, "queueDisc"),
        master_index: num32(v, "masterIndex"),
        operational_state: oper as i32,
        kind: text(v, "kind"),
        slave_kind: text(v, "slaveKind"),
        bus_path: text(v, "busPath"),
        pciid: text(v, "pciID"),
        driver: text(v, "driver"),
        driver_version: text(v, "driverVersion"),
        firmware_version: text(v, "firmwareVersion"),
        product_id: text(v, "productID"),
        vendor_id: text(v, "vendorID"),
        product: text(v, "product"),
        vendor: text(v, "vendor"),
        link_state: flag(v, "linkState"),
        speed_megabits: v.get("speedMbit").and_then(Value::as_i64).unwrap_or(0),
        port: port as i32,
        duplex: duplex as i32,
        permanent_addr: hw_addr(&text(v, "permanentAddr")),
        alias: text(v, "alias"),
        alt_names: texts(v, "altNames"),
    }
    .encode_to_vec()
}

fn address(v: &Value) -> Vec<u8> {
    AddressStatusSpec {
        address: net_prefix(&text(v, "address")),
        local: net_ip(&text(v, "local")),
        broadcast: net_ip(&text(v, "broadcast")),
        anycast: net_ip(&text(v, "anycast")),
        multicast: net_ip(&text(v, "multicast")),
        link_index: num32(v, "linkIndex"),
        link_name: text(v, "linkName"),
        family: family(&text(v, "family")) as i32,
        scope: scope(&text(v, "scope")) as i32,
        flags: bits(&text(v, "flags"), ADDRESS_FLAGS),
        priority: num32(v, "priority"),
    }
    .encode_to_vec()
}

fn route(v: &Value) -> Vec<u8> {
    let table = match text(v, "table").as_str() {
        "main" => Table::TableMain,
        "local" => Table::TableLocal,
        "default" => Table::TableDefault,
        _ => Table::TableUnspec,
    };
    let kind = match text(v, "type").as_str() {
        "unicast" => RouteType::TypeUnicast,
        "local" => RouteType::TypeLocal,
        "broadcast" => RouteType::TypeBroadcast,
        "anycast" => RouteType::TypeAnycast,
        "multicast" => RouteType::TypeMulticast,
        _ => RouteType::TypeUnspec,
    };
    let protocol = match text(v, "protocol").as_str() {
        "redirect" => Protocol::ProtocolRedirect,
        "kernel" => Protocol::ProtocolKernel,
        "boot" => Protocol::ProtocolBoot,
        "static" => Protocol::ProtocolStatic,
        "ra" => Protocol::ProtocolRa,
        "dhcp" => Protocol::ProtocolDhcp,
        _ => Protocol::ProtocolUnspec,
    };
    RouteStatusSpec {
        family: family(&text(v, "family")) as i32,
        destination: net_prefix(&text(v, "dst")),
        source: net_ip(&text(v, "src")),
        gateway: net_ip(&text(v, "gateway")),
        out_link_index: num32(v, "outLinkIndex"),
        out_link_name: text(v, "outLinkName"),
        table: table as i32,
        priority: num32(v, "priority"),
        scope: scope(&text(v, "scope")) as i32,
        r#type: kind as i32,
        flags: 0,
        protocol: protocol as i32,
        mtu: num32(v, "mtu"),
    }
    .encode_to_vec()
}

fn definition(v: &Value) -> Vec<u8> {
    let columns = v
        .get("printColumns")
        .and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .map(|c| PrintColumn {
                    name: text(c, "name"),
                    json_path: text(c, "jsonPath"),
                })
                .collect()
        })
        .unwrap_or_default();
    let sensitivity = if text(v, "sensitivity") == "sensitive" {
        Sensitivity::Sensitive
    } else {
        Sensitivity::NonSensitive
    };
    ResourceDefinitionSpec {
        resource_type: text(v, "type"),
        display_type: text(v, "displayType"),
        default_namespace: text(v, "defaultNamespace"),
        aliases: texts(v, "aliases"),
        all_aliases: texts(v, "allAliases"),
        print_columns: columns,
        sensitivity: sensitivity as i32,
    }
    .encode_to_vec()
}

/// The protobuf spec of a resource of type `ty` whose YAML spec is `spec`.
pub fn encode(ty: &str, spec: &Value) -> Vec<u8> {
    match ty {
        "Disks.block.talos.dev" => disk(spec),
        "SystemDisks.block.talos.dev" => SystemDiskSpec {
            disk_id: text(spec, "diskID"),
            dev_path: text(spec, "devPath"),
        }
        .encode_to_vec(),
        "LinkStatuses.net.talos.dev" => link(spec),
        "AddressStatuses.net.talos.dev" => address(spec),
        "RouteStatuses.net.talos.dev" => route(spec),
        "HostnameStatuses.net.talos.dev" => HostnameStatusSpec {
            hostname: text(spec, "hostname"),
            domainname: text(spec, "domainname"),
        }
        .encode_to_vec(),
        "NodeAddresses.net.talos.dev" => NodeAddressSpec {
            addresses: texts(spec, "addresses")
                .iter()
                .filter_map(|a| net_prefix(a))
                .collect(),
            sort_algorithm: i32::from(text(spec, "sortAlgorithm") == "v2"),
        }
        .encode_to_vec(),
        "ResolverStatuses.net.talos.dev" => ResolverStatusSpec {
            dns_servers: texts(spec, "dnsServers")
                .iter()
                .filter_map(|a| net_ip(a))
                .collect(),
            search_domains: texts(spec, "searchDomains"),
        }
        .encode_to_vec(),
        "MachineTypes.config.talos.dev" => {
            let t = match spec.as_str().unwrap_or("") {
                "init" => MachineType::Init,
                "controlplane" => MachineType::ControlPlane,
                "worker" => MachineType::Worker,
                _ => MachineType::Unknown,
            };
            MachineTypeSpec {
                machine_type: t as i32,
            }
            .encode_to_vec()
        }
        "MachineConfigs.config.talos.dev" => MachineConfigSpec {
            yaml_marshalled: spec.as_str().unwrap_or("").as_bytes().to_vec(),
        }
        .encode_to_vec(),
        "ResourceDefinitions.meta.cosi.dev" => definition(spec),
        "Namespaces.meta.cosi.dev" => NamespaceSpec {
            description: text(spec, "description"),
        }
        .encode_to_vec(),
        _ => crate::machined::changes::disks::proto_spec(ty, spec)
            .or_else(|| crate::machined::changes::meta::proto_spec(ty, spec))
            .or_else(|| crate::cosi::content::protospec::encode(ty, spec))
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    #[test]
    fn addresses_carry_kernel_numbers_and_binary_ips() {
        let b = encode(
            "AddressStatuses.net.talos.dev",
            &yaml("{address: 10.0.0.5/24, local: 10.0.0.5, linkIndex: 2, linkName: eth0, family: inet4, scope: global, flags: permanent}"),
        );
        // address=1 {ip=1 [10,0,0,5], prefix_length=2 24}, local=2 {ip=1 ...}, link_index=6,
        // link_name=7, family=8 (inet4 = 2), scope=9 (global = 0, left out), flags=10 (0x80).
        assert_eq!(
            b,
            [
                0x0a, 8, 0x0a, 4, 10, 0, 0, 5, 0x10, 24, 0x12, 6, 0x0a, 4, 10, 0, 0, 5, 0x30, 2,
                0x3a, 4, b'e', b't', b'h', b'0', 0x40, 2, 0x50, 0x80, 0x01
            ]
        );
    }

    #[test]
    fn link_flags_and_enums_follow_the_kernel() {
        let b = encode(
            "LinkStatuses.net.talos.dev",
            &yaml("{index: 1, type: loopback, flags: 'UP,LOOPBACK,RUNNING,LOWER_UP', hardwareAddr: '00:00:00:00:00:00', mtu: 65536, operationalState: unknown, port: Other, duplex: Unknown}"),
        );
        let spec = LinkStatusSpec::decode(b.as_slice()).unwrap();
        assert_eq!(spec.r#type, 772);
        assert_eq!(spec.flags, 0x1 | 0x8 | 0x40 | 0x10000);
        assert_eq!(spec.hardware_addr, [0; 6]);
        assert_eq!(spec.mtu, 65536);
        assert_eq!((spec.port, spec.duplex), (255, 255));
    }

    #[test]
    fn machine_type_and_definitions() {
        assert_eq!(
            encode(
                "MachineTypes.config.talos.dev",
                &Value::from("controlplane")
            ),
            [0x08, 2]
        );
        let d = ResourceDefinitionSpec::decode(
            encode(
                "ResourceDefinitions.meta.cosi.dev",
                &yaml("{type: MachineConfigs.config.talos.dev, displayType: MachineConfig, defaultNamespace: config, aliases: [mc], allAliases: [machineconfigs, mc], printColumns: [], sensitivity: sensitive}"),
            )
            .as_slice(),
        )
        .unwrap();
        assert_eq!(d.resource_type, "MachineConfigs.config.talos.dev");
        assert_eq!(d.sensitivity, Sensitivity::Sensitive as i32);
        assert_eq!(d.all_aliases, ["machineconfigs", "mc"]);
    }
}
