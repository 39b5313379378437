//! The print columns Talos v1.13 declares in the resource definitions of the types the
//! simulator serves (name, JSONPath over the spec), so `talosctl get` shows the same columns.

/// The print columns of `ty`, in order (none for types Talos declares none for).
pub fn of(ty: &str) -> &'static [(&'static str, &'static str)] {
    match ty {
        "Disks.block.talos.dev" => &[
            ("Size", "{.pretty_size}"),
            ("Read Only", "{.readonly}"),
            ("Transport", "{.transport}"),
            ("Rotational", "{.rotational}"),
            ("WWID", "{.wwid}"),
            ("Model", "{.model}"),
            ("Serial", "{.serial}"),
        ],
        "SystemDisks.block.talos.dev" => &[("Disk", "{.diskID}")],
        "LinkStatuses.net.talos.dev" => &[
            ("Alias", "{.alias}"),
            ("Type", "{.type}"),
            ("Kind", "{.kind}"),
            ("Hw Addr", "{.hardwareAddr}"),
            ("Oper State", "{.operationalState}"),
            ("Link State", "{.linkState}"),
        ],
        "AddressStatuses.net.talos.dev" => &[("Address", "{.address}"), ("Link", "{.linkName}")],
        "RouteStatuses.net.talos.dev" => &[
            ("Destination", "{.dst}"),
            ("Gateway", "{.gateway}"),
            ("Link", "{.outLinkName}"),
            ("Metric", "{.priority}"),
        ],
        "HostnameStatuses.net.talos.dev" => {
            &[("Hostname", "{.hostname}"), ("Domainname", "{.domainname}")]
        }
        "NodeAddresses.net.talos.dev" => &[
            ("Addresses", "{.addresses}"),
            ("SortAlgorithm", "{.sortAlgorithm}"),
        ],
        "ResolverStatuses.net.talos.dev" => &[
            ("Resolvers", "{.dnsServers}"),
            ("Search Domains", "{.searchDomains}"),
        ],
        "MachineTypes.config.talos.dev" => &[("Type", "{@}")],
        "DiscoveredVolumes.block.talos.dev" => &[
            ("Type", "{.type}"),
            ("Size", "{.pretty_size}"),
            ("Discovered", "{.name}"),
            ("Label", "{.label}"),
            ("PartitionLabel", "{.partition_label}"),
        ],
        "MetaKeys.runtime.talos.dev" => &[("Value", "{.value}")],
        "ResourceDefinitions.meta.cosi.dev" => &[("Aliases", "{.aliases[:]}")],
        _ => &[],
    }
}
