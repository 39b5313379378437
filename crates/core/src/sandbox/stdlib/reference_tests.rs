//! The native `talm/net` and `talm/disk` against the scripts they replaced
//! (`tests/fixtures/stdlib-script/`): every function over lookup results made of odd values
//! (nil, empty text, numbers, floats, booleans, characters, lists, maps) and plausible ones, so
//! that each rule keeps its Go template reading.

use rhai::{Dynamic, Engine, Module, Scope};

use crate::sandbox::{engine, Limits};

const NET: &str = include_str!("../../../../../tests/fixtures/stdlib-script/net.rhai");
const DISK: &str = include_str!("../../../../../tests/fixtures/stdlib-script/disk.rhai");

/// The sandbox engine with the scripts as `ref_net` and `ref_disk`.
fn engine_with_references() -> Engine {
    let mut e = engine(&Limits::TEMPLATE);
    for (name, source) in [("ref_net", NET), ("ref_disk", DISK)] {
        let ast = e.compile(source).unwrap();
        let m = Module::eval_ast_as_new(Scope::new(), &ast, &e).unwrap();
        e.register_static_module(name, m.into());
    }
    e
}

/// A small deterministic generator (xorshift).
struct Gen(u64);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<T: Clone>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())].clone()
    }
}

/// Values any field may hold, as script literals.
const ODD: &[&str] = &[
    "()",
    "\"\"",
    "0",
    "1",
    "5",
    "2.0",
    "2.5",
    "true",
    "false",
    "'e'",
    "[]",
    "[\"eth0\"]",
    "#{}",
    "#{a: 1}",
    "\"x\"",
];

/// Plausible values by field.
fn plausible(field: &str) -> &'static [&'static str] {
    match field {
        "dst" => &["\"\"", "\"10.0.0.0/8\""],
        "gateway" => &["\"10.0.0.1\"", "\"\"", "\"fe80::1\""],
        "table" => &["\"main\"", "\"local\""],
        "family" => &["\"inet4\"", "\"inet6\""],
        "outLinkName" | "linkName" | "id" => &["\"eth0\"", "\"eth1\"", "\"bond0\"", "\"enp3s0\""],
        "address" => &[
            "\"10.0.0.2/24\"",
            "\"10.0.0.5/32\"",
            "\"10.0.1.9/30\"",
            "\"2001:db8::2/64\"",
            "\"10.0.0.7\"",
        ],
        "scope" => &["\"global\"", "\"host\"", "\"link\"", "\"nowhere\"", "\"\""],
        "kind" => &[
            "\"physical\"",
            "\"bond\"",
            "\"vlan\"",
            "\"bridge\"",
            "\"loopback\"",
        ],
        "slaveKind" => &["\"bond\"", "\"bridge\"", "\"\""],
        "masterIndex" | "index" | "linkIndex" => &["1", "2", "\"2\"", "0"],
        "busPath" => &["\"pci-0000:00:01.0\"", "\"\""],
        "vlan" => &["#{vlanID: 100}", "#{}", "#{vlanID: ()}"],
        "hostname" => &["\"worker-1\"", "\"Localhost\"", "\"talos\"", "\"\""],
        "dnsServers" => &["[\"1.1.1.1\"]", "[]"],
        "devPath" | "dev_path" => &["\"/dev/sda\"", "\"/dev/nvme0n1\""],
        "wwid" | "model" => &["\"eui.0025\"", "\"\"", "\"Samsung\""],
        "transport" => &["\"nvme\"", "\"sata\""],
        _ => &["\"x\"", "\"aa:bb\""],
    }
}

const FIELDS: &[&str] = &[
    "dst",
    "gateway",
    "table",
    "family",
    "outLinkName",
    "linkName",
    "address",
    "scope",
    "kind",
    "slaveKind",
    "masterIndex",
    "index",
    "linkIndex",
    "busPath",
    "vlan",
    "hostname",
    "dnsServers",
    "devPath",
    "dev_path",
    "wwid",
    "model",
    "serial",
    "pretty_size",
    "transport",
    "hardwareAddr",
    "driver",
    "vendor",
    "product",
];

fn value(g: &mut Gen, field: &str) -> String {
    if g.below(4) == 0 {
        g.pick(ODD).to_string()
    } else {
        g.pick(plausible(field)).to_string()
    }
}

/// One resource as a script literal: an id, and a spec holding some fields.
fn resource(g: &mut Gen) -> String {
    let mut spec = Vec::new();
    for f in FIELDS {
        if g.below(3) > 0 {
            spec.push(format!("{f}: {}", value(g, f)));
        }
    }
    let meta = if g.below(8) == 0 {
        "#{}".to_string()
    } else {
        format!("#{{id: {}}}", value(g, "id"))
    };
    match g.below(12) {
        0 => g.pick(ODD).to_string(),
        1 => format!("#{{metadata: {meta}}}"),
        _ => format!("#{{metadata: {meta}, spec: #{{{}}}}}", spec.join(", ")),
    }
}

/// A lookup result as a script literal: mostly a list, sometimes one resource or an odd value.
fn lookup(g: &mut Gen) -> String {
    match g.below(10) {
        0 => g.pick(ODD).to_string(),
        1 => resource(g),
        2 => "#{items: 3}".to_string(),
        _ => {
            let items: Vec<String> = (0..g.below(5)).map(|_| resource(g)).collect();
            format!(
                "#{{apiVersion: \"v1\", kind: \"List\", items: [{}]}}",
                items.join(", ")
            )
        }
    }
}

/// Each function with the kinds of its arguments: `L` a lookup, `N` a name or other value.
const FUNCTIONS: &[(&str, &str, &str)] = &[
    ("net", "is_default_route", "R"),
    ("net", "default_route", "L"),
    ("net", "default_gateway", "L"),
    ("net", "default_link_name_by_gateway", "L"),
    ("net", "default_addresses_by_gateway", "LLN"),
    ("net", "addresses_by_link", "LN"),
    ("net", "gateway_by_link", "LN"),
    ("net", "routes_by_link", "LN"),
    ("net", "default_resolvers", "R"),
    ("net", "hostname", "RN"),
    ("net", "is_physical", "R"),
    ("net", "physical_links", "L"),
    ("net", "physical_link_names", "L"),
    ("net", "configurable_link_names", "L"),
    ("net", "bond_slaves", "LN"),
    ("net", "bridge_slaves", "LN"),
    ("net", "is_bond", "R"),
    ("net", "is_vlan", "R"),
    ("net", "parent_link_name", "LN"),
    ("net", "vlan_id", "R"),
    ("net", "link_name_for_address", "LLN"),
    ("net", "physical_links_info", "L"),
    ("net", "existing_interfaces", "R"),
    ("disk", "system_disk_name", "RL"),
    ("disk", "disks_info", "L"),
    ("disk", "system_disk_nvme_id", "RL"),
];

/// Names, addresses and other plain arguments.
const NAMES: &[&str] = &[
    "\"eth0\"",
    "\"bond0\"",
    "\"10.0.0.5\"",
    "\"10.0.1.2\"",
    "\"\"",
    "()",
    "2",
    "\"2\"",
    "5",
    "[\"10.0.0.2/24\"]",
    "[]",
    "\"[]\"",
    "'e'",
];

fn argument(g: &mut Gen, kind: char) -> String {
    match kind {
        'L' => lookup(g),
        'R' => match g.below(6) {
            0 => lookup(g),
            1 => "#{spec: \"machine:\\n  network:\\n    interfaces: [{interface: eth0}]\\n\"}"
                .to_string(),
            _ => resource(g),
        },
        _ => g.pick(NAMES).to_string(),
    }
}

/// The result as the script prints it, with its type; both failing counts as the same.
fn outcome(e: &Engine, script: &str) -> Option<String> {
    e.eval::<Dynamic>(script)
        .ok()
        .map(|v| format!("{}: {v:?}", v.type_name()))
}

#[test]
fn natives_answer_as_the_scripts_did() {
    let e = engine_with_references();
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let mut answered = std::collections::HashMap::new();
    for _ in 0..120 {
        for (module, f, kinds) in FUNCTIONS {
            let args: Vec<String> = kinds.chars().map(|k| argument(&mut g, k)).collect();
            let call = |m: &str| format!("{m}::{f}({})", args.join(", "));
            let native = outcome(
                &e,
                &format!("import \"talm/{module}\" as {module}; {}", call(module)),
            );
            let script = outcome(&e, &call(&format!("ref_{module}")));
            assert_eq!(native, script, "{}", call(module));
            if native.is_some() {
                *answered.entry(*f).or_insert(0) += 1;
            }
        }
    }
    // Every function answered (not only failed) for most of its cases.
    for (_, f, _) in FUNCTIONS {
        let ok = answered.get(f).copied().unwrap_or(0);
        assert!(ok >= 60, "{f}: only {ok} of 120 cases answered");
    }
}

#[test]
fn constants_are_the_scripts() {
    let e = engine_with_references();
    for (module, name) in [
        ("net", "SKIP_SCOPES"),
        ("net", "PLACEHOLDER_HOSTNAMES"),
        ("net", "PHYSICAL_PREFIXES"),
        ("net", "VIRTUAL_KINDS"),
        ("net", "LINKS_INFO_HEADER"),
        ("disk", "FALLBACK_DISK"),
        ("disk", "DISKS_INFO_HEADER"),
        ("disk", "NVME_FALLBACK_NOTE"),
    ] {
        let native = outcome(&e, &format!("import \"talm/{module}\" as m; m::{name}"));
        let script = outcome(&e, &format!("ref_{module}::{name}"));
        assert!(native.is_some(), "{module}::{name}");
        assert_eq!(native, script, "{module}::{name}");
    }
}
