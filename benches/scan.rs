//! `talm scan`: the memory a scan holds follows `--concurrency`, not the size of the network.
//! Scans the loopback /16 127.212.0.0/16 (65,536 addresses, none listening: each probe is a
//! refused connection) at several concurrencies and prints, per run, the wall time, the
//! process's peak RSS and CPU (wait4's rusage) and the addresses probed per second.
//!
//! Run: `cargo bench --bench scan` (concurrencies: `cargo bench --bench scan -- 16 4096`).

/// Measured on the binary's heap.
#[global_allocator]
static HEAP: talm::heap::Split = talm::heap::Split;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::{wait_usage, Usage};

const TALM: &str = env!("CARGO_BIN_EXE_talm");
/// Loopback only, never another network.
const CIDR: &str = "127.212.0.0/16";
const ADDRESSES: f64 = 65_536.0;

fn run(concurrency: usize) -> (Duration, Usage) {
    let start = Instant::now();
    // Reaped by wait4 in `wait_usage`.
    #[allow(clippy::zombie_processes)]
    let child = Command::new(TALM)
        .args(["scan", CIDR, "--concurrency", &concurrency.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("talm runs");
    let usage = wait_usage(&child);
    (start.elapsed(), usage)
}

fn main() {
    let asked: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let levels = if asked.is_empty() {
        vec![16, 256, 1024, 4096]
    } else {
        asked
    };
    println!("talm scan {CIDR} (65,536 addresses, none listening)");
    println!(
        "{:>12} {:>9} {:>13} {:>9} {:>14}",
        "concurrency", "wall", "peak RSS", "CPU", "addresses/s"
    );
    for c in levels {
        let (wall, u) = run(c);
        assert!(u.ok, "talm scan --concurrency {c} failed");
        println!(
            "{:>12} {:>8.2}s {:>10.1} MiB {:>8.2}s {:>14.0}",
            c,
            wall.as_secs_f64(),
            u.max_rss_kib as f64 / 1024.0,
            u.cpu.as_secs_f64(),
            ADDRESSES / wall.as_secs_f64()
        );
    }
}
