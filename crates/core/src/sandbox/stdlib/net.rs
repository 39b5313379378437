//! `talm/net`: network facts of a node computed from its lookup results the way the Go talm
//! presets do (default route, gateway and addresses, hostname, resolvers, links, bonds, VLANs,
//! the VIP link), as natives. They were script functions; the preset logic calls them on every
//! render, and as scripts they cost about 200 ns a step and copied every list they were handed
//! (one default-route test of one route took 4.2 µs; `cargo bench --bench render`).
//!
//! Every function is pure: the caller passes the lookup results in. A list result is
//! `#{apiVersion: "v1", kind: "List", items: [...]}`, a single resource is
//! `#{metadata: #{id, ...}, spec: #{...}}`, and a lookup that found nothing is `#{}`. Fields
//! follow Go template rules (`tpl::`): a missing field reads as nil (`()`), nil is never equal
//! to anything, and false, 0, "", nil and empty lists or maps are falsy.

use rhai::{Array, Dynamic, FuncRegistration, ImmutableString, Module, NativeCallContext};

use super::go::{self, items, spec, Res, Step};
use crate::sandbox::{ip, tpl};
use talm_base::netip;

/// Address scopes that never count as a configured address.
pub const SKIP_SCOPES: [&str; 3] = ["host", "link", "nowhere"];

/// Hostnames a node reports before anyone named it; they fall back to the synthetic name.
pub const PLACEHOLDER_HOSTNAMES: [&str; 4] =
    ["rescue", "talos", "localhost", "localhost.localdomain"];

/// Link name starts that mark a physical NIC (matched at the start only, so `eth0.100` counts).
pub const PHYSICAL_PREFIXES: [&str; 5] = ["eno", "eth", "enp", "enx", "ens"];

/// Link kinds that are configurable although they are not physical.
pub const VIRTUAL_KINDS: [&str; 3] = ["bond", "vlan", "bridge"];

/// Comment line that opens `physical_links_info`.
pub const LINKS_INFO_HEADER: &str = "# -- Discovered interfaces:";

/// Whether an address scope is in `SKIP_SCOPES` (only text can be: `tpl::str` prints any other
/// value as something else).
fn skipped_scope(scope: &Dynamic) -> bool {
    go::as_str(scope).is_some_and(|s| SKIP_SCOPES.contains(&s.as_str()))
}

/// Whether an address scope is set and is not one of `SKIP_SCOPES` (nil and "" are rejected).
fn scope_is_global(scope: &Dynamic) -> bool {
    match go::as_str(scope) {
        Some(s) => !s.is_empty() && !SKIP_SCOPES.contains(&s.as_str()),
        None => tpl::truthy(scope),
    }
}

/// An address's CIDR text when it is text that parses as a prefix (`tpl::str` of anything else
/// never does).
fn parsed_cidr(address: &Dynamic) -> Option<ImmutableString> {
    go::as_str(address).filter(|c| netip::cidr_prefix_len(c) >= 0)
}

/// Whether `route` is a default route: `dst` is "", `gateway` is not "" (a missing gateway
/// passes), `table` is `main` and the family prints as `inet4`.
fn is_default_route(route: &Dynamic) -> bool {
    go::is_str(&spec(route, "dst"), "")
        && !go::is_str(&spec(route, "gateway"), "")
        && go::is_str(&spec(route, "table"), "main")
        && go::is_str(&spec(route, "family"), "inet4")
}

/// The first IPv4 main-table default route of a `routes` list lookup, or `()`.
fn default_route(routes: &Dynamic) -> Dynamic {
    items(routes, |all| {
        all.iter().find(|r| is_default_route(r)).cloned()
    })
    .unwrap_or_default()
}

/// `spec[key]` of the first default route printed as text, "" when there is none.
fn default_route_text(ctx: &NativeCallContext, routes: &Dynamic, key: &str) -> Res {
    let found = items(routes, |all| {
        all.iter()
            .find(|r| is_default_route(r))
            .map(|r| spec(r, key))
    });
    match found {
        Some(v) => tpl::go_text(ctx, v),
        None => Ok("".into()),
    }
}

fn default_addresses_by_gateway(
    ctx: &NativeCallContext,
    routes: &Dynamic,
    addresses: &Dynamic,
    floating_ip: Dynamic,
) -> Res {
    let route = default_route(routes);
    let (link, family) = if route.is_unit() {
        (Dynamic::from(""), Dynamic::from(""))
    } else {
        (spec(&route, "outLinkName"), spec(&route, "family"))
    };
    let vip_prefix = format!("{}/", tpl::go_str(ctx, floating_ip)?);
    let mut out = Array::new();
    items(addresses, |all| {
        for a in all {
            let Some(cidr) = parsed_cidr(&spec(a, "address")) else {
                continue;
            };
            if tpl::eq(ctx, &spec(a, "linkName"), link.clone())?
                && tpl::eq(ctx, &spec(a, "family"), family.clone())?
                && !skipped_scope(&spec(a, "scope"))
                && !cidr.starts_with(vip_prefix.as_str())
            {
                out.push(cidr.into());
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn addresses_by_link(ctx: &NativeCallContext, addresses: &Dynamic, name: Dynamic) -> Res {
    let mut out = Array::new();
    items(addresses, |all| {
        for a in all {
            let Some(cidr) = parsed_cidr(&spec(a, "address")) else {
                continue;
            };
            if tpl::eq(ctx, &spec(a, "linkName"), name.clone())?
                && scope_is_global(&spec(a, "scope"))
            {
                out.push(cidr.into());
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn gateway_by_link(ctx: &NativeCallContext, routes: &Dynamic, name: Dynamic) -> Res {
    let mut found = None;
    items(routes, |all| {
        for r in all {
            if is_default_route(r) && tpl::eq(ctx, &spec(r, "outLinkName"), name.clone())? {
                found = Some(spec(r, "gateway"));
                break;
            }
        }
        Step::Ok(())
    })?;
    match found {
        Some(gw) => tpl::go_text(ctx, gw),
        None => Ok("".into()),
    }
}

fn routes_by_link(ctx: &NativeCallContext, routes: &Dynamic, name: Dynamic) -> Res {
    let mut out = Array::new();
    items(routes, |all| {
        for r in all {
            if tpl::eq(ctx, &spec(r, "outLinkName"), name.clone())?
                && !go::is_str(&spec(r, "dst"), "")
            {
                let mut row = rhai::Map::new();
                for key in ["dst", "gateway", "family", "table", "priority"] {
                    row.insert(key.into(), tpl::go_text(ctx, spec(r, key))?);
                }
                out.push(row.into());
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn default_resolvers(resolvers: &Dynamic) -> Dynamic {
    if !tpl::truthy(resolvers) {
        return Dynamic::UNIT;
    }
    let servers = spec(resolvers, "dnsServers");
    if servers.is_array() {
        servers
    } else {
        Array::new().into()
    }
}

fn hostname(ctx: &NativeCallContext, res: &Dynamic, default_addresses: Dynamic) -> Res {
    let name = if tpl::truthy(res) {
        spec(res, "hostname")
    } else {
        Dynamic::UNIT
    };
    if tpl::truthy(&name) {
        let name = tpl::go_str(ctx, name)?;
        let text = name.clone().into_immutable_string().unwrap_or_default();
        if !PLACEHOLDER_HOSTNAMES.contains(&text.to_lowercase().as_str()) {
            return Ok(name);
        }
    }
    let json = match default_addresses.clone().into_immutable_string() {
        Ok(text) => text.to_string(),
        Err(_) => crate::sandbox::native(|| ip::to_json(&default_addresses))?,
    };
    Ok(format!("talos-{}", &ip::sha256_hex(&json)[..5]).into())
}

/// Whether a link item is a physical NIC: a truthy `busPath` and an id starting with
/// eno, eth, enp, enx or ens.
fn is_physical(ctx: &NativeCallContext, link: &Dynamic) -> Result<bool, Box<rhai::EvalAltResult>> {
    if !tpl::truthy(&spec(link, "busPath")) {
        return Ok(false);
    }
    let id = tpl::go_str(ctx, tpl::get2(link, "metadata", "id"))?;
    let id = id.into_immutable_string().unwrap_or_default();
    Ok(PHYSICAL_PREFIXES.iter().any(|p| id.starts_with(p)))
}

/// The physical link items, in list order (bond slaves included).
fn physical_links(
    ctx: &NativeCallContext,
    links: &Dynamic,
) -> Result<Array, Box<rhai::EvalAltResult>> {
    let mut out = Array::new();
    items(links, |all| {
        for l in all {
            if is_physical(ctx, l)? {
                out.push(l.clone());
            }
        }
        Step::Ok(())
    })?;
    Ok(out)
}

fn configurable_link_names(ctx: &NativeCallContext, links: &Dynamic) -> Res {
    let mut out = Array::new();
    items(links, |all| {
        for l in all {
            let kind = spec(l, "kind");
            let virtual_kind =
                go::as_str(&kind).is_some_and(|k| VIRTUAL_KINDS.contains(&k.as_str()));
            let slave = spec(l, "slaveKind");
            let enslaved = tpl::truthy(&slave) && !go::is_str(&slave, "");
            if !enslaved && (virtual_kind || is_physical(ctx, l)?) {
                out.push(tpl::get2(l, "metadata", "id"));
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

/// The ids of links whose `slaveKind` is `kind` and whose `masterIndex` is `index` (both
/// compared as Sprig `int`, so a missing one reads as 0).
fn slaves_of(ctx: &NativeCallContext, links: &Dynamic, kind: &str, index: Dynamic) -> Res {
    let index = tpl::go_int(ctx, index)?;
    let mut out = Array::new();
    items(links, |all| {
        for l in all {
            if go::is_str(&spec(l, "slaveKind"), kind)
                && tpl::go_int(ctx, spec(l, "masterIndex"))? == index
            {
                out.push(tpl::get2(l, "metadata", "id"));
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn parent_link_name(ctx: &NativeCallContext, links: &Dynamic, name: Dynamic) -> Res {
    let mut link = None;
    items(links, |all| {
        for l in all {
            if tpl::eq(ctx, &tpl::get2(l, "metadata", "id"), name.clone())? {
                link = Some(l.clone());
                break;
            }
        }
        Step::Ok(())
    })?;
    let Some(link) = link.filter(tpl::truthy) else {
        return Ok("".into());
    };
    let parent = spec(&link, "linkIndex");
    if !tpl::truthy(&parent) {
        return Ok("".into());
    }
    let parent = tpl::go_int(ctx, parent)?;
    let mut out = String::new();
    items(links, |all| {
        for l in all {
            if tpl::go_int(ctx, spec(l, "index"))? == parent {
                let id = tpl::go_text(ctx, tpl::get2(l, "metadata", "id"))?;
                out.push_str(&id.into_immutable_string().unwrap_or_default());
            }
        }
        Step::Ok(())
    })?;
    Ok(out.into())
}

fn vlan_id(link: &Dynamic) -> Dynamic {
    let vlan = spec(link, "vlan");
    if !tpl::truthy(link) || !tpl::truthy(&vlan) {
        return "".into();
    }
    let id = tpl::get(&vlan, "vlanID");
    if id.is_unit() {
        "".into()
    } else {
        id
    }
}

fn link_name_for_address(
    ctx: &NativeCallContext,
    links: &Dynamic,
    addresses: Dynamic,
    address: Dynamic,
) -> Res {
    let configurable = configurable_link_names(ctx, links)?
        .into_array()
        .unwrap_or_default();
    let is_configurable = |link: &str| {
        configurable
            .iter()
            .any(|id| go::as_str(id).is_some_and(|s| s == link))
    };
    let target = tpl::go_str(ctx, address)?
        .into_immutable_string()
        .unwrap_or_default();
    let (mut best, mut best_len) = (ImmutableString::new(), -1);
    items(&addresses, |all| {
        for a in all {
            let cidr = tpl::go_text(ctx, spec(a, "address"))?;
            let cidr = cidr.into_immutable_string().unwrap_or_default();
            let link = tpl::go_text(ctx, spec(a, "linkName"))?;
            let link = link.into_immutable_string().unwrap_or_default();
            if cidr.is_empty()
                || link.is_empty()
                || !is_configurable(&link)
                || !scope_is_global(&spec(a, "scope"))
                || !netip::cidr_contains(&cidr, &target)
            {
                continue;
            }
            let len = netip::cidr_prefix_len(&cidr);
            if len > best_len {
                (best, best_len) = (link, len);
            }
        }
        Step::Ok(())
    })?;
    Ok(best.into())
}

fn physical_links_info(ctx: &NativeCallContext, links: &Dynamic) -> Res {
    let mut out = format!("\n{LINKS_INFO_HEADER}");
    for l in physical_links(ctx, links)? {
        let text = |v: Dynamic| -> Result<ImmutableString, Box<rhai::EvalAltResult>> {
            Ok(tpl::go_text(ctx, v)?
                .into_immutable_string()
                .unwrap_or_default())
        };
        let field = |key: &str| text(spec(&l, key));
        out.push_str(&format!(
            "\n# {}:\n#   hardwareAddr:{}\n#   busPath: {}\n#   driver: {}\n#   vendor: {}\n#   product: {})",
            text(tpl::get2(&l, "metadata", "id"))?,
            field("hardwareAddr")?,
            field("busPath")?,
            field("driver")?,
            field("vendor")?,
            field("product")?,
        ));
    }
    Ok(out.into())
}

/// `machine.network.interfaces` of the running machine config (the `machineconfig` lookup,
/// whose `spec` is a map or YAML text), or `[]` when there is none or it does not parse. Of
/// text only the first document counts, as Go's `fromYaml` reads it: a running config is text
/// (Talos's MachineConfig resource), and one with typed documents is several.
fn existing_interfaces(res: &Dynamic) -> Dynamic {
    if !tpl::truthy(res) {
        return Array::new().into();
    }
    let mut spec = tpl::get(res, "spec");
    if let Ok(text) = spec.clone().into_immutable_string() {
        spec = talm_base::yaml::parsed(&text)
            .ok()
            .and_then(|docs| docs.first().map(rhai::serde::to_dynamic))
            .and_then(Result::ok)
            .unwrap_or_default();
    }
    let interfaces = tpl::get(
        &tpl::get(&tpl::get(&spec, "machine"), "network"),
        "interfaces",
    );
    if interfaces.is_array() {
        interfaces
    } else {
        Array::new().into()
    }
}

/// The `talm/net` module.
pub fn module() -> Module {
    let mut m = Module::new();
    go::set_words(&mut m, "SKIP_SCOPES", &SKIP_SCOPES);
    go::set_words(&mut m, "PLACEHOLDER_HOSTNAMES", &PLACEHOLDER_HOSTNAMES);
    go::set_words(&mut m, "PHYSICAL_PREFIXES", &PHYSICAL_PREFIXES);
    go::set_words(&mut m, "VIRTUAL_KINDS", &VIRTUAL_KINDS);
    m.set_var("LINKS_INFO_HEADER", LINKS_INFO_HEADER);

    FuncRegistration::new("is_default_route")
        .with_comments(["/// Whether a route is a default route: `dst` \"\", `gateway` not \"\" (a missing one passes), table `main`, family `inet4`."])
        .set_into_module(&mut m, |r: &mut Dynamic| is_default_route(r));
    FuncRegistration::new("default_route")
        .with_comments(["/// The first IPv4 main-table default route of a `routes` list lookup, or () (IPv6 default routes are never chosen)."])
        .set_into_module(&mut m, |routes: &mut Dynamic| default_route(routes));
    FuncRegistration::new("default_gateway")
        .with_comments(["/// The gateway of the first default route, or \"\"."])
        .set_into_module(&mut m, |ctx: NativeCallContext, routes: &mut Dynamic| {
            default_route_text(&ctx, routes, "gateway")
        });
    FuncRegistration::new("default_link_name_by_gateway")
        .with_comments(["/// The `outLinkName` of the first default route, or \"\"."])
        .set_into_module(&mut m, |ctx: NativeCallContext, routes: &mut Dynamic| {
            default_route_text(&ctx, routes, "outLinkName")
        });
    FuncRegistration::new("default_addresses_by_gateway")
        .with_comments(["/// The node's primary addresses (CIDR text, list order): on the first default route's link and of its family, scope not host/link/nowhere (nil passes), parsing as a CIDR, and not the floating IP's own `<floating_ip>/...` address; [] without a default route."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, routes: &mut Dynamic, addresses: Dynamic, fip: Dynamic| {
                default_addresses_by_gateway(&ctx, routes, &addresses, fip)
            },
        );
    FuncRegistration::new("addresses_by_link")
        .with_comments(["/// The addresses (CIDR text, both families, list order) on link `name` whose scope is set and not host/link/nowhere and that parse as a CIDR (the floating IP is not filtered)."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, addresses: &mut Dynamic, name: Dynamic| {
                addresses_by_link(&ctx, addresses, name)
            },
        );
    FuncRegistration::new("gateway_by_link")
        .with_comments([
            "/// The gateway of the first default route that leaves through link `name`, or \"\".",
        ])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, routes: &mut Dynamic, name: Dynamic| {
                gateway_by_link(&ctx, routes, name)
            },
        );
    FuncRegistration::new("routes_by_link")
        .with_comments(["/// Every route through link `name` whose `dst` is not \"\" (any table), as #{dst, gateway, family, table, priority} printed as text (\"\" if absent)."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, routes: &mut Dynamic, name: Dynamic| {
                routes_by_link(&ctx, routes, name)
            },
        );
    FuncRegistration::new("default_resolvers")
        .with_comments(["/// The `dnsServers` of the `resolvers` lookup: [] when it has none, () when the lookup found nothing."])
        .set_into_module(&mut m, |res: &mut Dynamic| default_resolvers(res));
    FuncRegistration::new("hostname")
        .with_comments(["/// The hostname to render: a real one as it is; for none or a placeholder (rescue, talos, localhost, localhost.localdomain, any case) `talos-` and the first 5 hex digits of the SHA-256 of the JSON text of `default_addresses` (JSON text is taken as it is)."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, res: &mut Dynamic, addrs: Dynamic| hostname(&ctx, res, addrs),
        );
    FuncRegistration::new("is_physical")
        .with_comments(["/// Whether a link item is a physical NIC: a truthy `busPath` and an id starting with eno, eth, enp, enx or ens."])
        .set_into_module(&mut m, |ctx: NativeCallContext, link: &mut Dynamic| {
            is_physical(&ctx, link)
        });
    FuncRegistration::new("physical_links")
        .with_comments(["/// The physical link items of a `links` list lookup, in list order (bond slaves included)."])
        .set_into_module(&mut m, |ctx: NativeCallContext, links: &mut Dynamic| {
            physical_links(&ctx, links)
        });
    FuncRegistration::new("physical_link_names")
        .with_comments(["/// The ids of the physical links, in list order (bond slaves included)."])
        .set_into_module(&mut m, |ctx: NativeCallContext, links: &mut Dynamic| {
            let all = physical_links(&ctx, links)?;
            Ok::<_, Box<rhai::EvalAltResult>>(
                all.iter()
                    .map(|l| tpl::get2(l, "metadata", "id"))
                    .collect::<Array>(),
            )
        });
    FuncRegistration::new("configurable_link_names")
        .with_comments(["/// The ids of the links a config may declare, in list order: physical NICs and bond, vlan and bridge links, minus every link enslaved to anything (a truthy `slaveKind`)."])
        .set_into_module(&mut m, |ctx: NativeCallContext, links: &mut Dynamic| {
            configurable_link_names(&ctx, links)
        });
    FuncRegistration::new("bond_slaves")
        .with_comments(["/// The ids of the slaves of the bond with link index `index` (compared as Sprig int), in list order."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, links: &mut Dynamic, index: Dynamic| {
                slaves_of(&ctx, links, "bond", index)
            },
        );
    FuncRegistration::new("bridge_slaves")
        .with_comments(["/// The ids of the ports of the bridge with link index `index` (compared as Sprig int), in list order."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, links: &mut Dynamic, index: Dynamic| {
                slaves_of(&ctx, links, "bridge", index)
            },
        );
    FuncRegistration::new("is_bond")
        .with_comments(["/// Whether a link (a single-link lookup result) is a bond."])
        .set_into_module(&mut m, |link: &mut Dynamic| {
            tpl::truthy(link) && go::is_str(&spec(link, "kind"), "bond")
        });
    FuncRegistration::new("is_vlan")
        .with_comments(["/// Whether a link (a single-link lookup result) is a VLAN."])
        .set_into_module(&mut m, |link: &mut Dynamic| {
            tpl::truthy(link) && go::is_str(&spec(link, "kind"), "vlan")
        });
    FuncRegistration::new("parent_link_name")
        .with_comments(["/// The parent of link `name`: the ids of every link whose `index` is its `linkIndex`, joined without a separator (as the Go helper prints them); \"\" when the link is unknown or its `linkIndex` is unset or 0."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, links: &mut Dynamic, name: Dynamic| {
                parent_link_name(&ctx, links, name)
            },
        );
    FuncRegistration::new("vlan_id")
        .with_comments(["/// The VLAN id of a link (a single-link lookup result): `spec.vlan.vlanID` as it is when `spec.vlan` is set, else \"\"."])
        .set_into_module(&mut m, |link: &mut Dynamic| vlan_id(link));
    FuncRegistration::new("link_name_for_address")
        .with_comments(["/// The link that should carry address `ip` (the VIP): among addresses on configurable links with a scope other than host/link/nowhere whose CIDR holds `ip`, the longest prefix, the first on a tie; \"\" when none."])
        .set_into_module(
            &mut m,
            |ctx: NativeCallContext, links: &mut Dynamic, addresses: Dynamic, address: Dynamic| {
                link_name_for_address(&ctx, links, addresses, address)
            },
        );
    FuncRegistration::new("physical_links_info")
        .with_comments(["/// The YAML comment listing the physical links, starting with a newline, byte for byte as the Go presets print it (no space after `hardwareAddr:`, a stray `)` after the product)."])
        .set_into_module(&mut m, |ctx: NativeCallContext, links: &mut Dynamic| {
            physical_links_info(&ctx, links)
        });
    FuncRegistration::new("existing_interfaces")
        .with_comments(["/// `machine.network.interfaces` of the running machine config (the `machineconfig` lookup; its `spec` a map or YAML text, of which the first document counts), or [] when there is none or it does not parse."])
        .set_into_module(&mut m, |res: &mut Dynamic| existing_interfaces(res));
    FuncRegistration::new("link_doc")
        .with_comments(["/// A blank network document of a link: `kind` (LinkConfig, BondConfig, VLANConfig, BridgeConfig) and `name`, every other field empty (`vlanID`, `parent`, `links`, `bondMode`, `options`, `stp`, `vlan`, `addresses`, `routes`, `mtu`); the shape `talm/links` merges declarations into (its `blank_doc`)."])
        .set_into_module(&mut m, |kind: ImmutableString, name: ImmutableString| {
            link_doc(kind, name)
        });
    m.build_index();
    m
}

/// The blank network document of a link named `name` of `kind`.
fn link_doc(kind: ImmutableString, name: ImmutableString) -> rhai::Map {
    let empty = || Dynamic::from_array(Array::new());
    [
        ("kind", kind.into()),
        ("name", name.into()),
        ("vlanID", Dynamic::from_int(0)),
        ("parent", "".into()),
        ("links", empty()),
        ("bondMode", "".into()),
        ("options", empty()),
        ("stp", Dynamic::UNIT),
        ("vlan", Dynamic::UNIT),
        ("addresses", empty()),
        ("routes", empty()),
        ("mtu", Dynamic::from_int(0)),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v))
    .collect()
}
