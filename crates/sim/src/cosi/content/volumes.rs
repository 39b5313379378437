//! The node's volumes as Talos's `block.VolumeManagerController` reports them (VolumeStatus):
//! the system disk's META, STATE and EPHEMERAL partitions found among the node's block devices
//! (`missing` where the disk holds none), and once configured the `/var/run` symlink, the
//! standard directories under `/var` and the overlays Talos mounts, each with its mount spec.

use serde_yaml_ng::Value;

use super::{map, number, omit, res, s, text, Ctx};
use crate::cosi::facts::Res;
use crate::machined::changes::disks::{devices, Device};
use crate::node::hardware::pretty_size;

const TYPE: &str = "VolumeStatuses.block.talos.dev";
const OWNER: &str = "block.VolumeManagerController";
const EPHEMERAL_LABEL: &str = "system_u:object_r:ephemeral_t:s0";

/// A MountSpec: target, SELinux label and quota support always; the rest when set.
fn mount(target: &str, label: &str, quota: bool, parent: &str, mode: u64, uid: u64) -> Value {
    omit(vec![
        ("targetPath", Some(s(target))),
        ("selinuxLabel", Some(s(label))),
        ("projectQuotaSupport", Some(Value::from(quota))),
        ("parentId", text(parent)),
        ("fileMode", number(mode)),
        ("uid", number(uid)),
        ("gid", number(uid)),
    ])
}

/// A system partition: `ready` where the disk holds it (with its file system), else missing.
fn partition(id: &str, dev: Option<&Device>, fs: &str, mount_spec: Option<Value>) -> Res {
    let Some(d) = dev else {
        let spec = omit(vec![
            ("phase", Some(s("missing"))),
            ("type", Some(s("partition"))),
            ("mountSpec", mount_spec),
        ]);
        return res("runtime", TYPE, id, OWNER, spec, 1);
    };
    let location = format!("/dev/{}", d.name);
    let spec = omit(vec![
        ("phase", Some(s("ready"))),
        ("type", Some(s("partition"))),
        ("location", Some(s(&location))),
        ("mountLocation", Some(s(&location))),
        ("partitionIndex", number(d.index as u64)),
        (
            "parentLocation",
            d.parent.as_ref().map(|p| s(format!("/dev/{p}"))),
        ),
        ("size", number(d.size)),
        ("prettySize", Some(s(pretty_size(d.size)))),
        ("filesystem", text(fs)),
        ("mountSpec", mount_spec),
    ]);
    // Waiting, located, then ready.
    res("runtime", TYPE, id, OWNER, spec, 3)
}

/// The directories Talos makes under `/var`: ID (the path unless named), path, mode, owner,
/// recursive relabel and SELinux label.
const DIRECTORIES: &[(&str, &str, u64, u64, bool, &str)] = &[
    (
        "",
        "/var/log",
        0o755,
        0,
        false,
        "system_u:object_r:var_log_t:s0",
    ),
    (
        "",
        "/var/log/audit",
        0o700,
        0,
        false,
        "system_u:object_r:audit_log_t:s0",
    ),
    (
        "",
        "/var/log/audit/kube",
        0o700,
        65534,
        true,
        "system_u:object_r:kube_log_t:s0",
    ),
    (
        "",
        "/var/log/containers",
        0o755,
        0,
        false,
        "system_u:object_r:containers_log_t:s0",
    ),
    (
        "",
        "/var/log/pods",
        0o755,
        0,
        false,
        "system_u:object_r:pods_log_t:s0",
    ),
    ("", "/var/lib", 0o700, 0, false, EPHEMERAL_LABEL),
    (
        "ETCD",
        "/var/lib/etcd",
        0o700,
        60,
        true,
        "system_u:object_r:etcd_data_t:s0",
    ),
    (
        "",
        "/var/lib/containerd",
        0,
        0,
        false,
        "system_u:object_r:containerd_state_t:s0",
    ),
    (
        "",
        "/var/lib/kubelet",
        0o700,
        0,
        false,
        "system_u:object_r:kubelet_state_t:s0",
    ),
    (
        "",
        "/var/lib/cni",
        0o700,
        0,
        true,
        "system_u:object_r:cni_state_t:s0",
    ),
    (
        "",
        "/var/lib/kubelet/seccomp",
        0o700,
        0,
        false,
        "system_u:object_r:seccomp_profile_t:s0",
    ),
    (
        "",
        "/var/lib/kubelet/seccomp/profiles",
        0o700,
        0,
        true,
        "system_u:object_r:seccomp_profile_t:s0",
    ),
    ("", "/var/mnt", 0o755, 0, false, EPHEMERAL_LABEL),
    (
        "",
        "/var/run/lock",
        0o755,
        0,
        false,
        "system_u:object_r:var_lock_t:s0",
    ),
];

/// The overlays Talos mounts over read-only paths, on EPHEMERAL.
const OVERLAYS: &[(&str, &str)] = &[
    ("/etc/cni", "system_u:object_r:cni_conf_t:s0"),
    ("/etc/kubernetes", "system_u:object_r:k8s_conf_t:s0"),
    (
        "/usr/libexec/kubernetes",
        "system_u:object_r:k8s_plugin_t:s0",
    ),
    ("/opt", "system_u:object_r:opt_t:s0"),
];

fn directories() -> Vec<Res> {
    let mut out = vec![res(
        "runtime",
        TYPE,
        "/var/run",
        OWNER,
        map(vec![
            ("phase", s("ready")),
            ("type", s("symlink")),
            ("mountSpec", mount("/var/run", "", false, "", 0, 0)),
            (
                "symlink",
                map(vec![
                    ("symlinkTargetPath", s("/run")),
                    ("force", Value::from(true)),
                ]),
            ),
        ]),
        1,
    )];
    for (id, path, mode, uid, recursive, label) in DIRECTORIES {
        let (dir, base) = path.rsplit_once('/').unwrap_or(("", path));
        // The parent is the volume of the directory above (EPHEMERAL for `/var`).
        let parent = match dir {
            "/var" => "EPHEMERAL",
            other => DIRECTORIES
                .iter()
                .find(|d| d.1 == other)
                .map(|d| if d.0.is_empty() { d.1 } else { d.0 })
                .unwrap_or(other),
        };
        let mut m = mount(base, label, false, parent, *mode, *uid);
        if *recursive {
            if let Value::Mapping(mm) = &mut m {
                mm.insert("recursiveRelabel".into(), Value::from(true));
            }
        }
        out.push(res(
            "runtime",
            TYPE,
            if id.is_empty() { *path } else { *id },
            OWNER,
            map(vec![
                ("phase", s("ready")),
                ("type", s("directory")),
                ("mountSpec", m),
            ]),
            1,
        ));
    }
    for (path, label) in OVERLAYS {
        out.push(res(
            "runtime",
            TYPE,
            *path,
            OWNER,
            map(vec![
                ("phase", s("ready")),
                ("type", s("overlay")),
                ("parentID", s("EPHEMERAL")),
                ("mountSpec", mount(path, label, false, "", 0o755, 0)),
            ]),
            1,
        ));
    }
    out
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    let configured = ctx.st.config.is_some();
    let all = devices(ctx.hw, ctx.st);
    let find = |label: &str| all.iter().find(|d| d.label == label && !d.fs.is_empty());
    let quota = ctx
        .st
        .config
        .as_ref()
        .and_then(|c| c.v1alpha1())
        .and_then(|d| d.get("machine")?.get("features")?.get("diskQuotaSupport"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = vec![
        partition("META", find("META"), "", None),
        partition(
            "STATE",
            find("STATE"),
            "xfs",
            Some(mount(
                "/system/state",
                "system_u:object_r:system_state_t:s0",
                false,
                "",
                0o700,
                0,
            )),
        ),
    ];
    if configured {
        out.push(partition(
            "EPHEMERAL",
            find("EPHEMERAL"),
            "xfs",
            Some(mount("/var", EPHEMERAL_LABEL, quota, "", 0o755, 0)),
        ));
        out.extend(directories());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{alone, configured, hw};
    use super::*;
    use crate::node::state::State;

    #[test]
    fn volumes_follow_the_install_and_the_config() {
        let hw = hw();
        let fresh = State::new("v1.13.7", "n1");
        let r = resources(&alone(&hw, &fresh));
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["META", "STATE"]);
        assert_eq!(
            talm_base::yaml::to_string(&r[1].spec),
            "phase: missing\ntype: partition\nmountSpec:\n    targetPath: /system/state\n    selinuxLabel: system_u:object_r:system_state_t:s0\n    projectQuotaSupport: false\n    fileMode: 448\n"
        );
        let st = configured("controlplane", "CA");
        let r = resources(&alone(&hw, &st));
        assert_eq!(r.len(), 3 + 1 + DIRECTORIES.len() + OVERLAYS.len());
        let eph = r.iter().find(|r| r.id == "EPHEMERAL").unwrap();
        assert_eq!(
            talm_base::yaml::to_string(&eph.spec),
            format!(
                "phase: ready\ntype: partition\nlocation: /dev/nvme0n1p4\nmountLocation: /dev/nvme0n1p4\npartitionIndex: 4\nparentLocation: /dev/nvme0n1\nsize: {}\nprettySize: {}\nfilesystem: xfs\nmountSpec:\n    targetPath: /var\n    selinuxLabel: system_u:object_r:ephemeral_t:s0\n    projectQuotaSupport: false\n    fileMode: 493\n",
                eph.spec["size"].as_u64().unwrap(),
                pretty_size(eph.spec["size"].as_u64().unwrap())
            )
        );
        assert_eq!(eph.version, 3);
        let etcd = r.iter().find(|r| r.id == "ETCD").unwrap();
        assert_eq!(
            talm_base::yaml::to_string(&etcd.spec),
            "phase: ready\ntype: directory\nmountSpec:\n    targetPath: etcd\n    selinuxLabel: system_u:object_r:etcd_data_t:s0\n    projectQuotaSupport: false\n    parentId: /var/lib\n    fileMode: 448\n    uid: 60\n    gid: 60\n    recursiveRelabel: true\n"
        );
        let meta = r.iter().find(|r| r.id == "META").unwrap();
        assert_eq!(
            super::super::testing::keys(&meta.spec),
            [
                "phase",
                "type",
                "location",
                "mountLocation",
                "partitionIndex",
                "parentLocation",
                "size",
                "prettySize"
            ]
        );
    }
}
