//! The worker threads `parallel` runs items on: one scoped pool (rayon's), built by the first
//! call that needs workers and kept for every later call instead of threads started and ended
//! per call. A playbook makes one call per step over its nodes, and each new thread began a new
//! heap of mimalloc's while the ended threads' pages waited to be taken over (issue 12; figures
//! in docs/performance.md). The pool's scope lets a run borrow the call's work: every run has
//! ended when [`Workers::scope`] returns, without sending a borrowed closure to a thread by hand.

use std::sync::{Mutex, MutexGuard, OnceLock};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// A pool of kept workers: `threads` of them with `stack`-byte stacks, started together by the
/// first call that needs one.
pub struct Workers {
    threads: usize,
    stack: usize,
    pool: OnceLock<ThreadPool>,
    /// Held while the pool is built, so two first calls do not both start one.
    building: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Workers {
    pub const fn new(threads: usize, stack: usize) -> Workers {
        Workers {
            threads,
            stack,
            pool: OnceLock::new(),
            building: Mutex::new(()),
        }
    }

    /// The pool, started now when this is the first call that needs it; why the system refused
    /// its threads otherwise (a later call tries again).
    fn pool(&self) -> std::io::Result<&ThreadPool> {
        if let Some(pool) = self.pool.get() {
            return Ok(pool);
        }
        let _one = lock(&self.building);
        if let Some(pool) = self.pool.get() {
            return Ok(pool);
        }
        let stack = self.stack;
        let pool = ThreadPoolBuilder::new()
            .num_threads(self.threads)
            .stack_size(stack)
            .thread_name(|_| "talm-parallel".into())
            // Renders on a worker need no render thread while its stack has room.
            .start_handler(move |_| crate::sandbox::guard::roomy_stack(stack))
            .build()
            .map_err(std::io::Error::other)?;
        Ok(self.pool.get_or_init(|| pool))
    }

    /// Runs `f` on the calling thread and on `extra` workers at once, and returns when every run
    /// of it has returned (a panic in one is raised here after all have). When the system
    /// refuses the workers' threads, `f` runs on the calling thread alone: the count of workers
    /// that ran it, and the error, come back for a warning.
    pub fn scope(&self, extra: usize, f: &(dyn Fn() + Sync)) -> (usize, Option<std::io::Error>) {
        if extra == 0 {
            f();
            return (0, None);
        }
        let pool = match self.pool() {
            Ok(pool) => pool,
            Err(e) => {
                f();
                return (0, Some(e));
            }
        };
        pool.in_place_scope(|s| {
            for _ in 0..extra {
                s.spawn(|_| f());
            }
            f();
        });
        (extra, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::panic::{self, AssertUnwindSafe};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn every_run_ends_before_scope_returns_and_workers_are_kept() {
        let workers = Workers::new(3, 1 << 20);
        let count = AtomicUsize::new(0);
        let names = Mutex::new(HashSet::new());
        let work = || {
            std::thread::sleep(Duration::from_millis(20));
            count.fetch_add(1, Ordering::SeqCst);
            lock(&names).insert(std::thread::current().id());
        };
        let (started, refused) = workers.scope(3, &work);
        assert_eq!((started, refused.is_none()), (3, true));
        assert_eq!(
            count.load(Ordering::SeqCst),
            4,
            "the caller's run and three workers'"
        );
        let first: HashSet<_> = lock(&names).drain().collect();
        // A second call is served by the same (kept) workers: no new thread.
        workers.scope(3, &work);
        let second: HashSet<_> = lock(&names).drain().collect();
        let all: HashSet<_> = first.union(&second).collect();
        assert!(
            all.len() <= 4,
            "a new thread ran a job although three were kept: {all:?}"
        );
    }

    #[test]
    fn a_panicking_run_is_raised_after_the_others_end() {
        let ended = AtomicUsize::new(0);
        let who = AtomicUsize::new(0);
        let work = || {
            if who.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("item broke");
            }
            std::thread::sleep(Duration::from_millis(30));
            ended.fetch_add(1, Ordering::SeqCst);
        };
        let workers = Workers::new(2, 1 << 20);
        let r = panic::catch_unwind(AssertUnwindSafe(|| workers.scope(2, &work)));
        let msg = r.expect_err("the panic is raised");
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"item broke"));
        assert_eq!(
            ended.load(Ordering::SeqCst),
            2,
            "the other runs ended first"
        );
    }

    #[test]
    fn a_refused_thread_leaves_the_work_to_the_caller() {
        // No system gives a thread a 32 TiB stack.
        let workers = Workers::new(2, 1 << 45);
        let count = AtomicUsize::new(0);
        let (started, refused) = workers.scope(2, &|| {
            count.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(started, 0);
        assert!(refused.is_some(), "the error comes back for a warning");
        assert_eq!(count.load(Ordering::SeqCst), 1, "the caller ran the work");
    }

    #[test]
    fn nested_scopes_on_workers_finish() {
        let workers: &'static Workers = Box::leak(Box::new(Workers::new(4, 1 << 20)));
        let count = AtomicUsize::new(0);
        workers.scope(3, &|| {
            workers.scope(2, &|| {
                std::thread::sleep(Duration::from_millis(5));
                count.fetch_add(1, Ordering::SeqCst);
            });
        });
        assert_eq!(count.load(Ordering::SeqCst), 4 * 3);
    }
}
