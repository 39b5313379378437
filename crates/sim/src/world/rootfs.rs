//! The whole file tree of a simulated node as Read, List, Copy and DiskUsage see it: the
//! read-only root file system of the Talos release, `/etc` made from the node's identity and
//! config, `/var` (logs of the pods and services, containerd, kubelet and etcd data),
//! `/system`, `/dev` with the disks, and the kernel's `/proc` (one directory per process of the
//! workload, meminfo, mounts, boot ID) and `/sys` (block devices, links, the cgroup tree).
//! Also the SELinux label of every path, as Talos's file contexts give them.

use super::fs::{Body, Fs};
use super::workload::{PodContainer, Workload};
use super::{meminfo, mounts, World};

/// When the files of a Talos release were built (its squashfs times).
const RELEASE_TIME: i64 = 1_782_907_200;

/// The SELinux label of `path` (Talos's file contexts: the longest matching prefix wins).
pub fn label(path: &str) -> &'static str {
    const RULES: &[(&str, &str)] = &[
        ("/", "system_u:object_r:rootfs_t:s0"),
        ("/dev", "system_u:object_r:device_t:s0"),
        ("/dev/null", "system_u:object_r:null_device_t:s0"),
        ("/dev/zero", "system_u:object_r:null_device_t:s0"),
        ("/dev/rtc0", "system_u:object_r:rtc_device_t:s0"),
        ("/etc", "system_u:object_r:etc_t:s0"),
        ("/etc/cni", "system_u:object_r:cni_conf_t:s0"),
        ("/etc/kubernetes", "system_u:object_r:k8s_conf_t:s0"),
        ("/opt", "system_u:object_r:opt_t:s0"),
        ("/opt/cni", "system_u:object_r:cni_plugin_t:s0"),
        ("/proc", "system_u:object_r:proc_t:s0"),
        ("/run", "system_u:object_r:run_t:s0"),
        (
            "/run/containerd",
            "system_u:object_r:pod_containerd_run_t:s0",
        ),
        ("/sys", "system_u:object_r:sysfs_t:s0"),
        ("/sys/fs/cgroup", "system_u:object_r:cgroup_t:s0"),
        ("/system", "system_u:object_r:system_t:s0"),
        ("/system/run", "system_u:object_r:system_run_t:s0"),
        (
            "/system/run/containerd",
            "system_u:object_r:sys_containerd_run_t:s0",
        ),
        ("/system/secrets/etcd", "system_u:object_r:etcd_pki_t:s0"),
        ("/system/state", "system_u:object_r:system_state_t:s0"),
        ("/system/var", "system_u:object_r:system_var_t:s0"),
        (
            "/usr/libexec/kubernetes",
            "system_u:object_r:k8s_plugin_t:s0",
        ),
        ("/var", "system_u:object_r:ephemeral_t:s0"),
        ("/var/lib/cni", "system_u:object_r:cni_state_t:s0"),
        (
            "/var/lib/containerd",
            "system_u:object_r:containerd_state_t:s0",
        ),
        ("/var/lib/etcd", "system_u:object_r:etcd_data_t:s0"),
        ("/var/lib/kubelet", "system_u:object_r:kubelet_state_t:s0"),
        ("/var/log", "system_u:object_r:var_log_t:s0"),
        ("/var/log/audit", "system_u:object_r:audit_log_t:s0"),
        ("/var/log/audit/kube", "system_u:object_r:kube_log_t:s0"),
        (
            "/var/log/containers",
            "system_u:object_r:containers_log_t:s0",
        ),
        ("/var/log/pods", "system_u:object_r:pods_log_t:s0"),
    ];
    RULES
        .iter()
        .filter(|(p, _)| *p == "/" || path == *p || path.starts_with(&format!("{p}/")))
        .max_by_key(|(p, _)| p.len())
        .map_or("", |(_, l)| l)
}

/// `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ` of Unix seconds.
fn rfc3339(secs: f64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos((secs * 1e9) as i128)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.nanosecond()
    )
}

/// The node's file tree now.
pub fn build(w: &World, load: &Workload) -> Fs {
    let mut fs = Fs::new(RELEASE_TIME);
    release(&mut fs, w);
    fs.mtime = w.boot as i64;
    etc(&mut fs, w);
    runtime(&mut fs, w, load);
    devices(&mut fs, w, load);
    proc_(&mut fs, w, load);
    fs.mtime = w.boot as i64;
    var(&mut fs, w, load);
    fs
}

/// The read-only root file system of the release.
fn release(fs: &mut Fs, w: &World) {
    const MIB: u64 = 1 << 20;
    fs.put("/sbin/init", Body::Sized(98 * MIB + 311_296), 0o755);
    for l in [
        "apid",
        "trustd",
        "dashboard",
        "poweroff",
        "shutdown",
        "wrapperd",
    ] {
        fs.link(&format!("/sbin/{l}"), "init");
    }
    fs.put("/sbin/systemd-udevd", Body::Sized(1_181_000), 0o755);
    fs.link("/sbin/udevadm", "systemd-udevd");
    fs.put("/bin/containerd", Body::Sized(47 * MIB + 40_960), 0o755);
    fs.put(
        "/bin/containerd-shim-runc-v2",
        Body::Sized(9 * MIB + 118_784),
        0o755,
    );
    fs.put("/bin/runc", Body::Sized(11 * MIB + 524_288), 0o755);
    fs.dir("/usr/lib/udev/rules.d", 0o755);
    fs.file("/usr/lib/udev/rules.d/99-talos.rules", "SUBSYSTEM==\"block\", ENV{ID_SERIAL}!=\"\", SYMLINK+=\"disk/by-id/$env{ID_BUS}-$env{ID_SERIAL}\"\n", 0o644);
    fs.file("/usr/share/zoneinfo/UTC", b"TZif2\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0UTC\0\nUTC0\n".to_vec(), 0o644);
    fs.dir("/usr/libexec/kubernetes", 0o755);
    fs.dir("/usr/local", 0o755);
    fs.dir("/opt/cni/bin", 0o755);
    fs.dir("/opt/containerd", 0o755);
    for (name, size) in [
        ("bridge", 4_415_488u64),
        ("host-local", 3_391_488),
        ("loopback", 3_280_896),
        ("portmap", 3_866_624),
    ] {
        fs.put(&format!("/opt/cni/bin/{name}"), Body::Sized(size), 0o755);
    }
    let tag = w.version.trim_start_matches('v');
    fs.file("/usr/lib/os-release", format!("NAME=\"Talos\"\nID=talos\nVERSION_ID={tag}\nPRETTY_NAME=\"Talos ({})\"\nHOME_URL=\"https://www.talos.dev/\"\nBUG_REPORT_URL=\"https://github.com/siderolabs/talos/issues\"\nVENDOR_NAME=\"Sidero Labs\"\nVENDOR_URL=\"https://www.siderolabs.com/\"\n", w.version), 0o644);
    fs.dir("/tmp", 0o777).perm |= super::fs::mode::STICKY;
    fs.dir("/mnt", 0o755);
}

fn etc(fs: &mut Fs, w: &World) {
    let ip = w.ip();
    fs.link("/etc/os-release", "../usr/lib/os-release");
    fs.file("/etc/hostname", format!("{}\n", w.hostname), 0o444);
    fs.file("/etc/hosts", format!("127.0.0.1   localhost\n{ip}   {} {}\n::1         localhost ip6-localhost ip6-loopback\nff02::1     ip6-allnodes\nff02::2     ip6-allrouters\n", w.hostname, w.hostname), 0o644);
    let resolvers = if w.role == super::Role::Maintenance {
        w.hw.resolvers.clone()
    } else {
        vec!["127.0.0.53".to_string()]
    };
    let resolv: String = resolvers
        .iter()
        .map(|r| format!("nameserver {r}\n"))
        .collect();
    fs.file("/etc/resolv.conf", resolv, 0o644);
    fs.file(
        "/etc/machine-id",
        format!("{}\n", w.hex("machine-id", 32)),
        0o444,
    );
    fs.link("/etc/localtime", "../usr/share/zoneinfo/UTC");
    fs.mtime = RELEASE_TIME;
    fs.file("/etc/ssl/certs/ca-certificates.crt", ca_bundle(), 0o644);
    fs.mtime = w.boot as i64;
    if w.role == super::Role::Maintenance {
        return;
    }
    fs.file(
        "/etc/containerd/config.toml",
        "version = 3\n\n[plugins.'io.containerd.grpc.v1.cri']\n  disable_tcp_service = true\n",
        0o444,
    );
    fs.file(
        "/etc/cri/containerd.toml",
        "version = 3\nimports = [\"/etc/cri/conf.d/cri.toml\"]\n\n[debug]\n  level = \"info\"\n",
        0o444,
    );
    fs.file(
        "/etc/cri/conf.d/cri.toml",
        format!(
            "[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = \"{}\"\n",
            super::workload::PAUSE_IMAGE
        ),
        0o444,
    );
    fs.file("/etc/kubernetes/bootstrap-kubeconfig", format!("apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster:\n    server: https://{}:6443\n", if w.endpoint.is_empty() { ip.clone() } else { w.endpoint.clone() }), 0o400);
    fs.file("/etc/kubernetes/kubelet.yaml", format!("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nauthentication:\n  anonymous:\n    enabled: false\ncgroupRoot: /\nclusterDNS:\n- 10.96.0.10\nclusterDomain: cluster.local\nstaticPodURL: http://127.0.0.1:45743\nsystemReserved:\n  cpu: 50m\n  ephemeral-storage: 256Mi\n  memory: 192Mi\n# node {}\n", w.hostname), 0o444);
    fs.file("/etc/kubernetes/kubeconfig-kubelet", "apiVersion: v1\nkind: Config\nusers:\n- name: kubelet\n  user:\n    client-certificate: /var/lib/kubelet/pki/kubelet-client-current.pem\n", 0o400);
    fs.dir("/etc/kubernetes/manifests", 0o755);
    fs.dir("/etc/cni/net.d", 0o755);
    if load_has_flannel(w) {
        fs.file("/etc/cni/net.d/10-flannel.conflist", "{\n  \"name\": \"cbr0\",\n  \"cniVersion\": \"1.0.0\",\n  \"plugins\": [\n    {\"type\": \"flannel\", \"delegate\": {\"hairpinMode\": true, \"isDefaultGateway\": true}},\n    {\"type\": \"portmap\", \"capabilities\": {\"portMappings\": true}}\n  ]\n}\n", 0o644);
    }
}

fn load_has_flannel(w: &World) -> bool {
    w.running("kubelet") && (w.etcd || w.role == super::Role::Worker)
}

fn ca_bundle() -> String {
    let mut out = String::new();
    for name in [
        "ISRG Root X1",
        "ISRG Root X2",
        "DigiCert Global Root G2",
        "GlobalSign Root R46",
    ] {
        out.push_str(&format!("# {name}\n-----BEGIN CERTIFICATE-----\n"));
        let body = super::hex(7, name, 1024);
        for chunk in body.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
            out.push('\n');
        }
        out.push_str("-----END CERTIFICATE-----\n\n");
    }
    out
}

/// `/system` and `/run`: runtime state and sockets.
fn runtime(fs: &mut Fs, w: &World, load: &Workload) {
    fs.dir("/system/run/machined", 0o700);
    fs.put("/system/run/machined/machine.sock", Body::Socket, 0o600);
    fs.put(
        "/system/run/containerd/containerd.sock",
        Body::Socket,
        0o660,
    );
    fs.dir("/system/var/lib/containerd", 0o711);
    fs.dir("/system/secrets", 0o700);
    fs.dir("/system/libexec", 0o711);
    for c in &load.system {
        if c.image.is_empty() {
            fs.put(
                &format!("/system/libexec/{}/{}", c.id, c.id),
                Body::Sized(0),
                0o555,
            );
        }
    }
    fs.dir("/run/lock", 0o755);
    fs.link("/var/run", "../run");
    if w.running("cri") {
        fs.put("/run/containerd/containerd.sock", Body::Socket, 0o660);
    }
    if w.role == super::Role::Maintenance {
        return;
    }
    if w.role == super::Role::ControlPlane {
        for f in ["ca.crt", "peer.crt", "peer.key", "admin.crt", "admin.key"] {
            fs.file(
                &format!("/system/secrets/etcd/{f}"),
                format!(
                    "-----BEGIN {}-----\n{}\n-----END {}-----\n",
                    pem_kind(f),
                    w.hex(f, 64),
                    pem_kind(f)
                ),
                0o400,
            )
            .uid = 60;
        }
    }
    if w.system_disk.is_some() {
        fs.mtime = w.boot as i64 - 60;
        fs.file("/system/state/config.yaml", w.config.clone(), 0o600);
        fs.mtime = w.boot as i64;
    }
}

fn pem_kind(file: &str) -> &'static str {
    if file.ends_with(".key") {
        "EC PRIVATE KEY"
    } else {
        "CERTIFICATE"
    }
}

/// Major number of a disk's kind (virtio 253, NVMe 259, SCSI 8).
fn major(disk: &str) -> u32 {
    if disk.starts_with("nvme") {
        259
    } else if disk.starts_with("vd") {
        253
    } else {
        8
    }
}

/// `/dev`, with the disks and the system disk's partitions, and `/sys` devices.
fn devices(fs: &mut Fs, w: &World, load: &Workload) {
    for (name, maj, min, perm) in [
        ("null", 1, 3, 0o666),
        ("zero", 1, 5, 0o666),
        ("full", 1, 7, 0o666),
        ("random", 1, 8, 0o666),
        ("urandom", 1, 9, 0o666),
        ("kmsg", 1, 11, 0o644),
        ("tty", 5, 0, 0o666),
        ("console", 5, 1, 0o600),
        ("ptmx", 5, 2, 0o666),
        ("rtc0", 252, 0, 0o600),
    ] {
        fs.put(&format!("/dev/{name}"), Body::CharDev(maj, min), perm);
    }
    fs.dir("/dev/pts", 0o755);
    fs.dir("/dev/mqueue", 0o1777).perm = 0o777 | super::fs::mode::STICKY;
    fs.dir("/dev/shm", 0o777).perm = 0o777 | super::fs::mode::STICKY;
    for (i, d) in w.hw.disks.iter().enumerate() {
        let maj = major(&d.name);
        let base = if maj == 259 {
            i as u32 * 8
        } else {
            i as u32 * 16
        };
        fs.put(
            &format!("/dev/{}", d.name),
            Body::BlockDev(maj, base),
            0o660,
        )
        .gid = 6;
        let sys = format!(
            "/sys/devices/pci0000:00/0000:00:{:02x}.0/block/{}",
            4 + i,
            d.name
        );
        fs.kernel(&format!("{sys}/size"), format!("{}\n", d.size / 512), 0o444);
        fs.kernel(&format!("{sys}/dev"), format!("{maj}:{base}\n"), 0o444);
        fs.link(
            &format!("/sys/dev/block/{maj}:{base}"),
            &format!("../..{}", sys.trim_start_matches("/sys")),
        );
        fs.link(
            &format!("/sys/class/block/{}", d.name),
            &format!("../..{}", sys.trim_start_matches("/sys")),
        );
        if !d.wwid.is_empty() {
            fs.link(
                &format!(
                    "/dev/disk/by-id/{}-{}",
                    if maj == 259 { "nvme" } else { "wwn" },
                    d.wwid
                ),
                &format!("../../{}", d.name),
            );
        }
        if w.system_disk.as_deref() == Some(&d.name) && w.role != super::Role::Maintenance {
            for n in 1..=4 {
                let part = mounts::partition(&d.name, n);
                fs.put(
                    &format!("/dev/{part}"),
                    Body::BlockDev(maj, base + n as u32),
                    0o660,
                )
                .gid = 6;
                fs.link(
                    &format!("/sys/dev/block/{maj}:{}", base + n as u32),
                    &format!("../..{}/{part}", sys.trim_start_matches("/sys")),
                );
                fs.kernel(&format!("{sys}/{part}/partition"), format!("{n}\n"), 0o444);
            }
        }
    }
    for l in &w.hw.links {
        let dir = format!("/sys/devices/virtual/net/{}", l.name);
        fs.kernel(&format!("{dir}/address"), format!("{}\n", l.mac), 0o444);
        fs.kernel(&format!("{dir}/mtu"), format!("{}\n", l.mtu), 0o644);
        fs.kernel(
            &format!("{dir}/operstate"),
            if l.up { "up\n" } else { "down\n" },
            0o444,
        );
        fs.link(
            &format!("/sys/class/net/{}", l.name),
            &format!("../../devices/virtual/net/{}", l.name),
        );
    }
    fs.dir("/sys/kernel/security", 0o755);
    fs.dir("/sys/fs/bpf", 0o700);
    let block = w
        .system_disk
        .as_ref()
        .or(w.hw.disks.first().map(|d| &d.name))
        .map_or("8:0".to_string(), |d| format!("{}:0", major(d)));
    super::cgroupfs::add(fs, w, load, &block);
}

/// `/proc`: the kernel's view of the node and one directory per process.
fn proc_(fs: &mut Fs, w: &World, load: &Workload) {
    let m = meminfo::meminfo(w, load);
    let up = w.uptime();
    fs.dir("/proc", 0o555);
    fs.kernel("/proc/meminfo", meminfo::text(&m), 0o444);
    fs.kernel("/proc/uptime", format!("{up:.2} {:.2}\n", up * 1.7), 0o444);
    let load1 = 0.2 + (w.rand(&format!("load{}", w.now as u64 / 5)) % 60) as f64 / 100.0;
    fs.kernel(
        "/proc/loadavg",
        format!(
            "{load1:.2} {:.2} {:.2} 2/{} {}\n",
            load1 * 0.9,
            load1 * 0.8,
            load.procs.iter().map(|p| p.threads).sum::<i32>() + 180,
            load.procs.last().map_or(1, |p| p.pid)
        ),
        0o444,
    );
    fs.kernel("/proc/version", format!("Linux version 6.18.3-talos (@buildkitsandbox) (gcc (GCC) 15.2.0, GNU ld (GNU Binutils) 2.45) #1 SMP {}\n", "Mon Jun 29 10:00:00 UTC 2026"), 0o444);
    fs.kernel("/proc/cmdline", format!("talos.platform={} console=ttyS0 init_on_alloc=1 slab_nomerge pti=on consoleblank=0 nvme_core.io_timeout=4294967295 printk.devkmsg=on selinux=1 module.sig_enforce=1\n", w.hw.platform), 0o444);
    fs.kernel("/proc/cpuinfo", (0..2).map(|i| format!("processor\t: {i}\nvendor_id\t: AuthenticAMD\nmodel name\t: QEMU Virtual CPU version 2.5+\ncpu MHz\t\t: 2994.374\ncache size\t: 512 KB\ncpu cores\t: 2\n\n")).collect::<String>(), 0o444);
    fs.kernel("/proc/filesystems", "nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tcgroup2\nnodev\tdevpts\nnodev\toverlay\n\tsquashfs\n\txfs\n\tvfat\n", 0o444);
    fs.put("/proc/kcore", Body::Sized(0), 0o400);
    fs.kernel("/proc/bus/pci/devices", super::pci::devices(&w.hw), 0o444);
    fs.kernel(
        "/proc/sys/kernel/random/boot_id",
        format!("{}\n", super::uuid(w.seed, "boot_id")),
        0o444,
    );
    fs.kernel(
        "/proc/sys/kernel/hostname",
        format!("{}\n", w.hostname),
        0o644,
    );
    fs.kernel("/proc/sys/kernel/osrelease", "6.18.3-talos\n", 0o444);
    fs.link("/proc/self", "1");
    fs.link("/proc/mounts", "self/mounts");
    let mount_text = mounts::text(&mounts::mounts(w, load));
    for p in &load.procs {
        let dir = format!("/proc/{}", p.pid);
        fs.dir(&dir, 0o555).uid = p.uid;
        let cmdline: Vec<u8> = p.args.iter().flat_map(|a| a.bytes().chain([0])).collect();
        fs.kernel(&format!("{dir}/cmdline"), cmdline, 0o444);
        fs.kernel(&format!("{dir}/comm"), format!("{}\n", p.comm), 0o644);
        let (utime, stime) = p.ticks();
        let start_ticks = (p.started * 100.0) as u64;
        fs.kernel(&format!("{dir}/stat"), format!("{} ({}) {} {} {} {} 0 -1 4194560 1200 0 0 0 {utime} {stime} 0 0 20 0 {} 0 {start_ticks} {} {} 18446744073709551615\n", p.pid, p.comm, p.state, p.ppid, p.pid, p.pid, p.threads, p.vsz, p.rss / 4096), 0o444);
        let state = if p.state == 'R' {
            "R (running)"
        } else {
            "S (sleeping)"
        };
        fs.kernel(&format!("{dir}/status"), format!("Name:\t{}\nUmask:\t0022\nState:\t{state}\nTgid:\t{}\nPid:\t{}\nPPid:\t{}\nUid:\t{u}\t{u}\t{u}\t{u}\nGid:\t{u}\t{u}\t{u}\t{u}\nVmSize:\t{} kB\nVmRSS:\t{} kB\nThreads:\t{}\n", p.comm, p.pid, p.pid, p.ppid, p.vsz / 1024, p.rss / 1024, p.threads, u = p.uid), 0o444);
        fs.kernel(
            &format!("{dir}/cgroup"),
            format!("0::{}\n", p.cgroup),
            0o444,
        );
        fs.dir(&format!("{dir}/attr"), 0o555);
        fs.kernel(
            &format!("{dir}/attr/current"),
            format!("{}\0", p.label),
            0o666,
        );
        fs.kernel(&format!("{dir}/mounts"), mount_text.clone(), 0o444);
        fs.link(&format!("{dir}/exe"), &p.exe);
        fs.link(&format!("{dir}/cwd"), "/");
    }
}

/// `/var`: logs, containerd, kubelet and etcd data.
/// A pod container's log file (`/var/log/pods/.../<container>/0.log`) in the CRI's format: a
/// line 25 s after the boot and one per 20 s after while it runs (never stamped after now),
/// at most three for one that has exited.
pub fn container_log(w: &World, c: &PodContainer) -> String {
    let up = w.uptime();
    let logged = 1 + ((up - 25.0).max(0.0) / 20.0).min(400.0) as usize;
    (0..if c.running { logged } else { logged.min(3) })
        .map(|i| {
            format!(
                "{} stderr F I0101 {:>8} 1 {}.go:{}] \"{} running\" step={i}\n",
                rfc3339(w.boot + (25.0 + i as f64 * 20.0).min(up)),
                1000 + i,
                c.name,
                100 + i % 300,
                c.name
            )
        })
        .collect()
}

fn var(fs: &mut Fs, w: &World, load: &Workload) {
    fs.dir("/var/log", 0o755);
    fs.dir("/var/lib/containerd", 0o711);
    fs.dir("/var/system/overlays", 0o700);
    fs.dir("/var/tmp", 0o777).perm |= super::fs::mode::STICKY;
    if w.role == super::Role::Maintenance {
        return;
    }
    // The audit log's lines: a few at start, one per 20 s after.
    let lines = 8 + (w.uptime() / 20.0).min(400.0) as usize;
    fs.dir("/var/lib/cni", 0o755);
    fs.dir("/var/lib/kubelet/pki", 0o755);
    fs.file(
        "/var/lib/kubelet/pki/kubelet-client-current.pem",
        format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            w.hex("kubelet-client", 64)
        ),
        0o600,
    );
    fs.dir("/var/lib/kubelet/pods", 0o750);
    fs.mtime = w.now as i64;
    if w.etcd {
        let db = 40 * 1024 * 1024 + (w.uptime().min(86_400.0) * 700.0) as u64;
        fs.put(
            "/var/lib/etcd/member/snap/db",
            Body::Sized(db / 4096 * 4096),
            0o600,
        )
        .uid = 60;
        fs.put(
            "/var/lib/etcd/member/wal/0000000000000000-0000000000000000.wal",
            Body::Sized(64 * 1024 * 1024),
            0o600,
        )
        .uid = 60;
        let audit: String = (0..lines).map(|i| format!("{{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"Metadata\",\"auditID\":\"{}\",\"stage\":\"ResponseComplete\",\"requestURI\":\"/api/v1/nodes/{}\",\"verb\":\"get\",\"user\":{{\"username\":\"system:node:{}\"}},\"responseStatus\":{{\"code\":200}},\"stageTimestamp\":\"{}\"}}\n", super::uuid(w.seed, &format!("audit{i}")), w.hostname, w.hostname, rfc3339(w.boot + 15.0 + i as f64 * 20.0))).collect();
        fs.file("/var/log/audit/kube/kube-apiserver.log", audit, 0o600);
    }
    for pod in &load.pods {
        let dir = format!("/var/log/pods/{}_{}_{}", pod.namespace, pod.name, pod.uid);
        fs.dir(&format!("/var/lib/kubelet/pods/{}", pod.uid), 0o750);
        for c in &pod.containers {
            let file = format!("{dir}/{}/0.log", c.name);
            fs.file(&file, container_log(w, c), 0o640);
            fs.link(
                &format!(
                    "/var/log/containers/{}_{}_{}-{}.log",
                    pod.name, pod.namespace, c.name, c.id
                ),
                &file,
            );
        }
    }
    fs.mtime = w.boot as i64;
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;

    #[test]
    fn container_logs_are_never_stamped_after_now() {
        let stamps = |uptime: f64| -> Vec<String> {
            let w = world(Role::ControlPlane, true, uptime);
            let load = Workload::of(&w);
            let c = load.pods[0].containers.iter().find(|c| c.running).unwrap();
            container_log(&w, c)
                .lines()
                .map(|l| l.split(' ').next().unwrap().to_string())
                .collect()
        };
        let w = world(Role::ControlPlane, true, 10.0);
        // Ten seconds up: the line the container prints at 25 s is stamped now.
        assert_eq!(stamps(10.0), [rfc3339(w.boot + 10.0)]);
        let w = world(Role::ControlPlane, true, 70.0);
        assert_eq!(
            stamps(70.0),
            [25.0, 45.0, 65.0].map(|t| rfc3339(w.boot + t))
        );
    }

    #[test]
    fn tree_follows_the_node() {
        let w = world(Role::ControlPlane, true, 600.0);
        let load = Workload::of(&w);
        let fs = build(&w, &load);
        let text =
            |p: &str| String::from_utf8(fs.stat(p).map(|(_, e)| e.content()).unwrap()).unwrap();
        assert_eq!(text("/etc/hostname"), "talos-abc-def\n");
        assert!(text("/etc/os-release").contains("VERSION_ID=1.13.7"));
        assert!(text("/proc/mounts").contains(" /var xfs "));
        assert!(text("/proc/meminfo").starts_with("MemTotal:"));
        let init = text("/proc/1/cmdline");
        assert_eq!(init, "/sbin/init\0");
        assert_eq!(fs.stat("/proc/1/exe").unwrap().0, "/sbin/init");
        assert!(fs.get("/var/lib/etcd/member/snap/db").is_some());
        let pod = &load.pods[0];
        assert!(fs
            .stat(&format!(
                "/var/log/containers/{}_{}_{}-{}.log",
                pod.name, pod.namespace, pod.containers[0].name, pod.containers[0].id
            ))
            .is_ok());
        assert!(fs.get("/sys/fs/cgroup/system/apid/cgroup.procs").is_some());
        assert_eq!(
            fs.stat("/sys/dev/block/259:0").unwrap().0,
            "/sys/devices/pci0000:00/0000:00:04.0/block/nvme0n1"
        );
        assert_eq!(label("/var/log/pods/x"), "system_u:object_r:pods_log_t:s0");
        assert_eq!(label("/variable"), "system_u:object_r:rootfs_t:s0");
        let m = world(Role::Maintenance, false, 30.0);
        let mfs = build(&m, &Workload::of(&m));
        assert!(mfs.get("/system/state/config.yaml").is_none());
        assert!(mfs.get("/etc/kubernetes").is_none());
    }
}
