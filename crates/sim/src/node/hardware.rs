//! What a simulated node is made of: its disks, network links, addresses, gateway, resolvers and
//! hostname, with a realistic default (one virtio disk, one virtio NIC) derived from its address,
//! and the YAML file format `talm sim --config` reads.

use std::net::IpAddr;

use serde::Deserialize;

/// One block device.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Disk {
    /// Kernel name: `vda`, `sda`, `nvme0n1`.
    pub name: String,
    /// Size in bytes.
    pub size: u64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub serial: String,
    #[serde(default)]
    pub wwid: String,
    /// `virtio`, `nvme`, `sata`, `usb`...
    #[serde(default)]
    pub transport: String,
    #[serde(default)]
    pub rotational: bool,
    #[serde(default)]
    pub readonly: bool,
    #[serde(default)]
    pub cdrom: bool,
    /// File systems of the partitions already on it (a disk used before), in order; "" for a
    /// partition without one.
    #[serde(default)]
    pub partitions: Vec<String>,
}

/// One network link with its addresses (CIDR).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub name: String,
    #[serde(default)]
    pub mac: String,
    /// PCI bus path, e.g. `0000:00:03.0`; empty for virtual links.
    #[serde(default)]
    pub bus_path: String,
    #[serde(default = "default_driver")]
    pub driver: String,
    #[serde(default = "default_mtu")]
    pub mtu: u32,
    #[serde(default)]
    pub addresses: Vec<String>,
    #[serde(default = "yes")]
    pub up: bool,
}

fn default_driver() -> String {
    "virtio_net".into()
}
fn default_mtu() -> u32 {
    1500
}
fn yes() -> bool {
    true
}

/// A node's hardware and network as discovery reports them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hardware {
    #[serde(default)]
    pub disks: Vec<Disk>,
    #[serde(default)]
    pub links: Vec<Link>,
    /// Default IPv4 gateway (on the first link with an address).
    #[serde(default)]
    pub gateway: String,
    #[serde(default)]
    pub resolvers: Vec<String>,
    /// A hostname from DHCP or the kernel command line; none by default.
    #[serde(default)]
    pub hostname: String,
    /// `metal` (default) or `container`.
    #[serde(default = "metal")]
    pub platform: String,
    /// System extensions with a service (`ext-<name>` once configured).
    #[serde(default)]
    pub extensions: Vec<String>,
}

fn metal() -> String {
    "metal".into()
}

impl Hardware {
    /// A QEMU-like machine for `addr`: disk `nvme0n1` (32 GiB NVMe), NIC `eth0` with `addr/24`
    /// and the `.1` of that /24 as gateway, resolvers 1.1.1.1 and 8.8.8.8.
    pub fn default_for(addr: IpAddr) -> Hardware {
        let (cidr, gateway, mac) = match addr {
            IpAddr::V4(v4) => {
                let o = v4.octets();
                (
                    format!("{addr}/24"),
                    format!("{}.{}.{}.1", o[0], o[1], o[2]),
                    format!("52:54:00:{:02x}:{:02x}:{:02x}", o[1], o[2], o[3]),
                )
            }
            IpAddr::V6(v6) => {
                let o = v6.octets();
                (
                    format!("{addr}/64"),
                    String::new(),
                    format!("52:54:00:{:02x}:{:02x}:{:02x}", o[13], o[14], o[15]),
                )
            }
        };
        Hardware {
            disks: vec![Disk {
                name: "nvme0n1".into(),
                size: 34_359_738_368,
                model: "QEMU NVMe Ctrl".into(),
                serial: "deadbeef".into(),
                wwid: "nvme.1b36-6465616462656566-51454d55204e564d65204374726c-00000001".into(),
                transport: "nvme".into(),
                rotational: false,
                readonly: false,
                cdrom: false,
                partitions: Vec::new(),
            }],
            links: vec![Link {
                name: "eth0".into(),
                mac,
                bus_path: "0000:00:03.0".into(),
                driver: default_driver(),
                mtu: 1500,
                addresses: vec![cidr],
                up: true,
            }],
            gateway,
            resolvers: vec!["1.1.1.1".into(), "8.8.8.8".into()],
            hostname: String::new(),
            platform: metal(),
            extensions: Vec::new(),
        }
    }

    /// Disks visible to the installer (writable, not CD-ROMs).
    pub fn install_disks(&self) -> impl Iterator<Item = &Disk> {
        self.disks.iter().filter(|d| !d.readonly && !d.cdrom)
    }

    /// The disk an install path names: `/dev/<name>`, or `/dev/disk/by-id/nvme-<wwid>`.
    pub fn disk_at(&self, path: &str) -> Option<&Disk> {
        let rest = path.strip_prefix("/dev/")?;
        if let Some(wwid) = rest.strip_prefix("disk/by-id/nvme-") {
            return self.install_disks().find(|d| d.wwid == wwid);
        }
        self.install_disks().find(|d| d.name == rest)
    }
}

pub use talm_base::humanize::pretty_size;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_machine_follows_its_address() {
        let hw = Hardware::default_for("127.0.0.11".parse().unwrap());
        assert_eq!(hw.links[0].addresses, ["127.0.0.11/24"]);
        assert_eq!(hw.gateway, "127.0.0.1");
        assert_eq!(hw.links[0].mac, "52:54:00:00:00:0b");
        assert_eq!(pretty_size(34_359_738_368), "34 GB");
        assert_eq!(pretty_size(1_000_204_886_016), "1.0 TB");
    }
}
