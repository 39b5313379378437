//! Finding Talos API endpoints on a network without nmap: TCP connect to the API port of every
//! address in an IPv4 range, then a TLS handshake that tells maintenance nodes (their Talos
//! version is readable) from configured ones.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::Result;

use super::client::{Client, Options};
use super::creds::Auth;
use super::errors::{self, Kind};
use talm_base::error::hinted;

/// Largest range scanned in one go (a /16).
pub const MAX_HOSTS: u32 = 65_536;

/// An address with the Talos API port open.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub ip: Ipv4Addr,
    /// `maintenance`, `configured`, or `unknown` (the port is open, the handshake said nothing).
    pub mode: String,
    /// Talos version when the node tells it (maintenance mode).
    pub version: String,
}

/// The host addresses of an IPv4 CIDR (network and broadcast left out below /31).
pub fn hosts(cidr: &str) -> Result<Vec<Ipv4Addr>> {
    let bad = || {
        hinted(
            format!("{cidr:?} is not an IPv4 range"),
            "give a CIDR such as 192.168.1.0/24, or one address",
        )
    };
    let (ip, bits) = match cidr.split_once('/') {
        Some((ip, bits)) => (
            ip.parse::<Ipv4Addr>().map_err(|_| bad())?,
            bits.parse::<u32>().map_err(|_| bad())?,
        ),
        None => (cidr.parse::<Ipv4Addr>().map_err(|_| bad())?, 32),
    };
    if bits > 32 {
        return Err(bad());
    }
    let size = 1u64 << (32 - bits);
    if size > u64::from(MAX_HOSTS) {
        return Err(hinted(
            format!("{cidr} holds {size} addresses"),
            "scan at most a /16 at a time",
        ));
    }
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    let base = u32::from(ip) & mask;
    let all: Vec<Ipv4Addr> = (0..size as u32).map(|i| Ipv4Addr::from(base + i)).collect();
    Ok(if bits < 31 {
        all[1..all.len() - 1].to_vec()
    } else {
        all
    })
}

async fn probe(ip: Ipv4Addr, port: u16, timeout: Duration) -> Option<Found> {
    let addr = SocketAddr::from((ip, port));
    let open = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await;
    if !matches!(open, Ok(Ok(_))) {
        return None;
    }
    let opts = Options {
        auth: Auth::Insecure,
        timeout: timeout.max(Duration::from_secs(2)),
    };
    let endpoint = format!("{ip}:{port}");
    let answer = match Client::connect(&endpoint, None, &opts).await {
        Ok(c) => c.version().await,
        Err(e) => Err(e),
    };
    let (mode, version) = match answer {
        Ok(v) => ("maintenance", v.version.map(|i| i.tag).unwrap_or_default()),
        Err(e) => match errors::kind(&e) {
            Some(Kind::MaintenanceUnimplemented) => ("maintenance", String::new()),
            Some(Kind::NotMaintenance) => ("configured", String::new()),
            _ => ("unknown", String::new()),
        },
    };
    Some(Found {
        ip,
        mode: mode.into(),
        version,
    })
}

/// Probes every host of `cidr` on `port`, `concurrency` at a time; found ones in address order.
pub async fn scan(
    cidr: &str,
    port: u16,
    timeout: Duration,
    concurrency: usize,
) -> Result<Vec<Found>> {
    if concurrency == 0 {
        return Err(talm_base::error::hinted(
            "scan concurrency 0 would probe nothing",
            "give --concurrency 1 or more (default 256)",
        ));
    }
    let hosts = hosts(cidr)?;
    // At most `concurrency` probes exist at a time, so memory follows the concurrency, not the
    // size of the range.
    let mut probes = tokio::task::JoinSet::new();
    let mut out = Vec::new();
    let mut gather = |done: Option<Result<Option<Found>, _>>| {
        if let Some(Ok(Some(f))) = done {
            out.push(f);
        }
    };
    for ip in hosts {
        if probes.len() >= concurrency {
            gather(probes.join_next().await);
        }
        probes.spawn(probe(ip, port, timeout));
    }
    while let Some(done) = probes.join_next().await {
        gather(Some(done));
    }
    out.sort_by_key(|f| f.ip);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_expand_to_hosts() {
        assert_eq!(
            hosts("10.0.0.0/30").unwrap(),
            [
                "10.0.0.1".parse::<Ipv4Addr>().unwrap(),
                "10.0.0.2".parse().unwrap()
            ]
        );
        assert_eq!(hosts("10.0.0.7").unwrap().len(), 1);
        assert_eq!(hosts("10.0.0.0/24").unwrap().len(), 254);
        assert!(hosts("10.0.0.0/8")
            .unwrap_err()
            .to_string()
            .contains("16777216 addresses"));
        assert!(hosts("nope/24").is_err());
    }
}
