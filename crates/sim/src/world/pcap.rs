//! What a packet capture on a simulated node's link holds: a pcap file (libpcap's format,
//! microsecond stamps, Ethernet link type) with a few real frames of the node resolving its
//! gateway and pinging it: ARP request and reply, ICMP echo request and reply, checksums right;
//! a BPF filter the request carries passes and cuts them as the kernel's socket filter would.

use std::net::Ipv4Addr;

use crate::node::hardware::{Hardware, Link};
use talm_wire::proto::machine::BpfInstruction;

/// libpcap's magic for microsecond time stamps.
const MAGIC: u32 = 0xa1b2_c3d4;
/// LINKTYPE_ETHERNET.
const ETHERNET: u32 = 1;

/// The pcap file's global header for `snaplen`.
pub fn header(snaplen: u32) -> Vec<u8> {
    let mut b = Vec::with_capacity(24);
    b.extend(MAGIC.to_le_bytes());
    b.extend(2u16.to_le_bytes());
    b.extend(4u16.to_le_bytes());
    b.extend(0i32.to_le_bytes());
    b.extend(0u32.to_le_bytes());
    b.extend(snaplen.to_le_bytes());
    b.extend(ETHERNET.to_le_bytes());
    b
}

/// One record: its header (time, captured and wire length) and the frame cut at `snaplen`.
pub fn record(micros: i64, frame: &[u8], snaplen: u32) -> Vec<u8> {
    let kept = frame.len().min(snaplen as usize);
    let mut b = Vec::with_capacity(16 + kept);
    b.extend((micros.div_euclid(1_000_000) as u32).to_le_bytes());
    b.extend((micros.rem_euclid(1_000_000) as u32).to_le_bytes());
    b.extend((kept as u32).to_le_bytes());
    b.extend((frame.len() as u32).to_le_bytes());
    b.extend(&frame[..kept]);
    b
}

/// The Internet checksum of `data`.
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn mac_of(text: &str) -> [u8; 6] {
    let mut m = [0u8; 6];
    for (i, part) in text.split(':').take(6).enumerate() {
        m[i] = u8::from_str_radix(part, 16).unwrap_or(0);
    }
    m
}

fn ethernet(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(14 + payload.len());
    f.extend(dst);
    f.extend(src);
    f.extend(ethertype.to_be_bytes());
    f.extend(payload);
    f
}

fn arp(op: u16, sha: [u8; 6], spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut a = vec![0, 1, 8, 0, 6, 4];
    a.extend(op.to_be_bytes());
    a.extend(sha);
    a.extend(spa.octets());
    a.extend(tha);
    a.extend(tpa.octets());
    a
}

/// An IPv4 packet (DF, TTL 64) around an ICMP echo message of `kind` (8 request, 0 reply).
fn ping(kind: u8, id: u16, src: Ipv4Addr, dst: Ipv4Addr, seq: u16) -> Vec<u8> {
    let mut icmp = vec![kind, 0, 0, 0];
    icmp.extend(1u16.to_be_bytes());
    icmp.extend(seq.to_be_bytes());
    icmp.extend((0u8..32).map(|i| b'a' + i % 23));
    let c = checksum(&icmp);
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0];
    ip.extend((20 + icmp.len() as u16).to_be_bytes());
    ip.extend(id.to_be_bytes());
    ip.extend([0x40, 0, 64, 1, 0, 0]);
    ip.extend(src.octets());
    ip.extend(dst.octets());
    let c = checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    ip.extend(icmp);
    ip
}

/// The gateway's MAC address, made from its address.
fn gateway_mac(gw: Ipv4Addr) -> [u8; 6] {
    let o = gw.octets();
    [0x52, 0x54, o[0], o[1], o[2], o[3]]
}

/// The link's first IPv4 address.
fn address(link: &Link) -> Option<Ipv4Addr> {
    link.addresses
        .iter()
        .find_map(|a| a.split('/').next()?.parse().ok())
}

/// The frames a capture on `link` sees: the node finding its gateway, then one ping of it.
pub fn frames(hw: &Hardware, link: &Link) -> Vec<Vec<u8>> {
    let (Some(me), Ok(gw)) = (address(link), hw.gateway.parse::<Ipv4Addr>()) else {
        return Vec::new();
    };
    let (mine, theirs) = (mac_of(&link.mac), gateway_mac(gw));
    let arp_type = 0x0806;
    let ipv4 = 0x0800;
    vec![
        ethernet([0xff; 6], mine, arp_type, &arp(1, mine, me, [0; 6], gw)),
        ethernet(mine, theirs, arp_type, &arp(2, theirs, gw, mine, me)),
        ethernet(theirs, mine, ipv4, &ping(8, 0x1c46, me, gw, 1)),
        ethernet(mine, theirs, ipv4, &ping(0, 0x8d21, gw, me, 1)),
    ]
}

/// A whole capture file: the `frames` a filter passed, stamped from `start` (µs since the
/// epoch) 180µs apart as they crossed the link, each cut at the snap length or at what the
/// filter kept of it (`None`: every frame whole).
pub fn file(
    frames: &[Vec<u8>],
    filter: Option<&[BpfInstruction]>,
    start: i64,
    snaplen: u32,
) -> Vec<u8> {
    let mut b = header(snaplen);
    for (i, f) in frames.iter().enumerate() {
        let kept = filter.map_or(snaplen, |p| super::bpf::run(p, f).min(snaplen));
        if kept > 0 {
            b.extend(record(start + 180 * i as i64, f, kept));
        }
    }
    b
}

/// libpcap's snap length when the request gives none (afpacket's default frame size).
const DEFAULT_SNAPLEN: u32 = 4096;

impl crate::node::Node {
    /// MachineService.PacketCapture on this node: the capture file of the link named (its
    /// frames when it has an address and the node a gateway; `lo` sees none of them).
    pub fn packet_capture(
        &self,
        req: &talm_wire::proto::machine::PacketCaptureRequest,
    ) -> Result<Vec<u8>, tonic::Status> {
        let hw = &self.spec.hardware;
        let link = hw.links.iter().find(|l| l.name == req.interface);
        if link.is_none() && req.interface != "lo" {
            return Err(tonic::Status::not_found(format!(
                "interface {:?} not found",
                req.interface
            )));
        }
        let snaplen = if req.snap_len == 0 {
            DEFAULT_SNAPLEN
        } else {
            req.snap_len
        };
        // Talos attaches the filter to its socket; the kernel refuses a program it cannot run.
        let filter = (!req.bpf_filter.is_empty()).then_some(req.bpf_filter.as_slice());
        if filter.is_some_and(|p| super::bpf::check(p).is_err()) {
            return Err(tonic::Status::unknown(
                "error setting BPF filter: invalid argument",
            ));
        }
        let seen = link.map(|l| frames(hw, l)).unwrap_or_default();
        let start = (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64;
        Ok(file(&seen, filter, start, snaplen))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_verify_and_records_cut_at_the_snap_length() {
        let p = ping(
            8,
            1,
            Ipv4Addr::new(10, 5, 0, 2),
            Ipv4Addr::new(10, 5, 0, 1),
            1,
        );
        // A header or message carrying its checksum sums to zero.
        assert_eq!(checksum(&p[..20]), 0);
        assert_eq!(checksum(&p[20..]), 0);
        assert_eq!(p.len(), 60);
        let r = record(1_500_000, &[1, 2, 3, 4], 2);
        assert_eq!(
            r,
            [1, 0, 0, 0, 0x20, 0xa1, 7, 0, 2, 0, 0, 0, 4, 0, 0, 0, 1, 2]
        );
        assert_eq!(&header(262144)[..4], &[0xd4, 0xc3, 0xb2, 0xa1]);
    }
}
