//! The worker threads `parallel` runs items on: started when a call needs more than are idle,
//! then kept for the next call instead of ending with this one. A playbook makes one call per
//! step over its nodes; before, every call started and ended its own threads (16 MiB stacks),
//! and each new thread began a new heap of mimalloc's while the ended threads' pages waited to
//! be taken over. Over a 100-node bring-up mimalloc's pages in use peaked at 585, those left by
//! ended threads at 447; with kept workers, at 198 and 53 (issue 12).

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// One run of a call's work on a worker, and the call waiting for it.
struct Job {
    run: Box<dyn FnOnce() + Send + 'static>,
    latch: Arc<Latch>,
}

/// A set of kept workers: those waiting for a job, each on its own channel.
pub struct Workers {
    idle: Mutex<Vec<Sender<Job>>>,
}

/// The process's workers (`parallel`).
pub static WORKERS: Workers = Workers::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The runs of one call still going, and the first panic of one.
#[derive(Default)]
struct Latch {
    state: Mutex<(usize, Option<Box<dyn Any + Send>>)>,
    done: Condvar,
}

impl Latch {
    fn finish(&self, panicked: Option<Box<dyn Any + Send>>) {
        let mut s = lock(&self.state);
        s.0 -= 1;
        if s.1.is_none() {
            s.1 = panicked;
        }
        self.done.notify_all();
    }

    /// Blocks until no run is going; the first panic of one.
    fn wait(&self) -> Option<Box<dyn Any + Send>> {
        let mut s = lock(&self.state);
        while s.0 > 0 {
            s = self.done.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.1.take()
    }
}

/// Waits for the workers' runs when the calling thread's own run unwinds, so no worker can
/// still hold what `f` borrows once [`scope`] has left.
struct WaitAll<'a>(&'a Latch);

impl Drop for WaitAll<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = self.0.wait();
        }
    }
}

impl Workers {
    pub const fn new() -> Workers {
        Workers {
            idle: Mutex::new(Vec::new()),
        }
    }

    /// Starts a worker thread; its sender, or why the system refused the thread.
    fn start(&'static self, stack: usize) -> std::io::Result<Sender<Job>> {
        let (tx, rx) = mpsc::channel::<Job>();
        let back = tx.clone();
        std::thread::Builder::new()
            .name("talm-parallel".into())
            .stack_size(stack)
            .spawn(move || {
                // Renders on this thread need no render thread while its stack has room.
                crate::sandbox::guard::roomy_stack(stack);
                while let Ok(job) = rx.recv() {
                    let panicked = panic::catch_unwind(AssertUnwindSafe(job.run)).err();
                    // Idle again before the call learns its run ended, so the call after it finds
                    // this worker instead of starting another.
                    lock(&self.idle).push(back.clone());
                    job.latch.finish(panicked);
                }
            })?;
        Ok(tx)
    }

    /// Runs `f` on the calling thread and on `extra` workers at once, and returns when every run
    /// of it has returned (a panic in one is raised here after all have). Idle workers are taken
    /// first; new ones get a `stack`-byte stack. When the system refuses a new thread, `f` runs on
    /// those it has: the count of workers that ran it, and the error, come back for a warning.
    pub fn scope(
        &'static self,
        extra: usize,
        stack: usize,
        f: &(dyn Fn() + Sync),
    ) -> (usize, Option<std::io::Error>) {
        // Shared with the jobs: a worker may still be leaving `finish` (unlocking) when the
        // count it brought to zero lets this call return.
        let latch = Arc::new(Latch::default());
        let guard = WaitAll(&latch);
        let mut started = 0;
        let mut refused = None;
        for _ in 0..extra {
            let worker = match lock(&self.idle).pop() {
                Some(w) => w,
                None => match self.start(stack) {
                    Ok(w) => w,
                    Err(e) => {
                        refused = Some(e);
                        break;
                    }
                },
            };
            let run: Box<dyn FnOnce() + Send + '_> = Box::new(f);
            // SAFETY: the job borrows `f`; this function waits until every job it handed out has
            // run and been dropped (the worker consumes the box before `finish`), on return and on
            // unwind alike, so the borrow never outlives `f`.
            let run: Box<dyn FnOnce() + Send + 'static> = unsafe { std::mem::transmute(run) };
            lock(&latch.state).0 += 1;
            if let Err(mpsc::SendError(job)) = worker.send(Job {
                run,
                latch: latch.clone(),
            }) {
                // A worker that is gone (it cannot be: workers never end) gives its job back.
                lock(&latch.state).0 -= 1;
                drop(job);
                continue;
            }
            started += 1;
        }
        f();
        let panicked = latch.wait();
        drop(guard);
        if let Some(p) = panicked {
            panic::resume_unwind(p);
        }
        (started, refused)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A set of workers of the test's own (other tests use the process's at the same time).
    fn own() -> &'static Workers {
        Box::leak(Box::new(Workers::new()))
    }

    #[test]
    fn every_run_ends_before_scope_returns_and_workers_are_kept() {
        let workers = own();
        let count = AtomicUsize::new(0);
        let names = Mutex::new(HashSet::new());
        let work = || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            count.fetch_add(1, Ordering::SeqCst);
            lock(&names).insert(std::thread::current().id());
        };
        let (started, refused) = workers.scope(3, 1 << 20, &work);
        assert_eq!((started, refused.is_none()), (3, true));
        assert_eq!(
            count.load(Ordering::SeqCst),
            4,
            "the caller's run and three workers'"
        );
        let first: HashSet<_> = lock(&names).drain().collect();
        assert_eq!(first.len(), 4);
        // A second call is served by the same (idle) workers: no new thread.
        workers.scope(3, 1 << 20, &work);
        let second: HashSet<_> = lock(&names).drain().collect();
        assert!(
            second.is_subset(&first),
            "a new thread ran a job although three were idle"
        );
        assert_eq!(lock(&workers.idle).len(), 3);
    }

    #[test]
    fn a_panicking_run_is_raised_after_the_others_end() {
        let ended = AtomicUsize::new(0);
        let who = AtomicUsize::new(0);
        let work = || {
            if who.fetch_add(1, Ordering::SeqCst) == 1 {
                panic!("item broke");
            }
            std::thread::sleep(std::time::Duration::from_millis(30));
            ended.fetch_add(1, Ordering::SeqCst);
        };
        let workers = own();
        let r = panic::catch_unwind(AssertUnwindSafe(|| workers.scope(2, 1 << 20, &work)));
        let msg = r.expect_err("the panic is raised");
        assert_eq!(msg.downcast_ref::<&str>(), Some(&"item broke"));
        assert_eq!(
            ended.load(Ordering::SeqCst),
            2,
            "the other runs ended first"
        );
    }
}
