//! Bounds for work that cannot be stopped midway: a Tera render has no operation counter, so
//! while it runs the watchdog (`super::watchdog`) watches the clock and the process's resident
//! memory. Past either bound of the profile talm ends with an error naming the work and the
//! limit: the runaway thread cannot be cancelled, so the process exits (nothing is written
//! before a command's render finishes, so nothing on disk is lost). A render nests includes and
//! components, so it runs with [`STACK`] bytes of stack free: on the calling thread itself when
//! that much of its stack is left (talm's worker threads, whose stacks [`roomy_stack`] records,
//! have room for a deep script and a render below it), else on a render thread it hands the
//! work to and waits for. Those are kept between renders (up to [`IDLE_WORKERS`] idle), so a
//! render does not pay for starting a thread.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};

use anyhow::Result;

use super::limits::Limits;
use super::watchdog;
use talm_base::error::{hinted, Hinted};

/// Stack a watched render has free, at least.
pub const STACK: usize = 16 << 20;
/// What the stack-top estimate of [`roomy_stack`] may be off by (the frames above the call).
const SLACK: usize = 256 << 10;
/// Idle workers kept for the next renders (more start when renders run side by side).
pub const IDLE_WORKERS: usize = 8;

thread_local! {
    /// The lowest address of this thread's stack, when the thread recorded it.
    static STACK_END: Cell<Option<usize>> = const { Cell::new(None) };
}

/// An address in the current stack frame.
#[inline(never)]
fn stack_here() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

/// Records that the calling thread, which has just started, has a `size`-byte stack: work
/// watched on it later runs on it when [`STACK`] bytes of it are still free there, without
/// handing it to a render thread and waiting (two thread wake-ups a render).
pub fn roomy_stack(size: usize) {
    let end = stack_here().saturating_sub(size.saturating_sub(SLACK));
    STACK_END.with(|e| e.set(Some(end)));
}

/// Whether [`STACK`] bytes of this thread's stack are free below the caller.
fn room_here() -> bool {
    STACK_END
        .with(Cell::get)
        .is_some_and(|end| stack_here().saturating_sub(end) >= STACK)
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
                // A job that panics drops its result sender (its caller's `recv` reports it);
                // the worker goes on with the next job.
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

/// The process's resident memory in KiB (Linux), or None where it cannot be read, read now.
/// It re-reads `/proc/self/statm` through one descriptor kept open (`/proc/self/status`,
/// opened anew, cost a tenth of a small render).
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
    let kib = resident * page_kib;
    LAST_READ.store(kib, Ordering::Relaxed);
    LAST_READ_AT.store(micros_since_start(), Ordering::Relaxed);
    Some(kib)
}

/// The last reading of [`resident_kib`] (KiB) and when it was taken (µs since the process first asked).
static LAST_READ: AtomicU64 = AtomicU64::new(0);
static LAST_READ_AT: AtomicU64 = AtomicU64::new(u64::MAX);

/// How old a reading may be to serve as the base a memory limit counts growth from.
const RECENT_US: u64 = 2_000;

fn micros_since_start() -> u64 {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX - 1)
}

/// [`resident_kib`], or a reading less than 2 ms old: the base a run's memory limit counts
/// growth from. Every render reads one; read afresh each time, two threads rendering at once
/// contended in the kernel for the process's memory counters (a spin lock summing them per
/// CPU), and what a process can allocate in 2 ms is far below the limits (512 MiB and more).
pub fn resident_kib_base() -> Option<u64> {
    if recent(LAST_READ_AT.load(Ordering::Relaxed), micros_since_start()) {
        return Some(LAST_READ.load(Ordering::Relaxed));
    }
    resident_kib()
}

/// Whether a reading taken at `at` may serve at `now` (µs since the process first asked).
fn recent(at: u64, now: u64) -> bool {
    at <= now && now - at < RECENT_US
}

pub(super) fn stop(what: &str, limit: String, hint: &str) -> ! {
    let err: anyhow::Error = Hinted {
        message: format!("{what}: {limit} (templates and preset logic run with strict limits)"),
        hints: vec![hint.to_string()],
    }
    .into();
    // Written without panicking (stderr may be a closed pipe): the exit must come.
    let _ = std::io::Write::write_all(
        &mut std::io::stderr().lock(),
        talm_base::error::render(&err).as_bytes(),
    );
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
    if room_here() {
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
    fn a_base_is_a_recent_reading_and_never_an_old_one() {
        assert!(recent(1_000, 2_999), "a reading under 2 ms old serves");
        assert!(!recent(1_000, 3_000), "one 2 ms old does not");
        assert!(!recent(u64::MAX, 5), "no reading yet");
        assert!(
            !recent(10, 5),
            "another thread's later reading is not trusted blindly"
        );
        // Past 2 ms the base is read anew: 64 MiB freed shows.
        let block = vec![1u8; 64 << 20];
        let with_block = resident_kib().unwrap();
        drop(std::hint::black_box(block));
        std::thread::sleep(std::time::Duration::from_millis(3));
        let later = resident_kib_base().unwrap();
        assert!(
            later + 32 * 1024 <= with_block,
            "{with_block} KiB -> {later} KiB"
        );
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
        let roomy = |size: usize, f: fn() -> (bool, bool)| {
            std::thread::Builder::new()
                .stack_size(size)
                .spawn(move || {
                    roomy_stack(size);
                    let outer = here();
                    let (itself, watched_meanwhile) = f();
                    (outer, itself, watched_meanwhile)
                })
                .unwrap()
                .join()
                .unwrap()
        };
        // With room for a render below the caller: rendered in place, and watched meanwhile.
        let (_, itself, watched_meanwhile) = roomy(2 * STACK, || {
            let outer = std::thread::current().id();
            watched("in place", &Limits::TEMPLATE, move || {
                (
                    std::thread::current().id() == outer,
                    super::watchdog::holds("in place"),
                )
            })
            .unwrap()
        });
        assert!(itself, "a thread with room renders itself");
        assert!(watched_meanwhile, "the watchdog watches a render in place");
        // A stack without that much room left hands the render over.
        let (_, itself, _) = roomy(STACK, || {
            let outer = std::thread::current().id();
            watched("t", &Limits::TEMPLATE, move || {
                (std::thread::current().id() == outer, true)
            })
            .unwrap()
        });
        assert!(!itself, "too little room left: handed over");
        let err = std::thread::Builder::new()
            .stack_size(2 * STACK)
            .spawn(|| {
                roomy_stack(2 * STACK);
                watched("t", &Limits::TEMPLATE, || -> u8 { panic!("boom") }).unwrap_err()
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(err.to_string().contains("stopped unexpectedly"), "{err}");
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
