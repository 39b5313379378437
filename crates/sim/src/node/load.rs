//! How busy a simulated node is: CPU time counters, CPU info, memory and load averages that
//! move over time as `/proc` does on a real machine (counters only grow, load averages climb
//! after boot, memory breathes), busier on a control plane than on a worker or in maintenance.
//! Everything is a closed-form function of the node's address and the time since its boot, so
//! two calls agree with each other and no state is kept between them.

use std::f64::consts::TAU;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::node::state::State;
use crate::node::Node;
use talm_wire::proto::machine;

/// Logical CPUs of a simulated machine.
pub const CPUS: u32 = 4;
/// Their clock, as `/proc/cpuinfo` reports it.
pub const CPU_MHZ: f64 = 2445.406;
/// `MemTotal` of the simulated 8 GiB machine (KiB; the kernel keeps some for itself).
pub const MEM_TOTAL_KIB: u64 = 8_148_772;

/// The slow and the fast wave of a node's activity (seconds per period).
const SLOW: f64 = 90.0;
const FAST: f64 = 17.0;
/// Their amplitudes, relative to the node's mean activity (together below 1: never negative).
const SLOW_AMP: f64 = 0.35;
const FAST_AMP: f64 = 0.15;

/// A node's activity: its mean busy share of each CPU, its resident memory and where in its
/// waves it is (from its address, so nodes differ).
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    /// Mean busy fraction of one CPU.
    pub busy: f64,
    /// Memory in use once settled (KiB).
    pub used_kib: f64,
    /// Phase of the waves (radians).
    pub phase: f64,
}

impl Profile {
    /// The profile of a node in its current state.
    pub fn of(node: &Node, st: &State) -> Profile {
        let (busy, used_gib) = match &st.config {
            None => (0.03, 0.35),
            Some(c) if c.is_control_plane() && st.etcd_bootstrapped => (0.21, 2.4),
            Some(c) if c.is_control_plane() => (0.12, 1.5),
            Some(_) => (0.09, 1.1),
        };
        let seed = node
            .spec
            .addr
            .to_string()
            .bytes()
            .fold(7u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)))
            ^ u32::from(node.spec.port);
        Profile {
            busy,
            used_kib: used_gib * 1024.0 * 1024.0,
            phase: f64::from(seed % 628) / 100.0,
        }
    }

    /// Busy fraction of one CPU at `t` seconds after boot.
    pub fn rate(&self, t: f64) -> f64 {
        self.busy
            * (1.0
                + SLOW_AMP * (TAU * t / SLOW + self.phase).sin()
                + FAST_AMP * (TAU * t / FAST + 2.0 * self.phase).sin())
    }

    /// Busy seconds of one CPU from boot to `t`: the integral of `rate`.
    pub fn busy_seconds(&self, t: f64) -> f64 {
        let (ws, wf) = (TAU / SLOW, TAU / FAST);
        let (ps, pf) = (self.phase, 2.0 * self.phase);
        self.busy
            * (t + SLOW_AMP / ws * (ps.cos() - (ws * t + ps).cos())
                + FAST_AMP / wf * (pf.cos() - (wf * t + pf).cos()))
    }
}

/// Seconds since the node's current boot, and that boot's Unix time.
pub(crate) fn since_boot(st: &State) -> (f64, u64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let booted = st.booted.max(0) as u64;
    ((now - booted as f64).max(0.0), booted)
}

/// A CPU's times (seconds) for `busy` busy seconds over `t` seconds of wall time.
fn cpu_stat(busy: f64, t: f64) -> machine::CpuStat {
    let iowait = 0.004 * t;
    machine::CpuStat {
        user: busy * 0.64,
        nice: busy * 0.01,
        system: busy * 0.28,
        idle: (t - busy - iowait).max(0.0),
        iowait,
        irq: busy * 0.02,
        soft_irq: busy * 0.05,
        steal: 0.0,
        guest: 0.0,
        guest_nice: 0.0,
    }
}

/// How each CPU shares the work (mean 1).
const SHARES: [f64; CPUS as usize] = [1.18, 0.97, 0.93, 0.92];

pub fn system_stat(node: &Node) -> machine::SystemStat {
    let st = node.state();
    let p = Profile::of(node, &st);
    let (t, booted) = since_boot(&st);
    let busy = p.busy_seconds(t);
    let cpu: Vec<_> = SHARES.iter().map(|s| cpu_stat(busy * s, t)).collect();
    let sum = |f: fn(&machine::CpuStat) -> f64| cpu.iter().map(f).sum::<f64>();
    let total = machine::CpuStat {
        user: sum(|c| c.user),
        nice: sum(|c| c.nice),
        system: sum(|c| c.system),
        idle: sum(|c| c.idle),
        iowait: sum(|c| c.iowait),
        irq: sum(|c| c.irq),
        soft_irq: sum(|c| c.soft_irq),
        steal: 0.0,
        guest: 0.0,
        guest_nice: 0.0,
    };
    let work = busy * f64::from(CPUS);
    let soft = machine::SoftIrqStat {
        hi: 2,
        timer: (250.0 * t) as u64,
        net_tx: (3.0 * t) as u64,
        net_rx: (40.0 * t + 900.0 * work) as u64,
        block: (5.0 * t) as u64,
        block_io_poll: 0,
        tasklet: (0.5 * t) as u64,
        sched: (180.0 * t + 2000.0 * work) as u64,
        hrtimer: 11,
        rcu: (120.0 * t) as u64,
    };
    let soft_total = soft.hi
        + soft.timer
        + soft.net_tx
        + soft.net_rx
        + soft.block
        + soft.tasklet
        + soft.sched
        + soft.hrtimer
        + soft.rcu;
    let irq: Vec<u64> = [0.0, 9.0, 0.0, 0.0, 120.0, 35.0]
        .iter()
        .map(|r| (r * t) as u64)
        .collect();
    machine::SystemStat {
        metadata: None,
        boot_time: booted,
        cpu_total: Some(total),
        cpu,
        irq_total: (600.0 * t + 4000.0 * work) as u64,
        irq,
        context_switches: (900.0 * t + 15_000.0 * work) as u64,
        process_created: 350 + (0.8 * t + 40.0 * work) as u64,
        process_running: 1 + (p.rate(t) * f64::from(CPUS)).round() as u64,
        process_blocked: 0,
        soft_irq_total: soft_total,
        soft_irq: Some(soft),
    }
}

pub fn cpu_info(_node: &Node) -> machine::CpUsInfo {
    let flags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm rep_good nopl cpuid extd_apicid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy svm cr8_legacy abm sse4a misalignsse 3dnowprefetch osvw topoext invpcid_single ibpb vmmcall fsgsbase bmi1 avx2 smep bmi2 erms invpcid rdseed adx smap clflushopt clwb sha_ni xsaveopt xsavec xgetbv1 xsaves clzero xsaveerptr wbnoinvd arat npt nrip_save umip pku ospke vaes vpclmulqdq rdpid fsrm arch_capabilities";
    let bugs = "sysret_ss_attrs spectre_v1 spectre_v2 spec_store_bypass srso";
    let cpu_info = (0..CPUS)
        .map(|i| machine::CpuInfo {
            processor: i,
            vendor_id: "AuthenticAMD".into(),
            cpu_family: "25".into(),
            model: "1".into(),
            model_name: "AMD EPYC 7763 64-Core Processor".into(),
            stepping: "1".into(),
            microcode: "0x1000065".into(),
            cpu_mhz: CPU_MHZ,
            cache_size: "512 KB".into(),
            physical_id: "0".into(),
            siblings: CPUS,
            core_id: i.to_string(),
            cpu_cores: CPUS,
            apic_id: i.to_string(),
            initial_apic_id: i.to_string(),
            fpu: "yes".into(),
            fpu_exception: "yes".into(),
            cpu_id_level: 16,
            wp: "yes".into(),
            flags: flags.split(' ').map(str::to_string).collect(),
            bugs: bugs.split(' ').map(str::to_string).collect(),
            bogo_mips: 4890.81,
            cl_flush_size: 64,
            cache_alignment: 64,
            address_sizes: "48 bits physical, 48 bits virtual".into(),
            power_management: String::new(),
        })
        .collect();
    machine::CpUsInfo {
        metadata: None,
        cpu_info,
    }
}

/// Runnable tasks averaged over `window` seconds, `t` seconds after boot: the current demand
/// seen through the kernel's exponential damping, starting from zero at boot.
fn load(p: &Profile, t: f64, window: f64) -> f64 {
    let lag = window.min(t) / 2.0;
    let demand = p.rate(t - lag) * f64::from(CPUS) * 1.15;
    let settle = 1.0 - (-t / window).exp();
    (demand * settle * 100.0).round() / 100.0
}

pub fn load_avg(node: &Node) -> machine::LoadAvg {
    let st = node.state();
    let p = Profile::of(node, &st);
    let (t, _) = since_boot(&st);
    machine::LoadAvg {
        metadata: None,
        load1: load(&p, t, 60.0),
        load5: load(&p, t, 300.0),
        load15: load(&p, t, 900.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile {
            busy: 0.2,
            used_kib: 2.0 * 1024.0 * 1024.0,
            phase: 1.3,
        }
    }

    #[test]
    fn busy_time_is_the_integral_of_the_rate() {
        let p = profile();
        // Trapezoids over 0..600 s in 10 ms steps against the closed form.
        let (mut sum, dt) = (0.0, 0.01);
        for i in 0..60_000 {
            let t = f64::from(i) * dt;
            sum += (p.rate(t) + p.rate(t + dt)) / 2.0 * dt;
        }
        assert!((sum - p.busy_seconds(600.0)).abs() < 1e-6);
        assert_eq!(p.busy_seconds(0.0), 0.0);
    }

    #[test]
    fn counters_only_grow_and_usage_moves() {
        let p = profile();
        let mut last = 0.0;
        let mut usages = Vec::new();
        for s in 1..200 {
            let t = f64::from(s);
            let busy = p.busy_seconds(t);
            assert!(busy > last, "busy time went back at {t}");
            usages.push(busy - last);
            last = busy;
            let c = cpu_stat(busy, t);
            assert!(c.idle > 0.0 && c.user > 0.0);
        }
        let (lo, hi) = usages
            .iter()
            .fold((f64::MAX, 0.0f64), |(lo, hi), u| (lo.min(*u), hi.max(*u)));
        assert!(lo > 0.05 && hi < 0.4 && hi - lo > 0.05, "{lo}..{hi}");
    }

    #[test]
    fn load_climbs_from_zero_after_boot() {
        let p = profile();
        assert_eq!(load(&p, 0.0, 60.0), 0.0);
        assert!(load(&p, 5.0, 900.0) < load(&p, 5.0, 60.0));
        let settled = load(&p, 3600.0, 60.0);
        assert!(settled > 0.3 && settled < 1.6, "{settled}");
    }
}
