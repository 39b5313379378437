//! The `talm/net` and `talm/disk` stdlib modules against the golden lookup fixture (the facts the
//! Go presets derive from it) and against small hand-made node facts for the tricky rules.

use rhai::Dynamic;
use serde_json::{json, Value as Json};

const FIXTURE: &str = include_str!("../fixtures/talm-golden/lookup-fixture.yaml");

/// Parses YAML text into the value a lookup would hand a script.
fn yaml(text: &str) -> Dynamic {
    rhai::serde::to_dynamic(talm::yaml::parse(text, "<test>").unwrap()).unwrap()
}

/// Runs `body` with both modules imported (`net`, `disk`) and `args` in `ARGS`; the result as JSON.
fn run(body: &str, args: &[(&str, Dynamic)]) -> Json {
    let mut map = rhai::Map::new();
    for (k, v) in args {
        map.insert((*k).into(), v.clone());
    }
    let src = format!("import \"talm/net\" as net;\nimport \"talm/disk\" as disk;\n{body}");
    let limits = talm::sandbox::Limits::TEMPLATE;
    let out = talm::runtime::run_source(
        "test.rhai",
        &src,
        map,
        &limits,
        &talm::runtime::Session::default(),
    )
    .unwrap_or_else(|e| panic!("{}", talm::error::render(&e)));
    rhai::serde::from_dynamic(&out).unwrap()
}

/// A list lookup result holding the resources given as a YAML sequence.
fn list(items_yaml: &str) -> Dynamic {
    yaml(&format!("apiVersion: v1\nkind: List\nitems:\n{items_yaml}"))
}

fn empty() -> Dynamic {
    Dynamic::from(rhai::Map::new())
}

/// What the golden fixture's fake `lookup` answers for (kind, id): the first matching call,
/// where id `*` matches anything; everything else (including `<any other id>`) is `{}`.
fn fixture_lookup(fixture: &serde_yaml_ng::Value, kind: &str, id: &str) -> Dynamic {
    let calls = fixture["lookup"]["calls"].as_sequence().unwrap();
    for call in calls {
        let call_id = call["id"].as_str().unwrap();
        if call["kind"].as_str() == Some(kind) && (call_id == id || call_id == "*") {
            return rhai::serde::to_dynamic(&call["result"]).unwrap();
        }
    }
    empty()
}

#[test]
fn golden_fixture_derived_facts() {
    let fixture = talm::yaml::parse(FIXTURE, "lookup-fixture.yaml").unwrap();
    let look = |kind: &str, id: &str| fixture_lookup(&fixture, kind, id);
    let args = [
        ("routes", look("routes", "")),
        ("links", look("links", "")),
        ("eth0", look("links", "eth0")),
        ("addresses", look("addresses", "")),
        ("resolvers", look("resolvers", "resolvers")),
        ("hostname", look("hostname", "hostname")),
        ("systemdisk", look("systemdisk", "system-disk")),
        ("disks", look("disks", "")),
        ("machineconfig", look("machineconfig", "v1alpha1")),
    ];
    let got = run(
        r#"
        let a = ARGS;
        let addrs = net::default_addresses_by_gateway(a.routes, a.addresses, "");
        #{
            default_link_name_by_gateway: net::default_link_name_by_gateway(a.routes),
            default_gateway: net::default_gateway(a.routes),
            default_addresses_by_gateway_json: ip::to_json(addrs),
            hostname: net::hostname(a.hostname, addrs),
            sha256_of_input: ip::sha256_hex(ip::to_json(addrs)),
            default_resolvers_json: ip::to_json(net::default_resolvers(a.resolvers)),
            configurable_link_names: net::configurable_link_names(a.links),
            physical_link_names: net::physical_link_names(a.links),
            system_disk_name: disk::system_disk_name(a.systemdisk, a.disks),
            gateway_eth0: net::gateway_by_link(a.routes, "eth0"),
            addresses_eth0: net::addresses_by_link(a.addresses, "eth0"),
            is_bond: net::is_bond(a.eth0),
            is_vlan: net::is_vlan(a.eth0),
            vlan_id: net::vlan_id(a.eth0),
            parent: net::parent_link_name(a.links, "eth0"),
            existing: net::existing_interfaces(a.machineconfig),
            vip_link: net::link_name_for_address(a.links, a.addresses, "192.168.201.5"),
            links_info: net::physical_links_info(a.links),
            disks_info: disk::disks_info(a.disks),
            nvme: disk::system_disk_nvme_id(a.systemdisk, a.disks),
        }
        "#,
        &args,
    );
    let derived = &fixture["derived"];
    for key in [
        "default_link_name_by_gateway",
        "default_gateway",
        "default_addresses_by_gateway_json",
        "hostname",
        "sha256_of_input",
        "default_resolvers_json",
        "system_disk_name",
    ] {
        assert_eq!(got[key], json!(derived[key].as_str().unwrap()), "{key}");
    }
    for key in ["configurable_link_names", "physical_link_names"] {
        let want: Json = serde_json::to_value(&derived[key]).unwrap();
        assert_eq!(got[key], want, "{key}");
    }
    assert_eq!(got["gateway_eth0"], json!("192.168.201.1"));
    assert_eq!(got["addresses_eth0"], json!(["192.168.201.10/24"]));
    assert_eq!(got["is_bond"], json!(false));
    assert_eq!(got["is_vlan"], json!(false));
    assert_eq!(got["vlan_id"], json!(""));
    assert_eq!(got["parent"], json!(""));
    assert_eq!(got["existing"], json!([]));
    assert_eq!(got["vip_link"], json!("eth0"));
    assert_eq!(
        got["links_info"],
        json!("\n# -- Discovered interfaces:\n# eth0:\n#   hardwareAddr:aa:bb:cc:00:00:01\n#   busPath: pci-0000:00:1f.0\n#   driver: \n#   vendor: \n#   product: )")
    );
    assert_eq!(got["disks_info"], json!("\n# -- Discovered disks:"));
    assert_eq!(
        got["nvme"],
        json!(
            "/dev/sda # Unable to determine a stable NVMe disk path, falling back to the disk name"
        )
    );
}

#[test]
fn only_the_first_ipv4_main_table_default_route_counts() {
    let routes = list(
        r#"
- spec: {dst: "", gateway: "fe80::1", outLinkName: eth9, family: inet6, table: main}
- spec: {dst: "10.0.0.0/8", gateway: "10.0.0.1", outLinkName: eth8, family: inet4, table: main}
- spec: {dst: "", gateway: "172.16.0.1", outLinkName: eth7, family: inet4, table: local}
- spec: {dst: "", gateway: "", outLinkName: eth6, family: inet4, table: main}
- spec: {gateway: "10.9.9.1", outLinkName: eth5, family: inet4, table: main}
- spec: {dst: "", outLinkName: eth1, family: inet4, table: main}
- spec: {dst: "", gateway: "192.168.0.1", outLinkName: eth2, family: inet4, table: main}
"#,
    );
    let got = run(
        r#"#{
            link: net::default_link_name_by_gateway(ARGS.routes),
            gw: net::default_gateway(ARGS.routes),
            gw2: net::gateway_by_link(ARGS.routes, "eth2"),
            gw9: net::gateway_by_link(ARGS.routes, "eth9"),
            none: net::default_route(#{}),
            none_gw: net::default_gateway(#{}),
            by_link: net::routes_by_link(ARGS.routes, "eth8"),
            by_link_dst_missing: net::routes_by_link(ARGS.routes, "eth5"),
        }"#,
        &[("routes", routes)],
    );
    // A route with no gateway key is a default route (nil is not equal to "").
    assert_eq!(got["link"], json!("eth1"));
    assert_eq!(got["gw"], json!(""));
    assert_eq!(got["gw2"], json!("192.168.0.1"));
    assert_eq!(got["gw9"], json!(""));
    assert_eq!(got["none"], Json::Null);
    assert_eq!(got["none_gw"], json!(""));
    assert_eq!(
        got["by_link"],
        json!([{"dst": "10.0.0.0/8", "gateway": "10.0.0.1", "family": "inet4", "table": "main", "priority": ""}])
    );
    assert_eq!(
        got["by_link_dst_missing"],
        json!([{"dst": "", "gateway": "10.9.9.1", "family": "inet4", "table": "main", "priority": ""}])
    );
}

const ROUTE_ETH0: &str = r#"
- spec: {dst: "", gateway: "10.0.0.1", outLinkName: eth0, family: inet4, table: main}
"#;

#[test]
fn scope_filters_differ_between_default_and_by_link() {
    let addresses = list(
        r#"
- spec: {linkName: eth0, address: "10.0.0.2/24", family: inet4}
- spec: {linkName: eth0, address: "10.0.0.3/24", family: inet4, scope: global}
- spec: {linkName: eth0, address: "10.0.0.4/24", family: inet4, scope: link}
- spec: {linkName: eth0, address: "127.0.0.1/8", family: inet4, scope: host}
- spec: {linkName: eth0, address: "10.0.0.5/24", family: inet4, scope: nowhere}
- spec: {linkName: eth0, address: "10.0.0.6/24", family: inet4, scope: ""}
- spec: {linkName: eth0, address: "10.0.0.7", family: inet4, scope: global}
- spec: {linkName: eth0, address: "2001:db8::2/64", family: inet6, scope: global}
- spec: {linkName: eth1, address: "10.1.0.2/24", family: inet4, scope: global}
"#,
    );
    let got = run(
        r#"#{
            primary: net::default_addresses_by_gateway(ARGS.routes, ARGS.addresses, ()),
            eth0: net::addresses_by_link(ARGS.addresses, "eth0"),
            eth1: net::addresses_by_link(ARGS.addresses, "eth1"),
            no_route: net::default_addresses_by_gateway(#{}, ARGS.addresses, ""),
        }"#,
        &[("routes", list(ROUTE_ETH0)), ("addresses", addresses)],
    );
    // nil scope passes for the default addresses ("<nil>" is not a skipped scope), "" too.
    assert_eq!(
        got["primary"],
        json!(["10.0.0.2/24", "10.0.0.3/24", "10.0.0.6/24"])
    );
    assert_eq!(got["eth0"], json!(["10.0.0.3/24", "2001:db8::2/64"]));
    assert_eq!(got["eth1"], json!(["10.1.0.2/24"]));
    assert_eq!(got["no_route"], json!([]));
}

#[test]
fn floating_ip_own_address_is_dropped() {
    let addresses = list(
        r#"
- spec: {linkName: eth0, address: "10.0.0.5/32", family: inet4, scope: global}
- spec: {linkName: eth0, address: "10.0.0.50/24", family: inet4, scope: global}
- spec: {linkName: eth0, address: "10.0.0.10/24", family: inet4, scope: global}
"#,
    );
    let got = run(
        r#"#{
            vip: net::default_addresses_by_gateway(ARGS.routes, ARGS.addresses, "10.0.0.5"),
            none: net::default_addresses_by_gateway(ARGS.routes, ARGS.addresses, ""),
        }"#,
        &[("routes", list(ROUTE_ETH0)), ("addresses", addresses)],
    );
    assert_eq!(got["vip"], json!(["10.0.0.50/24", "10.0.0.10/24"]));
    assert_eq!(
        got["none"],
        json!(["10.0.0.5/32", "10.0.0.50/24", "10.0.0.10/24"])
    );
}

const BONDED_LINKS: &str = r#"
- metadata: {id: lo}
  spec: {kind: loopback, index: 1}
- metadata: {id: eth0}
  spec: {kind: physical, index: 2, busPath: "pci-0000:00:01.0", slaveKind: bond, masterIndex: 5}
- metadata: {id: eth1}
  spec: {kind: physical, index: 3, busPath: "pci-0000:00:02.0", slaveKind: bond, masterIndex: 5}
- metadata: {id: eth2}
  spec: {kind: physical, index: 4, busPath: "pci-0000:00:03.0", slaveKind: bridge, masterIndex: 7}
- metadata: {id: bond0}
  spec: {kind: bond, index: 5, bondMaster: {mode: 802.3ad}}
- metadata: {id: wlan0}
  spec: {kind: physical, index: 6, busPath: "pci-0000:00:04.0"}
- metadata: {id: br0}
  spec: {kind: bridge, index: 7}
- metadata: {id: bond0.100}
  spec: {kind: vlan, index: 8, linkIndex: 5, vlan: {vlanID: 100}}
- metadata: {id: vlan200}
  spec: {kind: vlan, index: 9, linkIndex: 42, vlan: {}}
- metadata: {id: enp3s0}
  spec: {kind: physical, index: 10, busPath: "pci-0000:03:00.0", slaveKind: ""}
"#;

#[test]
fn links_slaves_and_vlans() {
    let got = run(
        r#"
        let links = ARGS.links;
        let one = |name| {
            for l in links.items { if l.metadata.id == name { return l; } }
            #{}
        };
        #{
            configurable: net::configurable_link_names(links),
            physical: net::physical_link_names(links),
            bond_slaves: net::bond_slaves(links, 5),
            bond_slaves_text_index: net::bond_slaves(links, "5"),
            bridge_slaves: net::bridge_slaves(links, 7),
            no_slaves: net::bond_slaves(links, 9),
            is_bond: [net::is_bond(one.call("bond0")), net::is_bond(one.call("eth0")), net::is_bond(#{})],
            is_vlan: [net::is_vlan(one.call("bond0.100")), net::is_vlan(one.call("bond0"))],
            parent: net::parent_link_name(links, "bond0.100"),
            orphan_parent: net::parent_link_name(links, "vlan200"),
            no_parent: net::parent_link_name(links, "eth0"),
            unknown_parent: net::parent_link_name(links, "nope"),
            vid: net::vlan_id(one.call("bond0.100")),
            orphan_vid: net::vlan_id(one.call("vlan200")),
            physical_eth0: net::is_physical(one.call("eth0")),
            physical_wlan0: net::is_physical(one.call("wlan0")),
        }
        "#,
        &[("links", list(BONDED_LINKS))],
    );
    assert_eq!(
        got["configurable"],
        json!(["bond0", "br0", "bond0.100", "vlan200", "enp3s0"])
    );
    assert_eq!(got["physical"], json!(["eth0", "eth1", "eth2", "enp3s0"]));
    assert_eq!(got["bond_slaves"], json!(["eth0", "eth1"]));
    assert_eq!(got["bond_slaves_text_index"], json!(["eth0", "eth1"]));
    assert_eq!(got["bridge_slaves"], json!(["eth2"]));
    assert_eq!(got["no_slaves"], json!([]));
    assert_eq!(got["is_bond"], json!([true, false, false]));
    assert_eq!(got["is_vlan"], json!([true, false]));
    assert_eq!(got["parent"], json!("bond0"));
    assert_eq!(got["orphan_parent"], json!(""));
    assert_eq!(got["no_parent"], json!(""));
    assert_eq!(got["unknown_parent"], json!(""));
    assert_eq!(got["vid"], json!(100));
    assert_eq!(got["orphan_vid"], json!(""));
    assert_eq!(got["physical_eth0"], json!(true));
    assert_eq!(got["physical_wlan0"], json!(false));
}

#[test]
fn vip_link_is_the_longest_prefix_and_first_on_ties() {
    let links = list(
        r#"
- metadata: {id: eth0}
  spec: {kind: physical, busPath: "pci-a"}
- metadata: {id: eth1}
  spec: {kind: physical, busPath: "pci-b"}
- metadata: {id: eth2}
  spec: {kind: physical, busPath: "pci-c"}
- metadata: {id: eth3}
  spec: {kind: physical, busPath: "pci-d"}
- metadata: {id: eth4}
  spec: {kind: physical, busPath: "pci-e", slaveKind: bond, masterIndex: 9}
"#,
    );
    let addresses = list(
        r#"
- spec: {linkName: eth0, address: "10.0.0.5/16", scope: global}
- spec: {linkName: eth1, address: "10.0.1.5/24", scope: global}
- spec: {linkName: eth2, address: "10.0.1.6/24", scope: global}
- spec: {linkName: eth3, address: "10.0.1.7/28", scope: link}
- spec: {linkName: eth3, address: "10.0.1.8/27"}
- spec: {linkName: eth4, address: "10.0.1.9/30", scope: global}
- spec: {linkName: lo, address: "10.0.1.1/32", scope: global}
"#,
    );
    let got = run(
        r#"[
            net::link_name_for_address(ARGS.links, ARGS.addresses, "10.0.1.2"),
            net::link_name_for_address(ARGS.links, ARGS.addresses, "10.0.200.1"),
            net::link_name_for_address(ARGS.links, ARGS.addresses, "192.168.0.1"),
            net::link_name_for_address(ARGS.links, ARGS.addresses, "not-an-ip"),
            net::link_name_for_address(ARGS.links, #{}, "10.0.1.2"),
        ]"#,
        &[("links", links), ("addresses", addresses)],
    );
    assert_eq!(got, json!(["eth1", "eth0", "", "", ""]));
}

#[test]
fn hostname_is_kept_unless_a_placeholder() {
    let host = |name: &str| yaml(&format!("spec: {{hostname: {name:?}}}"));
    let got = run(
        r#"
        let addrs = ["192.168.201.10/24"];
        [
            net::hostname(ARGS.worker, addrs),
            net::hostname(ARGS.mixed, addrs),
            net::hostname(ARGS.localhost, addrs),
            net::hostname(ARGS.talos, addrs),
            net::hostname(ARGS.rescue, addrs),
            net::hostname(ARGS.localdomain, addrs),
            net::hostname(ARGS.blank, addrs),
            net::hostname(#{}, addrs),
            net::hostname(#{}, []),
            net::hostname(#{}, "[]"),
        ]
        "#,
        &[
            ("worker", host("worker-1")),
            ("mixed", host("Node-A")),
            ("localhost", host("Localhost")),
            ("talos", host("TALOS")),
            ("rescue", host("rescue")),
            ("localdomain", host("localhost.localdomain")),
            ("blank", host("")),
        ],
    );
    let syn = "talos-23c56";
    assert_eq!(
        got,
        json!([
            "worker-1",
            "Node-A",
            syn,
            syn,
            syn,
            syn,
            syn,
            syn,
            "talos-4f53c",
            "talos-4f53c"
        ])
    );
}

#[test]
fn resolvers_and_existing_interfaces() {
    let mc_text = yaml(
        "spec: |\n  machine:\n    network:\n      interfaces:\n        - interface: eth0\n          addresses: [192.168.1.10/24]\n",
    );
    let mc_map = yaml("spec: {machine: {network: {interfaces: [{interface: eth1}]}}}");
    let mc_none = yaml("spec: {machine: {network: {}}}");
    let mc_bad = yaml("spec: \"machine: [\"");
    // A running config with typed documents: the first (v1alpha1) one counts, as Go's fromYaml.
    let mc_multi = yaml(
        "spec: |\n  machine:\n    network:\n      interfaces:\n        - interface: eth2\n  ---\n  apiVersion: v1alpha1\n  kind: HostnameConfig\n  hostname: a\n",
    );
    let got = run(
        r#"#{
            none: net::default_resolvers(#{}),
            missing: net::default_resolvers(#{spec: #{}}),
            some: net::default_resolvers(#{spec: #{dnsServers: ["1.1.1.1", "8.8.8.8"]}}),
            text: net::existing_interfaces(ARGS.text),
            map: net::existing_interfaces(ARGS.map),
            none_if: net::existing_interfaces(ARGS.none),
            bad: net::existing_interfaces(ARGS.bad),
            multi: net::existing_interfaces(ARGS.multi),
            empty: net::existing_interfaces(#{}),
        }"#,
        &[
            ("text", mc_text),
            ("map", mc_map),
            ("none", mc_none),
            ("bad", mc_bad),
            ("multi", mc_multi),
        ],
    );
    assert_eq!(got["none"], Json::Null);
    assert_eq!(got["missing"], json!([]));
    assert_eq!(got["some"], json!(["1.1.1.1", "8.8.8.8"]));
    assert_eq!(
        got["text"],
        json!([{"interface": "eth0", "addresses": ["192.168.1.10/24"]}])
    );
    assert_eq!(got["map"], json!([{"interface": "eth1"}]));
    assert_eq!(got["none_if"], json!([]));
    assert_eq!(got["bad"], json!([]));
    assert_eq!(got["multi"], json!([{"interface": "eth2"}]));
    assert_eq!(got["empty"], json!([]));
}

const DISKS: &str = r#"
- spec: {dev_path: /dev/sr0, transport: sata}
- spec: {dev_path: /dev/nvme0n1, model: "Samsung 980", serial: S1, pretty_size: 1.0 TB, transport: nvme, wwid: eui.0025}
- spec: {dev_path: /dev/sdb, wwid: naa.5000, pretty_size: 2 TB}
"#;

#[test]
fn disk_choice_and_comments() {
    let sysdisk = yaml("spec: {devPath: /dev/sdb}");
    let got = run(
        r#"#{
            discovered: disk::system_disk_name(#{}, ARGS.disks),
            system: disk::system_disk_name(ARGS.sysdisk, ARGS.disks),
            fallback: disk::system_disk_name(#{}, #{}),
            unidentified: disk::system_disk_name(#{}, ARGS.bare),
            nvme: disk::system_disk_nvme_id(#{}, ARGS.disks),
            not_nvme: disk::system_disk_nvme_id(ARGS.sysdisk, ARGS.disks),
            info: disk::disks_info(ARGS.disks),
        }"#,
        &[
            ("disks", list(DISKS)),
            ("sysdisk", sysdisk),
            ("bare", list("- spec: {dev_path: /dev/vda}\n")),
        ],
    );
    assert_eq!(got["discovered"], json!("/dev/nvme0n1"));
    assert_eq!(got["system"], json!("/dev/sdb"));
    assert_eq!(got["fallback"], json!("/dev/sda"));
    assert_eq!(got["unidentified"], json!("/dev/sda"));
    assert_eq!(got["nvme"], json!("/dev/disk/by-id/nvme-eui.0025"));
    assert_eq!(
        got["not_nvme"],
        json!(
            "/dev/sdb # Unable to determine a stable NVMe disk path, falling back to the disk name"
        )
    );
    assert_eq!(
        got["info"],
        json!("\n# -- Discovered disks:\n# /dev/nvme0n1:\n#    model: Samsung 980\n#    serial: S1\n#    wwid: eui.0025\n#    size: 1.0 TB\n# /dev/sdb:\n#    model: \n#    serial: \n#    wwid: naa.5000\n#    size: 2 TB")
    );
}

#[test]
fn ip_natives_from_scripts() {
    let got = run(
        r#"[
            ip::to_json(#{b: [1, "x<y"], a: ()}),
            ip::cidr_prefix_len("10.0.0.1/8"),
            ip::cidr_contains("10.0.0.0/8", "10.2.3.4"),
            ip::cidr_network("10.2.3.4/8"),
            ip::ip_is_valid("fe80::1%eth0"),
            ip::canonical_ip("2001:DB8::0:1/64"),
        ]"#,
        &[],
    );
    assert_eq!(
        got,
        json!([
            r#"{"a":null,"b":[1,"x\u003cy"]}"#,
            8,
            true,
            "10.0.0.0/8",
            true,
            "2001:db8::1/64"
        ])
    );
}
