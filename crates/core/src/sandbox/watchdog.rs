//! One thread per process that watches the work under way against its profile's bounds (a
//! render's time and the growth of talm's resident memory): the work registers for as long as
//! it runs, on whatever thread runs it, and nobody waits on the watchdog. Past a bound talm ends
//! with an error naming the work and the limit ([`super::guard`] says why it must end).

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::guard::resident_kib;
use super::limits::Limits;

/// How often the watchdog looks at the clock and the memory while work is registered.
pub const TICK: Duration = Duration::from_millis(5);

/// One piece of work being watched.
struct Watch {
    id: u64,
    what: String,
    start: Instant,
    /// Resident memory (KiB) when it started, when the profile bounds memory.
    base: Option<u64>,
    render_time: Option<Duration>,
    max_memory_mib: Option<u64>,
}

/// A bound some work went past: the limit as the error states it, and a hint.
#[derive(Debug, PartialEq, Eq)]
pub struct Overrun {
    pub limit: String,
    pub hint: &'static str,
}

impl Watch {
    /// The bound this work is past `elapsed` after its start with talm at `resident` KiB.
    fn overrun(&self, elapsed: Duration, resident: Option<u64>) -> Option<Overrun> {
        if let Some(max) = self.render_time.filter(|max| elapsed > *max) {
            return Some(Overrun {
                limit: format!("the render did not finish within {}s", max.as_secs()),
                hint: "look for loops nested over large ranges; template logic cannot raise its limits",
            });
        }
        match (self.max_memory_mib, self.base, resident) {
            (Some(max), Some(base), Some(now)) if now.saturating_sub(base) > max * 1024 => {
                Some(Overrun {
                    limit: format!("the render grew talm's memory by more than {max} MiB"),
                    hint: "look for a value that keeps growing (`set_global s = s ~ s` in a loop); template logic cannot raise its limits",
                })
            }
            _ => None,
        }
    }
}

struct Board {
    watches: Vec<Watch>,
    next_id: u64,
}

static BOARD: Mutex<Board> = Mutex::new(Board {
    watches: Vec::new(),
    next_id: 0,
});
/// Signalled when the first piece of work registers.
static WAKE: Condvar = Condvar::new();

fn board() -> MutexGuard<'static, Board> {
    BOARD.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts the watchdog thread unless it runs; whether it runs (a start the system refused is
/// tried again by the next render).
fn started() -> bool {
    static STARTED: Mutex<bool> = Mutex::new(false);
    let mut started = STARTED.lock().unwrap_or_else(|e| e.into_inner());
    if !*started {
        *started = std::thread::Builder::new()
            .name("talm-watchdog".into())
            .spawn(run)
            .is_ok();
    }
    *started
}

fn run() {
    let mut b = board();
    loop {
        while b.watches.is_empty() {
            b = WAKE.wait(b).unwrap_or_else(|e| e.into_inner());
        }
        let now = Instant::now();
        let resident = b
            .watches
            .iter()
            .any(|w| w.base.is_some())
            .then(resident_kib)
            .flatten();
        let over = b.watches.iter().find_map(|w| {
            let o = w.overrun(now.duration_since(w.start), resident)?;
            Some((w.what.clone(), o))
        });
        drop(b);
        if let Some((what, o)) = over {
            super::guard::stop(&what, o.limit, o.hint);
        }
        std::thread::sleep(TICK);
        b = board();
    }
}

/// Whether work named `what` is being watched (tests of where renders run).
#[cfg(test)]
pub(super) fn holds(what: &str) -> bool {
    board().watches.iter().any(|w| w.what == what)
}

/// Work registered with the watchdog until this is dropped.
pub struct Registered(u64);

impl Drop for Registered {
    fn drop(&mut self) {
        board().watches.retain(|w| w.id != self.0);
    }
}

/// Registers work named `what` under `limits`, from now; `None` when the watchdog thread
/// cannot be started (the system is out of threads).
pub fn register(what: &str, limits: &Limits) -> Option<Registered> {
    if !started() {
        return None;
    }
    let base = limits.max_memory_mib.and(super::guard::resident_kib_base());
    let mut b = board();
    let id = b.next_id;
    b.next_id += 1;
    b.watches.push(Watch {
        id,
        what: what.to_string(),
        start: Instant::now(),
        base,
        render_time: limits.render_time,
        max_memory_mib: limits.max_memory_mib,
    });
    if b.watches.len() == 1 {
        WAKE.notify_one();
    }
    Some(Registered(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(base: Option<u64>) -> Watch {
        Watch {
            id: 0,
            what: "t".into(),
            start: Instant::now(),
            base,
            render_time: Limits::TEMPLATE.render_time,
            max_memory_mib: Limits::TEMPLATE.max_memory_mib,
        }
    }

    #[test]
    fn bounds_are_time_and_memory_growth() {
        let w = watch(Some(100_000));
        assert_eq!(
            w.overrun(Duration::from_secs(9), Some(100_000 + 512 * 1024)),
            None
        );
        let late = w.overrun(Duration::from_secs(11), Some(0)).unwrap();
        assert_eq!(late.limit, "the render did not finish within 10s");
        let grown = w
            .overrun(Duration::ZERO, Some(100_000 + 512 * 1024 + 1))
            .unwrap();
        assert_eq!(
            grown.limit,
            "the render grew talm's memory by more than 512 MiB"
        );
        // Memory unknown (no /proc): only the clock bounds the work.
        assert_eq!(watch(None).overrun(Duration::ZERO, Some(u64::MAX)), None);
        assert_eq!(w.overrun(Duration::ZERO, None), None);
    }

    #[test]
    fn work_is_watched_while_registered() {
        let held = |id: u64| board().watches.iter().any(|w| w.id == id);
        let r = register("t", &Limits::TEMPLATE).expect("the watchdog runs");
        let id = r.0;
        assert!(held(id));
        std::thread::sleep(TICK * 3);
        drop(r);
        assert!(!held(id));
    }
}
