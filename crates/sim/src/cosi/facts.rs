//! The COSI resources a simulated node serves: discovery resources built from its hardware and
//! state (disks, links, addresses, routes, hostname, node addresses, resolvers, machine type and
//! config, system disk), the definitions of every type Talos registers (from `talm_wire`'s
//! registry) with talosctl's aliases, Talos's namespaces, and (from `content`) what Talos's
//! controllers fill for a running node.

use serde_yaml_ng::{Mapping, Value};

use crate::cosi::content::{self, Outside};
use crate::node::hardware::{pretty_size, Hardware};
use crate::node::state::State;

/// One resource: namespace, type, ID, owning controller, spec and its version.
#[derive(Debug, Clone)]
pub struct Res {
    pub namespace: &'static str,
    pub ty: &'static str,
    pub id: String,
    pub owner: &'static str,
    pub spec: Value,
    pub version: u64,
    /// `talos.dev/yaml-spec` style annotations.
    pub annotations: Vec<(String, String)>,
}

/// A resource type the node registers: its definition as Talos declares it.
pub use talm_wire::registry::Definition as Def;

/// The types a simulated node registers: every type Talos v1.13 registers, in its order.
pub fn defs() -> &'static [Def] {
    &talm_wire::registry::registry().types
}

pub fn find_def(ty: &str) -> Option<&'static Def> {
    talm_wire::registry::registry().find(ty)
}

/// A YAML mapping from pairs, in their order.
pub fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Mapping(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect::<Mapping>(),
    )
}

fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// talosctl's aliases of a definition: the singular name, its capital initials, the plural
/// type with its suffixes (only the declared ones where the definition skips the automatic).
fn all_aliases(d: &Def) -> (Vec<String>, Vec<String>) {
    if d.no_automatic_aliases {
        return (d.aliases.clone(), d.aliases.clone());
    }
    let (plural, suffix) = d.ty.split_once('.').unwrap_or((&d.ty, ""));
    // The declared aliases come first, then the singular name and the capitals' initials.
    let mut aliases = d.aliases.clone();
    aliases.push(d.display.to_ascii_lowercase());
    let initials: String = plural
        .chars()
        .filter(char::is_ascii_uppercase)
        .collect::<String>()
        .to_ascii_lowercase();
    if initials.len() > 1 {
        aliases.push(initials.clone());
        if !initials.ends_with('s') {
            aliases.push(format!("{initials}s"));
        }
    }
    // The plural, then the plural with each leading part of the suffix but the whole.
    let parts: Vec<&str> = suffix.split('.').filter(|p| !p.is_empty()).collect();
    let mut all = vec![plural.to_ascii_lowercase()];
    for i in 1..parts.len() {
        all.push(format!(
            "{}.{}",
            plural.to_ascii_lowercase(),
            parts[..i].join(".")
        ));
    }
    all.extend(aliases.iter().cloned());
    (aliases, all)
}

fn definition(d: &Def) -> Res {
    let (aliases, all) = all_aliases(d);
    let seq = |v: Vec<String>| Value::Sequence(v.into_iter().map(Value::String).collect());
    Res {
        namespace: "meta",
        ty: "ResourceDefinitions.meta.cosi.dev",
        id: d.ty.to_ascii_lowercase(),
        owner: "",
        spec: map(vec![
            ("type", s(&d.ty)),
            ("displayType", s(&d.display)),
            ("defaultNamespace", s(&d.namespace)),
            ("aliases", seq(aliases)),
            ("allAliases", seq(all)),
            (
                "printColumns",
                Value::Sequence(
                    d.columns
                        .iter()
                        .map(|(name, path)| map(vec![("name", s(name)), ("jsonPath", s(path))]))
                        .collect(),
                ),
            ),
            ("sensitivity", s(if d.sensitive { "sensitive" } else { "" })),
        ]),
        version: 1,
        annotations: vec![],
    }
}

fn res(
    namespace: &'static str,
    ty: &'static str,
    id: impl Into<String>,
    owner: &'static str,
    spec: Value,
) -> Res {
    Res {
        namespace,
        ty,
        id: id.into(),
        owner,
        spec,
        version: 1,
        annotations: vec![],
    }
}

fn family(cidr: &str) -> &'static str {
    if cidr.contains(':') {
        "inet6"
    } else {
        "inet4"
    }
}

/// Every resource of the node in its current state, with what it learns from `outside` (the
/// other nodes of its world, failing health checks).
pub fn all(hw: &Hardware, st: &State, outside: &Outside) -> Vec<Res> {
    let mut out: Vec<Res> = defs().iter().map(definition).collect();
    for ns in &talm_wire::registry::registry().namespaces {
        out.push(res(
            "meta",
            "Namespaces.meta.cosi.dev",
            ns.name.clone(),
            "",
            map(vec![("description", s(&ns.description))]),
        ));
    }
    disks(hw, &mut out);
    out.extend(crate::machined::changes::disks::resources(hw, st));
    out.extend(crate::machined::changes::meta::resources(st));
    network(hw, st, &mut out);
    if let Some(disk) = st.system_disk() {
        out.push(res(
            "runtime",
            "SystemDisks.block.talos.dev",
            "system-disk",
            "block.SystemDiskController",
            map(vec![
                ("diskID", s(disk.clone())),
                ("devPath", s(format!("/dev/{disk}"))),
            ]),
        ));
    }
    if let Some(cfg) = &st.config {
        out.push(res(
            "config",
            "MachineTypes.config.talos.dev",
            "machine-type",
            "config.MachineTypeController",
            s(cfg.machine_type()),
        ));
        out.push(Res {
            version: st.config_version,
            annotations: vec![("talos.dev/yaml-spec".into(), "1".into())],
            ..res(
                "config",
                "MachineConfigs.config.talos.dev",
                "v1alpha1",
                "",
                s(cfg.text()),
            )
        });
    }
    out.extend(content::all(&content::Ctx {
        hw,
        st,
        peers: &outside.peers,
        unhealthy: &outside.unhealthy,
        api: outside.api.as_ref(),
    }));
    out
}

fn disks(hw: &Hardware, out: &mut Vec<Res>) {
    for (i, d) in hw.disks.iter().enumerate() {
        let mut spec = vec![
            ("dev_path", s(format!("/dev/{}", d.name))),
            ("size", Value::from(d.size)),
            ("pretty_size", s(pretty_size(d.size))),
            ("io_size", Value::from(512u64)),
            ("sector_size", Value::from(512u64)),
            ("readonly", Value::from(d.readonly)),
            ("cdrom", Value::from(d.cdrom)),
        ];
        for (k, v) in [
            ("model", &d.model),
            ("serial", &d.serial),
            ("wwid", &d.wwid),
        ] {
            if !v.is_empty() {
                spec.push((k, s(v.clone())));
            }
        }
        let mut links = Vec::new();
        if !d.transport.is_empty() {
            spec.push((
                "bus_path",
                s(format!(
                    "/pci0000:00/0000:00:{:02x}.0/{}",
                    crate::world::pci::disk_slot(i),
                    d.name
                )),
            ));
            spec.push(("sub_system", s("/sys/class/block")));
            spec.push(("transport", s(d.transport.clone())));
            links.push(s(format!(
                "/dev/disk/by-path/pci-0000:00:{:02x}.0",
                crate::world::pci::disk_slot(i)
            )));
        }
        if !d.wwid.is_empty() {
            let prefix = if d.transport == "nvme" { "nvme" } else { "wwn" };
            links.push(s(format!("/dev/disk/by-id/{prefix}-{}", d.wwid)));
        }
        // `omitempty`: Talos prints `rotational` only for spinning disks.
        if d.rotational {
            spec.push(("rotational", Value::from(true)));
        }
        if !links.is_empty() {
            spec.push(("symlinks", Value::Sequence(links)));
        }
        out.push(res(
            "runtime",
            "Disks.block.talos.dev",
            d.name.clone(),
            "block.DisksController",
            map(spec),
        ));
    }
}

fn network(hw: &Hardware, st: &State, out: &mut Vec<Res>) {
    out.push(res(
        "network",
        "LinkStatuses.net.talos.dev",
        "lo",
        "network.LinkStatusController",
        // Every field without `omitempty` is printed; ethtool knows lo's link state only.
        map(vec![
            ("index", Value::from(1u64)),
            ("type", s("loopback")),
            ("linkIndex", Value::from(0u64)),
            ("flags", s("UP,LOOPBACK,RUNNING,LOWER_UP")),
            ("hardwareAddr", s("00:00:00:00:00:00")),
            ("permanentAddr", s("")),
            ("broadcastAddr", s("00:00:00:00:00:00")),
            ("mtu", Value::from(65536u64)),
            ("queueDisc", s("noqueue")),
            ("operationalState", s("unknown")),
            ("kind", s("")),
            ("slaveKind", s("")),
            ("linkState", Value::from(true)),
            ("port", s("Other")),
            ("duplex", s("Unknown")),
        ]),
    ));
    let mut global: Vec<String> = Vec::new();
    for (i, l) in hw.links.iter().enumerate() {
        let index = (i + 2) as u64;
        let physical = !l.bus_path.is_empty();
        let mut spec = vec![
            ("index", Value::from(index)),
            ("type", s("ether")),
            ("linkIndex", Value::from(0u64)),
            (
                "flags",
                s(if l.up {
                    "UP,BROADCAST,RUNNING,MULTICAST,LOWER_UP"
                } else {
                    "BROADCAST,MULTICAST"
                }),
            ),
            ("hardwareAddr", s(l.mac.clone())),
            ("permanentAddr", s(l.mac.clone())),
            ("broadcastAddr", s("ff:ff:ff:ff:ff:ff")),
            ("mtu", Value::from(u64::from(l.mtu))),
            ("queueDisc", s("pfifo_fast")),
            ("operationalState", s(if l.up { "up" } else { "down" })),
            ("kind", s("")),
            ("slaveKind", s("")),
        ];
        if physical {
            // In LinkStatusSpec's order: bus, PCI ID, driver, IDs, product, vendor.
            spec.extend([
                ("busPath", s(l.bus_path.clone())),
                ("pciID", s("1AF4:1000")),
                ("driver", s(l.driver.clone())),
                ("driverVersion", s("1.0.0")),
                ("productID", s("0x1000")),
                ("vendorID", s("0x1af4")),
                ("product", s("Virtio network device")),
                ("vendor", s("Red Hat, Inc.")),
            ]);
        }
        spec.extend([
            ("linkState", Value::from(l.up)),
            ("port", s("Other")),
            ("duplex", s("Unknown")),
        ]);
        out.push(res(
            "network",
            "LinkStatuses.net.talos.dev",
            l.name.clone(),
            "network.LinkStatusController",
            map(spec),
        ));
        for cidr in &l.addresses {
            let local = cidr.split('/').next().unwrap_or(cidr).to_string();
            global.push(cidr.clone());
            out.push(res(
                "network",
                "AddressStatuses.net.talos.dev",
                format!("{}/{cidr}", l.name),
                "network.AddressStatusController",
                map(address_spec(cidr, &local, index, &l.name, "global", 1024)),
            ));
        }
    }
    for (id, cidr) in [("lo/127.0.0.1/8", "127.0.0.1/8"), ("lo/::1/128", "::1/128")] {
        out.push(res(
            "network",
            "AddressStatuses.net.talos.dev",
            id,
            "network.AddressStatusController",
            map(address_spec(
                cidr,
                cidr.split('/').next().unwrap_or(cidr),
                1,
                "lo",
                "host",
                0,
            )),
        ));
    }
    routes(hw, out);
    let seq = |v: &[String]| Value::Sequence(v.iter().cloned().map(Value::String).collect());
    let first: Vec<String> = global.iter().take(1).cloned().collect();
    for (id, addrs) in [
        ("default", &first),
        ("current", &global),
        ("routed", &global),
        ("accumulative", &global),
    ] {
        out.push(res(
            "network",
            "NodeAddresses.net.talos.dev",
            id,
            "network.NodeAddressController",
            map(vec![("addresses", seq(addrs)), ("sortAlgorithm", s("v1"))]),
        ));
    }
    out.push(res(
        "network",
        "ResolverStatuses.net.talos.dev",
        "resolvers",
        "network.ResolverSpecController",
        map(vec![
            ("dnsServers", seq(&hw.resolvers)),
            ("searchDomains", Value::Sequence(vec![])),
        ]),
    ));
    if let Some(h) = st.hostname(hw) {
        out.push(res(
            "network",
            "HostnameStatuses.net.talos.dev",
            "hostname",
            "network.HostnameStatusController",
            map(vec![("hostname", s(h)), ("domainname", s(""))]),
        ));
    }
}

/// An AddressStatus spec in Go's field order: the broadcast address (IPv4 with room for one)
/// only where the kernel has one, `priority` always.
fn address_spec<'a>(
    cidr: &str,
    local: &str,
    link_index: u64,
    link: &str,
    scope: &str,
    priority: u64,
) -> Vec<(&'a str, Value)> {
    let mut spec = vec![("address", s(cidr)), ("local", s(local))];
    let bits: u32 = cidr
        .split_once('/')
        .and_then(|(_, b)| b.parse().ok())
        .unwrap_or(32);
    if family(cidr) == "inet4" && link != "lo" && bits < 31 {
        if let Ok(ip) = local.parse::<std::net::Ipv4Addr>() {
            let broadcast = u32::from(ip) | (u32::MAX >> bits);
            spec.push((
                "broadcast",
                s(std::net::Ipv4Addr::from(broadcast).to_string()),
            ));
        }
    }
    spec.extend([
        ("linkIndex", Value::from(link_index)),
        ("linkName", s(link)),
        ("family", s(family(cidr))),
        ("scope", s(scope)),
        ("flags", s("permanent")),
        ("priority", Value::from(priority)),
    ]);
    spec
}

fn routes(hw: &Hardware, out: &mut Vec<Res>) {
    let owner = "network.RouteStatusController";
    for (i, l) in hw.links.iter().enumerate() {
        let index = Value::from((i + 2) as u64);
        for cidr in l.addresses.iter().filter(|c| family(c) == "inet4") {
            let src = cidr.split('/').next().unwrap_or(cidr).to_string();
            if let Some(net) = talm_base::netip::cidr_network(cidr) {
                out.push(res(
                    "network",
                    "RouteStatuses.net.talos.dev",
                    format!("inet4//{net}/1024"),
                    owner,
                    map(vec![
                        ("family", s("inet4")),
                        ("dst", s(net)),
                        ("src", s(src.clone())),
                        ("gateway", s("")),
                        ("outLinkIndex", index.clone()),
                        ("outLinkName", s(l.name.clone())),
                        ("table", s("main")),
                        ("priority", Value::from(1024u64)),
                        ("scope", s("link")),
                        ("type", s("unicast")),
                        ("flags", s("")),
                        ("protocol", s("kernel")),
                    ]),
                ));
            }
            if i == 0 && !hw.gateway.is_empty() {
                out.push(res(
                    "network",
                    "RouteStatuses.net.talos.dev",
                    format!("inet4/{}//1024", hw.gateway),
                    owner,
                    map(vec![
                        ("family", s("inet4")),
                        ("dst", s("")),
                        ("src", s(src)),
                        ("gateway", s(hw.gateway.clone())),
                        ("outLinkIndex", index.clone()),
                        ("outLinkName", s(l.name.clone())),
                        ("table", s("main")),
                        ("priority", Value::from(1024u64)),
                        ("scope", s("global")),
                        ("type", s("unicast")),
                        ("flags", s("")),
                        ("protocol", s("dhcp")),
                    ]),
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_follow_cosi() {
        // COSI's own vector for its ResourceDefinitions.
        let (_, all) = all_aliases(find_def("ResourceDefinitions.meta.cosi.dev").unwrap());
        assert_eq!(
            all,
            [
                "resourcedefinitions",
                "resourcedefinitions.meta",
                "resourcedefinitions.meta.cosi",
                "api-resources",
                "resourcedefinition",
                "rd",
                "rds"
            ]
        );
        let d = find_def("LinkStatuses.net.talos.dev").unwrap();
        let (aliases, all) = all_aliases(d);
        assert_eq!(aliases, ["link", "links", "linkstatus", "ls"]);
        let (aliases, _) = all_aliases(find_def("MachineConfigs.config.talos.dev").unwrap());
        assert_eq!(aliases, ["machineconfig", "mc", "mcs"]);
        assert_eq!(
            &all[..3],
            ["linkstatuses", "linkstatuses.net", "linkstatuses.net.talos"]
        );
    }

    #[test]
    fn every_registered_type_is_defined_and_skipped_aliases_stay_declared_only() {
        let (aliases, every) = all_aliases(find_def("MountStatuses.runtime.talos.dev").unwrap());
        assert_eq!(
            (aliases, every),
            (vec!["mounts".into()], vec!["mounts".into()])
        );
        let (aliases, _) = all_aliases(find_def("Services.v1alpha1.talos.dev").unwrap());
        assert_eq!(aliases, ["svc", "service"]);
        let node = all(
            &Hardware::default_for("127.0.0.11".parse().unwrap()),
            &State::new("v1.13.7", "n"),
            &Outside::default(),
        );
        let of = |ty: &str| node.iter().filter(|r| r.ty == ty).count();
        assert_eq!(of("ResourceDefinitions.meta.cosi.dev"), defs().len());
        assert_eq!(of("Namespaces.meta.cosi.dev"), 17);
        let rd = node
            .iter()
            .find(|r| r.id == "nodenames.kubernetes.talos.dev")
            .unwrap();
        assert_eq!(rd.spec["defaultNamespace"], "k8s");
        assert_eq!(rd.spec["printColumns"][0]["jsonPath"], "{.nodename}");
    }
}
