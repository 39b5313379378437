//! What runs on a simulated node: its processes (machined as PID 1, udevd, the two containerd
//! instances and their shims, apid, trustd, etcd, kubelet, and the Kubernetes pods' processes),
//! the containers of Talos's own containerd (`system` namespace) and the pods of the CRI
//! (`k8s.io`), each process in its cgroup. A control plane whose etcd runs also runs the
//! Kubernetes control plane and CoreDNS; every configured node runs kube-proxy and flannel.
//! CPU time grows and resident memory breathes with uptime.

use super::catalogue::shim;
use super::{uuid, World};

/// The pause image of pod sandboxes.
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10.1";
/// The SELinux label of pod processes.
pub(super) const POD_LABEL: &str = "system_u:system_r:pod_container_t:s0";
const PAGE: u64 = 4096;

/// One process, as `/proc/<pid>` shows it.
#[derive(Clone, Debug)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    /// `comm`.
    pub comm: String,
    /// Target of the `exe` link.
    pub exe: String,
    pub args: Vec<String>,
    pub state: char,
    pub threads: i32,
    /// CPU time used (user + system), seconds (/proc counts it in 1/100 s: see `ticks`).
    pub cpu: f64,
    /// Share of `cpu` spent in user mode.
    pub user: f64,
    pub vsz: u64,
    pub rss: u64,
    /// SELinux context.
    pub label: String,
    /// The cgroup (path under /sys/fs/cgroup).
    pub cgroup: String,
    pub uid: u32,
    /// Seconds after the boot it started.
    pub started: f64,
}

/// A container of Talos's own containerd (`system` namespace).
#[derive(Clone, Debug)]
pub struct SysContainer {
    pub id: String,
    /// Resolved image name; empty for services run from the root filesystem (apid, trustd).
    pub image: String,
    pub pid: i32,
    pub cgroup: String,
}

/// Kubernetes QoS class: where a pod's cgroup lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qos {
    Guaranteed,
    Burstable,
    BestEffort,
}

/// A container of a pod.
#[derive(Clone, Debug)]
pub struct PodContainer {
    pub name: String,
    /// The 64-hex container ID.
    pub id: String,
    pub image: String,
    /// 0 once exited.
    pub pid: i32,
    pub running: bool,
    pub cgroup: String,
}

/// A ready pod sandbox and its containers.
#[derive(Clone, Debug)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    /// The 64-hex sandbox ID.
    pub sandbox: String,
    /// Network namespace name; empty for host-network pods.
    pub netns: String,
    /// The pause process.
    pub pid: i32,
    pub qos: Qos,
    pub containers: Vec<PodContainer>,
}

impl Pod {
    /// `namespace/name`, the pod's ID in the Containers API.
    pub fn id(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// The pod's cgroup.
    pub fn cgroup(&self) -> String {
        let class = match self.qos {
            Qos::Guaranteed => "",
            Qos::Burstable => "burstable/",
            Qos::BestEffort => "besteffort/",
        };
        format!("/kubepods/{class}pod{}", self.uid)
    }
}

/// Everything running on the node.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub procs: Vec<Proc>,
    pub system: Vec<SysContainer>,
    pub pods: Vec<Pod>,
}

/// A process to start: what it is and how it behaves.
pub(super) struct Spec<'a> {
    pub(super) comm: &'a str,
    pub(super) exe: &'a str,
    pub(super) args: Vec<String>,
    pub(super) threads: i32,
    /// Resident memory, MiB, at start.
    pub(super) rss_mib: f64,
    pub(super) vsz_mib: f64,
    /// CPU seconds per second on average.
    pub(super) rate: f64,
    pub(super) label: &'a str,
    pub(super) cgroup: String,
    pub(super) uid: u32,
    /// Seconds after boot.
    pub(super) start: f64,
}

pub(super) struct Builder<'w> {
    pub(super) w: &'w World,
    pub(super) next_pid: i32,
    pub(super) out: Workload,
}

impl Builder<'_> {
    pub(super) fn spawn(&mut self, ppid: i32, s: Spec) -> i32 {
        let pid = if self.out.procs.is_empty() {
            1
        } else {
            let gap = 1 + (self.w.rand(&format!("gap{}", self.next_pid)) % 23) as i32;
            self.next_pid += gap;
            self.next_pid
        };
        let age = (self.w.uptime() - s.start).max(0.0);
        let key = format!("{}{}", s.comm, pid);
        let phase = (self.w.rand(&key) % 6283) as f64 / 1000.0;
        let period = 240.0 + (self.w.rand(&format!("{key}p")) % 360) as f64;
        let omega = std::f64::consts::TAU / period;
        // Never decreasing: the wave's slope never exceeds the average rate.
        let cpu = s.rate * (age + (1.0 - (omega * age).cos()) / omega)
            + s.rate * 40.0 * (1.0 - (-age / 30.0).exp());
        let breathe = 1.0 + 0.05 * (omega * 1.7 * age + phase).sin();
        let grown = 1.0 + 0.15 * (age.min(1800.0) / 1800.0);
        let rss = ((s.rss_mib * 1_048_576.0 * breathe * grown) as u64 / PAGE).max(1) * PAGE;
        let vsz = ((s.vsz_mib * 1_048_576.0) as u64 / PAGE) * PAGE;
        let running = (self.w.now as u64 + pid as u64).is_multiple_of(11) && s.rate > 0.01;
        self.out.procs.push(Proc {
            pid,
            ppid,
            comm: s.comm.chars().take(15).collect(),
            exe: s.exe.to_string(),
            args: s.args,
            state: if running { 'R' } else { 'S' },
            threads: s.threads,
            cpu,
            user: 0.72,
            vsz: vsz.max(rss),
            rss,
            label: s.label.to_string(),
            cgroup: s.cgroup,
            uid: s.uid,
            started: s.start,
        });
        pid
    }

    /// A shim and the process it runs for a system container.
    pub(super) fn system_container(&mut self, id: &str, image: String, cgroup: &str, main: Spec) {
        let shim = self.spawn(
            1,
            shim(
                "system",
                id,
                "/system/run/containerd",
                "/system/runtime",
                main.start - 0.2,
            ),
        );
        let pid = self.spawn(shim, main);
        self.out.system.push(SysContainer {
            id: id.to_string(),
            image,
            pid,
            cgroup: cgroup.to_string(),
        });
    }

    /// A ready pod: its shim, pause process and containers (`(name, image, process)`; a
    /// container without process has exited).
    pub(super) fn pod(
        &mut self,
        namespace: &str,
        name: String,
        netns: bool,
        qos: Qos,
        start: f64,
        containers: Vec<(&str, &str, Option<Spec>)>,
    ) {
        let key = format!("{namespace}/{name}");
        let mut pod = Pod {
            namespace: namespace.to_string(),
            uid: uuid(self.w.seed, &format!("{key}#uid")),
            sandbox: self.w.hex(&format!("{key}#sandbox"), 64),
            netns: if netns {
                format!("cni-{}", uuid(self.w.seed, &format!("{key}#netns")))
            } else {
                String::new()
            },
            name,
            pid: 0,
            qos,
            containers: Vec::new(),
        };
        let cg = pod.cgroup();
        let shim_pid = self.spawn(
            1,
            shim(
                "k8s.io",
                &pod.sandbox,
                "/run/containerd",
                "/podruntime/runtime",
                start,
            ),
        );
        pod.pid = self.spawn(
            shim_pid,
            Spec {
                comm: "pause",
                exe: "/pause",
                args: vec!["/pause".into()],
                threads: 1,
                rss_mib: 0.4,
                vsz_mib: 1.0,
                rate: 0.0,
                label: POD_LABEL,
                cgroup: format!("{cg}/{}", pod.sandbox),
                uid: 65535,
                start: start + 0.3,
            },
        );
        for (cname, image, proc_) in containers {
            let id = self.w.hex(&format!("{key}/{cname}#ctr"), 64);
            let cgroup = format!("{cg}/{id}");
            let (pid, running) = match proc_ {
                Some(mut s) => {
                    s.cgroup = cgroup.clone();
                    (self.spawn(shim_pid, s), true)
                }
                None => (0, false),
            };
            pod.containers.push(PodContainer {
                name: cname.to_string(),
                id,
                image: image.to_string(),
                pid,
                running,
                cgroup,
            });
        }
        self.out.pods.push(pod);
    }
}

impl Proc {
    /// CPU time in clock ticks (1/100 s), as `/proc/<pid>/stat` counts it: (user, system).
    pub fn ticks(&self) -> (u64, u64) {
        let all = (self.cpu * 100.0).floor() as u64;
        let user = (all as f64 * self.user).round() as u64;
        (user, all - user)
    }
}

impl Workload {
    /// What runs on the node in `w`.
    pub fn of(w: &World) -> Workload {
        super::catalogue::build(w)
    }

    /// The process with `pid`.
    pub fn proc(&self, pid: i32) -> Option<&Proc> {
        self.procs.iter().find(|p| p.pid == pid)
    }

    /// Processes in cgroup `path` or below it.
    pub fn procs_under<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a Proc> + 'a {
        self.procs.iter().filter(move |p| {
            path == "/" || p.cgroup == path || p.cgroup.starts_with(&format!("{path}/"))
        })
    }

    /// Memory a cgroup holds (`memory.current`): its processes' resident memory plus the page
    /// cache they keep warm (a sixth more).
    pub fn memory_of(&self, cgroup: &str) -> u64 {
        let rss: u64 = self.procs_under(cgroup).map(|p| p.rss).sum();
        (rss + rss / 6) / PAGE * PAGE
    }

    /// CPU time of a cgroup, microseconds.
    pub fn cpu_usec_of(&self, cgroup: &str) -> u64 {
        self.procs_under(cgroup).map(|p| (p.cpu * 1e6) as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;

    #[test]
    fn control_plane_runs_kubernetes_and_worker_does_not() {
        let cp = Workload::of(&world(Role::ControlPlane, true, 600.0));
        let names: Vec<&str> = cp.procs.iter().map(|p| p.comm.as_str()).collect();
        for n in [
            "init",
            "etcd",
            "kubelet",
            "kube-apiserver",
            "apid",
            "trustd",
            "coredns",
            "pause",
        ] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        assert_eq!(cp.procs[0].pid, 1);
        let ids: Vec<&str> = cp.system.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["apid", "trustd", "etcd", "kubelet"]);
        let wk = Workload::of(&world(Role::Worker, false, 600.0));
        assert!(!wk
            .procs
            .iter()
            .any(|p| p.comm == "kube-apiserver" || p.comm == "etcd"));
        assert!(wk.pods.iter().any(|p| p.name.starts_with("kube-proxy-")));
        let early = Workload::of(&world(Role::ControlPlane, false, 600.0));
        assert!(early.pods.is_empty() && !early.procs.iter().any(|p| p.comm == "etcd"));
        let m = Workload::of(&world(Role::Maintenance, false, 60.0));
        assert!(m.pods.is_empty() && !m.procs.iter().any(|p| p.comm == "kubelet"));
    }

    #[test]
    fn pids_parents_and_containers_agree() {
        let w = Workload::of(&world(Role::ControlPlane, true, 900.0));
        let mut pids: Vec<i32> = w.procs.iter().map(|p| p.pid).collect();
        pids.sort();
        pids.dedup();
        assert_eq!(pids.len(), w.procs.len(), "unique pids");
        for p in &w.procs[1..] {
            assert!(w.proc(p.ppid).is_some(), "parent of {} exists", p.comm);
        }
        for c in &w.system {
            assert_eq!(w.proc(c.pid).unwrap().cgroup, c.cgroup);
        }
        for pod in &w.pods {
            assert_eq!(w.proc(pod.pid).unwrap().comm, "pause");
            for c in pod.containers.iter().filter(|c| c.running) {
                assert_eq!(w.proc(c.pid).unwrap().cgroup, c.cgroup);
            }
        }
    }

    #[test]
    fn cpu_grows_and_memory_moves_with_time() {
        let at = |t| Workload::of(&world(Role::ControlPlane, true, t));
        let (a, b) = (at(100.0), at(400.0));
        for (x, y) in a.procs.iter().zip(&b.procs) {
            assert_eq!(x.pid, y.pid);
            assert!(y.cpu >= x.cpu, "{} cpu {} -> {}", x.comm, x.cpu, y.cpu);
        }
        assert!(a.procs.iter().zip(&b.procs).any(|(x, y)| x.rss != y.rss));
        assert!(b.cpu_usec_of("/") > a.cpu_usec_of("/"));
        assert!(b.memory_of("/podruntime") > 0);
        assert_eq!(b.memory_of("/"), b.memory_of("/") / PAGE * PAGE);
    }
}
