//! `n.debug_run(#{...})`: a debug container on the node, attached as talosctl's `debug`
//! attaches it: stdin forwarded (the terminal in raw mode when stdin is one, and the container
//! then gets a terminal of the same size), its output written to stdout as it comes, SIGINT,
//! SIGTERM, SIGQUIT and SIGHUP passed on to it, and its exit code returned.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use rhai::{Engine, FuncRegistration, Map};
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;

use crate::runtime::native;
use crate::runtime::node::change::containerd;
use crate::runtime::node::Node;
use crate::runtime::opts::options;
use crate::talos::block_on;
use crate::talos::client::{DebugOutput, DebugRun, DebugSpec};

options! {
    /// `n.debug_run(#{...})`.
    pub struct DebugOpts for "n.debug_run" {
        /// The image's name in the node's containerd (pulled there first: `n.image_pull`).
        image: String,
        /// The container's arguments (default: the image's entrypoint).
        args: Vec<String>,
        /// inmem (default), system or cri.
        namespace: String,
    }
}

/// The raw terminal while the container has it; the terminal's mode comes back when dropped.
struct Raw;

impl Raw {
    fn enter() -> Result<Raw> {
        crossterm::terminal::enable_raw_mode()
            .map_err(|e| anyhow::anyhow!("failed to set terminal to raw mode: {e}"))?;
        Ok(Raw)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Reads stdin on a thread of its own until its end or until `stop`, handing each chunk on
/// (talosctl's 1 KiB reads); the channel closes at stdin's end.
fn read_stdin(stop: Arc<AtomicBool>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(16);
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while !stop.load(Ordering::SeqCst) {
            let mut fd = libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the length given.
            let ready = unsafe { libc::poll(&mut fd, 1, 100) };
            if ready == 0
                || (ready < 0
                    && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted)
            {
                continue;
            }
            // SAFETY: reads into a buffer of the length given.
            let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 || tx.blocking_send(buf[..n as usize].to_vec()).is_err() {
                return;
            }
        }
    });
    rx
}

/// The terminal's size as the container's terminal takes it (columns, rows).
fn size() -> Option<(i32, i32)> {
    crossterm::terminal::size()
        .ok()
        .map(|(w, h)| (i32::from(w), i32::from(h)))
}

/// Attaches to the running container until it exits: its exit code, -1 when the node ended the
/// stream without one.
async fn attach(mut run: DebugRun, tty: bool) -> Result<i32> {
    let stop = Arc::new(AtomicBool::new(false));
    let _stopped = StopOnDrop(Arc::clone(&stop));
    let mut stdin = Some(read_stdin(stop));
    let forwarded = [
        (SignalKind::interrupt(), libc::SIGINT),
        (SignalKind::terminate(), libc::SIGTERM),
        (SignalKind::quit(), libc::SIGQUIT),
        (SignalKind::hangup(), libc::SIGHUP),
    ];
    let (sig_tx, mut signals) = mpsc::channel::<i32>(8);
    for (kind, number) in forwarded {
        let mut s = signal(kind)?;
        let tx = sig_tx.clone();
        tokio::spawn(async move {
            while s.recv().await.is_some() {
                if tx.send(number).await.is_err() {
                    return;
                }
            }
        });
    }
    let mut winch = signal(SignalKind::window_change())?;
    if tty {
        if let Some((w, h)) = size() {
            run.resize(w, h).await;
        }
    }
    let mut out = std::io::stdout();
    loop {
        tokio::select! {
            msg = run.next() => match msg? {
                Some(DebugOutput::Data(d)) => {
                    out.write_all(&d)?;
                    out.flush()?;
                }
                Some(DebugOutput::Exit(code)) => return Ok(code),
                None => return Ok(-1),
            },
            chunk = next_chunk(&mut stdin) => match chunk {
                Some(d) => {
                    run.stdin(d).await;
                }
                None => {
                    stdin = None;
                    run.close_stdin();
                }
            },
            Some(number) = signals.recv() => {
                run.signal(number).await;
            }
            Some(()) = winch.recv() => {
                if let (true, Some((w, h))) = (tty, size()) {
                    run.resize(w, h).await;
                }
            }
        }
    }
}

/// The next chunk of stdin; never, once stdin has ended.
async fn next_chunk(stdin: &mut Option<mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match stdin {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// Stops the stdin reader when the attachment ends, however it ends.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn debug_run(n: &Node, o: &DebugOpts) -> Result<i32> {
    let namespace = match o.namespace.as_str() {
        "" => "inmem",
        other => other,
    };
    let tty = std::io::stdin().is_terminal();
    let spec = DebugSpec {
        containerd: containerd(namespace)?,
        image: o.image.clone(),
        args: o.args.clone(),
        tty,
    };
    let r = n.with(|c| {
        block_on(async {
            let run = c.debug_run(spec).await?;
            let _raw = match tty {
                true => Some(Raw::enter()?),
                false => None,
            };
            attach(run, tty).await
        })
    });
    // The node's refusal as talosctl reports it: the status alone.
    r.map_err(|e| talm_base::error::node::reword(e, |go, _| go.stream().to_string()))
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("debug_run")
        .with_comments(["/// Runs a debug container on the node as talosctl's `debug` does and returns its exit code (-1: the node sent none): `image` (a name the node's containerd holds: pull it first with `n.image_pull`), `args` (default: the image's entrypoint), `namespace` (inmem (default), system or cri). Stdin is forwarded (a terminal in raw mode, the container then gets one), the output goes to stdout, SIGINT, SIGTERM, SIGQUIT and SIGHUP go to the container."])
        .register_into_engine(engine, |n: &mut Node, opts: Map| {
            native(|| debug_run(n, &DebugOpts::read(&opts)?).map(i64::from))
        });
}
