//! Simulator capacity: one release `talm sim` process serving N nodes on loopback
//! (127.200.0.0/16, `--node-range FIRST-LAST`), every node asked for its Version through talm's
//! own client, 64 calls at a time, then the real CLI, `talm version -n IP`, against the first,
//! middle and last node. Two kinds of run:
//! - maintenance (1,000 and 5,000 nodes): bare nodes, asked with insecure TLS as `talm version
//!   -i` does;
//! - cluster (15,000 nodes): the nodes first made one cluster through the CLI (`sim_cluster`),
//!   so the simulator holds every node's config and Kubernetes objects; asked over mTLS.
//!
//! Prints one row per run: start-up time, the sim's peak RSS (VmHWM) and CPU, Version latency
//! (p50, p99, max) and failures, next to the goal (issue 12: 5,000 bare nodes in ≤ 256 MiB;
//! issue 39: 15,000 nodes of a cluster in ≤ 384 MiB; each answering within 1 s). Exits non-zero
//! when a node did not answer; the figures are printed, not asserted.
//! Run: `cargo bench --bench sim [-- N ... [--cluster N ...]]`.
//! `TALM_SIM_BIN=/path/to/talm` measures another build's simulator (an older one, for a
//! before/after): its nodes are then listed in a `--config` file, which every build reads.

/// Measured on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

use std::io::{BufRead, BufReader};
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use talm::talos::creds::Auth;

#[path = "sim_cluster.rs"]
mod cluster;

/// The talm binary built by cargo for the bench (the CLI calls, and the simulator by default).
const TALM: &str = env!("CARGO_BIN_EXE_talm");
/// The first node's address; the rest follow it.
const FIRST: Ipv4Addr = Ipv4Addr::new(127, 200, 0, 1);
/// Calls in flight at once.
const CONCURRENCY: usize = 64;
/// The goals: issue 12's for 5,000 bare nodes, issue 39's for 15,000 nodes of a cluster.
const GOAL_RSS_MIB: f64 = 256.0;
const GOAL_CLUSTER_RSS_MIB: f64 = 384.0;
const GOAL_MAX: Duration = Duration::from_secs(1);

/// The simulator process; killed when dropped.
struct SimProcess {
    child: Child,
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SimProcess {
    fn status_kib(&self, key: &str) -> f64 {
        std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(key))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse().ok())
            })
            .unwrap_or(0.0)
    }

    /// User + system CPU seconds so far.
    fn cpu_seconds(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // Fields after the command name (which is in parentheses): utime is the 12th, stime 13th.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<f64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0.0))
            .collect();
        let ticks = f.get(11).copied().unwrap_or(0.0) + f.get(12).copied().unwrap_or(0.0);
        ticks / 100.0
    }
}

/// Starts `talm sim` with `n` nodes and waits until it says it serves them all.
fn start(n: u32) -> (SimProcess, Duration) {
    let last = Ipv4Addr::from(u32::from(FIRST) + n - 1);
    let mut cmd = match std::env::var("TALM_SIM_BIN") {
        Ok(other) => {
            let file = std::env::temp_dir().join(format!("talm-sim-bench-{n}.yaml"));
            let mut yaml = String::from("nodes:\n");
            for i in 0..n {
                yaml.push_str(&format!(
                    "  - address: {}\n",
                    Ipv4Addr::from(u32::from(FIRST) + i)
                ));
            }
            std::fs::write(&file, yaml).expect("the node list is written");
            let mut c = Command::new(other);
            c.arg("sim").arg("--config").arg(file);
            c
        }
        Err(_) => {
            let mut c = Command::new(TALM);
            c.args(["sim", "--node-range", &format!("{FIRST}-{last}")]);
            c
        }
    };
    let started = Instant::now();
    let mut child = cmd
        .args(["--port", "50000"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("talm sim starts");
    let stderr = child.stderr.take().expect("piped stderr");
    let sim = SimProcess { child };
    let mut said = String::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap_or_default();
        if line.contains("serving until interrupted") {
            return (sim, started.elapsed());
        }
        said.push_str(&line);
        said.push('\n');
    }
    panic!("talm sim with {n} nodes ended before serving:\n{said}");
}

/// Asks every node, `CONCURRENCY` at a time; the latencies and the failures.
fn ask_all(addrs: &[String], auth: &Auth) -> (Vec<Duration>, Vec<String>) {
    talm::talos::block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let (mut lat, mut failed) = (Vec::new(), Vec::new());
        let mut next = addrs.iter();
        loop {
            while set.len() < CONCURRENCY {
                match next.next() {
                    Some(a) => {
                        set.spawn(cluster::version(a.clone(), auth.clone()));
                    }
                    None => break,
                }
            }
            let Some(done) = set.join_next().await else {
                break;
            };
            match done {
                Ok(Ok(d)) => lat.push(d),
                Ok(Err(e)) => failed.push(e),
                Err(e) => failed.push(format!("task: {e}")),
            }
        }
        (lat, failed)
    })
}

/// `talm version [-i] -n IP` as a process in `dir`: its wall time, or why it failed.
fn cli_version(ip: &str, dir: &Path, insecure: bool) -> Result<Duration, String> {
    let started = Instant::now();
    let mut args = vec!["version", "-n", ip];
    if insecure {
        args.push("-i");
    }
    let out = Command::new(TALM)
        .args(&args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{ip}: {e}"))?;
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains(&format!("NODE:        {ip}")) {
        return Err(format!(
            "talm {}: {}\n{stdout}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(took)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// What a run's nodes are when they are asked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Maintenance,
    Cluster,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Maintenance => "bare",
            Kind::Cluster => "cluster",
        }
    }

    /// The goal this run's row is held to, when its size has one.
    fn goal(self, nodes: u32) -> Option<f64> {
        match self {
            Kind::Maintenance if nodes >= 5000 => Some(GOAL_RSS_MIB),
            Kind::Cluster if nodes >= 15000 => Some(GOAL_CLUSTER_RSS_MIB),
            _ => None,
        }
    }
}

struct Row {
    kind: Kind,
    nodes: u32,
    startup: Duration,
    /// The cluster's bring-up: every node applied, then every node Ready in Kubernetes.
    steps: Option<cluster::Steps>,
    rss_mib: f64,
    hwm_mib: f64,
    cpu: f64,
    p50: Duration,
    p99: Duration,
    max: Duration,
    failures: usize,
    cli: String,
}

fn run(n: u32, kind: Kind) -> (Row, Vec<String>) {
    let (sim, startup) = start(n);
    let idle = sim.status_kib("VmRSS:") / 1024.0;
    let addrs: Vec<String> = (0..n)
        .map(|i| Ipv4Addr::from(u32::from(FIRST) + i).to_string())
        .collect();
    eprintln!(
        "sim: {n} nodes up in {}, {idle:.0} MiB resident",
        ms(startup)
    );
    let dir = tempfile::tempdir().expect("a project folder");
    let (steps, auth) = match kind {
        Kind::Maintenance => (None, Auth::Insecure),
        Kind::Cluster => {
            eprintln!("sim: making the {n} nodes one cluster (1 control plane)...");
            match cluster::bring_up(TALM, dir.path(), &addrs) {
                Ok(s) => {
                    eprintln!(
                        "sim: applied in {:.1} s, {} Nodes Ready {:.1} s after bootstrap, {:.0} MiB resident",
                        s.apply.as_secs_f64(),
                        s.nodes,
                        s.ready.as_secs_f64(),
                        sim.status_kib("VmRSS:") / 1024.0
                    );
                    (Some(s), cluster::auth(dir.path()))
                }
                Err(e) => {
                    eprintln!("sim: the cluster did not come up: {e}");
                    // `exit` runs no destructors: stop the simulator first.
                    drop(sim);
                    std::process::exit(1);
                }
            }
        }
    };
    eprintln!("sim: asking each node for its Version...");
    let (mut lat, mut failed) = ask_all(&addrs, &auth);
    lat.sort();
    let mut cli = Vec::new();
    for ip in [&addrs[0], &addrs[addrs.len() / 2], &addrs[addrs.len() - 1]] {
        match cli_version(ip, dir.path(), kind == Kind::Maintenance) {
            Ok(d) => cli.push(format!("{ip} {}", ms(d))),
            Err(e) => {
                cli.push(format!("{ip} FAILED"));
                failed.push(e);
            }
        }
    }
    let row = Row {
        kind,
        nodes: n,
        startup,
        steps,
        rss_mib: sim.status_kib("VmRSS:") / 1024.0,
        hwm_mib: sim.status_kib("VmHWM:") / 1024.0,
        cpu: sim.cpu_seconds(),
        p50: quantile(&lat, 0.50),
        p99: quantile(&lat, 0.99),
        max: lat.last().copied().unwrap_or_default(),
        failures: failed.len(),
        cli: cli.join(", "),
    };
    drop(sim);
    (row, failed)
}

/// The runs the arguments ask for: sizes of bare runs, then `--cluster` and sizes of cluster
/// runs; none given: 1,000 and 5,000 bare nodes and a cluster of 15,000.
fn runs(args: &[String]) -> Vec<(u32, Kind)> {
    let mut kind = Kind::Maintenance;
    let mut out = Vec::new();
    for a in args {
        if a == "--cluster" {
            kind = Kind::Cluster;
        } else if let Some(n) = a.parse().ok().filter(|n| (2..=65_000).contains(n)) {
            out.push((n, kind));
        }
    }
    if out.is_empty() {
        out = vec![
            (1000, Kind::Maintenance),
            (5000, Kind::Maintenance),
            (15000, Kind::Cluster),
        ];
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    for (n, kind) in runs(&args) {
        let (row, failed) = run(n, kind);
        rows.push(row);
        failures.extend(failed);
    }
    println!("talm sim capacity: one process, Version on every node ({CONCURRENCY} at a time)");
    println!(
        "{:>7}  {:>6}  {:>9}  {:>9}  {:>8}  {:>7}  {:>7}  {:>7}  {:>7}  {:>8}  goal",
        "nodes", "", "start-up", "peak RSS", "RSS now", "CPU s", "p50", "p99", "max", "failures"
    );
    for r in &rows {
        let goal = match r.kind.goal(r.nodes) {
            Some(rss) => {
                let ok = r.hwm_mib <= rss && r.max <= GOAL_MAX && r.failures == 0;
                format!(
                    "≤ {rss:.0} MiB, max ≤ {}: {}",
                    ms(GOAL_MAX),
                    if ok { "met" } else { "NOT met" }
                )
            }
            None => String::from("-"),
        };
        println!(
            "{:>7}  {:>6}  {:>9}  {:>5.0} MiB  {:>4.0} MiB  {:>7.1}  {:>7}  {:>7}  {:>7}  {:>8}  {goal}",
            r.nodes,
            r.kind.name(),
            ms(r.startup),
            r.hwm_mib,
            r.rss_mib,
            r.cpu,
            ms(r.p50),
            ms(r.p99),
            ms(r.max),
            r.failures,
        );
    }
    for r in &rows {
        if let Some(s) = &r.steps {
            println!(
                "  cluster of {}: every node applied in {:.1} s; {} Nodes, all Ready {:.1} s after bootstrap",
                r.nodes,
                s.apply.as_secs_f64(),
                s.nodes,
                s.ready.as_secs_f64()
            );
        }
        println!(
            "  talm version -n ({} {} nodes): {}",
            r.nodes,
            r.kind.name(),
            r.cli
        );
    }
    if !failures.is_empty() {
        eprintln!("{} call(s) failed; the first:", failures.len());
        for f in failures.iter().take(5) {
            eprintln!("  {f}");
        }
        std::process::exit(1);
    }
}
