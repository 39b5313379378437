//! The `talm/values`, `talm/links` and `talm/links_legacy` stdlib modules called directly from
//! Rust: normalisation rules of values-mapping.md §2 and the merge rules of §5.3/§5.4 on small
//! hand-made inputs.

use serde_json::{json, Value as Json};

/// Runs `body` with the three modules imported (`vals`, `lk`, `lkl`); the result as JSON, or
/// the error message.
fn eval(body: &str) -> Result<Json, String> {
    let src = format!(
        "import \"talm/values\" as vals;\nimport \"talm/links\" as lk;\nimport \"talm/links_legacy\" as lkl;\n{body}"
    );
    talm::runtime::run_source(
        "test.rhai",
        &src,
        rhai::Map::new(),
        &talm::sandbox::Limits::TEMPLATE,
        &talm::runtime::Session::default(),
    )
    .map(|out| rhai::serde::from_dynamic(&out).unwrap())
    .map_err(|e| talm::error::render(&e))
}

fn run(body: &str) -> Json {
    eval(body).unwrap_or_else(|e| panic!("{e}"))
}

const CTX: &str = "#{ multidoc: true, vips: [], doc_kinds: #{} }";

#[test]
fn values_normalisation() {
    let got = run(r#"#{
        pairs: vals::string_pairs("extraSysctls", #{ b: 1, a: true, c: 2.0, d: "x" }),
        args13: vals::api_server_args(#{ f: ["a", 1] }, "v1.13.1"),
        v13: vals::version_at_least("v1.13", 1, 13),
        v12: vals::version_at_least("1.12.0", 1, 13),
        empty: vals::version_at_least("", 1, 13),
        times: vals::time_servers(["a", "b", "a"]),
        pem: vals::pem_text("LS0tLS1CRUdJTiBYLS0tLS0KYQotLS0tLUVORCBYLS0tLS0K"),
        not_pem: vals::pem_text("aGVsbG8="),
        vips: vals::vips([#{ link: "eth0", ip: "2001:DB8::0:1" }], "", ""),
        host: vals::host_of("2001:DB8::1/64"),
        without: vals::without_vips(["10.0.0.1/24", "10.0.0.2/24"], ["10.0.0.1"]),
    }"#);
    assert_eq!(
        got["pairs"],
        json!([["a", "true"], ["b", "1"], ["c", "2"], ["d", "x"]])
    );
    assert_eq!(got["args13"], json!([["f", ["a", "1"]]]));
    assert_eq!(
        (got["v13"].clone(), got["v12"].clone(), got["empty"].clone()),
        (json!(true), json!(false), json!(false))
    );
    assert_eq!(got["times"], json!(["a", "b"]));
    assert_eq!(got["pem"], json!("-----BEGIN X-----\na\n-----END X-----"));
    assert_eq!(got["not_pem"], Json::Null);
    assert_eq!(got["vips"][0]["ip"], json!("2001:db8::1"));
    assert_eq!(got["host"], json!("2001:db8::1"));
    assert_eq!(got["without"], json!(["10.0.0.2/24"]));
    let err = eval(r#"vals::api_server_args(#{ f: ["a"] }, "v1.12")"#).unwrap_err();
    assert!(
        err.contains("talosVersion v1.12 accepts only string values"),
        "{err}"
    );
}

#[test]
fn entries_are_canonical() {
    let got = run(&format!(
        r#"lk::entries([#{{ interface: "bond0", mtu: 9000.0, addresses: ["2001:DB8:0::10/64"],
            routes: [#{{ gateway: "2001:DB8::1" }}, #{{ gateway: "10.0.0.1", destination: "10.1.0.0/16", metric: 5.0 }}],
            bond: #{{ interfaces: ["a", "b"], mode: "active-backup", useCarrier: true, miimon: 100.0, arpIpTargets: "10.0.0.9" }},
            vlans: [#{{ vlanId: 12.0 }}] }}], {CTX})"#
    ));
    let e = &got[0];
    assert_eq!(e["mtu"], json!(9000));
    assert_eq!(e["addresses"], json!(["2001:db8::10/64"]));
    assert_eq!(
        e["routes"],
        json!([{"gateway": "2001:db8::1"}, {"gateway": "10.0.0.1", "destination": "10.1.0.0/16", "metric": 5}])
    );
    assert_eq!(
        e["bond"]["options"],
        json!([
            ["miimon", 100],
            ["arpIpTargets", ["10.0.0.9"]],
            ["useCarrier", true]
        ])
    );
    assert_eq!(e["vlans"][0]["name"], json!("bond0.12"));
    assert_eq!(e["declaring"], json!(true));
    assert_eq!(e["label"], json!("BondConfig \"bond0\""));
    let only_vlans = run(&format!(
        r#"lk::entries([#{{ interface: "eth0", vlans: [#{{ vlanId: 3 }}] }}], {CTX})"#
    ));
    assert_eq!(only_vlans[0]["declaring"], json!(false));
}

#[test]
fn merge_into_a_discovered_bond_keeps_its_place() {
    let got = run(&format!(
        r#"
        let docs = [lk::blank_doc("BondConfig", "bond0"), lk::blank_doc("LinkConfig", "eth9")];
        docs[0].links = ["eth1"];
        docs[0].bondMode = "balance-rr";
        docs[0].options = [["miimon", 50], ["lacpRate", "fast"]];
        docs[0].routes = [#{{ gateway: "10.0.0.1" }}];
        let e = lk::entries([#{{ interface: "bond0", bond: #{{ interfaces: ["eth1", "eth2"], mode: "802.3ad", miimon: 100 }}, mtu: 1500 }}], {CTX});
        let disc = #{{ configurable: ["bond0", "eth9", "eth2"], kinds: #{{ bond0: "bond", eth9: "physical", eth2: "physical" }},
                       addresses: #{{}}, mtu: #{{}}, vlans: [], default_link: "", default_gateway: "" }};
        lk::check_discovery(e, disc);
        lk::merge_docs(e, docs, disc)
        "#
    ));
    assert_eq!(got.as_array().unwrap().len(), 2);
    let b = &got[0];
    assert_eq!(b["links"], json!(["eth1", "eth2"]));
    assert_eq!(b["bondMode"], json!("802.3ad"));
    assert_eq!(b["options"], json!([["miimon", 100], ["lacpRate", "fast"]]));
    assert_eq!(b["routes"], json!([{"gateway": "10.0.0.1"}]));
    assert_eq!(b["mtu"], json!(1500));
    assert_eq!(got[1]["name"], json!("eth9"));
}

#[test]
fn legacy_routes_and_items() {
    let got = run(r#"#{
        v4: lkl::legacy_route(#{ gateway: "10.0.0.1" }),
        v6: lkl::legacy_route(#{ gateway: "fe80::1", metric: 3 }),
        dst: lkl::legacy_route(#{ gateway: "10.0.0.1", destination: "10.2.0.0/16" }),
        opts: lkl::legacy_options([["arpIpTargets", ["10.0.0.1"]], ["miimon", 1]]),
    }"#);
    assert_eq!(
        got["v4"],
        json!({"network": "0.0.0.0/0", "gateway": "10.0.0.1"})
    );
    assert_eq!(
        got["v6"],
        json!({"network": "::/0", "gateway": "fe80::1", "metric": 3})
    );
    assert_eq!(got["dst"]["network"], json!("10.2.0.0/16"));
    assert_eq!(
        got["opts"],
        json!([["arpIPTarget", ["10.0.0.1"]], ["miimon", 1]])
    );
    // The default-route item dropped for a bond member: floatingIP moves to the bond.
    let got = run(r#"
        let ctx = #{ multidoc: false, vips: [], doc_kinds: #{} };
        let e = lk::entries([#{ interface: "bond0", addresses: ["10.0.0.5/24"], routes: [#{ gateway: "10.0.0.1" }],
                                bond: #{ interfaces: ["eth0"], mode: "active-backup" } }], ctx);
        let dr = #{ iface: "eth0", is_vlan: false, vlan_id: "", bond: (), addresses: ["10.0.0.5/24"], gateway: "10.0.0.1" };
        let disc = #{ configurable: ["eth0"], kinds: #{}, addresses: #{}, mtu: #{}, vlans: [], default_link: "eth0", default_gateway: "10.0.0.1" };
        let m = lk::members(e);
        let items = lkl::legacy_items(e, m, [], dr, disc);
        lkl::legacy_place_vips(items, [#{ ip: "10.0.0.100", link: "", who: "floatingIP" }], "eth0", "bond0", "v1.11")
        "#);
    assert_eq!(got.as_array().unwrap().len(), 1);
    assert_eq!(got[0]["interface"], json!("bond0"));
    assert_eq!(got[0]["vip"], json!("10.0.0.100"));
    assert_eq!(
        got[0]["routes"],
        json!([{"network": "0.0.0.0/0", "gateway": "10.0.0.1"}])
    );
}
