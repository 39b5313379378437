//! Lanes: copies of the compiled Rhai code renders run (the stdlib modules, the render engine,
//! a project's compiled preset logic), one per render running at once. Rhai counts references
//! on that code at nearly every step (a script call, a string constant, a native function
//! looked up): renders on two cores that share one copy contend for the same cache lines, and
//! two threads rendered at 1.4–1.7 times one thread's rate where two processes reach 1.8–2
//! (issue 12). A render takes a lane no other thread is using and gives it back after; a
//! one-shot command only ever uses the first, the one its prewarm threads compile for. Each
//! lane compiles its copy at its first use, so a process holds as many copies as it ran renders
//! at once (at most [`LANES`]; past that, renders share).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The most copies a process makes.
pub const LANES: usize = 8;

/// One copy of the compiled code, by its index below [`LANES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane(usize);

impl Lane {
    /// The lane of one-shot commands, of prewarming, and of engines outside a render.
    pub const FIRST: Lane = Lane(0);

    /// The last lane (tests of what a lane holds).
    pub const LAST: Lane = Lane(LANES - 1);
}

/// A value per lane, made at the lane's first use.
pub struct PerLane<T>([OnceLock<T>; LANES]);

impl<T> PerLane<T> {
    pub const fn new() -> PerLane<T> {
        PerLane([const { OnceLock::new() }; LANES])
    }

    /// The lane's value, made by `make` if it has none yet.
    pub fn get_or_init(&self, lane: Lane, make: impl FnOnce() -> T) -> &T {
        self.0[lane.0].get_or_init(make)
    }

    /// The lane's value if it has one.
    pub fn get(&self, lane: Lane) -> Option<&T> {
        self.0[lane.0].get()
    }

    /// How many lanes have their value.
    pub fn count(&self) -> usize {
        self.0.iter().filter(|v| v.get().is_some()).count()
    }
}

impl<T> Default for PerLane<T> {
    fn default() -> PerLane<T> {
        PerLane::new()
    }
}

/// The lanes of a process: which are free, how many were made, how many may be.
pub struct Lanes {
    free: Mutex<Free>,
    /// Past the limit, the next shared lane.
    shared: AtomicUsize,
    limit: AtomicUsize,
}

/// Lanes no render uses now, the most recently freed last; and how many were ever handed out.
struct Free {
    idle: Vec<usize>,
    made: usize,
}

/// The process's lanes.
pub static RENDERS: Lanes = Lanes::new();

thread_local! {
    /// The lane this thread's render holds (a render inside a render keeps it).
    static HELD: Cell<Option<usize>> = const { Cell::new(None) };
    /// The lane this thread held last: taken again when free, its copy still in this core's
    /// caches (two threads trading two lanes rendered as slowly as one shared copy).
    static LAST: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Runs `f` on a lane of the process's (see [`Lanes::with_lane`]).
pub fn with_lane<R>(f: impl FnOnce(Lane) -> R) -> R {
    RENDERS.with_lane(f)
}

impl Lanes {
    pub const fn new() -> Lanes {
        Lanes {
            free: Mutex::new(Free {
                idle: Vec::new(),
                made: 0,
            }),
            shared: AtomicUsize::new(0),
            limit: AtomicUsize::new(LANES),
        }
    }

    /// Lets at most `n` lanes (1 to [`LANES`]) be made, before the first render: the render
    /// bench compares one shared copy with a copy per render.
    pub fn set_limit(&self, n: usize) {
        self.limit.store(n.clamp(1, LANES), Ordering::Relaxed);
    }

    fn free(&self) -> std::sync::MutexGuard<'_, Free> {
        self.free.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A free lane, this thread's last one if it is free; a new one while under the limit;
    /// `None` when every lane is taken.
    fn take(&self) -> Option<usize> {
        let mut free = self.free();
        let last = LAST
            .get()
            .and_then(|l| free.idle.iter().position(|&i| i == l));
        match last
            .map(|at| free.idle.remove(at))
            .or_else(|| free.idle.pop())
        {
            Some(lane) => Some(lane),
            None if free.made < self.limit.load(Ordering::Relaxed) => {
                free.made += 1;
                Some(free.made - 1)
            }
            None => None,
        }
    }

    /// Runs `f` on a lane no other thread holds (the one this thread holds already, for a
    /// render inside a render; a shared one when every lane is taken); the lane is free again
    /// when `f` ends, however it ends.
    pub fn with_lane<R>(&self, f: impl FnOnce(Lane) -> R) -> R {
        if let Some(held) = HELD.get() {
            return f(Lane(held));
        }
        struct Give<'a>(&'a Lanes, Option<usize>);
        impl Drop for Give<'_> {
            fn drop(&mut self) {
                HELD.set(None);
                if let Some(lane) = self.1 {
                    self.0.free().idle.push(lane);
                }
            }
        }
        let taken = self.take();
        let give = Give(self, taken);
        let lane = taken.unwrap_or_else(|| {
            self.shared.fetch_add(1, Ordering::Relaxed) % self.limit.load(Ordering::Relaxed)
        });
        HELD.set(Some(lane));
        LAST.set(Some(lane));
        let out = f(Lane(lane));
        drop(give);
        out
    }
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    #[test]
    fn renders_at_once_hold_different_lanes_and_nested_ones_keep_theirs() {
        let lanes = Lanes::new();
        let both = Barrier::new(2);
        let held: Vec<(Lane, Lane)> = std::thread::scope(|s| {
            let hands: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        lanes.with_lane(|outer| {
                            both.wait();
                            let inner = lanes.with_lane(|inner| inner);
                            both.wait();
                            (outer, inner)
                        })
                    })
                })
                .collect();
            hands.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(held[0].0, held[0].1, "a nested render keeps its lane");
        assert_eq!(held[1].0, held[1].1);
        assert_ne!(held[0].0, held[1].0, "two renders at once, two lanes");
        assert_eq!(lanes.free().made, 2);
        // A lane is given back when its render fails too.
        let caught = std::panic::catch_unwind(|| lanes.with_lane(|_| panic!("render failed")));
        assert!(caught.is_err());
        assert!(HELD.get().is_none());
        let free = lanes.free();
        assert_eq!((free.idle.len(), free.made), (2, 2));
    }

    #[test]
    fn a_thread_takes_its_last_lane_again_and_past_the_limit_lanes_are_shared() {
        let lanes = Lanes::new();
        let step = Barrier::new(2);
        std::thread::scope(|s| {
            // `a` holds a lane while `b` takes another; `b` gives its lane back first, so
            // the lane freed last is `a`'s. `b` then gets its own lane again, not that one.
            let a = s.spawn(|| {
                let first = lanes.with_lane(|l| {
                    step.wait();
                    step.wait();
                    l
                });
                step.wait();
                first
            });
            let b = s.spawn(|| {
                step.wait();
                let first = lanes.with_lane(|l| l);
                step.wait();
                step.wait();
                (first, lanes.with_lane(|l| l))
            });
            let a = a.join().unwrap();
            let (b, again) = b.join().unwrap();
            assert_ne!(a, b);
            assert_eq!(
                again, b,
                "the thread's own lane, though another was freed later"
            );
        });
        let one = Lanes::new();
        one.set_limit(1);
        let most = one.with_lane(|outer| {
            std::thread::scope(|s| s.spawn(|| one.with_lane(|l| l)).join().unwrap()).eq(&outer)
        });
        assert!(most, "with one lane allowed, a second render shares it");
    }

    #[test]
    fn a_value_per_lane() {
        let v: PerLane<usize> = PerLane::new();
        assert_eq!(v.count(), 0);
        assert_eq!(*v.get_or_init(Lane(3), || 3), 3);
        assert_eq!(*v.get_or_init(Lane(3), || 4), 3);
        assert_eq!((v.get(Lane::FIRST), v.get(Lane(3))), (None, Some(&3)));
        assert_eq!(v.count(), 1);
    }
}
