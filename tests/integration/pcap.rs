//! `talm pcap`: a capture on a simulated node's link, decoded as talosctl prints packets or
//! written as a pcap file, and its refusals.

use crate::common::net;
use crate::common::sim::Nodes;
use crate::upgrade_apply::configured;

/// A node whose link has a fixed address, MAC and gateway, so its frames are always the same.
fn node() -> (String, Nodes) {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |s| {
        s.hardware.links[0].mac = "aa:bb:cc:00:00:21".into();
        s.hardware.links[0].addresses = vec!["10.5.0.2/24".into()];
        s.hardware.gateway = "10.5.0.1".into();
    });
    (ip, nodes)
}

/// Packet times read as `<time>`.
fn stamps(text: &str) -> String {
    let re = regex::Regex::new(r" @ \d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? \+0000 UTC").unwrap();
    re.replace_all(text, " @ <time>").into_owned()
}

#[test]
fn a_capture_decodes_as_talosctl_prints_it() {
    let (ip, nodes) = node();
    let d = configured(&nodes, &ip);
    let o = d.talm(["pcap", "-f", "nodes/cp.yaml", "-i", "eth0"]).ok();
    assert_eq!(o.stderr, "");
    assert_eq!(
        stamps(&o.stdout),
        "\
PACKET: 42 bytes, wire length 42 cap length 42 @ <time>
- Layer 1 (14 bytes) = Ethernet\t{Contents=[..14..] Payload=[..28..] SrcMAC=aa:bb:cc:00:00:21 DstMAC=ff:ff:ff:ff:ff:ff EthernetType=ARP Length=0}
- Layer 2 (28 bytes) = ARP\t{Contents=[..28..] Payload=[] AddrType=Ethernet Protocol=IPv4 HwAddressSize=6 ProtAddressSize=4 Operation=1 SourceHwAddress=[..6..] SourceProtAddress=[10, 5, 0, 2] DstHwAddress=[..6..] DstProtAddress=[10, 5, 0, 1]}

PACKET: 42 bytes, wire length 42 cap length 42 @ <time>
- Layer 1 (14 bytes) = Ethernet\t{Contents=[..14..] Payload=[..28..] SrcMAC=52:54:0a:05:00:01 DstMAC=aa:bb:cc:00:00:21 EthernetType=ARP Length=0}
- Layer 2 (28 bytes) = ARP\t{Contents=[..28..] Payload=[] AddrType=Ethernet Protocol=IPv4 HwAddressSize=6 ProtAddressSize=4 Operation=2 SourceHwAddress=[..6..] SourceProtAddress=[10, 5, 0, 1] DstHwAddress=[..6..] DstProtAddress=[10, 5, 0, 2]}

PACKET: 74 bytes, wire length 74 cap length 74 @ <time>
- Layer 1 (14 bytes) = Ethernet\t{Contents=[..14..] Payload=[..60..] SrcMAC=aa:bb:cc:00:00:21 DstMAC=52:54:0a:05:00:01 EthernetType=IPv4 Length=0}
- Layer 2 (20 bytes) = IPv4\t{Contents=[..20..] Payload=[..40..] Version=4 IHL=5 TOS=0 Length=60 Id=7238 Flags=DF FragOffset=0 TTL=64 Protocol=ICMPv4 Checksum=2671 SrcIP=10.5.0.2 DstIP=10.5.0.1 Options=[] Padding=[]}
- Layer 3 (08 bytes) = ICMPv4\t{Contents=[..8..] Payload=[..32..] TypeCode=EchoRequest Checksum=19802 Id=1 Seq=1}
- Layer 4 (32 bytes) = Payload\t32 byte(s)

PACKET: 74 bytes, wire length 74 cap length 74 @ <time>
- Layer 1 (14 bytes) = Ethernet\t{Contents=[..14..] Payload=[..60..] SrcMAC=52:54:0a:05:00:01 DstMAC=aa:bb:cc:00:00:21 EthernetType=IPv4 Length=0}
- Layer 2 (20 bytes) = IPv4\t{Contents=[..20..] Payload=[..40..] Version=4 IHL=5 TOS=0 Length=60 Id=36129 Flags=DF FragOffset=0 TTL=64 Protocol=ICMPv4 Checksum=39315 SrcIP=10.5.0.1 DstIP=10.5.0.2 Options=[] Padding=[]}
- Layer 3 (08 bytes) = ICMPv4\t{Contents=[..8..] Payload=[..32..] TypeCode=EchoReply Checksum=21850 Id=1 Seq=1}
- Layer 4 (32 bytes) = Payload\t32 byte(s)

"
    );
    // -o writes the pcap file itself: the same four packets, Ethernet link type.
    d.talm([
        "tcpdump",
        "-f",
        "nodes/cp.yaml",
        "-i",
        "eth0",
        "-o",
        "eth0.pcap",
        "--duration",
        "30s",
    ])
    .expect()
    .stdout("")
    .stderr("")
    .run();
    let file = std::fs::read(d.join("eth0.pcap")).unwrap();
    let (link, records) = talm::pcap::records(&file).unwrap();
    assert_eq!((link, records.len()), (1, 4));
    let decoded: String = records
        .iter()
        .map(|r| talm::pcap::describe(r) + "\n")
        .collect();
    assert_eq!(stamps(&decoded), stamps(&o.stdout));
}

#[test]
fn a_capture_names_what_it_cannot_do() {
    let (ip, nodes) = node();
    let d = configured(&nodes, &ip);
    d.talm(["pcap", "-f", "nodes/cp.yaml", "-i", "nope"])
        .expect()
        .stderr("Error: error opening pcap reader: rpc error: code = NotFound desc = interface \"nope\" not found\n")
        .status(1)
        .run();
    d.talm(["pcap", "-f", "nodes/cp.yaml", "-n", &format!("{ip},{ip}")])
        .expect()
        .stderr("Error: command \"pcap\" is not supported with multiple nodes\nhint: capture on one node: talm pcap -n IP -i LINK\n")
        .status(1)
        .run();
    // A filter not in `tcpdump -dd` form is refused before the node is asked.
    d.talm(["pcap", "-f", "nodes/cp.yaml", "--bpf-filter", "tcp port 80"])
        .expect()
        .stdout("")
        .stderr("Error: error parsing bpf instruction \"tcp port 80\": unexpected EOF\nhint: pass what `tcpdump -dd -y EN10MB 'EXPR'` prints\n")
        .status(1)
        .run();
    // --snaplen is no longer sent, as talosctl says; one the filter reads is taken.
    d.talm([
        "pcap",
        "-f",
        "nodes/cp.yaml",
        "-s",
        "128",
        "-o",
        "x.pcap",
        "--bpf-filter",
        "{ 0x28, 0, 0, 0x0000000c },\n{ 0x6, 0, 0, 0x00040000 },",
    ])
    .expect()
    .stdout("")
    .stderr("Flag --snaplen has been deprecated, support of snap length is removed\n")
    .run();
    assert_eq!(
        talm::pcap::records(&std::fs::read(d.join("x.pcap")).unwrap())
            .unwrap()
            .1
            .len(),
        4
    );
    // A file already there is replaced by a new one, never rewritten in place: another name
    // for the old file keeps what it held.
    std::fs::hard_link(d.join("x.pcap"), d.join("old.pcap")).unwrap();
    let old = std::fs::read(d.join("old.pcap")).unwrap();
    d.talm(["pcap", "-f", "nodes/cp.yaml", "-o", "x.pcap"]).ok();
    assert_eq!(std::fs::read(d.join("old.pcap")).unwrap(), old);
    assert_ne!(std::fs::read(d.join("x.pcap")).unwrap(), old);

    // The node runs the filter as its kernel does: `tcpdump -dd arp` keeps the two ARP frames,
    // whole; returning 14 keeps each frame's Ethernet header only.
    let arp = "{ 0x28, 0, 0, 0x0000000c },\n{ 0x15, 0, 1, 0x00000806 },\n{ 0x6, 0, 0, 0x00040000 },\n{ 0x6, 0, 0, 0x00000000 },";
    let headers = "{ 0x6, 0, 0, 0x0000000e },";
    for (filter, kept) in [(arp, [42, 42].to_vec()), (headers, [14; 4].to_vec())] {
        d.talm([
            "pcap",
            "-f",
            "nodes/cp.yaml",
            "-o",
            "f.pcap",
            "--bpf-filter",
            filter,
        ])
        .ok();
        let file = std::fs::read(d.join("f.pcap")).unwrap();
        let (_, records) = talm::pcap::records(&file).unwrap();
        let lengths: Vec<usize> = records.iter().map(|r| r.data.len()).collect();
        assert_eq!(lengths, kept, "{filter}");
    }
    // A program the kernel cannot run (no return at its end) is refused by the node.
    d.talm([
        "pcap",
        "-f",
        "nodes/cp.yaml",
        "-o",
        "f.pcap",
        "--bpf-filter",
        "{ 0x28, 0, 0, 0x0000000c },",
    ])
    .expect()
    .stdout("")
    .stderr("Error: rpc error: code = Unknown desc = error setting BPF filter: invalid argument\n")
    .status(1)
    .run();
}
