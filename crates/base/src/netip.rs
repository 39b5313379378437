//! Addresses and CIDR prefixes read with the rules of Go's `net/netip` (what Talos and the Go
//! talm accept). `std::net` parses addresses, `ipnet` does the prefix arithmetic; the prefix
//! syntax check is ours, as `ipnet`'s parser accepts what `netip` refuses (leading zeros in
//! IPv4 octets and in the bits).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// An address as `netip.ParseAddr` reads it: IPv4 or IPv6, the latter with an optional zone.
#[derive(Debug, Clone, PartialEq)]
struct Addr {
    ip: IpAddr,
    zone: Option<String>,
}

fn parse_addr(text: &str) -> Option<Addr> {
    if let Some((host, zone)) = text.split_once('%') {
        // Only IPv6 carries a zone, and the zone must not be empty.
        if zone.is_empty() {
            return None;
        }
        let ip = host.parse::<Ipv6Addr>().ok()?;
        return Some(Addr {
            ip: IpAddr::V6(ip),
            zone: Some(zone.to_string()),
        });
    }
    if text.contains(':') {
        return text.parse::<Ipv6Addr>().ok().map(|ip| Addr {
            ip: IpAddr::V6(ip),
            zone: None,
        });
    }
    text.parse::<Ipv4Addr>().ok().map(|ip| Addr {
        ip: IpAddr::V4(ip),
        zone: None,
    })
}

/// A prefix as `netip.ParsePrefix` reads it: `addr/bits`, no zone, bits in plain decimal
/// (no sign, no leading zero) and within the family's width.
fn parse_prefix(text: &str) -> Option<IpNet> {
    let (host, bits) = text.rsplit_once('/')?;
    let addr = parse_addr(host)?;
    if addr.zone.is_some() {
        return None;
    }
    let digits_only = !bits.is_empty() && bits.bytes().all(|b| b.is_ascii_digit());
    if !digits_only || (bits.len() > 1 && bits.starts_with('0')) || bits.len() > 3 {
        return None;
    }
    IpNet::new(addr.ip, bits.parse().ok()?).ok()
}

/// Prefix bits of `cidr`, or -1 when it does not parse.
pub fn cidr_prefix_len(cidr: &str) -> i64 {
    parse_prefix(cidr).map_or(-1, |net| i64::from(net.prefix_len()))
}

/// Whether `ip` lies inside `cidr`; false when either fails to parse, when the families differ
/// (an IPv4-mapped IPv6 address is not in an IPv4 prefix) or when `ip` has a zone.
pub fn cidr_contains(cidr: &str, ip: &str) -> bool {
    let (Some(net), Some(addr)) = (parse_prefix(cidr), parse_addr(ip)) else {
        return false;
    };
    addr.zone.is_none() && net.contains(&addr.ip)
}

/// The masked prefix of `cidr` (`192.168.201.10/24` gives `192.168.201.0/24`).
pub fn cidr_network(cidr: &str) -> Option<String> {
    parse_prefix(cidr).map(|net| net.trunc().to_string())
}

/// Whether `text` is an IPv4 or IPv6 literal (IPv6 may carry a `%zone`).
pub fn ip_is_valid(text: &str) -> bool {
    parse_addr(text).is_some()
}

/// `text` in canonical form: IPv4 dotted quad, IPv6 per RFC 5952 in lower case (which is what
/// `std::net` prints), a zone and a `/prefix` kept as they are. "" when it does not parse.
pub fn canonical_ip(text: &str) -> String {
    if text.contains('/') {
        return parse_prefix(text).map_or_else(String::new, |net| net.to_string());
    }
    match parse_addr(text) {
        Some(Addr { ip, zone: Some(z) }) => format!("{ip}%{z}"),
        Some(Addr { ip, zone: None }) => ip.to_string(),
        None => String::new(),
    }
}

/// The canonical host part of an address or prefix (`2001:DB8::1/64` gives `2001:db8::1`), ""
/// when it does not parse.
pub fn host(text: &str) -> String {
    canonical_ip(text.split_once('/').map_or(text, |(host, _)| host))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_len_follows_netip() {
        assert_eq!(cidr_prefix_len("192.168.201.10/24"), 24);
        assert_eq!(cidr_prefix_len("10.0.0.0/0"), 0);
        assert_eq!(cidr_prefix_len("2001:db8::1/64"), 64);
        assert_eq!(cidr_prefix_len("::/128"), 128);
        for bad in [
            "192.168.201.10",
            "192.168.201.10/33",
            "2001:db8::/129",
            "10.0.0.1/024",
            "10.0.0.1/+4",
            "10.0.0.1/",
            "fe80::1%eth0/64",
            "300.0.0.1/8",
            "010.0.0.1/8",
            "",
        ] {
            assert_eq!(cidr_prefix_len(bad), -1, "{bad}");
        }
    }

    #[test]
    fn contains_masks_and_checks_family() {
        assert!(cidr_contains("192.168.201.10/24", "192.168.201.200"));
        assert!(!cidr_contains("192.168.201.10/24", "192.168.202.1"));
        assert!(cidr_contains("0.0.0.0/0", "8.8.8.8"));
        assert!(cidr_contains("2001:db8::10/64", "2001:db8::ffff"));
        assert!(!cidr_contains("2001:db8::10/64", "2001:db9::1"));
        assert!(!cidr_contains("10.0.0.0/8", "::ffff:10.0.0.1"));
        assert!(!cidr_contains("fe80::/10", "fe80::1%eth0"));
        assert!(!cidr_contains("10.0.0.0/8", "nope"));
        assert!(!cidr_contains("nope", "10.0.0.1"));
    }

    #[test]
    fn network_and_canonical_forms() {
        assert_eq!(
            cidr_network("192.168.201.10/24").as_deref(),
            Some("192.168.201.0/24")
        );
        assert_eq!(
            cidr_network("2001:DB8:0:0:1::7/48").as_deref(),
            Some("2001:db8::/48")
        );
        assert_eq!(cidr_network("10.1.2.3/0").as_deref(), Some("0.0.0.0/0"));
        assert_eq!(cidr_network("10.1.2.3"), None);
        assert_eq!(canonical_ip("2001:DB8:0:0:0:0:0:1"), "2001:db8::1");
        assert_eq!(canonical_ip("2001:db8:0:0:1:0:0:1"), "2001:db8::1:0:0:1");
        assert_eq!(
            canonical_ip("2001:0db8:0000:0001:0:0:0:1/64"),
            "2001:db8:0:1::1/64"
        );
        assert_eq!(canonical_ip("::ffff:10.0.0.1"), "::ffff:10.0.0.1");
        assert_eq!(canonical_ip("FE80::1%eth0"), "fe80::1%eth0");
        assert_eq!(canonical_ip("192.168.1.7/24"), "192.168.1.7/24");
        assert_eq!(canonical_ip("192.168.1.7"), "192.168.1.7");
        assert_eq!(canonical_ip("1.2.3"), "");
        assert_eq!(canonical_ip("10.0.0.1/40"), "");
    }

    #[test]
    fn validity_accepts_zones_on_ipv6_only() {
        assert!(ip_is_valid("192.168.1.1"));
        assert!(ip_is_valid("::1"));
        assert!(ip_is_valid("fe80::1%eth0"));
        assert!(!ip_is_valid("fe80::1%"));
        assert!(!ip_is_valid("10.0.0.1%eth0"));
        assert!(!ip_is_valid("192168"));
        assert!(!ip_is_valid("false"));
        assert!(!ip_is_valid("10.0.0.1/24"));
        assert!(!ip_is_valid(""));
    }
}
