//! What a simulated node runs and holds, for the node-inspection calls: one `World` snapshot
//! (role, versions, boot clock) from which the processes and containers (`workload`), memory,
//! mounts, sockets, services, images and the file tree (`fs`, with `/proc` and the cgroup tree
//! made from the same workload) are all derived, so every view agrees with the others. Values
//! move with the node's uptime and are otherwise deterministic for a node and boot.

pub mod bpf;
pub mod catalogue;
pub mod cgroupfs;
pub mod clock;
pub mod fs;
pub mod images;
pub mod meminfo;
pub mod mounts;
pub mod netstat;
pub mod pcap;
pub mod pci;
pub mod rootfs;
pub mod services;
pub mod walk;
pub mod workload;

use serde_yaml_ng::Value;

use crate::node::hardware::Hardware;
use crate::node::Node;

/// Kubernetes version of a simulated cluster when its config does not name one.
pub const KUBERNETES_VERSION: &str = "v1.36.2";
/// The etcd Talos v1.13 runs by default.
pub const ETCD_IMAGE: &str = "registry.k8s.io/etcd:v3.6.12";
/// The NTP server Talos queries when none is configured.
pub const DEFAULT_NTP: &str = "time.cloudflare.com";
/// Seconds from a node's power-on until its API serves (firmware, kernel, early services):
/// a node answering its first call has been up that long.
pub const BOOT_TO_API: f64 = 25.0;
/// Memory of a simulated machine, in kB as /proc/meminfo has it (a 4 GiB VM).
pub const MEM_TOTAL_KB: u64 = 4_027_520;

/// What the node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// No config yet.
    Maintenance,
    ControlPlane,
    Worker,
}

/// A snapshot of a node, the input of every view.
#[derive(Clone, Debug)]
pub struct World {
    pub role: Role,
    /// A control plane whose etcd was bootstrapped (its Kubernetes control plane runs).
    pub etcd: bool,
    pub version: String,
    pub hostname: String,
    /// The node's address (as nodes are named).
    pub addr: String,
    pub boots: u64,
    /// When the current boot started (Unix seconds).
    pub boot: f64,
    /// Now (Unix seconds).
    pub now: f64,
    /// Seed of everything random-looking about this node and boot.
    pub seed: u64,
    pub hw: Hardware,
    pub kubernetes: String,
    /// The first configured time server, else Talos's default.
    pub ntp: String,
    /// Host of the cluster's API endpoint (`cluster.controlPlane.endpoint`), else the node's IP.
    pub endpoint: String,
    /// The disk Talos was installed to.
    pub system_disk: Option<String>,
    /// The config as applied (read by `/system/state/config.yaml`).
    pub config: String,
    /// The service states (`node::services`), the registry every view follows.
    pub services: Vec<(&'static str, &'static str)>,
    /// Why etcd failed, when its service did.
    pub etcd_failure: String,
    /// Running services whose health check fails (a fault, `crate::net::unhealthy`).
    pub unhealthy: Vec<String>,
}

impl World {
    /// The node as it is now.
    pub fn of(node: &Node) -> World {
        let st = node.state();
        let hw = node.spec.hardware.clone();
        let (role, config) = match &st.config {
            None => (Role::Maintenance, String::new()),
            Some(c) if c.is_control_plane() => (Role::ControlPlane, c.text()),
            Some(c) => (Role::Worker, c.text()),
        };
        let doc = first_v1alpha1(&config);
        let kubernetes = doc
            .as_ref()
            .and_then(|d| text_at(d, &["cluster", "apiServer", "image"]))
            .and_then(|img| img.rsplit_once(':').map(|(_, t)| t.to_string()))
            .filter(|t| t.starts_with('v'))
            .unwrap_or_else(|| KUBERNETES_VERSION.to_string());
        let ntp = doc
            .as_ref()
            .and_then(|d| {
                d.get("machine")?
                    .get("time")?
                    .get("servers")?
                    .get(0)?
                    .as_str()
            })
            .map(str::to_string)
            .unwrap_or_else(|| DEFAULT_NTP.to_string());
        let endpoint = doc
            .as_ref()
            .and_then(|d| text_at(d, &["cluster", "controlPlane", "endpoint"]))
            .and_then(|u| {
                let rest = u.split_once("://").map_or(u.as_str(), |(_, r)| r);
                let host = rest.split('/').next()?;
                let host = match host.rsplit_once(':') {
                    Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
                    _ => host,
                };
                Some(host.trim_matches(['[', ']']).to_string())
            })
            .filter(|h| !h.is_empty());
        let now = clock::now();
        let boot = st.booted as f64 - BOOT_TO_API;
        World {
            role,
            etcd: role == Role::ControlPlane && st.etcd_bootstrapped,
            version: st.version.clone(),
            hostname: st
                .hostname(&hw)
                .unwrap_or_else(|| crate::node::state::stable_hostname(&st.node_id)),
            addr: node.name(),
            boots: st.boots,
            boot,
            now,
            seed: mix(mix(SEED, &st.node_id), &st.boots.to_string()),
            kubernetes,
            ntp,
            endpoint: endpoint.unwrap_or_default(),
            system_disk: st.system_disk().cloned(),
            config,
            services: crate::node::services(&st),
            etcd_failure: match &st.etcd_down {
                Some(crate::etcd::Down::Failed(why)) => why.clone(),
                _ => String::new(),
            },
            unhealthy: node
                .faults()
                .unhealthy
                .map(|u| u.now(&st.version))
                .unwrap_or_default(),
            hw,
        }
    }

    /// Seconds since the boot.
    pub fn uptime(&self) -> f64 {
        (self.now - self.boot).max(0.0)
    }

    /// Whether service `id` is in state `Running`.
    pub fn running(&self, id: &str) -> bool {
        self.services
            .iter()
            .any(|(s, st)| *s == id && *st == "Running")
    }

    /// The node's IPv4 address on its first link (without prefix), else its name.
    pub fn ip(&self) -> String {
        self.hw
            .links
            .iter()
            .flat_map(|l| l.addresses.iter())
            .filter_map(|a| a.split('/').next())
            .find(|a| a.parse::<std::net::Ipv4Addr>().is_ok())
            .map(str::to_string)
            .unwrap_or_else(|| self.addr.clone())
    }

    /// A deterministic number for `label` on this node and boot.
    pub fn rand(&self, label: &str) -> u64 {
        mix(self.seed, label)
    }

    /// `len` lower-case hex digits for `label` on this node and boot.
    pub fn hex(&self, label: &str, len: usize) -> String {
        hex(self.seed, label, len)
    }
}

/// The root of every derived number.
const SEED: u64 = 0x7a1d_5eed_0000_0001;

fn first_v1alpha1(text: &str) -> Option<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .filter_map(|d| serde::Deserialize::deserialize(d).ok())
        .find(|v: &Value| v.get("machine").is_some() || v.get("cluster").is_some())
}

fn text_at(v: &Value, path: &[&str]) -> Option<String> {
    path.iter()
        .try_fold(v, |cur, k| cur.get(*k))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// FNV-1a of `label` folded into `seed`, then splitmix64: a well-spread deterministic number.
pub fn mix(seed: u64, label: &str) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in label.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `len` hex digits derived from `seed` and `label`.
pub fn hex(seed: u64, label: &str, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut i = 0u64;
    while out.len() < len {
        out.push_str(&format!("{:016x}", mix(seed, &format!("{label}#{i}"))));
        i += 1;
    }
    out.truncate(len);
    out
}

/// `len` characters of Kubernetes' generated-name alphabet (no vowels, no look-alikes).
pub fn suffix(seed: u64, label: &str, len: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..len)
        .map(|i| {
            let n = mix(seed, &format!("{label}@{i}")) % ALPHABET.len() as u64;
            ALPHABET[n as usize] as char
        })
        .collect()
}

/// A UUID (v4 layout) derived from `seed` and `label`.
pub fn uuid(seed: u64, label: &str) -> String {
    let h = hex(seed, label, 32);
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// A node snapshot for unit tests.
#[cfg(test)]
pub mod testing {
    use super::*;

    pub fn world(role: Role, etcd: bool, uptime: f64) -> World {
        let services: Vec<(&'static str, &'static str)> = match role {
            Role::Maintenance => vec![
                ("apid", "Running"),
                ("machined", "Running"),
                ("udevd", "Running"),
            ],
            _ => {
                let mut s = vec![
                    ("apid", "Running"),
                    ("containerd", "Running"),
                    ("cri", "Running"),
                ];
                if role == Role::ControlPlane {
                    s.push(("etcd", if etcd { "Running" } else { "Preparing" }));
                }
                s.extend([
                    ("kubelet", "Running"),
                    ("machined", "Running"),
                    ("trustd", "Running"),
                    ("udevd", "Running"),
                ]);
                s
            }
        };
        World {
            role,
            etcd,
            version: "v1.13.7".into(),
            hostname: "talos-abc-def".into(),
            addr: "127.0.0.5".into(),
            boots: 2,
            boot: 1_800_000_000.0,
            now: 1_800_000_000.0 + uptime,
            seed: 42,
            hw: Hardware::default_for("127.0.0.5".parse().unwrap()),
            kubernetes: "v1.36.2".into(),
            ntp: "time.cloudflare.com".into(),
            endpoint: "127.0.0.5".into(),
            system_disk: (role != Role::Maintenance).then(|| "nvme0n1".to_string()),
            config: String::new(),
            services,
            etcd_failure: String::new(),
            unhealthy: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_are_stable_and_shaped() {
        assert_eq!(hex(1, "a", 64).len(), 64);
        assert_eq!(hex(1, "a", 12), hex(1, "a", 64)[..12]);
        assert_ne!(hex(1, "a", 12), hex(2, "a", 12));
        let u = uuid(5, "pod");
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        let s = suffix(3, "kube-proxy", 5);
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| !"aeiou013".contains(c)));
    }
}
