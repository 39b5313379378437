//! A node or endpoint address as talosctl takes it: an IP address or a DNS name, with an
//! optional port (`10.0.0.1`, `10.0.0.1:50000`, `fd00::1`, `[fd00::1]:50000`, `cp.example.com`).

use std::net::IpAddr;

/// Why an address was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadAddress {
    #[error("it is empty")]
    Empty,
    #[error("port {0:?} is not a number from 1 to 65535")]
    Port(String),
    #[error("{0:?} is neither an IP address nor a DNS name (letters, digits, '-' and '.', labels of at most 63)")]
    Host(String),
    #[error("it holds a scheme or a path: give the host (and port) only")]
    Url,
    #[error("it has blanks around it")]
    Blanks,
}

fn dns_name(h: &str) -> bool {
    h.len() <= 253
        && h.trim_end_matches('.').split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

fn port(p: &str) -> Result<(), BadAddress> {
    match p.parse::<u16>() {
        Ok(n) if n > 0 => Ok(()),
        _ => Err(BadAddress::Port(p.to_string())),
    }
}

/// Checks an address; returns it unchanged when it is one.
pub fn check(addr: &str) -> Result<&str, BadAddress> {
    let a = addr.trim();
    if a.is_empty() {
        return Err(BadAddress::Empty);
    }
    if a != addr {
        return Err(BadAddress::Blanks);
    }
    if a.contains("://") || a.contains('/') {
        return Err(BadAddress::Url);
    }
    if a.parse::<IpAddr>().is_ok() {
        return Ok(addr);
    }
    if let Some(rest) = a.strip_prefix('[') {
        let (ip, tail) = rest
            .split_once(']')
            .ok_or_else(|| BadAddress::Host(a.into()))?;
        ip.parse::<std::net::Ipv6Addr>()
            .map_err(|_| BadAddress::Host(ip.into()))?;
        return match tail.strip_prefix(':') {
            Some(p) => port(p).map(|_| addr),
            None if tail.is_empty() => Ok(addr),
            None => Err(BadAddress::Host(a.into())),
        };
    }
    let (host, p) = match a.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (a, None),
    };
    if let Some(p) = p {
        port(p)?;
    }
    let numeric = host
        .split('.')
        .all(|l| l.chars().all(|c| c.is_ascii_digit()));
    if host.parse::<std::net::Ipv4Addr>().is_ok() || (!numeric && dns_name(host)) {
        Ok(addr)
    } else {
        Err(BadAddress::Host(host.to_string()))
    }
}

/// The clap value parser of address flags.
pub fn parse_flag(addr: &str) -> Result<String, String> {
    check(addr)
        .map(str::to_string)
        .map_err(|e| format!("{addr:?} is not a node address: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for ok in [
            "10.0.0.1",
            "10.0.0.1:50000",
            "fd00::1",
            "[fd00::1]:50000",
            "cp.example.com",
            "node-1",
            "cp.example.com:443",
        ] {
            assert!(check(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "https://10.0.0.1",
            "10.0.0.1:0",
            "10.0.0.1:99999",
            "a b",
            "x\ny",
            "a;rm -rf",
            "-bad",
            "10.0.0.1/24",
            "[fd00::1",
            "10.0.0.256",
        ] {
            assert!(check(bad).is_err(), "{bad:?}");
        }
    }
}
