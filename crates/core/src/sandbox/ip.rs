//! `ip::` script functions behind the network stdlib (`talm/net`, src/sandbox/stdlib/net.rs): addresses and CIDR
//! prefixes with the rules of Go's `net/netip`, plus SHA-256 and Go-compatible JSON text.
//!
//! They live in one static module, `ip::`, rather than in the global namespace: Rhai already
//! has a global `to_json` for maps (its own layout), and a global Dynamic overload would lose to
//! it for maps only. So scripts call `ip::to_json(v)`, `ip::sha256_hex(s)`,
//! `ip::cidr_prefix_len(c)`, `ip::cidr_contains(c, a)`, `ip::cidr_network(c)`,
//! `ip::ip_is_valid(a)` and `ip::canonical_ip(t)`, over [`talm_base::netip`].

use rhai::{Dynamic, Engine, FuncRegistration, Module};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

use super::native;
use talm_base::netip::{
    canonical_ip, cidr_contains, cidr_network, cidr_prefix_len, host, ip_is_valid,
};

/// `addrs` without those whose host ([`host`]; "" for what is not text) is one of `hosts`.
fn without_hosts(addrs: rhai::Array, hosts: &rhai::Array) -> rhai::Array {
    let listed = |h: &str| {
        hosts.iter().any(|x| {
            x.read_lock::<rhai::ImmutableString>()
                .is_some_and(|x| x.as_str() == h)
        })
    };
    addrs
        .into_iter()
        .filter(|a| {
            let h = a
                .read_lock::<rhai::ImmutableString>()
                .map(|s| host(&s))
                .unwrap_or_default();
            !listed(&h)
        })
        .collect()
}

/// Lower-case hex SHA-256 of the UTF-8 bytes of `text`.
pub fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .fold(String::with_capacity(64), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Appends `s` as a JSON string the way Go's `encoding/json` writes it: `<`, `>`, `&`, U+2028
/// and U+2029 as `\uXXXX`; `\n`, `\r`, `\t`, `\b`, `\f` short; other controls as `\u00XX`.
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A float as Go's `encoding/json` prints it: shortest digits, plain unless the magnitude is
/// below 1e-6 or at least 1e21, then exponent form with a signed exponent (`1e+21`, `1e-7`).
fn json_float(out: &mut String, f: f64) -> anyhow::Result<()> {
    if !f.is_finite() {
        return Err(talm_base::error::plain(format!(
            "json: unsupported value: {f}"
        )));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let text = format!("{f:e}");
        match text.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => {
                let _ = write!(out, "{m}e+{e}");
            }
            _ => out.push_str(&text),
        }
    } else {
        let _ = write!(out, "{f}");
    }
    Ok(())
}

fn json_value(out: &mut String, v: &Dynamic) -> anyhow::Result<()> {
    if v.is_unit() {
        out.push_str("null");
    } else if let Ok(b) = v.as_bool() {
        out.push_str(if b { "true" } else { "false" });
    } else if let Ok(i) = v.as_int() {
        let _ = write!(out, "{i}");
    } else if let Ok(f) = v.as_float() {
        json_float(out, f)?;
    } else if let Ok(c) = v.as_char() {
        json_string(out, &c.to_string());
    } else if v.is_string() {
        json_string(out, &v.clone().into_string().unwrap_or_default());
    } else if v.is_array() {
        out.push('[');
        if let Some(items) = v.read_lock::<rhai::Array>() {
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_value(out, item)?;
            }
        }
        out.push(']');
    } else if v.is_map() {
        // Rhai maps keep their keys sorted, which is also the order Go gives a map's keys.
        out.push('{');
        if let Some(map) = v.read_lock::<rhai::Map>() {
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, k);
                out.push(':');
                json_value(out, item)?;
            }
        }
        out.push('}');
    } else {
        return Err(talm_base::error::plain(format!(
            "json: unsupported type: {}",
            v.type_name()
        )));
    }
    Ok(())
}

/// Compact JSON text of a value, byte for byte what Go's `toJson` (`encoding/json`) prints
/// for the same strings, numbers, booleans, lists and maps.
pub fn to_json(v: &Dynamic) -> anyhow::Result<String> {
    let mut out = String::new();
    json_value(&mut out, v)?;
    Ok(out)
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("sha256_hex")
        .with_comments(["/// Lower-case hex SHA-256 of the text's UTF-8 bytes."])
        .set_into_module(&mut m, |text: &str| sha256_hex(text));
    FuncRegistration::new("to_json")
        .with_comments([
            "/// Compact JSON as Go's toJson prints it: no spaces, sorted map keys, `<>&` as \\u003c etc.",
        ])
        .set_into_module(&mut m, |value: Dynamic| native(|| to_json(&value)));
    FuncRegistration::new("cidr_prefix_len")
        .with_comments([
            "/// Prefix bits of a CIDR (`10.0.0.1/24` gives 24); -1 when it does not parse.",
        ])
        .set_into_module(&mut m, |cidr: &str| cidr_prefix_len(cidr));
    FuncRegistration::new("cidr_contains")
        .with_comments([
            "/// Whether the address lies in the CIDR; false when either does not parse.",
        ])
        .set_into_module(&mut m, |cidr: &str, ip: &str| cidr_contains(cidr, ip));
    FuncRegistration::new("cidr_network")
        .with_comments(["/// The masked prefix (`10.0.0.7/24` gives `10.0.0.0/24`); an error when it does not parse."])
        .set_into_module(&mut m, |cidr: &str| {
            native(|| {
                cidr_network(cidr).ok_or_else(|| {
                    talm_base::error::plain(format!("netip.ParsePrefix({cidr:?}): invalid prefix"))
                })
            })
        });
    FuncRegistration::new("ip_is_valid")
        .with_comments([
            "/// Whether the text is an IPv4 or IPv6 literal (IPv6 may carry a `%zone`).",
        ])
        .set_into_module(&mut m, |text: &str| ip_is_valid(text));
    FuncRegistration::new("canonical_ip")
        .with_comments([
            "/// Canonical text of an address or CIDR (IPv6 per RFC 5952, lower case); \"\" when it does not parse.",
        ])
        .set_into_module(&mut m, |text: &str| canonical_ip(text));
    FuncRegistration::new("host")
        .with_comments([
            "/// The canonical host part of an address or prefix (`2001:DB8::1/64` gives `2001:db8::1`); \"\" when it does not parse.",
        ])
        .set_into_module(&mut m, |text: &str| host(text));
    FuncRegistration::new("without_hosts")
        .with_comments([
            "/// The addresses (or prefixes) whose host (`ip::host`) is not one of `hosts`, in order.",
        ])
        .set_into_module(&mut m, |addrs: rhai::Array, hosts: rhai::Array| {
            without_hosts(addrs, &hosts)
        });
    engine.register_static_module("ip", m.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_addresses_and_prefixes() {
        assert_eq!(host("2001:DB8::0:1/64"), "2001:db8::1");
        assert_eq!(host("10.0.0.7/24"), "10.0.0.7");
        assert_eq!(host("10.0.0.7"), "10.0.0.7");
        assert_eq!(host("fe80::1%eth0"), "fe80::1%eth0");
        assert_eq!(host("nope/24"), "");
        let addrs: rhai::Array = [
            Dynamic::from("10.0.0.1/24"),
            Dynamic::from("2001:DB8::1/64"),
            Dynamic::from("10.0.0.2/24"),
            Dynamic::from(5_i64),
            Dynamic::from("bad"),
        ]
        .into();
        let hosts: rhai::Array = [Dynamic::from("10.0.0.1"), Dynamic::from("2001:db8::1")].into();
        let kept: Vec<String> = without_hosts(addrs.clone(), &hosts)
            .iter()
            .map(|d| d.to_string())
            .collect();
        assert_eq!(kept, ["10.0.0.2/24", "5", "bad"]);
        // "" never matches an address that does not parse unless listed.
        assert_eq!(
            without_hosts(addrs.clone(), &[Dynamic::from("")].into()).len(),
            3
        );
        assert_eq!(without_hosts(addrs, &rhai::Array::new()).len(), 5);
    }

    #[test]
    fn sha256_of_the_golden_address_list() {
        assert_eq!(
            sha256_hex("[\"192.168.201.10/24\"]"),
            "23c56c843046e244772cd90e32a9b6ccb8330c5c3601b09456e3d6359baf5ebd"
        );
        assert!(sha256_hex("[]").starts_with("4f53c"));
    }

    #[test]
    fn json_matches_go_encoding() {
        let list: rhai::Array = vec!["8.8.8.8".into(), "1.1.1.1".into()];
        assert_eq!(to_json(&list.into()).unwrap(), r#"["8.8.8.8","1.1.1.1"]"#);
        assert_eq!(to_json(&rhai::Array::new().into()).unwrap(), "[]");
        assert_eq!(to_json(&Dynamic::UNIT).unwrap(), "null");
        assert_eq!(
            to_json(&"a<b>&c\"\\\n\t\u{1}\u{8}\u{2028}é".into()).unwrap(),
            r#""a\u003cb\u003e\u0026c\"\\\n\t\u0001\b\u2028é""#
        );
        let mut map = rhai::Map::new();
        map.insert("b".into(), Dynamic::from(2_i64));
        map.insert("a".into(), Dynamic::from(true));
        map.insert("c".into(), Dynamic::from(1.5_f64));
        assert_eq!(to_json(&map.into()).unwrap(), r#"{"a":true,"b":2,"c":1.5}"#);
        let floats = [
            (1024.0, "1024"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (0.0, "0"),
        ];
        for (f, want) in floats {
            assert_eq!(to_json(&Dynamic::from(f)).unwrap(), want, "{f}");
        }
        assert!(to_json(&Dynamic::from(f64::NAN)).is_err());
    }
}
