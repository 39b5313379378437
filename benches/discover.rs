//! Discovery at scale: N simulated nodes on loopback (127.0.6.x), every node discovered over
//! its own maintenance-mode TLS connection, all at once and then one by one; prints nodes per
//! second, per-node latency and peak memory. Run: `cargo bench --bench discover [-- N]`.

/// Measured on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

use std::net::IpAddr;
use std::time::{Duration, Instant};

use talm::sim::{NodeSpec, Sim};
use talm::talos::client::{Client, Options};
use talm::talos::creds::Auth;
use talm::talos::discovery;

async fn discover(addr: String) -> Duration {
    let started = Instant::now();
    let opts = Options {
        auth: Auth::Insecure,
        timeout: Duration::from_secs(30),
    };
    let c = Client::connect(&addr, None, &opts).await.unwrap();
    let facts = discovery::discover(&c).await.unwrap();
    assert!(facts.resources.contains_key("links"));
    started.elapsed()
}

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_string)
        })
        .and_then(|l| {
            l.split_whitespace()
                .nth(1)
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map(|kb| kb / 1024.0)
        .unwrap_or(0.0)
}

fn main() {
    let n: u8 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50)
        .clamp(1, 250);
    let addrs: Vec<String> = (1..=n).map(|i| format!("127.0.6.{i}")).collect();
    let specs = addrs
        .iter()
        .map(|a| NodeSpec::new(a.parse::<IpAddr>().unwrap(), 50000))
        .collect();
    let sim = talm::talos::block_on(Sim::start(specs)).unwrap();

    let started = Instant::now();
    let lat: Vec<Duration> = talm::talos::block_on(async {
        let tasks: Vec<_> = addrs
            .iter()
            .cloned()
            .map(|a| tokio::spawn(discover(a)))
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });
    let parallel = started.elapsed();
    let started = Instant::now();
    for a in &addrs {
        talm::talos::block_on(discover(a.clone()));
    }
    let sequential = started.elapsed();
    let mut sorted = lat.clone();
    sorted.sort();
    println!("discover: {n} simulated nodes (maintenance mode, TLS, 10 COSI reads + Version each)");
    println!(
        "  all at once: {:.0} ms total, {:.0} nodes/s, per-node median {:.1} ms, max {:.1} ms",
        parallel.as_secs_f64() * 1e3,
        f64::from(n) / parallel.as_secs_f64(),
        sorted[sorted.len() / 2].as_secs_f64() * 1e3,
        sorted[sorted.len() - 1].as_secs_f64() * 1e3,
    );
    println!(
        "  one by one:  {:.0} ms total, {:.1} ms per node",
        sequential.as_secs_f64() * 1e3,
        sequential.as_secs_f64() * 1e3 / f64::from(n)
    );
    println!(
        "  peak RSS (client and {n} simulated nodes in one process): {:.1} MiB",
        peak_rss_mib()
    );
    talm::talos::block_on(sim.stop());
}
