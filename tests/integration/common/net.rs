//! Loopback addresses for simulated nodes and fake servers: an atomic counter hands every caller
//! addresses that no other test in this binary holds, however the tests are scheduled.
//!
//! The range is 127.100.0.0/14 (127.100.0.0–127.103.255.255), which no fixed address of the
//! suite uses. An address a test listens on or dials comes from here; addresses that are only
//! written into files (offline renders, golden fixtures) may stay fixed.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The first address of the range, 127.100.0.0.
const BASE: u32 = u32::from_be_bytes([127, 100, 0, 0]);
/// The number of addresses in the range (a /14).
const SIZE: u32 = 1 << 18;

/// Offset from `BASE` of the first address not handed out yet.
static NEXT: AtomicU32 = AtomicU32::new(0);

/// Takes `len` (a power of two) consecutive offsets starting at a multiple of `len`; returns
/// the first.
fn take(len: u32) -> u32 {
    let aligned = |n: u32| n.next_multiple_of(len);
    let before = NEXT
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some(aligned(n) + len)
        })
        .expect("the update always gives a value");
    let start = aligned(before);
    assert!(
        start + len <= SIZE,
        "the tests used up the loopback range 127.100.0.0/14"
    );
    start
}

fn at(offset: u32) -> Ipv4Addr {
    Ipv4Addr::from(BASE + offset)
}

/// A loopback address of its own, never ending in .0 or .255.
pub fn addr() -> String {
    loop {
        let offset = take(1);
        if !matches!(offset & 0xff, 0 | 0xff) {
            return at(offset).to_string();
        }
    }
}

/// `N` addresses of their own, in ascending order: `let [a, b] = net::addrs();`.
pub fn addrs<const N: usize>() -> [String; N] {
    std::array::from_fn(|_| addr())
}

/// A whole subnet of its own (a /24 to a /30, aligned to its size): for a scan of a range that
/// must find exactly the test's nodes, or nodes that sit in one /24 with a VIP next to them.
pub struct Subnet {
    first: u32,
    prefix: u32,
}

/// A subnet of its own with `prefix` bits (24 to 30).
pub fn subnet(prefix: u32) -> Subnet {
    assert!(
        (24..=30).contains(&prefix),
        "a subnet from the allocator is a /24 to a /30, not a /{prefix}"
    );
    Subnet {
        first: take(1 << (32 - prefix)),
        prefix,
    }
}

impl Subnet {
    fn len(&self) -> u32 {
        1 << (32 - self.prefix)
    }

    /// The subnet as `a.b.c.d/prefix`.
    pub fn cidr(&self) -> String {
        format!("{}/{}", at(self.first), self.prefix)
    }

    /// The first `/prefix` inside the subnet as `a.b.c.d/prefix`: a scan of its first hosts.
    pub fn head(&self, prefix: u32) -> String {
        assert!(
            (self.prefix..=32).contains(&prefix),
            "a /{prefix} is not inside a /{}",
            self.prefix
        );
        format!("{}/{prefix}", at(self.first))
    }

    /// Host `i` of the subnet: 1 is the address after the network address; the broadcast
    /// address is not a host.
    pub fn host(&self, i: u32) -> String {
        assert!(
            (1..self.len() - 1).contains(&i),
            "a /{} has hosts 1 to {}, not {i}",
            self.prefix,
            self.len() - 2
        );
        at(self.first + i).to_string()
    }
}

mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn offset(ip: &str) -> u32 {
        let ip: Ipv4Addr = ip
            .parse()
            .unwrap_or_else(|_| panic!("{ip:?} is an address"));
        let offset = u32::from(ip).wrapping_sub(BASE);
        assert!(offset < SIZE, "{ip} is outside 127.100.0.0/14");
        offset
    }

    /// Threads taking addresses and subnets at once never get an address twice, every address
    /// is a loopback address in the range and not a .0 or .255, and no single address falls
    /// inside a subnet handed out.
    #[test]
    fn addresses_are_unique_across_threads_and_well_formed() {
        let taken: Vec<(Vec<String>, Vec<Subnet>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..8)
                .map(|t| {
                    s.spawn(move || {
                        let mut singles = Vec::new();
                        let mut subnets = Vec::new();
                        for i in 0..300 {
                            singles.push(addr());
                            if i % 100 == t {
                                subnets.push(subnet(29 - (t % 2)));
                            }
                        }
                        let [a, b, c] = addrs();
                        singles.extend([a, b, c]);
                        (singles, subnets)
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut seen = BTreeSet::new();
        let mut blocks = Vec::new();
        for (singles, subnets) in &taken {
            for a in singles {
                let ip: Ipv4Addr = a.parse().unwrap();
                assert!(ip.is_loopback(), "{a}");
                assert!(!matches!(ip.octets()[3], 0 | 255), "{a}");
                assert!(seen.insert(offset(a)), "{a} handed out twice");
            }
            for net in subnets {
                let (first, len) = (net.first, net.len());
                assert_eq!(first % len, 0, "{} is aligned", net.cidr());
                blocks.push(first..first + len);
            }
        }
        blocks.sort_by_key(|b| b.start);
        for pair in blocks.windows(2) {
            assert!(pair[0].end <= pair[1].start, "subnets overlap: {pair:?}");
        }
        for o in &seen {
            assert!(
                !blocks.iter().any(|b| b.contains(o)),
                "{} lies in a subnet",
                at(*o)
            );
        }
    }

    #[test]
    fn subnets_name_their_range_and_hosts() {
        let net = subnet(29);
        let first = offset(&net.host(1)) - 1;
        assert_eq!(net.cidr(), format!("{}/29", at(first)));
        assert_eq!(offset(&net.host(6)), first + 6);
        let net = subnet(24);
        assert!(net.cidr().ends_with(".0/24"), "{}", net.cidr());
        assert_eq!(net.head(29), net.cidr().replace("/24", "/29"));
        assert!(net.host(254).ends_with(".254"));
        let [a, b] = addrs();
        assert!(offset(&a) < offset(&b), "{a} before {b}");
        assert!(std::panic::catch_unwind(|| subnet(30).host(3)).is_err());
    }
}
