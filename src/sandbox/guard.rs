//! Bounds for work that cannot be stopped midway: a Tera render has no operation counter, so it
//! runs on a thread of its own while the caller watches the clock and the process's resident
//! memory. Past either bound of the profile talm ends with an error naming the work and the
//! limit: the runaway thread cannot be cancelled, so the process exits (nothing is written
//! before a command's render finishes, so nothing on disk is lost).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::limits::Limits;
use crate::error::{hinted, Hinted};

/// Stack of the watched thread (a render nests includes and components).
const STACK: usize = 16 << 20;
/// How often the watcher looks at the clock and the memory.
const TICK: Duration = Duration::from_millis(5);

/// The process's resident memory in KiB (Linux), or None where it cannot be read.
pub fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn stop(what: &str, limit: String, hint: &str) -> ! {
    let err: anyhow::Error = Hinted {
        message: format!("{what}: {limit} (templates and preset logic run with strict limits)"),
        hints: vec![hint.to_string()],
    }
    .into();
    eprint!("{}", crate::error::render(&err));
    std::process::exit(1)
}

/// Runs `work` within the profile's render time and memory; `what` names it in errors.
pub fn watched<T: Send + 'static>(
    what: &str,
    limits: &Limits,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T> {
    if limits.render_time.is_none() && limits.max_memory_mib.is_none() {
        return Ok(work());
    }
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("talm-render".into())
        .stack_size(STACK)
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|e| {
            hinted(
                format!("{what}: cannot start the render thread: {e}"),
                "the system is out of threads or memory; close other programs and try again",
            )
        })?;
    let start = Instant::now();
    let base = resident_kib();
    loop {
        match rx.recv_timeout(TICK) {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(hinted(
                    format!("{what}: the render stopped unexpectedly"),
                    "this is a bug in talm: please report it with the template",
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some(max) = limits.render_time {
            if start.elapsed() > max {
                stop(
                    what,
                    format!("the render did not finish within {}s", max.as_secs()),
                    "look for loops nested over large ranges; template logic cannot raise its limits",
                );
            }
        }
        if let (Some(max), Some(base), Some(now)) = (limits.max_memory_mib, base, resident_kib()) {
            if now.saturating_sub(base) > max * 1024 {
                stop(
                    what,
                    format!("the render grew talm's memory by more than {max} MiB"),
                    "look for a value that keeps growing (`set_global s = s ~ s` in a loop); template logic cannot raise its limits",
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back() {
        assert_eq!(watched("t", &Limits::TEMPLATE, || 41 + 1).unwrap(), 42);
        assert_eq!(
            watched("t", &Limits::PLAYBOOK, || "inline").unwrap(),
            "inline"
        );
        assert!(resident_kib().is_some_and(|k| k > 0));
    }
}
