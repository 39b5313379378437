//! A simulated node's network and disk traffic: the counters of `/proc/net/dev` and
//! `/proc/diskstats` that talosctl's dashboard turns into its NET and DISK sparklines. Like the
//! CPU counters in `load`, they are closed-form functions of the node's activity profile and
//! the time since boot: they only grow, and grow faster when the node is busier, so two polls
//! a few seconds apart see a rate that rises and falls with the CPU.

use crate::node::load::{since_boot, Profile, CPUS};
use crate::node::Node;
use talm_wire::proto::machine;

/// Bytes a second a link moves whatever the node does (ARP, DHCP, NTP, discovery).
const IDLE_RX: f64 = 1_800.0;
const IDLE_TX: f64 = 700.0;
/// Bytes moved per busy CPU second (API calls, etcd peers, kubelet).
const WORK_RX: f64 = 420_000.0;
const WORK_TX: f64 = 260_000.0;
/// Loopback bytes per busy CPU second and a second of idle (apid to machined, etcd clients).
const WORK_LO: f64 = 90_000.0;
const IDLE_LO: f64 = 300.0;
/// Mean packet sizes on the wire and on loopback.
const PACKET: f64 = 870.0;
const PACKET_LO: f64 = 2_400.0;

/// Sectors the boot reads (the image, the state partition), how fast that settles (s), and
/// what reading goes on afterwards: a trickle plus a share of the work.
const BOOT_READ: f64 = 190_000.0;
const BOOT_SETTLE: f64 = 8.0;
const IDLE_READ: f64 = 3.0;
const WORK_READ: f64 = 70.0;
/// Sectors written: logs and the state partition, plus etcd's and containerd's share.
const IDLE_WRITE: f64 = 20.0;
const WORK_WRITE: f64 = 2_600.0;
/// Sectors per request.
const PER_IO: f64 = 16.0;

/// Busy CPU seconds of the whole machine from boot to `t`.
fn work(p: &Profile, t: f64) -> f64 {
    p.busy_seconds(t) * f64::from(CPUS)
}

fn netdev(name: &str, rx: f64, tx: f64, packet: f64) -> machine::NetDev {
    machine::NetDev {
        name: name.into(),
        rx_bytes: rx as u64,
        rx_packets: (rx / packet) as u64,
        rx_multicast: (rx / packet / 400.0) as u64,
        tx_bytes: tx as u64,
        tx_packets: (tx / packet) as u64,
        ..Default::default()
    }
}

/// The devices of `/proc/net/dev` at `t` seconds after boot: `lo`, then `links` (the first
/// carries the node's traffic, the others only their idle chatter).
pub fn net_devices(p: &Profile, t: f64, links: &[&str]) -> Vec<machine::NetDev> {
    let w = work(p, t);
    let lo = IDLE_LO * t + WORK_LO * w;
    let mut out = vec![netdev("lo", lo, lo, PACKET_LO)];
    for (i, name) in links.iter().enumerate() {
        let share = if i == 0 { 1.0 } else { 0.0 };
        let rx = IDLE_RX * t + share * WORK_RX * w;
        let tx = IDLE_TX * t + share * WORK_TX * w;
        out.push(netdev(name, rx, tx, PACKET));
    }
    out
}

/// The devices of `/proc/diskstats` at `t` seconds after boot; the first of `disks` is the
/// system disk, the others are only read once at boot (their partition tables).
pub fn disk_devices(p: &Profile, t: f64, disks: &[&str]) -> Vec<machine::DiskStat> {
    let w = work(p, t);
    disks
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let booted = 1.0 - (-t / BOOT_SETTLE).exp();
            let (read, write) = if i == 0 {
                (
                    BOOT_READ * booted + IDLE_READ * t + WORK_READ * w,
                    IDLE_WRITE * t + WORK_WRITE * w,
                )
            } else {
                (64.0 * booted, 0.0)
            };
            let (reads, writes) = ((read / PER_IO).ceil(), (write / PER_IO).ceil());
            machine::DiskStat {
                name: (*name).into(),
                read_completed: reads as u64,
                read_merged: (reads * 0.1) as u64,
                read_sectors: read as u64,
                read_time_ms: (reads * 0.4) as u64,
                write_completed: writes as u64,
                write_merged: (writes * 0.3) as u64,
                write_sectors: write as u64,
                write_time_ms: (writes * 0.9) as u64,
                io_time_ms: ((reads + writes) * 0.5) as u64,
                io_time_weighted_ms: (reads * 0.4 + writes * 0.9) as u64,
                ..Default::default()
            }
        })
        .collect()
}

/// The sum of the devices, as Talos fills `total`.
fn net_total(devs: &[machine::NetDev]) -> machine::NetDev {
    let sum = |f: fn(&machine::NetDev) -> u64| devs.iter().map(f).sum::<u64>();
    machine::NetDev {
        name: String::new(),
        rx_bytes: sum(|d| d.rx_bytes),
        rx_packets: sum(|d| d.rx_packets),
        rx_multicast: sum(|d| d.rx_multicast),
        tx_bytes: sum(|d| d.tx_bytes),
        tx_packets: sum(|d| d.tx_packets),
        ..Default::default()
    }
}

fn disk_total(devs: &[machine::DiskStat]) -> machine::DiskStat {
    let sum = |f: fn(&machine::DiskStat) -> u64| devs.iter().map(f).sum::<u64>();
    machine::DiskStat {
        name: String::new(),
        read_completed: sum(|d| d.read_completed),
        read_merged: sum(|d| d.read_merged),
        read_sectors: sum(|d| d.read_sectors),
        read_time_ms: sum(|d| d.read_time_ms),
        write_completed: sum(|d| d.write_completed),
        write_merged: sum(|d| d.write_merged),
        write_sectors: sum(|d| d.write_sectors),
        write_time_ms: sum(|d| d.write_time_ms),
        io_time_ms: sum(|d| d.io_time_ms),
        io_time_weighted_ms: sum(|d| d.io_time_weighted_ms),
        ..Default::default()
    }
}

/// The node's `NetworkDeviceStats` now.
pub fn network_device_stats(node: &Node) -> machine::NetworkDeviceStats {
    let st = node.state();
    let p = Profile::of(node, &st);
    let (t, _) = since_boot(&st);
    let links: Vec<&str> = node
        .spec
        .hardware
        .links
        .iter()
        .map(|l| l.name.as_str())
        .collect();
    let devices = net_devices(&p, t, &links);
    machine::NetworkDeviceStats {
        metadata: None,
        total: Some(net_total(&devices)),
        devices,
    }
}

/// The node's `DiskStats` now.
pub fn disk_stats(node: &Node) -> machine::DiskStats {
    let st = node.state();
    let p = Profile::of(node, &st);
    let (t, _) = since_boot(&st);
    let disks: Vec<&str> = node
        .spec
        .hardware
        .disks
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let devices = disk_devices(&p, t, &disks);
    machine::DiskStats {
        metadata: None,
        total: Some(disk_total(&devices)),
        devices,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile {
            busy: 0.2,
            used_kib: 2.0 * 1024.0 * 1024.0,
            phase: 1.3,
        }
    }

    /// Per-poll deltas of a counter over polls `step` seconds apart.
    fn deltas(step: f64, f: impl Fn(f64) -> u64) -> Vec<u64> {
        let values: Vec<u64> = (1..60).map(|i| f(30.0 + f64::from(i) * step)).collect();
        values
            .windows(2)
            .map(|w| {
                assert!(w[1] > w[0], "a counter went back: {w:?}");
                w[1] - w[0]
            })
            .collect()
    }

    /// The counters grow every poll, by amounts that rise and fall with the node's activity
    /// (a sparkline of them is not flat).
    #[test]
    fn traffic_grows_at_a_rate_that_moves() {
        let p = profile();
        let net = |t: f64, f: fn(&machine::NetDev) -> u64| {
            let devs = net_devices(&p, t, &["eth0"]);
            f(&net_total(&devs))
        };
        let disk = |t: f64, f: fn(&machine::DiskStat) -> u64| {
            let devs = disk_devices(&p, t, &["nvme0n1"]);
            f(&disk_total(&devs))
        };
        let series = [
            deltas(3.0, |t| net(t, |d| d.rx_bytes)),
            deltas(3.0, |t| net(t, |d| d.tx_bytes)),
            deltas(3.0, |t| disk(t, |d| d.read_sectors)),
            deltas(3.0, |t| disk(t, |d| d.write_sectors)),
        ];
        for s in &series {
            let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
            assert!(*hi > lo + lo / 5, "flat: {s:?}");
        }
        // Plausible sizes for a control plane polled every 3 s: hundreds of KB on the wire,
        // tens of KB of writes.
        let rx = series[0][0];
        assert!(rx > 200_000 && rx < 5_000_000, "{rx}");
        let written = series[3][0] * 512;
        assert!(written > 10_000 && written < 50_000_000, "{written}");
    }

    #[test]
    fn devices_and_totals() {
        let p = profile();
        let devs = net_devices(&p, 100.0, &["eth0", "eth1"]);
        let names: Vec<_> = devs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["lo", "eth0", "eth1"]);
        let total = net_total(&devs);
        assert_eq!(
            total.rx_bytes,
            devs[0].rx_bytes + devs[1].rx_bytes + devs[2].rx_bytes
        );
        assert!(devs[1].rx_bytes > devs[2].rx_bytes);
        assert_eq!(net_devices(&p, 0.0, &["eth0"])[1].rx_bytes, 0);
        let disks = disk_devices(&p, 100.0, &["nvme0n1", "sda"]);
        assert_eq!(disks[1].write_sectors, 0);
        // The boot's reads are behind it after a minute and a half.
        assert!(disks[0].read_sectors > 180_000, "{:?}", disks[0]);
        assert_eq!(
            disk_total(&disks).read_sectors,
            disks[0].read_sectors + disks[1].read_sectors
        );
    }
}
