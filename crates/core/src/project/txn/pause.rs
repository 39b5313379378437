//! A fault-injection hook for the tests that kill talm inside a commit: each step of a commit
//! is announced in a file, and a commit can be held at a chosen step, so a test aims its kill by
//! waiting for a state instead of racing the clock.
//!
//! `TALM_TXN_PAUSE_FILE=<path>`: before each step of a commit (each rename, folder creation or
//! removal carried out once the journal has landed; for a one-file write, the rename that is its
//! commit) talm appends the line `step <n>` to the file, `n` counting from 0 over the whole run.
//! With `TALM_TXN_PAUSE_AT=<n>` as well, talm then stops at step `n` until it is killed (or for
//! two minutes at most, after which it goes on).
//!
//! Long commands name points of their own (`rotate-ca` after each node it journals as done):
//! at each, talm appends `at <name>` to the same file, and stops there until it is killed (two
//! minutes at most) when `TALM_TXN_PAUSE_AT=<name>`.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How long a held step waits for the kill it was held for.
const HOLD: Duration = Duration::from_secs(120);

/// Steps announced so far in this process.
static STEPS: AtomicUsize = AtomicUsize::new(0);

/// Appends `line` to the announcements file; whether it was written.
fn announce(path: &std::ffi::OsStr, line: &str) -> bool {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
        .is_ok()
}

/// Called before each step of a commit: announces it, and holds it when asked to.
pub(super) fn step() {
    let Some(path) = std::env::var_os("TALM_TXN_PAUSE_FILE") else {
        return;
    };
    let n = STEPS.fetch_add(1, Ordering::SeqCst);
    let announced = announce(&path, &format!("step {n}"));
    let hold = std::env::var("TALM_TXN_PAUSE_AT")
        .ok()
        .and_then(|at| at.parse::<usize>().ok())
        == Some(n);
    if announced && hold {
        std::thread::sleep(HOLD);
    }
}

/// Called at the named point `name` of a long command: announces it, and holds it when asked to.
pub fn point(name: &str) {
    let Some(path) = std::env::var_os("TALM_TXN_PAUSE_FILE") else {
        return;
    };
    let announced = announce(&path, &format!("at {name}"));
    if announced && std::env::var("TALM_TXN_PAUSE_AT").ok().as_deref() == Some(name) {
        std::thread::sleep(HOLD);
    }
}
