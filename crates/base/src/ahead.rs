//! Threads that do work ahead of the caller (compiling what a command will need while it parses
//! and checks), started on another core at once.
//!
//! Linux queues a new thread on its parent's core. While the parent keeps that core busy, the
//! thread waits there until an idle core pulls it over, which can take as long as the head start
//! a one-shot `talm template` gives its work (figures in `docs/performance.md`). So the thread is
//! bound to the cores other than the caller's until it runs, then takes the caller's cores, as a
//! thread spawned the usual way inherits them.

use std::io;
use std::thread::{Builder, JoinHandle};

/// Spawns `f` on a thread made by `builder`, started on a core other than the caller's when
/// the caller may use another one.
pub fn spawn<F, T>(builder: Builder, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    #[cfg(target_os = "linux")]
    {
        if let Some(cores) = linux::Cores::now() {
            return linux::spawn_on_other(builder, cores, f);
        }
    }
    builder.spawn(f)
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::unix::thread::JoinHandleExt;
    use std::sync::mpsc;
    use std::thread::{Builder, JoinHandle};

    /// The cores the caller may use (its affinity) and those of them it is not on now.
    pub struct Cores {
        all: libc::cpu_set_t,
        others: libc::cpu_set_t,
    }

    impl Cores {
        /// `None` when the caller's core is unknown or it may use no other.
        pub fn now() -> Option<Cores> {
            // SAFETY: cpu_set_t is plain data; the calls only read the caller's affinity and core.
            unsafe {
                let mut all: libc::cpu_set_t = std::mem::zeroed();
                if libc::sched_getaffinity(0, std::mem::size_of_val(&all), &mut all) != 0 {
                    return None;
                }
                let here = usize::try_from(libc::sched_getcpu()).ok()?;
                let mut others = all;
                if here < libc::CPU_SETSIZE as usize {
                    libc::CPU_CLR(here, &mut others);
                }
                (libc::CPU_COUNT(&others) > 0).then_some(Cores { all, others })
            }
        }
    }

    /// Spawns the thread, binds it to `cores.others` and lets it go: its first act is to take
    /// back `cores.all`, after the binding (which moves it off the caller's queue) took hold.
    pub fn spawn_on_other<F, T>(builder: Builder, cores: Cores, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let (bound, wait) = mpsc::sync_channel::<()>(1);
        let all = cores.all;
        let handle = builder.spawn(move || {
            // The sender is dropped unsent if the binding failed: either way it is over.
            let _ = wait.recv();
            // SAFETY: sets the calling thread's own affinity to the mask its spawner had.
            unsafe {
                libc::sched_setaffinity(0, std::mem::size_of_val(&all), &all);
            }
            f()
        })?;
        // SAFETY: the handle's thread is alive until joined; the mask is plain data.
        unsafe {
            libc::pthread_setaffinity_np(
                handle.as_pthread_t(),
                std::mem::size_of_val(&cores.others),
                &cores.others,
            );
        }
        let _ = bound.send(());
        Ok(handle)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn the_thread_runs_its_work_and_may_then_use_every_core_of_its_caller() {
        let count = |pid: libc::pid_t| {
            // SAFETY: reads an affinity mask into plain data.
            unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                assert_eq!(
                    libc::sched_getaffinity(pid, std::mem::size_of_val(&set), &mut set),
                    0
                );
                libc::CPU_COUNT(&set)
            }
        };
        let before = count(0);
        let seen = spawn(Builder::new().name("ahead-test".into()), move || count(0))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(seen, before, "the thread runs on every core it may use");
        assert_eq!(count(0), before, "the caller's own cores are untouched");
    }
}
