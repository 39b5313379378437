//! pcap files as `talm pcap` reads them: libpcap's records, and each packet described the way
//! talosctl prints one (gopacket's `Packet.String()`: a `PACKET:` line, then one line per
//! layer with its exported fields) for Ethernet, ARP, IPv4 and ICMPv4, anything else as payload.

use std::fmt::Write as _;

/// One captured packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub seconds: u32,
    pub micros: u32,
    /// The packet's length on the wire (the record may hold less).
    pub wire_len: u32,
    pub data: Vec<u8>,
}

/// A pcap file's link type and records; an error names what is wrong with the file.
pub fn records(file: &[u8]) -> Result<(u32, Vec<Record>), String> {
    if file.is_empty() {
        return Ok((0, Vec::new()));
    }
    let magic = file
        .get(..4)
        .ok_or("error opening pcap reader: unexpected EOF")?;
    let le = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] => false,
        _ => {
            let m = u32::from_le_bytes([magic[0], magic[1], magic[2], magic[3]]);
            return Err(format!("error opening pcap reader: Unknown magic {m:x}"));
        }
    };
    let word = |at: usize| -> Option<u32> {
        let b: [u8; 4] = file.get(at..at + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    };
    let link = word(20).ok_or("error opening pcap reader: unexpected EOF")?;
    let mut out = Vec::new();
    let mut at = 24;
    while at + 16 <= file.len() {
        let (seconds, micros, kept, wire_len) = (
            word(at).unwrap_or(0),
            word(at + 4).unwrap_or(0),
            word(at + 8).unwrap_or(0) as usize,
            word(at + 12).unwrap_or(0),
        );
        let Some(data) = file.get(at + 16..at + 16 + kept) else {
            break;
        };
        out.push(Record {
            seconds,
            micros,
            wire_len,
            data: data.to_vec(),
        });
        at += 16 + kept;
    }
    Ok((link, out))
}

/// A byte slice as gopacket prints one: up to four values listed, more as `[..N..]`.
fn bytes(b: &[u8]) -> String {
    if b.len() > 4 {
        return format!("[..{}..]", b.len());
    }
    let items: Vec<String> = b.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn mac(b: &[u8]) -> String {
    let parts: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    parts.join(":")
}

fn ipv4(b: &[u8]) -> String {
    format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3])
}

fn ethernet_type(t: u16) -> &'static str {
    match t {
        0x0800 => "IPv4",
        0x0806 => "ARP",
        0x86dd => "IPv6",
        0x8100 => "Dot1Q",
        _ => "UnknownEthernetType",
    }
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

/// One decoded layer: its name, header bytes and fields text; what follows it.
struct Layer {
    name: &'static str,
    len: usize,
    text: String,
}

enum Next<'a> {
    Arp(&'a [u8]),
    Ipv4(&'a [u8]),
    Icmp4(&'a [u8]),
    Payload(&'a [u8]),
    End,
}

fn decode<'a>(next: Next<'a>, layers: &mut Vec<Layer>) -> Next<'a> {
    match next {
        Next::Arp(d) if d.len() >= 8 => {
            let (hw, prot) = (d[4] as usize, d[5] as usize);
            let end = 8 + 2 * hw + 2 * prot;
            if d.len() < end {
                return Next::Payload(d);
            }
            let at = |i: usize, n: usize| &d[i..i + n];
            let link = if be16(d, 0) == 1 {
                "Ethernet"
            } else {
                "UnknownLinkType"
            };
            layers.push(Layer {
                name: "ARP",
                len: end,
                text: format!(
                    "{{Contents={} Payload={} AddrType={link} Protocol={} HwAddressSize={hw} ProtAddressSize={prot} Operation={} SourceHwAddress={} SourceProtAddress={} DstHwAddress={} DstProtAddress={}}}",
                    bytes(&d[..end]), bytes(&d[end..]), ethernet_type(be16(d, 2)), be16(d, 6),
                    bytes(at(8, hw)), bytes(at(8 + hw, prot)), bytes(at(8 + hw + prot, hw)),
                    bytes(at(8 + 2 * hw + prot, prot)),
                ),
            });
            Next::End
        }
        Next::Ipv4(d) if d.len() >= 20 => {
            let ihl = (d[0] & 0x0f) as usize;
            let total = (be16(d, 2) as usize).min(d.len()).max(ihl * 4);
            let flags = match d[6] >> 5 {
                0 => String::new(),
                f => [(4, "Evil"), (2, "DF"), (1, "MF")]
                    .iter()
                    .filter(|(bit, _)| f & bit != 0)
                    .map(|(_, n)| *n)
                    .collect::<Vec<_>>()
                    .join("|"),
            };
            let protocol = match d[9] {
                1 => "ICMPv4",
                6 => "TCP",
                17 => "UDP",
                _ => "UnknownIPProtocol",
            };
            let payload = &d[ihl * 4..total];
            layers.push(Layer {
                name: "IPv4",
                len: ihl * 4,
                text: format!(
                    "{{Contents={} Payload={} Version={} IHL={ihl} TOS={} Length={} Id={} Flags={flags} FragOffset={} TTL={} Protocol={protocol} Checksum={} SrcIP={} DstIP={} Options=[] Padding=[]}}",
                    bytes(&d[..ihl * 4]), bytes(payload), d[0] >> 4, d[1], be16(d, 2), be16(d, 4),
                    be16(d, 6) & 0x1fff, d[8], be16(d, 10), ipv4(&d[12..16]), ipv4(&d[16..20]),
                ),
            });
            if d[9] == 1 {
                Next::Icmp4(payload)
            } else {
                Next::Payload(payload)
            }
        }
        Next::Icmp4(d) if d.len() >= 8 => {
            let type_code = match (d[0], d[1]) {
                (0, 0) => "EchoReply".to_string(),
                (8, 0) => "EchoRequest".to_string(),
                (t, c) => format!("{t}({c})"),
            };
            layers.push(Layer {
                name: "ICMPv4",
                len: 8,
                text: format!(
                    "{{Contents={} Payload={} TypeCode={type_code} Checksum={} Id={} Seq={}}}",
                    bytes(&d[..8]),
                    bytes(&d[8..]),
                    be16(d, 2),
                    be16(d, 4),
                    be16(d, 6)
                ),
            });
            Next::Payload(&d[8..])
        }
        Next::Arp(d) | Next::Ipv4(d) | Next::Icmp4(d) | Next::Payload(d) if !d.is_empty() => {
            layers.push(Layer {
                name: "Payload",
                len: d.len(),
                text: format!("{} byte(s)", d.len()),
            });
            Next::End
        }
        _ => Next::End,
    }
}

/// Go's `time.Time.String()` of a UTC instant: fractions without trailing zeros.
fn go_time(seconds: u32, micros: u32) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp(i64::from(seconds))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let f = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    let mut text = t.format(&f).unwrap_or_default();
    if micros > 0 {
        let frac = format!("{micros:06}");
        text.push('.');
        text.push_str(frac.trim_end_matches('0'));
    }
    text + " +0000 UTC"
}

/// A packet of an Ethernet capture as talosctl prints it (ends with a newline).
pub fn describe(r: &Record) -> String {
    let d = &r.data;
    let mut out = format!(
        "PACKET: {} bytes, wire length {} cap length {} @ {}\n",
        d.len(),
        r.wire_len,
        d.len(),
        go_time(r.seconds, r.micros)
    );
    let mut layers = Vec::new();
    let mut next = if d.len() >= 14 {
        let t = be16(d, 12);
        layers.push(Layer {
            name: "Ethernet",
            len: 14,
            text: format!(
                "{{Contents={} Payload={} SrcMAC={} DstMAC={} EthernetType={} Length=0}}",
                bytes(&d[..14]),
                bytes(&d[14..]),
                mac(&d[6..12]),
                mac(&d[..6]),
                ethernet_type(t)
            ),
        });
        match t {
            0x0806 => Next::Arp(&d[14..]),
            0x0800 => Next::Ipv4(&d[14..]),
            _ => Next::Payload(&d[14..]),
        }
    } else {
        Next::Payload(d)
    };
    while !matches!(next, Next::End) {
        next = decode(next, &mut layers);
    }
    for (i, l) in layers.iter().enumerate() {
        let _ = writeln!(
            out,
            "- Layer {} ({:02} bytes) = {}\t{}",
            i + 1,
            l.len,
            l.name,
            l.text
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arp_request_reads_as_gopacket_prints_it() {
        let mut f = vec![0xff; 6];
        f.extend([0xaa, 0xbb, 0xcc, 0, 0, 0x21, 0x08, 0x06]);
        f.extend([
            0, 1, 8, 0, 6, 4, 0, 1, 0xaa, 0xbb, 0xcc, 0, 0, 0x21, 10, 5, 0, 2,
        ]);
        f.extend([0, 0, 0, 0, 0, 0, 10, 5, 0, 1]);
        let r = Record {
            seconds: 1_796_537_686,
            micros: 123_400,
            wire_len: 42,
            data: f,
        };
        assert_eq!(
            describe(&r),
            "\
PACKET: 42 bytes, wire length 42 cap length 42 @ 2026-12-06 06:14:46.1234 +0000 UTC
- Layer 1 (14 bytes) = Ethernet\t{Contents=[..14..] Payload=[..28..] SrcMAC=aa:bb:cc:00:00:21 DstMAC=ff:ff:ff:ff:ff:ff EthernetType=ARP Length=0}
- Layer 2 (28 bytes) = ARP\t{Contents=[..28..] Payload=[] AddrType=Ethernet Protocol=IPv4 HwAddressSize=6 ProtAddressSize=4 Operation=1 SourceHwAddress=[..6..] SourceProtAddress=[10, 5, 0, 2] DstHwAddress=[..6..] DstProtAddress=[10, 5, 0, 1]}
"
        );
        assert_eq!(
            records(b"nope").unwrap_err(),
            "error opening pcap reader: Unknown magic 65706f6e"
        );
    }
}
