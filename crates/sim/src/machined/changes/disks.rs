//! Block devices of a simulated node and `storage.StorageService/BlockDeviceWipe`: the disks,
//! the system disk's partitions (once installed) and the partitions a disk was given in the
//! hardware description, each checked as Talos checks before wiping (unknown, read-only,
//! CD-ROM, in use by a volume); a wipe clears a partition's file system (the whole partition
//! table for a disk) and `drop_partition` removes a partition. `DiscoveredVolumes` shows the
//! result.

use prost::Message;
use serde_yaml_ng::Value;
use tonic::Status;

use crate::cosi::facts::{map, Res};
use crate::node::hardware::{pretty_size, Hardware};
use crate::node::state::State;
use crate::node::{denied, is_admin, Node};
use crate::world::mounts::{partition, PARTITIONS};
use talm_wire::proto::storage::{block_device_wipe_descriptor::Method, BlockDeviceWipeDescriptor};

/// The COSI type listing block devices and what is on them.
pub const TYPE: &str = "DiscoveredVolumes.block.talos.dev";

/// One block device.
#[derive(Debug, Clone, PartialEq)]
pub struct Device {
    pub name: String,
    /// The disk of a partition.
    pub parent: Option<String>,
    pub index: usize,
    pub size: u64,
    /// File system (or `gpt` for a partitioned disk); "" when nothing is found.
    pub fs: String,
    /// GPT partition label.
    pub label: String,
    pub readonly: bool,
    pub cdrom: bool,
}

/// The system disk's partitions: label and file system, in order.
const SYSTEM: [(&str, &str); 4] = [
    ("EFI", "vfat"),
    ("META", "talosmeta"),
    ("STATE", "xfs"),
    ("EPHEMERAL", "xfs"),
];

/// Every block device of the node as it is now, disks first, each followed by its partitions.
pub fn devices(hw: &Hardware, st: &State) -> Vec<Device> {
    let c = &st.changes;
    let mut out = Vec::new();
    for d in &hw.disks {
        let mut parts: Vec<Device> = Vec::new();
        if st.installed_disk.as_deref() == Some(d.name.as_str()) {
            let fixed: u64 = PARTITIONS.iter().map(|p| p.1).sum();
            for (i, (label, fs)) in SYSTEM.iter().enumerate() {
                let size = PARTITIONS
                    .get(i)
                    .map(|p| p.1)
                    .unwrap_or_else(|| d.size.saturating_sub(fixed + (1 << 20)));
                parts.push(part(d, i + 1, size, fs, label));
            }
        } else {
            let n = d.partitions.len().max(1) as u64;
            for (i, fs) in d.partitions.iter().enumerate() {
                parts.push(part(d, i + 1, d.size / n, fs, ""));
            }
        }
        parts.retain(|p| !c.dropped.contains(&p.name));
        for p in &mut parts {
            if c.wiped.contains(&p.name) {
                p.fs.clear();
            }
        }
        out.push(Device {
            name: d.name.clone(),
            parent: None,
            index: 0,
            size: d.size,
            fs: if parts.is_empty() { "" } else { "gpt" }.into(),
            label: String::new(),
            readonly: d.readonly,
            cdrom: d.cdrom,
        });
        out.extend(parts);
    }
    out
}

fn part(d: &crate::node::hardware::Disk, n: usize, size: u64, fs: &str, label: &str) -> Device {
    Device {
        name: partition(&d.name, n),
        parent: Some(d.name.clone()),
        index: n,
        size,
        fs: fs.into(),
        label: label.into(),
        readonly: d.readonly,
        cdrom: d.cdrom,
    }
}

/// The volume using a device of the system disk, as Talos finds it: volumes by ID (EFI,
/// EPHEMERAL, META, STATE), a partition by its location, the disk by the volumes' parent.
fn volume_of(dev: &Device, st: &State) -> Option<&'static str> {
    st.config.as_ref()?;
    let system = st.installed_disk.as_deref()?;
    match &dev.parent {
        None if dev.name == system => Some("EFI"),
        Some(p) if p == system => SYSTEM.get(dev.index.checked_sub(1)?).map(|s| s.0),
        _ => None,
    }
}

impl Node {
    /// BlockDeviceWipe: every device is checked first, then all are wiped.
    pub fn wipe(
        &self,
        devices: &[BlockDeviceWipeDescriptor],
        roles: &[String],
    ) -> Result<(), Status> {
        let mut st = self.state();
        if !st.in_maintenance() && !is_admin(roles) {
            return Err(denied());
        }
        let all = self::devices(&self.spec.hardware, &st);
        let mut found = Vec::new();
        for d in devices {
            let name = d.device.as_str();
            let Some(dev) = all.iter().find(|x| x.name == name) else {
                return Err(Status::not_found(format!("blockdevice {name:?} not found")));
            };
            if dev.readonly {
                return Err(Status::failed_precondition(format!(
                    "blockdevice {name:?} is read-only"
                )));
            }
            if dev.cdrom {
                return Err(Status::failed_precondition(format!(
                    "blockdevice {name:?} is a CD-ROM"
                )));
            }
            if !d.skip_volume_check {
                if let Some(v) = volume_of(dev, &st) {
                    return Err(Status::failed_precondition(format!(
                        "blockdevice {name:?} is in use by volume {v:?}"
                    )));
                }
            }
            found.push((dev.clone(), d));
        }
        let mut log = Vec::new();
        for (dev, d) in found {
            let method = Method::try_from(d.method).unwrap_or(Method::Fast);
            st.changes.wiped.insert(dev.name.clone());
            if dev.parent.is_none() {
                // The partition table is gone with the signatures: so are the partitions.
                for p in all
                    .iter()
                    .filter(|p| p.parent.as_deref() == Some(&dev.name))
                {
                    st.changes.dropped.insert(p.name.clone());
                }
            } else if d.drop_partition {
                st.changes.dropped.insert(dev.name.clone());
            }
            log.push(format!(
                "block device {:?} wiped (method {}, drop partition {})",
                dev.name,
                method.as_str_name(),
                d.drop_partition && dev.parent.is_some()
            ));
        }
        drop(st);
        for l in log {
            self.journal.talos(&l);
        }
        Ok(())
    }
}

/// The DiscoveredVolumes resources of the node.
pub fn resources(hw: &Hardware, st: &State) -> Vec<Res> {
    let s = |v: &str| Value::String(v.to_string());
    devices(hw, st)
        .into_iter()
        .map(|d| {
            let mut spec = vec![
                ("dev_path", s(&format!("/dev/{}", d.name))),
                (
                    "type",
                    s(if d.parent.is_some() {
                        "partition"
                    } else {
                        "disk"
                    }),
                ),
                (
                    "device_path",
                    s(&format!("/sys/devices/virtual/block/{}", d.name)),
                ),
            ];
            if let Some(p) = &d.parent {
                spec.push(("parent", s(p)));
                spec.push(("parent_dev_path", s(&format!("/dev/{p}"))));
            }
            spec.extend([
                ("offset", Value::from(0u64)),
                ("size", Value::from(d.size)),
                ("pretty_size", s(&pretty_size(d.size))),
                ("sector_size", Value::from(512u64)),
                ("io_size", Value::from(512u64)),
                ("name", s(&d.fs)),
            ]);
            if d.parent.is_some() {
                if !d.label.is_empty() {
                    spec.push(("partition_label", s(&d.label)));
                }
                spec.push(("partition_index", Value::from(d.index as u64)));
            }
            Res {
                namespace: "runtime",
                ty: TYPE,
                id: d.name,
                owner: "block.DiscoveryController",
                spec: map(spec),
                version: 1,
                annotations: vec![],
            }
        })
        .collect()
}

/// `proto_spec` of a DiscoveredVolume.
pub fn proto_spec(ty: &str, spec: &Value) -> Option<Vec<u8>> {
    if ty != TYPE {
        return None;
    }
    let t = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let n = |k: &str| spec.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(
        talm_wire::proto::talos::resource::definitions::block::DiscoveredVolumeSpec {
            size: n("size"),
            sector_size: n("sector_size"),
            io_size: n("io_size"),
            name: t("name"),
            partition_label: t("partition_label"),
            partition_index: n("partition_index"),
            r#type: t("type"),
            device_path: t("device_path"),
            parent: t("parent"),
            dev_path: t("dev_path"),
            parent_dev_path: t("parent_dev_path"),
            pretty_size: t("pretty_size"),
            offset: n("offset"),
            ..Default::default()
        }
        .encode_to_vec(),
    )
}
