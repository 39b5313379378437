//! `talm sim --node-range`: a block of consecutive loopback addresses, written `FIRST-LAST` or
//! as a CIDR block (`127.200.0.0/20`), that starts one simulated node per address.

use std::net::Ipv4Addr;

use anyhow::Result;

use talm_base::error::hinted;

/// The most addresses one `--node-range` value may name (a /16): more is surely a typo.
pub const MAX_NODES: u32 = 1 << 16;

/// A block of consecutive IPv4 loopback addresses, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeRange {
    first: u32,
    last: u32,
}

const EXAMPLE: &str =
    "e.g. --node-range 127.200.0.1-127.200.19.136 (5,000 nodes) or --node-range 127.200.0.0/22";

fn ipv4(flag: &str, text: &str, part: &str) -> Result<Ipv4Addr> {
    part.trim().parse().map_err(|_| {
        hinted(
            format!("{flag} {text:?}: {part:?} is not an IPv4 address"),
            format!("give FIRST-LAST or a CIDR block of loopback addresses, {EXAMPLE}"),
        )
    })
}

fn loopback(flag: &str, text: &str, ip: Ipv4Addr) -> Result<()> {
    if !ip.is_loopback() {
        return Err(hinted(
            format!("{flag} {text:?}: {ip} is not a loopback address"),
            format!("simulated nodes listen on 127.0.0.0/8 only, {EXAMPLE}"),
        ));
    }
    Ok(())
}

impl NodeRange {
    /// Reads `text` as given to `flag` (named in errors).
    pub fn parse(flag: &str, text: &str) -> Result<NodeRange> {
        let (first, last) = if let Some((ip, prefix)) = text.split_once('/') {
            let ip = ipv4(flag, text, ip)?;
            let prefix: u32 = match prefix.trim().parse() {
                Ok(p) if (16..=32).contains(&p) => p,
                _ => {
                    return Err(hinted(
                        format!("{flag} {text:?}: /{prefix} is not a prefix length from 16 to 32"),
                        format!("a block holds at most {MAX_NODES} nodes (a /16), {EXAMPLE}"),
                    ))
                }
            };
            let size = 1u32 << (32 - prefix);
            let first = u32::from(ip);
            if first % size != 0 {
                let start = Ipv4Addr::from(first - first % size);
                return Err(hinted(
                    format!("{flag} {text:?}: {ip} is not the first address of a /{prefix}"),
                    format!("write the block from its start, --node-range {start}/{prefix}, or give FIRST-LAST"),
                ));
            }
            (ip, Ipv4Addr::from(first + (size - 1)))
        } else if let Some((a, b)) = text.split_once('-') {
            (ipv4(flag, text, a)?, ipv4(flag, text, b)?)
        } else {
            return Err(hinted(
                format!("{flag} {text:?} is not a range of addresses"),
                format!("give FIRST-LAST or a CIDR block; a single node is --node IP; {EXAMPLE}"),
            ));
        };
        loopback(flag, text, first)?;
        loopback(flag, text, last)?;
        let (a, b) = (u32::from(first), u32::from(last));
        if b < a {
            return Err(hinted(
                format!("{flag} {text:?}: the range ends ({last}) before it starts ({first})"),
                format!("write the lower address first: --node-range {last}-{first}"),
            ));
        }
        if b - a >= MAX_NODES {
            return Err(hinted(
                format!(
                    "{flag} {text:?} names {} addresses, more than {MAX_NODES}",
                    u64::from(b - a) + 1
                ),
                "one simulator serves at most a /16 per --node-range value: give a smaller range",
            ));
        }
        Ok(NodeRange { first: a, last: b })
    }

    /// How many addresses the range holds.
    pub fn len(&self) -> usize {
        (self.last - self.first) as usize + 1
    }

    /// Never: a range holds at least one address.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The addresses, in ascending order.
    pub fn addrs(&self) -> impl Iterator<Item = Ipv4Addr> {
        (self.first..=self.last).map(Ipv4Addr::from)
    }

    /// The first and last address.
    pub fn ends(&self) -> (Ipv4Addr, Ipv4Addr) {
        (Ipv4Addr::from(self.first), Ipv4Addr::from(self.last))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<NodeRange> {
        NodeRange::parse("--node-range", text)
    }

    /// The error as printed: `Error: ...` and its `hint:` lines.
    fn message(text: &str) -> String {
        talm_base::error::render(&parse(text).unwrap_err())
    }

    #[test]
    fn ranges_and_blocks_name_their_addresses() {
        let r = parse("127.200.0.1-127.200.19.136").unwrap();
        assert_eq!(r.len(), 5000);
        let all: Vec<_> = r.addrs().collect();
        assert_eq!(all[0].to_string(), "127.200.0.1");
        assert_eq!(all[255].to_string(), "127.200.1.0");
        assert_eq!(all[4999].to_string(), "127.200.19.136");
        let one = parse("127.0.0.9-127.0.0.9").unwrap();
        assert_eq!(
            one.addrs().collect::<Vec<_>>(),
            ["127.0.0.9".parse::<Ipv4Addr>().unwrap()]
        );
        let block = parse("127.200.0.0/22").unwrap();
        assert_eq!(block.len(), 1024);
        assert_eq!(
            block.ends(),
            (
                "127.200.0.0".parse().unwrap(),
                "127.200.3.255".parse().unwrap()
            )
        );
        assert_eq!(parse("127.1.2.3/32").unwrap().len(), 1);
        assert_eq!(parse("127.5.0.0/16").unwrap().len(), MAX_NODES as usize);
    }

    #[test]
    fn bad_ranges_name_the_flag_and_value_with_a_hint() {
        let m = message("10.0.0.1-10.0.0.9");
        assert!(
            m.starts_with(
                "Error: --node-range \"10.0.0.1-10.0.0.9\": 10.0.0.1 is not a loopback address"
            ),
            "{m}"
        );
        assert!(
            m.contains("\nhint: simulated nodes listen on 127.0.0.0/8 only"),
            "{m}"
        );
        let m = message("127.0.0.250-128.0.0.3");
        assert!(m.contains("128.0.0.3 is not a loopback address"), "{m}");
        let m = message("127.0.0.9-127.0.0.1");
        assert!(
            m.starts_with("Error: --node-range \"127.0.0.9-127.0.0.1\": the range ends (127.0.0.1) before it starts (127.0.0.9)"),
            "{m}"
        );
        assert!(
            m.contains("hint: write the lower address first: --node-range 127.0.0.1-127.0.0.9"),
            "{m}"
        );
        let m = message("127.0.0.1-127.1.0.1");
        assert!(m.contains("names 65537 addresses, more than 65536"), "{m}");
        let m = message("127.0.0.1");
        assert!(
            m.starts_with("Error: --node-range \"127.0.0.1\" is not a range of addresses"),
            "{m}"
        );
        assert!(m.contains("--node IP"), "{m}");
        let m = message("127.0.0.1-localhost");
        assert!(m.contains("\"localhost\" is not an IPv4 address"), "{m}");
        let m = message("::1-::2");
        assert!(m.contains("is not an IPv4 address"), "{m}");
        let m = message("127.0.0.0/8");
        assert!(m.contains("/8 is not a prefix length from 16 to 32"), "{m}");
        let m = message("127.200.0.5/24");
        assert!(
            m.contains("127.200.0.5 is not the first address of a /24"),
            "{m}"
        );
        assert!(m.contains("--node-range 127.200.0.0/24"), "{m}");
    }
}
