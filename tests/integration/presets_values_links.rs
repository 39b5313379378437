//! network.extraLinks and vips through the binary (values-mapping.md §4.5, §5–§7): combining
//! with discovery in both formats, VIP placement, and every R*/V* refusal with its message.

use crate::common::values::*;

const BASE: &str = "advertisedSubnets: [192.0.2.0/24]\n";

fn v(extra: &str) -> String {
    format!("{BASE}{extra}\n")
}

/// The §9 node plus a VLAN enp4s0.100 discovered on enp4s0.
fn vlan_facts() -> String {
    BOND_FACTS.replace(
        "    routes:\n",
        "        - metadata: {id: enp4s0.100}\n          spec: {kind: vlan, index: 7, linkIndex: 4, vlan: {vlanID: 100}}\n    routes:\n",
    )
}

#[test]
fn refusals_on_values_alone() {
    let d = project("cozystack", BOND_FACTS);
    let modes =
        "balance-rr, active-backup, balance-xor, broadcast, 802.3ad, balance-tlb or balance-alb";
    let cases: Vec<(String, String, String)> = vec![
        ("[{interface: bond0, bond: {interfaces: [enp4s0]}}]".into(),
         format!("values.yaml: network.extraLinks[0].bond.mode is missing (BondConfig \"bond0\"); Talos requires a bond mode: {modes}."), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp4s0], mode: fast-rr}}]".into(),
         format!("values.yaml: network.extraLinks[0].bond.mode=\"fast-rr\" (BondConfig \"bond0\") is not a bond mode Talos accepts; use {modes}."), String::new()),
        ("[{interface: enp5s0, vlans: [{vlanId: 10}, {vlanId: 1.5}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[1].vlanId=1.5 (interface \"enp5s0\") must be a whole number from 1 to 4094.".into(), String::new()),
        ("[{interface: enp5s0, vlans: [{vlanId: 4095}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[0].vlanId=4095 (interface \"enp5s0\") must be a whole number from 1 to 4094.".into(), String::new()),
        ("[{interface: enp5s0, vlans: [{mtu: 1500}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[0].vlanId=<nil> (interface \"enp5s0\") must be a whole number from 1 to 4094.".into(), String::new()),
        ("[{interface: dummy0, addresses: [192.0.2.300/24]}]".into(),
         "values.yaml: network.extraLinks[0].addresses[0]=\"192.0.2.300/24\" (LinkConfig \"dummy0\") is not an IP prefix; write ADDRESS/PREFIXLEN, e.g. 192.0.2.10/24.".into(),
         "values.yaml: network.extraLinks[0].addresses[0]=\"192.0.2.300/24\" (machine.network.interfaces \"dummy0\") is not an IP prefix".into()),
        ("[{interface: enp5s0, vlans: [{vlanId: 5, addresses: [10.1.0.1]}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[0].addresses[0]=\"10.1.0.1\" (VLANConfig \"enp5s0.5\") is not an IP prefix".into(), String::new()),
        ("[{interface: enp5s0, routes: [{gateway: 10.0.0.1, destination: 10.9.0.0/33}]}]".into(),
         "values.yaml: network.extraLinks[0].routes[0].destination=\"10.9.0.0/33\" (LinkConfig \"enp5s0\") is not an IP prefix".into(), String::new()),
        ("[{interface: enp5s0, mtu: 67}]".into(),
         "values.yaml: network.extraLinks[0].mtu=67 (LinkConfig \"enp5s0\") is outside the kernel's 68-65535 range.".into(),
         "values.yaml: network.extraLinks[0].mtu=67 (machine.network.interfaces \"enp5s0\") is outside".into()),
        ("[{interface: enp5s0, vlans: [{vlanId: 3, mtu: 9000.5}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[0].mtu=9000.5 (VLANConfig \"enp5s0.3\") is outside the kernel's 68-65535 range.".into(), String::new()),
        ("[{interface: enp5s0, routes: [{destination: 10.9.0.0/16}]}]".into(),
         "values.yaml: network.extraLinks[0].routes[0] (LinkConfig \"enp5s0\") has no gateway; every route needs one (omit destination for a default route).".into(), String::new()),
        ("[{interface: enp5s0, routes: [{gateway: gw.example}]}]".into(),
         "values.yaml: network.extraLinks[0].routes[0].gateway=\"gw.example\" (LinkConfig \"enp5s0\") is not an IP address.".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp4s0], mode: active-backup, primary: enp4s0}}]".into(),
         "values.yaml: network.extraLinks[0].bond.primary=enp4s0 (BondConfig \"bond0\"): unknown bond option".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp4s0], mode: 802.3ad, lacpRate: medium}}]".into(),
         "values.yaml: network.extraLinks[0].bond.lacpRate=medium (BondConfig \"bond0\"): must be one of slow, fast".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp4s0], mode: 802.3ad, miimon: 1.5}}]".into(),
         "values.yaml: network.extraLinks[0].bond.miimon=1.5 (BondConfig \"bond0\"): must be a whole number >= 0".into(), String::new()),
        ("[{interface: enp5s0, mtu: 1500}, {interface: enp5s0, mtu: 9000}]".into(),
         "values.yaml: network.extraLinks[1].interface=\"enp5s0\" repeats network.extraLinks[0].".into(), String::new()),
        ("[{interface: enp5s0, vlans: [{vlanId: 7}, {vlanId: 7.0}]}]".into(),
         "values.yaml: network.extraLinks[0].vlans[1].vlanId=7 repeats vlans[0].".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp4s0], mode: active-backup}}, {interface: bond1, bond: {interfaces: [enp4s0], mode: active-backup}}]".into(),
         "values.yaml: network.extraLinks[1].bond.interfaces: \"enp4s0\" is a member of both \"bond0\" and \"bond1\".".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [enp5s0], mode: active-backup}}, {interface: enp5s0, mtu: 1500}]".into(),
         "values.yaml: network.extraLinks[0].bond.interfaces: \"enp5s0\" is both a bond member and a declared link.".into(), String::new()),
        ("[{interface: bond0, bond: {interfaces: [], mode: active-backup}}]".into(),
         "values.yaml: network.extraLinks[0].bond.interfaces is empty.".into(), String::new()),
    ];
    for (links, multi, legacy) in cases {
        let values = v(&format!("network: {{extraLinks: {links}}}"));
        refused(&d, "controlplane", "v1.12", &values, &multi);
        let legacy = if legacy.is_empty() {
            multi
                .replace("(LinkConfig ", "(machine.network.interfaces ")
                .replace("(VLANConfig ", "(machine.network.interfaces ")
        } else {
            legacy
        };
        refused(&d, "worker", "v1.11", &values, &legacy);
    }
}

#[test]
fn vip_addresses_are_refused_as_static_addresses() {
    let d = project("generic", BOND_FACTS);
    let values = v("floatingIP: 192.0.2.100\nvips: [{link: enp5s0, ip: 10.0.0.50}]\nnetwork: {extraLinks: [{interface: dummy0, addresses: [192.0.2.100/32]}]}");
    let msg = "values.yaml: network.extraLinks[0].addresses[0]=\"192.0.2.100/32\" (LinkConfig \"dummy0\") is also declared as a VIP (floatingIP); a VIP belongs to its Layer2VIPConfig only — pinning it statically as well puts the VIP leader and its followers out of sync. Remove it from addresses.";
    refused(&d, "worker", "v1.12", &values, msg);
    let values = v("vips: [{link: enp5s0, ip: 10.0.0.50}]\nnetwork: {extraLinks: [{interface: enp5s0, vlans: [{vlanId: 9, addresses: [10.0.0.50/24]}]}]}");
    refused(&d, "controlplane", "v1.11", &values,
        "values.yaml: network.extraLinks[0].vlans[0].addresses[0]=\"10.0.0.50/24\" (machine.network.interfaces \"enp5s0.9\") is also declared as a VIP (vips[0]);");
}

#[test]
fn refusals_that_need_discovery() {
    let d = project("cozystack", BOND_FACTS);
    let r3 = "values.yaml: network.extraLinks[0].vlans[0] (VLANConfig \"enp9s0.5\"): parent link \"enp9s0\" exists nowhere — it is neither discovered on the node (or it becomes a bond member) nor declared with addresses or a bond in network.extraLinks.";
    let r9 = "values.yaml: network.extraLinks[0] (BondConfig \"bond0\"): member \"enp3s0\" carries addresses [\"192.0.2.10/24\"], which it loses as a bond slave; restate them under network.extraLinks[0].addresses.";
    let r10 = "values.yaml: network.extraLinks[0] (BondConfig \"bond0\"): member \"enp3s0\" carries the node's default route via 192.0.2.1, which it loses as a bond slave; add routes: [{gateway: 192.0.2.1}] to network.extraLinks[0].";
    let v11 = "values.yaml: network.extraLinks[0] declares bond \"enp5s0\", but the node already has a physical link of that name.";
    for talos in ["v1.11", "v1.12", "v1.13"] {
        refused(
            &d,
            "controlplane",
            talos,
            &v("network: {extraLinks: [{interface: enp9s0, vlans: [{vlanId: 5}]}]}"),
            r3,
        );
        refused(&d, "worker", talos, &v("network: {extraLinks: [{interface: bond0, bond: {interfaces: [enp3s0, enp4s0], mode: active-backup}}]}"), r9);
        refused(&d, "worker", talos, &v("network: {extraLinks: [{interface: bond0, addresses: [192.0.2.10/24], routes: [{gateway: 192.0.2.9, destination: 198.51.100.0/24}], bond: {interfaces: [enp3s0], mode: active-backup}}]}"), r10);
        refused(&d, "worker", talos, &v("network: {extraLinks: [{interface: enp5s0, addresses: [10.0.0.5/24], bond: {interfaces: [enp4s0], mode: active-backup}}]}"), v11);
    }
    // A VLAN on a link that becomes a bond member: R3 (the member is no parent any more).
    refused(&d, "worker", "v1.12", &v("network: {extraLinks: [{interface: bond0, bond: {interfaces: [enp4s0], mode: active-backup}}, {interface: enp4s0, vlans: [{vlanId: 5}]}]}"),
        "values.yaml: network.extraLinks[0].bond.interfaces: \"enp4s0\" is both a bond member and a declared link.");
    // A discovered VLAN on a new member must be redeclared on the bond (V14).
    let d = project("cozystack", &vlan_facts());
    let bond = "{interface: bond0, bond: {interfaces: [enp4s0], mode: active-backup}";
    let v14 = "values.yaml: network.extraLinks[0] (BondConfig \"bond0\"): discovered VLAN \"enp4s0.100\" sits on member \"enp4s0\"; redeclare it under network.extraLinks[0].vlans.";
    refused(
        &d,
        "worker",
        "v1.12",
        &v(&format!("network: {{extraLinks: [{bond}}}]}}")),
        v14,
    );
    let o = render(
        &d,
        "worker",
        "v1.12",
        &v(&format!(
            "network: {{extraLinks: [{bond}, vlans: [{{vlanId: 100}}]}}]}}"
        )),
    );
    schema_check(&o);
    let vlans = kind(&o, "VLANConfig");
    assert_eq!(vlans.len(), 1);
    assert_eq!(
        vlans[0],
        &y("{apiVersion: v1alpha1, kind: VLANConfig, name: bond0.100, vlanID: 100, parent: bond0}")
    );
    assert!(kind(&o, "LinkConfig").iter().all(|l| l["name"] != "enp4s0"));
}

#[test]
fn multidoc_merges_in_place_and_appends_in_order() {
    for preset in ["cozystack", "generic"] {
        let d = project(preset, BOND_FACTS);
        let values = v("network:\n  extraLinks:\n    - {interface: dummy0, addresses: [\"2001:DB8::1/64\"], vlans: [{vlanId: 3}]}\n    - {interface: enp5s0, addresses: [10.0.0.6/24], mtu: 1500, vlans: [{vlanId: 20, routes: [{gateway: 10.20.0.1}]}]}\n    - {interface: enp3s0, mtu: 9000}\n    - {interface: enp4s0, vlans: [{vlanId: 30, mtu: 1400}]}");
        for talos in ["v1.12", "v1.13"] {
            let o = render(&d, "controlplane", talos, &values);
            schema_check(&o);
            let links: Vec<_> = o
                .iter()
                .skip(1)
                .filter(|x| {
                    x["name"].is_string()
                        && x["kind"] != "HostnameConfig"
                        && x["kind"] != "RegistryMirrorConfig"
                })
                .map(|x| x["name"].as_str().unwrap().to_string())
                .collect();
            assert_eq!(
                links,
                [
                    "enp3s0",
                    "enp4s0",
                    "enp5s0",
                    "dummy0",
                    "dummy0.3",
                    "enp5s0.20",
                    "enp4s0.30"
                ],
                "{preset}"
            );
            let doc = |n: &str| o.iter().find(|x| x["name"] == n).unwrap().clone();
            assert_eq!(doc("enp3s0"), y("{apiVersion: v1alpha1, kind: LinkConfig, name: enp3s0, addresses: [{address: 192.0.2.10/24}], routes: [{gateway: 192.0.2.1}], mtu: 9000}"));
            assert_eq!(doc("enp5s0"), y("{apiVersion: v1alpha1, kind: LinkConfig, name: enp5s0, addresses: [{address: 10.0.0.6/24}], mtu: 1500}"));
            assert_eq!(doc("dummy0"), y("{apiVersion: v1alpha1, kind: LinkConfig, name: dummy0, addresses: [{address: \"2001:db8::1/64\"}]}"));
            assert_eq!(doc("enp5s0.20"), y("{apiVersion: v1alpha1, kind: VLANConfig, name: enp5s0.20, vlanID: 20, parent: enp5s0, routes: [{gateway: 10.20.0.1}]}"));
            assert_eq!(doc("enp4s0.30"), y("{apiVersion: v1alpha1, kind: VLANConfig, name: enp4s0.30, vlanID: 30, parent: enp4s0, mtu: 1400}"));
        }
    }
}

#[test]
fn legacy_items_merge_and_copy_discovery() {
    let d = project("generic", BOND_FACTS);
    let values = v("network:\n  extraLinks:\n    - {interface: enp3s0, mtu: 9000, vlans: [{vlanId: 10, addresses: [10.10.0.2/24]}]}\n    - {interface: enp5s0, vlans: [{vlanId: 20}]}\n    - {interface: bond1, bond: {interfaces: [enp4s0], mode: active-backup, arpIpTargets: [192.0.2.1], useCarrier: true}, routes: [{gateway: \"2001:db8::1\"}]}");
    let o = render(&d, "worker", "v1.11", &values);
    assert_eq!(
        o[0]["machine"]["network"]["interfaces"],
        y("- {interface: enp3s0, addresses: [192.0.2.10/24], routes: [{network: 0.0.0.0/0, gateway: 192.0.2.1}], mtu: 9000, vlans: [{vlanId: 10, addresses: [10.10.0.2/24]}]}\n- {interface: enp5s0, addresses: [10.0.0.5/24], mtu: 9000, vlans: [{vlanId: 20}]}\n- {interface: bond1, bond: {interfaces: [enp4s0], mode: active-backup, arpIPTarget: [192.0.2.1], useCarrier: true}, routes: [{network: \"::/0\", gateway: \"2001:db8::1\"}]}")
    );
    schema_check(&o);
}

#[test]
fn legacy_running_config_items_merge() {
    let facts = format!(
        "{BOND_FACTS}    machineconfig:\n        - metadata: {{id: v1alpha1}}\n          spec: {{machine: {{network: {{interfaces: [{{interface: enp3s0, dhcp: true}}, {{interface: enp4s0, addresses: [10.4.0.1/24]}}]}}}}}}\n"
    );
    let d = project("generic", &facts);
    let values = v("floatingIP: 192.0.2.100\nvipLink: enp3s0\nnetwork: {extraLinks: [{interface: enp3s0, mtu: 1450}, {interface: bond0, addresses: [10.4.0.1/24], bond: {interfaces: [enp4s0], mode: balance-rr}}]}");
    let o = render(&d, "controlplane", "v1.11", &values);
    assert_eq!(
        o[0]["machine"]["network"]["interfaces"],
        y("- {interface: enp3s0, dhcp: true, mtu: 1450, vip: {ip: 192.0.2.100}}\n- {interface: bond0, addresses: [10.4.0.1/24], bond: {interfaces: [enp4s0], mode: balance-rr}}")
    );
}

#[test]
fn vips_in_both_formats() {
    let d = project("cozystack", GOLDEN_FACTS);
    let base = "advertisedSubnets: [192.168.1.0/24]\n";
    let values = format!("{base}floatingIP: 192.168.201.5\nvips: [{{link: eth0, ip: \"2001:DB8::5\"}}, {{link: eth1, ip: 10.1.0.5}}, {{link: eth0, ip: 192.168.201.10}}]\n");
    for talos in ["v1.12", "v1.13"] {
        let o = render(&d, "controlplane", talos, &values);
        schema_check(&o);
        let vips: Vec<_> = kind(&o, "Layer2VIPConfig")
            .iter()
            .map(|x| {
                format!(
                    "{}@{}",
                    x["name"].as_str().unwrap(),
                    x["link"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(
            vips,
            [
                "192.168.201.5@eth0",
                "2001:db8::5@eth0",
                "10.1.0.5@eth1",
                "192.168.201.10@eth0"
            ]
        );
        // A VIP is no static address (eth0 loses 192.168.201.10), on workers as well.
        for machine in ["controlplane", "worker"] {
            let o = render(&d, machine, talos, &values);
            assert!(
                kind(&o, "LinkConfig")[0]["addresses"].is_null(),
                "{machine}"
            );
        }
        let w = render(&d, "worker", talos, &values);
        assert!(kind(&w, "Layer2VIPConfig").is_empty());
        // An entry equal to floatingIP pins its link: one document, in the override slot.
        let o = render(
            &d,
            "controlplane",
            talos,
            &format!("{base}floatingIP: 192.168.201.5\nvips: [{{link: br0, ip: 192.168.201.5}}]\n"),
        );
        let ks = kinds(&o);
        assert_eq!(ks.iter().filter(|k| *k == "Layer2VIPConfig").count(), 1);
        let at = ks.iter().position(|k| k == "Layer2VIPConfig").unwrap();
        assert_eq!(ks[at + 1], "LinkConfig");
        assert_eq!(kind(&o, "Layer2VIPConfig")[0]["link"], "br0");
    }
    // Legacy: floatingIP inline on the default-route link, other VIPs on their links or on a
    // new entry; two on one link are refused (V9).
    let values = format!("{base}floatingIP: 192.168.201.5\nvips: [{{link: eth1, ip: 10.1.0.5}}]\n");
    let o = render(&d, "controlplane", "v1.11", &values);
    let ifaces = &o[0]["machine"]["network"]["interfaces"];
    assert_eq!(ifaces[0]["vip"], y("ip: 192.168.201.5"));
    assert_eq!(ifaces[1], y("{interface: eth1, vip: {ip: 10.1.0.5}}"));
    let w = render(&d, "worker", "v1.11", &values);
    assert_eq!(
        w[0]["machine"]["network"]["interfaces"]
            .as_sequence()
            .unwrap()
            .len(),
        1
    );
    assert!(w[0]["machine"]["network"]["interfaces"][0]["vip"].is_null());
    refused(&d, "controlplane", "v1.11", &format!("{base}floatingIP: 192.168.201.5\nvips: [{{link: eth0, ip: 192.168.201.6}}]\n"),
        "values.yaml: floatingIP and vips[0] both put a VIP on \"eth0\"; the single-document format (talosVersion v1.11) holds one VIP per link — use talosVersion v1.12+ or move one VIP.");
    refused(
        &d,
        "controlplane",
        "v1.11",
        &format!("{base}vips: [{{link: eth2, ip: 10.0.0.1}}, {{link: eth2, ip: 10.0.0.2}}]\n"),
        "values.yaml: vips[0] and vips[1] both put a VIP on \"eth2\";",
    );
    let o = render(
        &d,
        "controlplane",
        "v1.12",
        &format!("{base}vips: [{{link: eth2, ip: 10.0.0.1}}, {{link: eth2, ip: 10.0.0.2}}]\n"),
    );
    assert_eq!(kind(&o, "Layer2VIPConfig").len(), 2);
    for (values, needle) in [
        ("vips: [{link: eth0, ip: 10.0.0.300}]", "values.yaml: vips[0].ip=\"10.0.0.300\" is not a valid IPv4 / IPv6 literal."),
        ("vips: [{ip: 10.0.0.3}]", "values.yaml: vips[0].link is empty."),
        ("vips: [{link: a, ip: 10.0.0.3}, {link: b, ip: 10.0.0.3}]", "values.yaml: vips[1].ip=\"10.0.0.3\" repeats vips[0]."),
        ("floatingIP: 10.0.0.3\nvipLink: eth0\nvips: [{link: br0, ip: 10.0.0.3}]", "values.yaml: vips[0] puts floatingIP \"10.0.0.3\" on \"br0\" but vipLink=\"eth0\"; keep one."),
    ] {
        for (machine, talos) in [("controlplane", "v1.11"), ("worker", "v1.12")] {
            refused(&d, machine, talos, &format!("{base}{values}\n"), needle);
        }
    }
}
