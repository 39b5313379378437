//! What the Monitor screen reads, as talosctl's dashboard keeps it per node: the last two
//! SystemStats (their difference gives CPU shares, context switches and processes created),
//! the memory, the process list with each process's CPU time since the previous poll, the
//! network and disk counters, and the series its graphs and sparklines plot (at most 1000
//! points each; NET and DISK plot what the devices' totals grew by since the previous poll,
//! bytes and sectors, as talosctl does).

use std::collections::HashMap;

use crate::proto::machine;

/// Points a series keeps (talosctl's `maxPoints`).
pub const MAX_POINTS: usize = 1000;

/// The series of the Monitor's graphs, one point a poll.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub user: Vec<f64>,
    pub system: Vec<f64>,
    pub mem: Vec<f64>,
    pub loadavg: Vec<f64>,
    /// Bytes received and sent, sectors read and written since the previous poll.
    pub net_rx: Vec<f64>,
    pub net_tx: Vec<f64>,
    pub disk_read: Vec<f64>,
    pub disk_write: Vec<f64>,
}

/// The Monitor's data for one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub stat: Option<machine::SystemStat>,
    prev_stat: Option<machine::SystemStat>,
    pub meminfo: Option<machine::MemInfo>,
    pub load: Option<[f64; 3]>,
    pub processes: Option<Vec<machine::ProcessInfo>>,
    /// CPU seconds each process used since the previous poll, once there was one.
    pub proc_diff: Option<HashMap<i32, f64>>,
    pub cpus: usize,
    /// The last poll's network and disk counters (`None` when that call failed).
    pub net: Option<machine::NetworkDeviceStats>,
    pub disk: Option<machine::DiskStats>,
    pub series: Series,
}

/// The CPU counters' difference between the last two polls.
fn cpu_diff(old: &machine::CpuStat, new: &machine::CpuStat) -> machine::CpuStat {
    machine::CpuStat {
        user: new.user - old.user,
        nice: new.nice - old.nice,
        system: new.system - old.system,
        idle: new.idle - old.idle,
        iowait: new.iowait - old.iowait,
        irq: new.irq - old.irq,
        soft_irq: new.soft_irq - old.soft_irq,
        steal: new.steal - old.steal,
        guest: new.guest - old.guest,
        guest_nice: new.guest_nice - old.guest_nice,
    }
}

fn push(series: &mut Vec<f64>, v: f64) {
    series.push(v);
    let over = series.len().saturating_sub(MAX_POINTS);
    series.drain(..over);
}

impl Metrics {
    /// Folds one poll in: each part replaces the last when the node sent it.
    pub fn apply(
        &mut self,
        stat: Option<machine::SystemStat>,
        meminfo: Option<machine::MemInfo>,
        load: Option<[f64; 3]>,
        processes: Option<Vec<machine::ProcessInfo>>,
        cpus: Option<usize>,
    ) {
        if let Some(s) = stat {
            self.prev_stat = self.stat.replace(s);
        }
        if meminfo.is_some() {
            self.meminfo = meminfo;
        }
        if load.is_some() {
            self.load = load;
        }
        if let Some(c) = cpus {
            self.cpus = c;
        }
        if let Some(p) = processes {
            if let Some(old) = &self.processes {
                let before: HashMap<i32, f64> = old.iter().map(|p| (p.pid, p.cpu_time)).collect();
                self.proc_diff = Some(
                    p.iter()
                        .map(|n| (n.pid, before.get(&n.pid).map_or(0.0, |o| n.cpu_time - o)))
                        .collect(),
                );
            }
            self.processes = Some(p);
        }
        let (user, system, mem) = (self.cpu("user"), self.cpu("system"), self.mem_usage());
        let load = self.load.map_or(0.0, |l| l[0]);
        push(&mut self.series.user, user);
        push(&mut self.series.system, system);
        push(&mut self.series.mem, mem);
        push(&mut self.series.loadavg, load);
    }

    /// Folds one poll's network and disk counters in: the sparklines get what the totals grew
    /// by since the previous poll, 0 when this poll or the previous one lacks them (talosctl's
    /// diff), and 0 when a counter went back (the node rebooted).
    pub fn apply_io(
        &mut self,
        net: Option<machine::NetworkDeviceStats>,
        disk: Option<machine::DiskStats>,
    ) {
        let grew = |new: u64, old: u64| new.saturating_sub(old) as f64;
        let (rx, tx) = match (&self.net, &net) {
            (Some(o), Some(n)) => {
                let (o, n) = (
                    o.total.clone().unwrap_or_default(),
                    n.total.clone().unwrap_or_default(),
                );
                (grew(n.rx_bytes, o.rx_bytes), grew(n.tx_bytes, o.tx_bytes))
            }
            _ => (0.0, 0.0),
        };
        let (read, write) = match (&self.disk, &disk) {
            (Some(o), Some(n)) => {
                let (o, n) = (
                    o.total.clone().unwrap_or_default(),
                    n.total.clone().unwrap_or_default(),
                );
                (
                    grew(n.read_sectors, o.read_sectors),
                    grew(n.write_sectors, o.write_sectors),
                )
            }
            _ => (0.0, 0.0),
        };
        self.net = net;
        self.disk = disk;
        push(&mut self.series.net_rx, rx);
        push(&mut self.series.net_tx, tx);
        push(&mut self.series.disk_read, read);
        push(&mut self.series.disk_write, write);
    }

    /// The counters' difference since the previous poll.
    fn stat_diff(&self) -> Option<(machine::CpuStat, u64, u64)> {
        let (old, new) = (self.prev_stat.as_ref()?, self.stat.as_ref()?);
        let cpu = match (&old.cpu_total, &new.cpu_total) {
            (Some(o), Some(n)) => cpu_diff(o, n),
            _ => machine::CpuStat::default(),
        };
        Some((
            cpu,
            new.context_switches.wrapping_sub(old.context_switches),
            new.process_created.wrapping_sub(old.process_created),
        ))
    }

    /// talosctl's `CPUUsageByName`: a share of the CPU time since the previous poll (0 before
    /// there was one); `total` and `total_weighted` are seconds.
    pub fn cpu(&self, name: &str) -> f64 {
        let Some((s, _, _)) = self.stat_diff() else {
            return 0.0;
        };
        let idle = s.idle + s.iowait;
        let total = idle + s.user + s.nice + s.system + s.irq + s.steal + s.soft_irq;
        if total == 0.0 {
            return 0.0;
        }
        match name {
            "user" => s.user / total,
            "system" => s.system / total,
            "idle" => s.idle / total,
            "iowait" => s.iowait / total,
            "nice" => s.nice / total,
            "irq" => s.irq / total,
            "steal" => s.steal / total,
            "softirq" => s.soft_irq / total,
            "usage" => (total - idle) / total,
            "total_weighted" if self.cpus > 0 => total / self.cpus as f64,
            _ => total,
        }
    }

    pub fn ctx_switches(&self) -> u64 {
        self.stat_diff().map_or(0, |d| d.1)
    }

    pub fn procs_created(&self) -> u64 {
        self.stat_diff().map_or(0, |d| d.2)
    }

    /// Used share of memory: total less free, cached and buffers.
    pub fn mem_usage(&self) -> f64 {
        let Some(m) = &self.meminfo else { return 0.0 };
        if m.memtotal == 0 {
            return 0.0;
        }
        let used = m
            .memtotal
            .saturating_sub(m.memfree)
            .saturating_sub(m.cached)
            .saturating_sub(m.buffers);
        used as f64 / m.memtotal as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(user: f64, system: f64, idle: f64, ctx: u64, created: u64) -> machine::SystemStat {
        machine::SystemStat {
            cpu_total: Some(machine::CpuStat {
                user,
                system,
                idle,
                ..Default::default()
            }),
            context_switches: ctx,
            process_created: created,
            ..Default::default()
        }
    }

    fn proc(pid: i32, cpu_time: f64) -> machine::ProcessInfo {
        machine::ProcessInfo {
            pid,
            cpu_time,
            ..Default::default()
        }
    }

    #[test]
    fn shares_and_counts_come_from_the_last_two_polls() {
        let mut m = Metrics::default();
        m.apply(
            Some(stat(10.0, 5.0, 85.0, 1000, 50)),
            None,
            Some([0.5, 0.4, 0.3]),
            Some(vec![proc(1, 2.0), proc(7, 1.0)]),
            Some(2),
        );
        assert_eq!(
            (m.cpu("user"), m.ctx_switches(), m.proc_diff.is_none()),
            (0.0, 0, true)
        );
        m.apply(
            Some(stat(16.0, 7.0, 97.0, 1500, 53)),
            None,
            Some([0.6, 0.4, 0.3]),
            Some(vec![proc(1, 2.5), proc(9, 0.25)]),
            None,
        );
        assert_eq!(m.cpu("user"), 0.3);
        assert_eq!(m.cpu("system"), 0.1);
        assert_eq!(m.cpu("idle"), 0.6);
        assert_eq!(m.cpu("total_weighted"), 10.0);
        assert_eq!((m.ctx_switches(), m.procs_created()), (500, 3));
        let diff = m.proc_diff.as_ref().unwrap();
        assert_eq!((diff[&1], diff[&9]), (0.5, 0.0));
        assert_eq!(m.series.user, [0.0, 0.3]);
        assert_eq!(m.series.loadavg, [0.5, 0.6]);
    }

    fn io(
        rx: u64,
        tx: u64,
        read: u64,
        write: u64,
    ) -> (machine::NetworkDeviceStats, machine::DiskStats) {
        let net = machine::NetworkDeviceStats {
            total: Some(machine::NetDev {
                rx_bytes: rx,
                tx_bytes: tx,
                ..Default::default()
            }),
            ..Default::default()
        };
        let disk = machine::DiskStats {
            total: Some(machine::DiskStat {
                read_sectors: read,
                write_sectors: write,
                ..Default::default()
            }),
            ..Default::default()
        };
        (net, disk)
    }

    /// NET and DISK plot what the totals grew by between polls: nothing on the first poll,
    /// nor across a failed one, nor when the counters went back.
    #[test]
    fn net_and_disk_series_are_the_growth_between_polls() {
        let mut m = Metrics::default();
        let polls = [
            Some(io(1_000_000, 400_000, 190_000, 5_000)),
            Some(io(1_250_000, 460_000, 190_016, 5_800)),
            Some(io(1_900_000, 700_000, 190_016, 7_400)),
            None,
            Some(io(2_000_000, 720_000, 190_100, 7_500)),
            Some(io(2_100_000, 760_000, 190_200, 7_900)),
            Some(io(5_000, 2_000, 100, 10)),
        ];
        for p in polls {
            let (net, disk) = p.map_or((None, None), |(n, d)| (Some(n), Some(d)));
            m.apply_io(net, disk);
        }
        let s = &m.series;
        assert_eq!(
            s.net_rx,
            [0.0, 250_000.0, 650_000.0, 0.0, 0.0, 100_000.0, 0.0]
        );
        assert_eq!(
            s.net_tx,
            [0.0, 60_000.0, 240_000.0, 0.0, 0.0, 40_000.0, 0.0]
        );
        assert_eq!(s.disk_read, [0.0, 16.0, 0.0, 0.0, 0.0, 100.0, 0.0]);
        assert_eq!(s.disk_write, [0.0, 800.0, 1_600.0, 0.0, 0.0, 400.0, 0.0]);
    }

    #[test]
    fn series_keep_the_newest_thousand_points() {
        let mut m = Metrics::default();
        for i in 0..1003 {
            m.apply(None, None, Some([i as f64, 0.0, 0.0]), None, None);
        }
        assert_eq!(m.series.loadavg.len(), MAX_POINTS);
        assert_eq!(m.series.loadavg[0], 3.0);
    }
}
