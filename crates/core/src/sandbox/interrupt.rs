//! Ctrl-C for scripts: `talm run`, project scripts and the REPL install a SIGINT handler that
//! asks the running script to stop (every engine checks between operations, `sleep` and node
//! waits check while they wait). With no script running, or on a second Ctrl-C, or when the
//! script does not stop within a grace period (blocked in a node call), talm exits with 130.
//! Other commands keep the default Ctrl-C behaviour: the handler is installed only here and for
//! a roll (`rolling()`), which turns Ctrl-C into its own report ([`absorb`]) and still ends
//! talm with 130. Node waits that may be long ([`or_interrupted`]) end at Ctrl-C.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Once;
use std::time::{Duration, Instant};

/// The signal that stops a script: Ctrl-C, or SIGTERM for a roll (`install_term`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    CtrlC,
    Term,
}

impl Signal {
    /// How messages name it.
    fn name(self) -> &'static str {
        match self {
            Signal::CtrlC => "Ctrl-C",
            Signal::Term => "SIGTERM",
        }
    }

    /// The exit code of a command it stopped (128 + the signal), as shells report it.
    pub fn exit_code(self) -> i32 {
        match self {
            Signal::CtrlC => 128 + libc::SIGINT,
            Signal::Term => 128 + libc::SIGTERM,
        }
    }
}

/// Whether the last stop was asked by SIGTERM (else Ctrl-C).
static BY_TERM: AtomicBool = AtomicBool::new(false);

/// The signal that stopped (or is stopping) the script: the latest one received.
pub fn signal() -> Signal {
    if BY_TERM.load(Ordering::SeqCst) {
        Signal::Term
    } else {
        Signal::CtrlC
    }
}

/// How long a script may take to notice Ctrl-C before talm exits anyway.
const GRACE: Duration = Duration::from_secs(3);

static PENDING: AtomicBool = AtomicBool::new(false);
static PRESSES: AtomicU64 = AtomicU64::new(0);
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static ABSORBED: AtomicBool = AtomicBool::new(false);

/// The error a script stopped by Ctrl-C (or SIGTERM) ends with; `talm` exits with the
/// signal's [`Signal::exit_code`] on it.
#[derive(Debug, Clone)]
pub struct Interrupted {
    /// Where the script was (`script:line:col`), when known.
    pub at: Option<String>,
}

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.at {
            Some(at) => write!(f, "{at}: interrupted ({})", signal().name()),
            None => write!(f, "interrupted ({})", signal().name()),
        }
    }
}

impl std::error::Error for Interrupted {}

/// Whether an error is (or wraps) an interruption.
pub fn is_interrupted(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.is::<Interrupted>())
}

/// Whether Ctrl-C was pressed and the running script has not stopped yet.
pub fn pending() -> bool {
    PENDING.load(Ordering::Relaxed)
}

/// Forgets a handled Ctrl-C (the REPL goes on with the next line).
pub fn clear() {
    PENDING.store(false, Ordering::SeqCst);
}

/// Takes over the pending Ctrl-C: the script goes on to report where it stopped (a roll's
/// summary and its --resume line), and talm exits with [`Signal::exit_code`] at its end
/// ([`absorbed`]).
pub fn absorb() {
    ABSORBED.store(true, Ordering::SeqCst);
    clear();
}

/// Whether a Ctrl-C was taken over by [`absorb`]: the command ends with [`Signal::exit_code`].
pub fn absorbed() -> bool {
    ABSORBED.load(Ordering::SeqCst)
}

/// Runs `fut` until it ends or Ctrl-C is pressed (then [`Interrupted`]).
pub async fn or_interrupted<T>(
    fut: impl std::future::Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let pressed = async {
        while !pending() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::select! {
        r = fut => r,
        () = pressed => Err(Interrupted { at: None }.into()),
    }
}

/// Marks a script as running while the guard lives: Ctrl-C then asks it to stop instead of
/// ending talm at once.
pub struct Running(());

impl Drop for Running {
    fn drop(&mut self) {
        RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// See [`Running`].
pub fn running() -> Running {
    RUNNING.fetch_add(1, Ordering::SeqCst);
    Running(())
}

fn exit_now() -> ! {
    eprintln!("Error: interrupted ({})", signal().name());
    std::process::exit(signal().exit_code())
}

fn on_signal(by: Signal) {
    BY_TERM.store(by == Signal::Term, Ordering::SeqCst);
    if RUNNING.load(Ordering::SeqCst) == 0 || PENDING.swap(true, Ordering::SeqCst) {
        exit_now();
    }
    let press = PRESSES.fetch_add(1, Ordering::SeqCst) + 1;
    std::thread::spawn(move || {
        std::thread::sleep(GRACE);
        if pending() && PRESSES.load(Ordering::SeqCst) == press {
            exit_now();
        }
    });
}

/// Installs the SIGINT handler (once per process). The handler is registered before this
/// returns, so a Ctrl-C right after it is never lost to the default action.
pub fn install() {
    SIGINT_WATCHED.call_once(|| watch(tokio::signal::unix::SignalKind::interrupt(), Signal::CtrlC));
}

static SIGINT_WATCHED: Once = Once::new();

/// Whether Ctrl-C is handled here (asking the running script to stop) in this process.
pub fn installed() -> bool {
    SIGINT_WATCHED.is_completed()
}

/// Makes SIGTERM stop the running script as Ctrl-C does (once per process): a roll stopped by
/// a service manager reports where it stopped too. Only rolls ask for it, so the REPL and
/// playbooks keep SIGTERM's default action.
pub fn install_term() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| watch(tokio::signal::unix::SignalKind::terminate(), Signal::Term));
}

fn watch(kind: tokio::signal::unix::SignalKind, by: Signal) {
    let rt = talm_base::rt::runtime();
    let _entered = rt.enter();
    match tokio::signal::unix::signal(kind) {
        Ok(mut sig) => {
            rt.spawn(async move {
                while sig.recv().await.is_some() {
                    on_signal(by);
                }
            });
        }
        // Without a handler the signal keeps its default action: talm ends at once.
        Err(e) => eprintln!(
            "WARN: cannot watch for {} ({e}); it will end talm at once",
            by.name()
        ),
    }
}

/// Sleeps for `d`, waking early with [`Interrupted`] when Ctrl-C is pressed.
pub fn sleep(d: Duration) -> Result<(), Interrupted> {
    let end = Instant::now() + d;
    loop {
        if pending() {
            return Err(Interrupted { at: None });
        }
        let now = Instant::now();
        if now >= end {
            return Ok(());
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}
