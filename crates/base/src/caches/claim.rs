//! One build of a compiled thing (a project's Tera templates, its preset logic) by whichever
//! thread gets to it first: a thread that needs it waits for a build going on rather than
//! repeat it, and a thread with time to spare ([`Claim::offer`]) builds what nobody has
//! started. A failed build keeps nothing: the next caller builds again and meets the same error.

use std::sync::{Mutex, TryLockError};

/// The turn to build one value; the value itself lives beside it (a `OnceLock`, a lane's cell)
/// and is set by the build.
#[derive(Default)]
pub struct Claim(Mutex<()>);

impl Claim {
    pub const fn new() -> Claim {
        Claim(Mutex::new(()))
    }

    /// What `built` finds, or else what `build` makes (and keeps where `built` looks), after
    /// waiting for a build another thread has going.
    pub fn get_or_build<R, E>(
        &self,
        built: impl Fn() -> Option<R>,
        build: impl FnOnce() -> Result<R, E>,
    ) -> Result<R, E> {
        if let Some(r) = built() {
            return Ok(r);
        }
        let _turn = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match built() {
            Some(r) => Ok(r),
            None => build(),
        }
    }

    /// Builds now unless the value is built or being built; an error is left to the caller
    /// that needs the value.
    pub fn offer<R, E>(&self, built: impl Fn() -> Option<R>, build: impl FnOnce() -> Result<R, E>) {
        if built().is_some() {
            return;
        }
        let _turn = match self.0.try_lock() {
            Ok(turn) => turn,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        if built().is_none() {
            let _ = build();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Result;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::OnceLock;
    use std::time::Duration;

    #[test]
    fn one_build_however_many_threads_need_it_or_offer() {
        let claim = Claim::new();
        let cell: OnceLock<usize> = OnceLock::new();
        let builds = AtomicUsize::new(0);
        let build = || -> Result<usize> {
            builds.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            Ok(*cell.get_or_init(|| 7))
        };
        std::thread::scope(|s| {
            for i in 0..6 {
                let (claim, cell) = (&claim, &cell);
                s.spawn(move || {
                    if i % 2 == 0 {
                        claim.offer(|| cell.get().copied(), build);
                    } else {
                        let got = claim.get_or_build(|| cell.get().copied(), build);
                        assert_eq!(got.unwrap(), 7);
                    }
                });
            }
        });
        assert_eq!(builds.load(Ordering::SeqCst), 1);
        assert_eq!(cell.get(), Some(&7));
    }

    #[test]
    fn a_failed_build_is_tried_again_by_the_next_caller() {
        let claim = Claim::new();
        let cell: OnceLock<u8> = OnceLock::new();
        let tries = AtomicUsize::new(0);
        let build = || -> Result<u8> {
            let n = tries.fetch_add(1, Ordering::SeqCst);
            anyhow::ensure!(n >= 2, "attempt {n} fails");
            Ok(*cell.get_or_init(|| 1))
        };
        claim.offer(|| cell.get().copied(), build);
        let err = claim
            .get_or_build(|| cell.get().copied(), build)
            .unwrap_err();
        assert_eq!(err.to_string(), "attempt 1 fails");
        assert_eq!(
            claim.get_or_build(|| cell.get().copied(), build).unwrap(),
            1
        );
        assert_eq!(tries.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn an_offer_while_another_thread_builds_leaves_it_alone() {
        let claim = Claim::new();
        let cell: OnceLock<u8> = OnceLock::new();
        let turn = claim.0.lock().unwrap();
        claim.offer(
            || cell.get().copied(),
            || -> Result<u8> { panic!("built while another thread builds") },
        );
        drop(turn);
        claim.offer(
            || cell.get().copied(),
            || -> Result<u8> { Ok(*cell.get_or_init(|| 3)) },
        );
        assert_eq!(cell.get(), Some(&3));
    }
}
