//! A simulated node's lifecycle state: maintenance or configured, the active, staged and
//! try-mode configs, install and etcd status, the running and pending Talos versions; and what
//! the node reads out of an applied machine config.

use std::sync::Arc;

use serde_yaml_ng::Value;

use crate::node::hardware::Hardware;
use crate::node::intern;

/// An applied machine config and the fields the node acts on. Its text and documents are
/// held in pieces shared with every node sent the same ones (`intern`).
#[derive(Debug, Clone)]
pub struct Config {
    pieces: Vec<Arc<str>>,
    docs: Vec<Arc<Value>>,
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(*k))
}

fn text_at(v: &Value, path: &[&str]) -> String {
    get(v, path)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

impl Config {
    /// Wraps strictly decoded documents (v1alpha1 first when present).
    pub fn new(text: String, docs: Vec<Value>) -> Config {
        Config {
            pieces: intern::pieces(&text),
            docs: docs.into_iter().map(intern::doc).collect(),
        }
    }

    /// The config's text, as applied.
    pub fn text(&self) -> String {
        self.pieces.concat()
    }

    /// The v1alpha1 document, when there is one.
    pub fn v1alpha1(&self) -> Option<&Value> {
        self.docs.iter().map(|d| &**d).find(|d| {
            d.get("kind").is_none()
                && (d.get("machine").is_some()
                    || d.get("cluster").is_some()
                    || d.get("version").is_some())
        })
    }

    fn doc(&self, kind: &str) -> Option<&Value> {
        self.docs
            .iter()
            .map(|d| &**d)
            .find(|d| d.get("kind").and_then(Value::as_str) == Some(kind))
    }

    pub fn has_v1alpha1(&self) -> bool {
        self.v1alpha1().is_some()
    }

    fn v1(&self, path: &[&str]) -> String {
        self.v1alpha1()
            .map(|d| text_at(d, path))
            .unwrap_or_default()
    }

    /// `controlplane`, `worker` or `init`; `unknown` without a v1alpha1 document.
    pub fn machine_type(&self) -> String {
        match self.v1(&["machine", "type"]) {
            t if t.is_empty() => "unknown".into(),
            t => t,
        }
    }

    pub fn is_control_plane(&self) -> bool {
        matches!(self.machine_type().as_str(), "controlplane" | "init")
    }

    /// base64 PEM of `machine.ca` (crt, key).
    pub fn machine_ca(&self) -> (String, String) {
        (
            self.v1(&["machine", "ca", "crt"]),
            self.v1(&["machine", "ca", "key"]),
        )
    }

    /// base64 PEMs of `machine.acceptedCAs[].crt`.
    pub fn accepted_cas(&self) -> Vec<String> {
        self.v1alpha1()
            .and_then(|d| get(d, &["machine", "acceptedCAs"]))
            .and_then(Value::as_sequence)
            .map(|s| {
                s.iter()
                    .map(|c| text_at(c, &["crt"]))
                    .filter(|c| !c.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// base64 PEM of `cluster.ca` (crt, key).
    pub fn cluster_ca(&self) -> (String, String) {
        (
            self.v1(&["cluster", "ca", "crt"]),
            self.v1(&["cluster", "ca", "key"]),
        )
    }

    pub fn cluster_name(&self) -> String {
        self.v1(&["cluster", "clusterName"])
    }

    /// The Layer 2 virtual IPs the node may hold: `Layer2VIPConfig` documents (Talos v1.12+)
    /// and the `vip.ip` of v1alpha1's interfaces and their VLANs.
    pub fn vips(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .docs
            .iter()
            .filter(|d| d.get("kind").and_then(Value::as_str) == Some("Layer2VIPConfig"))
            .filter_map(|d| d.get("name").and_then(Value::as_str).map(str::to_string))
            .collect();
        let interfaces = self
            .v1alpha1()
            .and_then(|d| get(d, &["machine", "network", "interfaces"]))
            .and_then(Value::as_sequence);
        for i in interfaces.into_iter().flatten() {
            let vlans = i.get("vlans").and_then(Value::as_sequence);
            for link in std::iter::once(i).chain(vlans.into_iter().flatten()) {
                let ip = text_at(link, &["vip", "ip"]);
                if !ip.is_empty() && !out.contains(&ip) {
                    out.push(ip);
                }
            }
        }
        out
    }

    pub fn cluster_endpoint(&self) -> String {
        self.v1(&["cluster", "controlPlane", "endpoint"])
    }

    pub fn install_disk(&self) -> String {
        self.v1(&["machine", "install", "disk"])
    }

    pub fn has_disk_selector(&self) -> bool {
        self.v1alpha1()
            .and_then(|d| get(d, &["machine", "install", "diskSelector"]))
            .is_some()
    }

    pub fn install_image(&self) -> String {
        self.v1(&["machine", "install", "image"])
    }

    pub fn cert_sans(&self) -> Vec<String> {
        self.v1alpha1()
            .and_then(|d| get(d, &["machine", "certSANs"]))
            .and_then(Value::as_sequence)
            .map(|s| {
                s.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The hostname the config sets (legacy `machine.network.hostname` or HostnameConfig), and
    /// whether it asks for a stable generated one.
    pub fn hostname(&self) -> (String, bool) {
        let legacy = self.v1(&["machine", "network", "hostname"]);
        if !legacy.is_empty() {
            return (legacy, false);
        }
        match self.doc("HostnameConfig") {
            Some(d) => (text_at(d, &["hostname"]), text_at(d, &["auto"]) == "stable"),
            None => (String::new(), false),
        }
    }
}

/// Where the node is in its life.
#[derive(Debug, Clone)]
pub struct State {
    /// The active config; `None` = maintenance mode.
    pub config: Option<Config>,
    /// Applied at the next boot (STAGED mode).
    pub staged: Option<Config>,
    /// Config to restore when a try-mode apply expires, with the try's generation.
    pub try_rollback: Option<(u64, Option<Config>)>,
    pub config_version: u64,
    /// Talos was installed to this disk.
    pub installed_disk: Option<String>,
    pub etcd_bootstrapped: bool,
    /// The etcd member the node's data directory holds (`None`: empty).
    pub etcd: Option<crate::etcd::Membership>,
    /// Why etcd does not run this boot although it could (left, failed).
    pub etcd_down: Option<crate::etcd::Down>,
    /// An uploaded recovery snapshot (`/var/lib/etcd.snapshot`).
    pub etcd_recovery: Option<Vec<u8>>,
    /// Running Talos version tag.
    pub version: String,
    /// Version to run after the next boot (an upgrade).
    pub pending_version: Option<String>,
    /// A staged upgrade (META tags 0x07 image and 0x08 install options): installed during the
    /// next boot, which then reboots once more into it.
    pub staged_upgrade: Option<crate::machined::upgrade::Staged>,
    /// A reboot was started; further applies are refused until it happens.
    pub rebooting: bool,
    /// Wipe the config at the next boot (a reset).
    pub reset_pending: bool,
    /// The last upgrade asked of the node (its flags), for tests and the log.
    pub last_upgrade: Option<talm_wire::proto::machine::UpgradeRequest>,
    /// The last reset asked of the node (what it wiped), for tests and the log.
    pub last_reset: Option<talm_wire::proto::machine::ResetRequest>,
    pub boots: u64,
    /// Resets that wiped the node (its discovery identity is made anew after each).
    pub resets: u64,
    /// Seed of the stable hostname.
    pub node_id: String,
    /// When the node was created (Unix seconds): resources' timestamps.
    pub started: i64,
    /// When the current boot began (Unix seconds): uptime and the CPU counters start here.
    pub booted: i64,
    /// What API calls changed (services, META, disks, images, boot entries, power).
    pub changes: crate::machined::changes::Changes,
}

impl State {
    pub fn new(version: &str, node_id: &str) -> State {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        State {
            config: None,
            staged: None,
            try_rollback: None,
            config_version: 0,
            installed_disk: None,
            etcd_bootstrapped: false,
            etcd: None,
            etcd_down: None,
            etcd_recovery: None,
            version: version.to_string(),
            pending_version: None,
            staged_upgrade: None,
            rebooting: false,
            reset_pending: false,
            last_upgrade: None,
            last_reset: None,
            boots: 1,
            resets: 0,
            node_id: node_id.to_string(),
            started: now,
            booted: now,
            changes: Default::default(),
        }
    }

    pub fn in_maintenance(&self) -> bool {
        self.config.is_none()
    }

    pub fn system_disk(&self) -> Option<&String> {
        self.installed_disk.as_ref()
    }

    /// Sets the active config (a new config version).
    pub fn set_config(&mut self, cfg: Option<Config>) {
        self.config = cfg;
        self.config_version += 1;
    }

    /// The node's hostname: from its config, from the hardware (DHCP), or the stable one.
    pub fn hostname(&self, hw: &Hardware) -> Option<String> {
        if let Some(cfg) = &self.config {
            let (name, stable) = cfg.hostname();
            if !name.is_empty() {
                return Some(name);
            }
            if !hw.hostname.is_empty() {
                return Some(hw.hostname.clone());
            }
            if stable {
                return Some(stable_hostname(&self.node_id));
            }
            return None;
        }
        (!hw.hostname.is_empty()).then(|| hw.hostname.clone())
    }

    /// What a boot does: a reset wipes the config and etcd, staged config becomes active, an
    /// upgrade's version starts running.
    pub fn boot(&mut self) {
        self.boots += 1;
        self.booted = time::OffsetDateTime::now_utc().unix_timestamp();
        self.rebooting = false;
        self.try_rollback = None;
        self.etcd_down = None;
        self.changes.boot();
        if self.reset_pending {
            self.resets += 1;
            self.changes.reset(self.last_reset.as_ref());
            self.etcd = None;
            self.etcd_recovery = None;
            self.reset_pending = false;
            self.set_config(None);
            self.staged = None;
            self.etcd_bootstrapped = false;
            self.installed_disk = None;
        }
        if let Some(staged) = self.staged.take() {
            self.set_config(Some(staged));
        }
        if let Some(v) = self.pending_version.take() {
            if v != self.version {
                self.changes.previous_version = Some(std::mem::replace(&mut self.version, v));
            }
        }
        if let Some(staged) = self.staged_upgrade.take() {
            // The installer runs in this boot and reboots into the new version.
            self.version = staged.version;
            self.boots += 1;
        }
    }
}

/// `talos-xxx-yyy`: characters 1..4 and 4..7 of the base36 text of the first 8 bytes of
/// sha256(node ID), as Talos derives stable hostnames.
pub fn stable_hostname(node_id: &str) -> String {
    use sha2::Digest;
    let sum = sha2::Sha256::digest(node_id.as_bytes());
    // Cannot fail: a SHA-256 digest is 32 bytes.
    let mut n = u64::from_be_bytes(sum[..8].try_into().expect("8 bytes"));
    let mut digits = Vec::new();
    while n > 0 {
        digits.push(b"0123456789abcdefghijklmnopqrstuvwxyz"[(n % 36) as usize]);
        n /= 36;
    }
    digits.reverse();
    // Cannot fail: the digits are ASCII by construction.
    let s = String::from_utf8(digits).expect("ascii");
    let part = |r: std::ops::Range<usize>| s.get(r).unwrap_or("000").to_string();
    format!("talos-{}-{}", part(1..4), part(4..7))
}

/// The services a node runs and their states: maintenance runs only the API; a configured
/// node runs the Kubernetes stack, with etcd up once bootstrapped on a control plane.
pub fn services(st: &State) -> Vec<(&'static str, &'static str)> {
    let Some(cfg) = &st.config else {
        return vec![
            ("apid", "Running"),
            ("machined", "Running"),
            ("udevd", "Running"),
        ];
    };
    let mut out = vec![
        ("apid", "Running"),
        ("containerd", "Running"),
        ("cri", "Running"),
    ];
    if cfg.is_control_plane() {
        out.push((
            "etcd",
            match &st.etcd_down {
                Some(crate::etcd::Down::Left) => "Finished",
                Some(crate::etcd::Down::Failed(_)) => "Failed",
                None if st.etcd_bootstrapped => "Running",
                None => "Preparing",
            },
        ));
    }
    out.extend([
        ("kubelet", "Running"),
        ("machined", "Running"),
        ("trustd", "Running"),
        ("udevd", "Running"),
    ]);
    out
}
