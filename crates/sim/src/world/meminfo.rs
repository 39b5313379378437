//! A simulated node's memory as `/proc/meminfo` and the Memory call show it: the processes'
//! resident memory is the anonymous part, the page cache grows with uptime, the kernel keeps
//! its slab; free is what is left. Values are kB.

use super::workload::Workload;
use super::{World, MEM_TOTAL_KB};
use talm_wire::proto::machine::MemInfo;

/// `/proc/meminfo` of the node, in the kernel's order and layout.
pub fn meminfo(w: &World, load: &Workload) -> MemInfo {
    let total = MEM_TOTAL_KB;
    let anon: u64 = load.procs.iter().map(|p| p.rss / 1024).sum::<u64>() * 9 / 10;
    let up = w.uptime();
    let cache_base = if w.role == super::Role::Maintenance {
        180_000
    } else {
        620_000
    };
    let cached = cache_base + (up.min(7200.0) * 55.0) as u64 + w.rand("cache") % 20_000;
    let buffers = 2_900 + w.rand("buffers") % 1_200;
    let shmem = 3_100 + (load.procs.len() as u64) * 40;
    let sreclaimable = 38_000 + (up.min(3600.0) * 4.0) as u64;
    let sunreclaim = 61_000 + w.rand("sunreclaim") % 4_000;
    let slab = sreclaimable + sunreclaim;
    let kernelstack = load.procs.iter().map(|p| p.threads as u64).sum::<u64>() * 16 + 4_800;
    let pagetables = anon / 90 + 1_000;
    let used = anon + cached + buffers + slab + kernelstack + pagetables;
    let free = total.saturating_sub(used);
    let active_file = cached * 2 / 5;
    let inactive_file = cached + buffers - active_file - shmem.min(cached);
    let active_anon = anon * 3 / 10 + shmem;
    let inactive_anon = anon - anon * 3 / 10;
    MemInfo {
        memtotal: total,
        memfree: free,
        memavailable: free + inactive_file + active_file / 2 + sreclaimable,
        buffers,
        cached,
        swapcached: 0,
        active: active_anon + active_file,
        inactive: inactive_anon + inactive_file,
        activeanon: active_anon,
        inactiveanon: inactive_anon,
        activefile: active_file,
        inactivefile: inactive_file,
        unevictable: 0,
        mlocked: 0,
        swaptotal: 0,
        swapfree: 0,
        dirty: 120 + w.rand(&format!("dirty{}", w.now as u64 / 5)) % 900,
        writeback: 0,
        anonpages: anon,
        mapped: anon / 4 + 40_000,
        shmem,
        slab,
        sreclaimable,
        sunreclaim,
        kernelstack,
        pagetables,
        nfsunstable: 0,
        bounce: 0,
        writebacktmp: 0,
        commitlimit: total / 2,
        committedas: load.procs.iter().map(|p| p.vsz / 1024).sum::<u64>() / 6,
        vmalloctotal: 34_359_738_367,
        vmallocused: 22_400,
        vmallocchunk: 0,
        hardwarecorrupted: 0,
        anonhugepages: 0,
        shmemhugepages: 0,
        shmempmdmapped: 0,
        cmatotal: 0,
        cmafree: 0,
        hugepagestotal: 0,
        hugepagesfree: 0,
        hugepagesrsvd: 0,
        hugepagessurp: 0,
        hugepagesize: 2048,
        directmap4k: 151_412,
        directmap2m: 4_042_752,
        directmap1g: 2_097_152,
    }
}

/// The text of `/proc/meminfo` for `m`.
pub fn text(m: &MemInfo) -> String {
    let kb = [
        ("MemTotal", m.memtotal),
        ("MemFree", m.memfree),
        ("MemAvailable", m.memavailable),
        ("Buffers", m.buffers),
        ("Cached", m.cached),
        ("SwapCached", m.swapcached),
        ("Active", m.active),
        ("Inactive", m.inactive),
        ("Active(anon)", m.activeanon),
        ("Inactive(anon)", m.inactiveanon),
        ("Active(file)", m.activefile),
        ("Inactive(file)", m.inactivefile),
        ("Unevictable", m.unevictable),
        ("Mlocked", m.mlocked),
        ("SwapTotal", m.swaptotal),
        ("SwapFree", m.swapfree),
        ("Dirty", m.dirty),
        ("Writeback", m.writeback),
        ("AnonPages", m.anonpages),
        ("Mapped", m.mapped),
        ("Shmem", m.shmem),
        ("KReclaimable", m.sreclaimable),
        ("Slab", m.slab),
        ("SReclaimable", m.sreclaimable),
        ("SUnreclaim", m.sunreclaim),
        ("KernelStack", m.kernelstack),
        ("PageTables", m.pagetables),
        ("NFS_Unstable", m.nfsunstable),
        ("Bounce", m.bounce),
        ("WritebackTmp", m.writebacktmp),
        ("CommitLimit", m.commitlimit),
        ("Committed_AS", m.committedas),
        ("VmallocTotal", m.vmalloctotal),
        ("VmallocUsed", m.vmallocused),
        ("VmallocChunk", m.vmallocchunk),
        ("HardwareCorrupted", m.hardwarecorrupted),
        ("AnonHugePages", m.anonhugepages),
        ("ShmemHugePages", m.shmemhugepages),
        ("ShmemPmdMapped", m.shmempmdmapped),
        ("CmaTotal", m.cmatotal),
        ("CmaFree", m.cmafree),
    ];
    let mut out = String::new();
    for (k, v) in kb {
        out.push_str(&format!("{:<16}{v:>8} kB\n", format!("{k}:")));
    }
    for (k, v) in [
        ("HugePages_Total", m.hugepagestotal),
        ("HugePages_Free", m.hugepagesfree),
        ("HugePages_Rsvd", m.hugepagesrsvd),
        ("HugePages_Surp", m.hugepagessurp),
    ] {
        out.push_str(&format!("{:<16}{v:>8}\n", format!("{k}:")));
    }
    for (k, v) in [
        ("Hugepagesize", m.hugepagesize),
        ("DirectMap4k", m.directmap4k),
        ("DirectMap2M", m.directmap2m),
        ("DirectMap1G", m.directmap1g),
    ] {
        out.push_str(&format!("{:<16}{v:>8} kB\n", format!("{k}:")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;

    #[test]
    fn memory_adds_up_and_moves() {
        let w = world(Role::ControlPlane, true, 300.0);
        let m = meminfo(&w, &Workload::of(&w));
        assert_eq!(m.memtotal, MEM_TOTAL_KB);
        assert!(m.memfree > 0 && m.memfree < m.memavailable && m.memavailable < m.memtotal);
        assert_eq!(m.active, m.activeanon + m.activefile);
        assert_eq!(m.slab, m.sreclaimable + m.sunreclaim);
        let later = world(Role::ControlPlane, true, 2300.0);
        let m2 = meminfo(&later, &Workload::of(&later));
        assert!(m2.cached > m.cached);
        assert_ne!(m2.memfree, m.memfree);
        let t = text(&m);
        assert!(t.starts_with("MemTotal:        4027520 kB\n"), "{t}");
        assert!(t.contains("\nHugePages_Total:       0\n"), "{t}");
    }
}
