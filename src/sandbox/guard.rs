//! Bounds for work that cannot be stopped midway: a Tera render has no operation counter, so
//! while it runs the watchdog (`super::watchdog`) watches the clock and the process's resident
//! memory. Past either bound of the profile talm ends with an error naming the work and the
//! limit: the runaway thread cannot be cancelled, so the process exits (nothing is written
//! before a command's render finishes, so nothing on disk is lost). A render nests includes and
//! components, so it runs on a thread with a [`STACK`]-byte stack: the calling thread itself
//! when it has one (talm's worker threads, marked with [`roomy_stack`]; the render shares that
//! stack with the script that asked for it, whose depth its call-level limit bounds), else a
//! render thread it hands the work to and waits for. Those are kept between renders (up to
//! [`IDLE_WORKERS`] idle), so a render does not pay for starting a thread.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{mpsc, Mutex, OnceLock};

use anyhow::Result;

use super::limits::Limits;
use super::watchdog;
use crate::error::{hinted, Hinted};

/// Stack a watched render runs on, at least.
pub const STACK: usize = 16 << 20;
/// Idle workers kept for the next renders (more start when renders run side by side).
pub const IDLE_WORKERS: usize = 8;

thread_local! {
    /// Whether this thread's stack is [`STACK`] bytes or more.
    static ROOMY: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as having a stack of [`STACK`] bytes or more: work watched on it
/// runs on it, without handing it to a render thread and waiting (two thread wake-ups a render).
pub fn roomy_stack() {
    ROOMY.with(|r| r.set(true));
}

/// A job a worker runs: the work, which sends its result back itself.
type Job = Box<dyn FnOnce() + Send>;

/// A waiting worker thread: jobs go in through `jobs`.
struct Worker {
    jobs: mpsc::Sender<Job>,
}

static IDLE: Mutex<Vec<Worker>> = Mutex::new(Vec::new());

fn idle() -> std::sync::MutexGuard<'static, Vec<Worker>> {
    IDLE.lock().unwrap_or_else(|e| e.into_inner())
}

impl Worker {
    fn start() -> std::io::Result<Worker> {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("talm-render".into())
            .stack_size(STACK)
            .spawn(move || {
                roomy_stack();
                // A job that panics drops its result sender (the watcher reports it); the
                // worker goes on with the next job.
                for job in rx {
                    let _ = panic::catch_unwind(AssertUnwindSafe(job));
                }
            })?;
        Ok(Worker { jobs })
    }

    /// Hands `job` to an idle worker, or to a new one; the worker to give back after.
    fn run(mut job: Job) -> std::io::Result<Worker> {
        loop {
            let Some(w) = idle().pop() else { break };
            match w.jobs.send(job) {
                Ok(()) => return Ok(w),
                // That worker is gone (it cannot be in practice): try the next.
                Err(mpsc::SendError(back)) => job = back,
            }
        }
        let w = Worker::start()?;
        w.jobs
            .send(job)
            .map_err(|_| std::io::Error::other("the new render worker ended at once"))?;
        Ok(w)
    }

    /// Keeps the worker for the next render, unless enough are waiting.
    fn give_back(self) {
        let mut idle = idle();
        if idle.len() < IDLE_WORKERS {
            idle.push(self);
        }
    }
}

/// The process's resident memory in KiB (Linux), or None where it cannot be read. It is read
/// at the start of every script run and render, so it re-reads `/proc/self/statm` through one
/// descriptor kept open (`/proc/self/status`, opened anew, cost a tenth of a small render).
pub fn resident_kib() -> Option<u64> {
    use std::os::unix::fs::FileExt;
    static STATM: OnceLock<Option<(std::fs::File, u64)>> = OnceLock::new();
    let (file, page_kib) = STATM
        .get_or_init(|| {
            // SAFETY: sysconf has no preconditions.
            let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let file = std::fs::File::open("/proc/self/statm").ok()?;
            Some((file, u64::try_from(page).ok()? / 1024))
        })
        .as_ref()?;
    let mut buf = [0u8; 160];
    let n = file.read_at(&mut buf, 0).ok()?;
    // "size resident shared text lib data dt", in pages.
    let resident: u64 = std::str::from_utf8(&buf[..n])
        .ok()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(resident * page_kib)
}

pub(super) fn stop(what: &str, limit: String, hint: &str) -> ! {
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
    let no_thread = |e: String| {
        hinted(
            format!("{what}: cannot start the render thread: {e}"),
            "the system is out of threads or memory; close other programs and try again",
        )
    };
    let unexpected = || {
        hinted(
            format!("{what}: the render stopped unexpectedly"),
            "this is a bug in talm: please report it with the template",
        )
    };
    let _watch = watchdog::register(what, limits)
        .ok_or_else(|| no_thread("the watchdog thread did not start".into()))?;
    if ROOMY.with(Cell::get) {
        return panic::catch_unwind(AssertUnwindSafe(work)).map_err(|_| unexpected());
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let worker = Worker::run(Box::new(move || {
        let _ = tx.send(work());
    }))
    .map_err(|e| no_thread(e.to_string()))?;
    match rx.recv() {
        Ok(v) => {
            worker.give_back();
            Ok(v)
        }
        Err(mpsc::RecvError) => Err(unexpected()),
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

    #[test]
    fn resident_memory_is_read_anew_each_time() {
        // The kept descriptor must not hand back the first reading: 64 MiB touched shows.
        let before = resident_kib().unwrap();
        let block = vec![1u8; 64 << 20];
        let after = resident_kib().unwrap();
        assert!(after >= before + 32 * 1024, "{before} KiB -> {after} KiB");
        // The same figure /proc/self/status gives (VmRSS), within what moved meanwhile.
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let rss: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap();
        assert!(rss.abs_diff(resident_kib().unwrap()) < 32 * 1024, "{rss}");
        drop(std::hint::black_box(block));
    }

    #[test]
    fn a_roomy_thread_renders_itself_others_hand_over() {
        let here = || std::thread::current().id();
        let on_plain =
            std::thread::spawn(move || (here(), watched("t", &Limits::TEMPLATE, here).unwrap()))
                .join()
                .unwrap();
        assert_ne!(
            on_plain.0, on_plain.1,
            "a plain thread hands the render over"
        );
        let on_roomy = std::thread::Builder::new()
            .stack_size(STACK)
            .spawn(move || {
                roomy_stack();
                let ran = watched("t", &Limits::TEMPLATE, here).unwrap();
                let err = watched("t", &Limits::TEMPLATE, || -> u8 { panic!("boom") }).unwrap_err();
                (here(), ran, err.to_string())
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(on_roomy.0, on_roomy.1, "a roomy thread renders itself");
        assert!(
            on_roomy.2.contains("stopped unexpectedly"),
            "{}",
            on_roomy.2
        );
    }

    #[test]
    fn workers_are_reused_and_survive_a_panic() {
        let name = || std::thread::current().id();
        let first = watched("t", &Limits::TEMPLATE, name).unwrap();
        // Tests run side by side, so another test may hold a worker: a kept worker serves at
        // least one of the next renders.
        let next: Vec<_> = (0..IDLE_WORKERS * 2)
            .map(|_| watched("t", &Limits::TEMPLATE, name).unwrap())
            .collect();
        assert!(next.contains(&first), "no worker was reused");
        let err = watched("t", &Limits::TEMPLATE, || -> u8 { panic!("boom") }).unwrap_err();
        assert!(err.to_string().contains("stopped unexpectedly"), "{err}");
        assert_eq!(watched("t", &Limits::TEMPLATE, || 7).unwrap(), 7);
    }
}
