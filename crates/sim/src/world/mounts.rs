//! A simulated node's mounts as `/proc/mounts` lists them, with the sizes `statfs` gives: the
//! squashfs root, kernel file systems (size 0), tmpfs, and once installed the STATE and
//! EPHEMERAL partitions of the system disk with the overlays and container root file systems
//! on EPHEMERAL. Usage of EPHEMERAL grows with the images and logs a node keeps.

use super::workload::Workload;
use super::{Role, World, MEM_TOTAL_KB};

/// One mount.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mount {
    pub source: String,
    pub target: String,
    pub fstype: &'static str,
    pub options: String,
    /// Bytes (statfs blocks × block size); 0 for kernel file systems.
    pub size: u64,
    pub available: u64,
}

const MIB: u64 = 1 << 20;
/// The system disk's partitions (Talos ≥ 1.8 layout on UEFI): label and size.
pub const PARTITIONS: [(&str, u64); 3] = [("EFI", 1024 * MIB), ("META", MIB), ("STATE", 100 * MIB)];

/// The kernel name of partition `n` of `disk` (`nvme0n1p4`, `sda4`).
pub fn partition(disk: &str, n: usize) -> String {
    if disk.ends_with(|c: char| c.is_ascii_digit()) {
        format!("{disk}p{n}")
    } else {
        format!("{disk}{n}")
    }
}

fn mount(
    source: &str,
    target: &str,
    fstype: &'static str,
    options: &str,
    size: u64,
    available: u64,
) -> Mount {
    Mount {
        source: source.to_string(),
        target: target.to_string(),
        fstype,
        options: options.to_string(),
        size,
        available,
    }
}

/// Bytes of an XFS file system on a partition of `bytes` (what statfs reports).
fn xfs_size(bytes: u64) -> u64 {
    (bytes - bytes / 64 - 16 * MIB) / 4096 * 4096
}

/// The node's mounts, in mount order.
pub fn mounts(w: &World, load: &Workload) -> Vec<Mount> {
    let ram = MEM_TOTAL_KB * 1024;
    let half = ram / 2 / 4096 * 4096;
    let used_run = 1_200_000 + load.procs.len() as u64 * 4096;
    let mut out = vec![
        mount(
            "/dev/loop0",
            "/",
            "squashfs",
            "ro,relatime,errors=continue",
            88_866_816,
            0,
        ),
        mount(
            "devtmpfs",
            "/dev",
            "devtmpfs",
            &format!(
                "rw,nosuid,noexec,relatime,size={}k,nr_inodes={},mode=755",
                half / 1024,
                half / 8192
            ),
            half,
            half,
        ),
        mount(
            "proc",
            "/proc",
            "proc",
            "rw,nosuid,nodev,noexec,relatime",
            0,
            0,
        ),
        mount(
            "sysfs",
            "/sys",
            "sysfs",
            "rw,nosuid,nodev,noexec,relatime",
            0,
            0,
        ),
        mount(
            "securityfs",
            "/sys/kernel/security",
            "securityfs",
            "rw,nosuid,nodev,noexec,relatime",
            0,
            0,
        ),
        mount(
            "tmpfs",
            "/run",
            "tmpfs",
            "rw,nosuid,nodev,noexec,relatime,seclabel,mode=755",
            half,
            half - used_run,
        ),
        mount(
            "tmpfs",
            "/system",
            "tmpfs",
            "rw,relatime,seclabel,mode=755",
            half,
            half - 3_276_800,
        ),
        mount(
            "tmpfs",
            "/tmp",
            "tmpfs",
            "rw,nosuid,nodev,noexec,relatime,seclabel,size=65536k,mode=755",
            64 * MIB,
            64 * MIB,
        ),
        mount(
            "cgroup2",
            "/sys/fs/cgroup",
            "cgroup2",
            "rw,nosuid,nodev,noexec,relatime,nsdelegate,memory_recursiveprot",
            0,
            0,
        ),
        mount(
            "devpts",
            "/dev/pts",
            "devpts",
            "rw,nosuid,noexec,relatime,gid=5,mode=620,ptmxmode=000",
            0,
            0,
        ),
        mount(
            "mqueue",
            "/dev/mqueue",
            "mqueue",
            "rw,nosuid,nodev,noexec,relatime",
            0,
            0,
        ),
        mount(
            "bpf",
            "/sys/fs/bpf",
            "bpf",
            "rw,nosuid,nodev,noexec,relatime",
            0,
            0,
        ),
    ];
    let disk = w
        .system_disk
        .as_ref()
        .and_then(|d| w.hw.disks.iter().find(|x| &x.name == d));
    let (Some(disk), false) = (disk, w.role == Role::Maintenance) else {
        out.push(mount(
            "tmpfs",
            "/var",
            "tmpfs",
            "rw,relatime,seclabel,mode=755",
            half,
            half - 24 * MIB,
        ));
        return out;
    };
    let state = xfs_size(PARTITIONS[2].1);
    out.push(mount(
        &format!("/dev/{}", partition(&disk.name, 3)),
        "/system/state",
        "xfs",
        "rw,nosuid,nodev,noexec,relatime,seclabel,attr2,inode64,logbufs=8,logbsize=32k,noquota",
        state,
        state - 6 * MIB,
    ));
    let ephemeral = xfs_size(
        disk.size
            .saturating_sub(PARTITIONS.iter().map(|p| p.1).sum::<u64>() + MIB)
            .max(256 * MIB),
    );
    let used = ephemeral_used(w, load).min(ephemeral);
    let var_opts = "rw,relatime,seclabel,attr2,inode64,logbufs=8,logbsize=32k,prjquota";
    out.push(mount(
        &format!("/dev/{}", partition(&disk.name, 4)),
        "/var",
        "xfs",
        var_opts,
        ephemeral,
        ephemeral - used,
    ));
    for (target, dir) in [
        ("/etc/cni", "etc-cni"),
        ("/etc/kubernetes", "etc-kubernetes"),
        ("/usr/libexec/kubernetes", "usr-libexec-kubernetes"),
        ("/opt", "opt"),
    ] {
        out.push(mount("overlay", target, "overlay", &format!("rw,relatime,seclabel,lowerdir={target},upperdir=/var/system/overlays/{dir}-diff,workdir=/var/system/overlays/{dir}-workdir"), ephemeral, ephemeral - used));
    }
    for c in &load.system {
        if !c.image.is_empty() {
            out.push(mount("overlay", &format!("/run/containerd/io.containerd.runtime.v2.task/system/{}/rootfs", c.id), "overlay", "rw,relatime,seclabel,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/1/fs", ephemeral, ephemeral - used));
        }
    }
    for pod in &load.pods {
        out.push(mount(
            "shm",
            &format!(
                "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/{}/shm",
                pod.sandbox
            ),
            "tmpfs",
            "rw,nosuid,nodev,noexec,relatime,seclabel,size=65536k",
            64 * MIB,
            64 * MIB,
        ));
        out.push(mount(
            "overlay",
            &format!(
                "/run/containerd/io.containerd.runtime.v2.task/k8s.io/{}/rootfs",
                pod.sandbox
            ),
            "overlay",
            "rw,relatime,seclabel",
            ephemeral,
            ephemeral - used,
        ));
        for c in pod.containers.iter().filter(|c| c.running) {
            out.push(mount(
                "overlay",
                &format!(
                    "/run/containerd/io.containerd.runtime.v2.task/k8s.io/{}/rootfs",
                    c.id
                ),
                "overlay",
                "rw,relatime,seclabel",
                ephemeral,
                ephemeral - used,
            ));
        }
    }
    out
}

/// Bytes used on EPHEMERAL: containerd's images, etcd's data and logs, growing with uptime.
fn ephemeral_used(w: &World, load: &Workload) -> u64 {
    let images = super::images::list(w, super::images::Store::Cri)
        .iter()
        .chain(super::images::list(w, super::images::Store::System).iter())
        .map(|i| i.size as u64)
        .sum::<u64>();
    let etcd = if w.etcd {
        48 * MIB + (w.uptime().min(86_400.0) * 900.0) as u64
    } else {
        0
    };
    let logs = (w.uptime().min(86_400.0) * 2_200.0) as u64 + load.pods.len() as u64 * 180_000;
    210 * MIB + images + etcd + logs
}

/// The text of `/proc/mounts`.
pub fn text(mounts: &[Mount]) -> String {
    mounts
        .iter()
        .map(|m| format!("{} {} {} {} 0 0\n", m.source, m.target, m.fstype, m.options))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::world;
    use super::*;

    #[test]
    fn installed_nodes_mount_their_partitions() {
        let w = world(Role::ControlPlane, true, 600.0);
        let load = Workload::of(&w);
        let m = mounts(&w, &load);
        let var = m.iter().find(|m| m.target == "/var").unwrap();
        assert_eq!(var.source, "/dev/nvme0n1p4");
        assert!(var.available < var.size && var.size > 30_000_000_000);
        assert!(m
            .iter()
            .any(|m| m.target == "/system/state" && m.source == "/dev/nvme0n1p3"));
        assert!(m
            .iter()
            .filter(|m| m.fstype == "proc" || m.fstype == "sysfs")
            .all(|m| m.size == 0));
        assert!(text(&m).starts_with("/dev/loop0 / squashfs ro,relatime,errors=continue 0 0\n"));
        let maint = world(Role::Maintenance, false, 60.0);
        let m = mounts(&maint, &Workload::of(&maint));
        assert_eq!(
            m.iter().find(|m| m.target == "/var").unwrap().fstype,
            "tmpfs"
        );
        assert_eq!(partition("sda", 4), "sda4");
    }
}
