//! How many renders the process runs at once: one per core. A fleet step runs up to 32 nodes at
//! once so that their waits (a reboot, a slow link) overlap, but a render only computes (it reads
//! local project files, never the network): more renders at once than there are cores finish no
//! sooner, and each holds its working memory (the context script's values, Tera's, the YAML
//! trees) meanwhile. Limiting them lowers a bring-up's peak memory at no cost in wall time
//! (figures in `docs/performance.md`). A render on a thread that already holds a pass (a render
//! inside a render) passes freely.

use std::cell::Cell;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};

/// A counting gate: at most `limit` threads hold a pass at once.
pub struct Gate {
    limit: OnceLock<usize>,
    held: Mutex<usize>,
    freed: Condvar,
}

thread_local! {
    /// Passes this thread holds (nested renders). Counted across gates: a thread holding a pass
    /// of one enters any other freely, so a second gate would need its own count.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Places this thread has taken in any gate so far.
    static TAKEN: Cell<usize> = const { Cell::new(0) };
}

/// Places the calling thread has taken so far (its nested passes not counted).
pub fn taken_here() -> usize {
    TAKEN.get()
}

/// The renders of the process.
pub static RENDERS: Gate = Gate::new();

/// The limit unless one was set: the cores the process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A held place in a [`Gate`]; dropping it frees the place.
#[must_use]
pub struct Pass<'a> {
    gate: Option<&'a Gate>,
}

impl Gate {
    pub const fn new() -> Gate {
        Gate {
            limit: OnceLock::new(),
            held: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// Fixes the limit (before the first `enter`; later calls leave it as it is).
    pub fn set_limit(&self, limit: usize) {
        let _ = self.limit.set(limit.max(1));
    }

    fn lock(&self) -> MutexGuard<'_, usize> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a place, unless this thread holds one already.
    pub fn enter(&self) -> Pass<'_> {
        if DEPTH.get() > 0 {
            DEPTH.set(DEPTH.get() + 1);
            return Pass { gate: None };
        }
        let limit = *self.limit.get_or_init(cores);
        let mut held = self.lock();
        while *held >= limit {
            held = self.freed.wait(held).unwrap_or_else(|p| p.into_inner());
        }
        *held += 1;
        drop(held);
        DEPTH.set(1);
        TAKEN.set(TAKEN.get() + 1);
        Pass { gate: Some(self) }
    }
}

impl Default for Gate {
    fn default() -> Gate {
        Gate::new()
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        DEPTH.set(DEPTH.get() - 1);
        if let Some(gate) = self.gate {
            *gate.lock() -= 1;
            gate.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn no_more_than_the_limit_hold_a_pass_at_once() {
        let gate = Gate::new();
        gate.set_limit(2);
        let now = AtomicUsize::new(0);
        let most = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..6 {
                s.spawn(|| {
                    let _pass = gate.enter();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
        assert_eq!(*gate.lock(), 0, "every pass was given back");
    }

    #[test]
    fn a_render_inside_a_render_passes_without_a_second_place() {
        let gate = Gate::new();
        gate.set_limit(1);
        let outer = gate.enter();
        // With a limit of one, a second place would never come: this returns only because the
        // thread's own pass lets it through.
        let inner = gate.enter();
        assert_eq!((*gate.lock(), taken_here()), (1, 1));
        drop(inner);
        assert_eq!(DEPTH.get(), 1);
        drop(outer);
        assert_eq!((*gate.lock(), DEPTH.get()), (0, 0));
    }
}
