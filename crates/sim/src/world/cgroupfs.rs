//! `/sys/fs/cgroup` of a simulated node: the cgroup v2 hierarchy Talos sets up (`/init`,
//! `/system/*`, `/podruntime/*`, `/kubepods/...` down to each container) with the interface
//! files `talosctl cgroups` reads, every value made from the processes in that cgroup (memory,
//! CPU, PIDs, threads, I/O) and Talos's reservations and limits.

use super::fs::Fs;
use super::workload::Workload;
use super::World;

const MIB: u64 = 1 << 20;
const ROOT: &str = "/sys/fs/cgroup";

/// Talos's settings of its own cgroups: CPU weight, memory.min, memory.low, memory.max.
fn settings(path: &str) -> (u64, u64, u64, Option<u64>) {
    match path {
        "/init" => (79, 96 * MIB, 192 * MIB, None),
        "/system" => (59, 96 * MIB, 192 * MIB, None),
        "/system/apid" => (20, 16 * MIB, 32 * MIB, Some(128 * MIB)),
        "/system/trustd" => (10, 8 * MIB, 16 * MIB, Some(128 * MIB)),
        "/system/udevd" => (10, 8 * MIB, 16 * MIB, None),
        "/system/runtime" => (20, 48 * MIB, 96 * MIB, None),
        "/system/dashboard" => (8, 0, 0, Some(128 * MIB)),
        "/podruntime" => (157, 292 * MIB, 840 * MIB, None),
        "/podruntime/runtime" => (39, 196 * MIB, 392 * MIB, None),
        "/podruntime/etcd" => (79, 256 * MIB, 512 * MIB, None),
        "/podruntime/kubelet" => (39, 96 * MIB, 192 * MIB, None),
        _ => (100, 0, 0, None),
    }
}

/// Every cgroup of the node: Talos's fixed ones and those of its processes, parents first.
pub fn cgroups(load: &Workload) -> Vec<String> {
    let mut all: Vec<String> = [
        "/",
        "/init",
        "/system",
        "/system/apid",
        "/system/dashboard",
        "/system/runtime",
        "/system/trustd",
        "/system/udevd",
        "/podruntime",
        "/podruntime/etcd",
        "/podruntime/kubelet",
        "/podruntime/runtime",
        "/kubepods",
        "/kubepods/besteffort",
        "/kubepods/burstable",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for p in &load.procs {
        let mut cur = p.cgroup.clone();
        while cur != "/" && !cur.is_empty() {
            all.push(cur.clone());
            cur = match cur.rfind('/') {
                Some(0) | None => "/".into(),
                Some(i) => cur[..i].to_string(),
            };
        }
    }
    all.sort();
    all.dedup();
    all
}

fn pressure(w: &World, key: &str, with_full: bool) -> String {
    let total = w.rand(key) % 9_000_000 + (w.uptime() * 40.0) as u64;
    let avg = |n: &str| {
        format!(
            "{:.2}",
            (w.rand(&format!("{key}{n}{}", w.now as u64 / 10)) % 40) as f64 / 100.0
        )
    };
    let some = format!(
        "some avg10={} avg60={} avg300={} total={total}\n",
        avg("10"),
        avg("60"),
        avg("300")
    );
    if with_full {
        format!(
            "{some}full avg10={} avg60={} avg300={} total={}\n",
            avg("f10"),
            avg("f60"),
            avg("f300"),
            total / 3
        )
    } else {
        some
    }
}

/// Adds the cgroup tree under `/sys/fs/cgroup` to `fs`.
pub fn add(fs: &mut Fs, w: &World, load: &Workload, block_dev: &str) {
    let all = cgroups(load);
    for cg in &all {
        let dir = if cg == "/" {
            ROOT.to_string()
        } else {
            format!("{ROOT}{cg}")
        };
        fs.dir(&dir, 0o755);
        let ro = |fs: &mut Fs, name: &str, text: String| {
            fs.kernel(&format!("{dir}/{name}"), text, 0o444);
        };
        let rw = |fs: &mut Fs, name: &str, text: String| {
            fs.kernel(&format!("{dir}/{name}"), text, 0o644);
        };
        let procs: Vec<_> = load.procs.iter().filter(|p| &p.cgroup == cg).collect();
        let under: Vec<_> = load.procs_under(cg).collect();
        let children = all
            .iter()
            .filter(|c| {
                c.as_str() != cg
                    && c.strip_prefix(cg.as_str()).is_some_and(|r| {
                        let r = if cg == "/" {
                            r
                        } else {
                            r.strip_prefix('/').unwrap_or("")
                        };
                        !r.is_empty() && !r.contains('/')
                    })
            })
            .count();
        let descendants = all
            .iter()
            .filter(|c| c.as_str() != cg && (cg == "/" || c.starts_with(&format!("{cg}/"))))
            .count();
        rw(
            fs,
            "cgroup.procs",
            procs.iter().map(|p| format!("{}\n", p.pid)).collect(),
        );
        rw(
            fs,
            "cgroup.threads",
            procs
                .iter()
                .flat_map(|p| {
                    (0..p.threads).map(move |k| if k == 0 { p.pid } else { p.pid * 16 + k })
                })
                .map(|t| format!("{t}\n"))
                .collect(),
        );
        ro(
            fs,
            "cgroup.controllers",
            "cpuset cpu io memory hugetlb pids rdma misc\n".into(),
        );
        rw(
            fs,
            "cgroup.subtree_control",
            if children > 0 {
                "cpuset cpu io memory pids\n".into()
            } else {
                String::new()
            },
        );
        ro(
            fs,
            "cgroup.stat",
            format!("nr_descendants {descendants}\nnr_dying_descendants 0\n"),
        );
        let usage = load.cpu_usec_of(cg);
        let user = usage * 72 / 100;
        let mut cpu_stat = format!(
            "usage_usec {usage}\nuser_usec {user}\nsystem_usec {}\n",
            usage - user
        );
        if cg != "/" {
            cpu_stat.push_str(
                "nr_periods 0\nnr_throttled 0\nthrottled_usec 0\nnr_bursts 0\nburst_usec 0\n",
            );
        }
        ro(fs, "cpu.stat", cpu_stat);
        ro(fs, "cpu.pressure", pressure(w, &format!("{cg}cpu"), true));
        ro(fs, "io.pressure", pressure(w, &format!("{cg}io"), true));
        ro(
            fs,
            "memory.pressure",
            pressure(w, &format!("{cg}mem"), true),
        );
        ro(fs, "cpuset.cpus.effective", "0-1\n".into());
        ro(fs, "cpuset.mems.effective", "0\n".into());
        let mem = load.memory_of(cg);
        let anon: u64 = under.iter().map(|p| p.rss).sum::<u64>();
        ro(fs, "memory.stat", format!("anon {anon}\nfile {}\nkernel {}\nkernel_stack {}\npagetables {}\nsock 0\nshmem 0\nfile_mapped {}\nfile_dirty 0\nfile_writeback 0\n", mem - anon.min(mem), anon / 40, under.iter().map(|p| p.threads as u64).sum::<u64>() * 16384, anon / 90, anon / 5));
        let reads = (mem / 3).max(4096) + (w.uptime() * 1000.0) as u64;
        let io = if under.is_empty() {
            String::new()
        } else {
            format!(
                "{block_dev} rbytes={reads} wbytes={} rios={} wios={} dbytes=0 dios=0\n",
                reads / 4,
                reads / 16384,
                reads / 65536
            )
        };
        ro(fs, "io.stat", io);
        if cg == "/" {
            continue;
        }
        let (weight, min, low, max) = settings(cg);
        let threads: u64 = under.iter().map(|p| p.threads as u64).sum();
        rw(
            fs,
            "cgroup.events",
            format!("populated {}\nfrozen 0\n", u8::from(!under.is_empty())),
        );
        rw(fs, "cgroup.freeze", "0\n".into());
        rw(fs, "cgroup.type", "domain\n".into());
        rw(fs, "cgroup.max.depth", "max\n".into());
        rw(fs, "cgroup.max.descendants", "max\n".into());
        rw(fs, "cpu.weight", format!("{weight}\n"));
        rw(
            fs,
            "cpu.weight.nice",
            format!(
                "{}\n",
                if weight >= 100 {
                    0
                } else {
                    1 + (100 - weight) / 20
                }
            ),
        );
        rw(fs, "cpu.max", "max 100000\n".into());
        rw(fs, "cpu.max.burst", "0\n".into());
        rw(fs, "cpu.idle", "0\n".into());
        rw(fs, "cpuset.cpus", "\n".into());
        rw(fs, "cpuset.mems", "\n".into());
        rw(fs, "io.max", String::new());
        ro(fs, "memory.current", format!("{mem}\n"));
        ro(
            fs,
            "memory.peak",
            format!("{}\n", (mem + mem / 5) / 4096 * 4096),
        );
        rw(fs, "memory.min", format!("{min}\n"));
        rw(fs, "memory.low", format!("{low}\n"));
        rw(fs, "memory.high", "max\n".into());
        rw(
            fs,
            "memory.max",
            max.map_or("max\n".into(), |m| format!("{m}\n")),
        );
        rw(fs, "memory.oom.group", "0\n".into());
        ro(
            fs,
            "memory.events",
            "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n".into(),
        );
        ro(
            fs,
            "memory.events.local",
            "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n".into(),
        );
        ro(fs, "memory.swap.current", "0\n".into());
        ro(fs, "memory.swap.peak", "0\n".into());
        rw(fs, "memory.swap.high", "max\n".into());
        rw(fs, "memory.swap.max", "max\n".into());
        ro(fs, "memory.swap.events", "high 0\nmax 0\nfail 0\n".into());
        ro(fs, "memory.zswap.current", "0\n".into());
        rw(fs, "memory.zswap.max", "max\n".into());
        rw(fs, "memory.zswap.writeback", "1\n".into());
        ro(fs, "pids.current", format!("{threads}\n"));
        ro(fs, "pids.peak", format!("{}\n", threads + threads / 4));
        rw(fs, "pids.max", "max\n".into());
        ro(fs, "pids.events", "max 0\n".into());
    }
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;

    #[test]
    fn cgroup_values_come_from_the_processes() {
        let w = world(Role::ControlPlane, true, 600.0);
        let load = Workload::of(&w);
        let mut fs = Fs::new(0);
        add(&mut fs, &w, &load, "259:0");
        let read =
            |p: &str| String::from_utf8(fs.get(&format!("{ROOT}{p}")).unwrap().content()).unwrap();
        let apid = load.system.iter().find(|c| c.id == "apid").unwrap();
        assert_eq!(read("/system/apid/cgroup.procs"), format!("{}\n", apid.pid));
        assert_eq!(read("/system/apid/memory.max"), format!("{}\n", 128 * MIB));
        let cur: u64 = read("/podruntime/memory.current").trim().parse().unwrap();
        let parts: u64 = ["etcd", "kubelet", "runtime"]
            .iter()
            .map(|c| {
                read(&format!("/podruntime/{c}/memory.current"))
                    .trim()
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert!(cur >= parts && cur - parts < 3 * 4096, "{cur} vs {parts}");
        let pod = &load.pods[0];
        assert!(fs
            .get(&format!(
                "{ROOT}{}/{}/cpu.stat",
                pod.cgroup(),
                pod.containers[0].id
            ))
            .is_some());
        assert!(read("/cpu.stat").starts_with("usage_usec "));
        assert!(fs.get(&format!("{ROOT}/memory.current")).is_none());
    }
}
