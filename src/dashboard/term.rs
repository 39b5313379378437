//! The terminal side: raw mode and the alternate screen for as long as the dashboard runs
//! (restored however it ends, panics included), and the loop that draws the state, reads keys
//! and folds in what the pollers send.

use std::io::{self, Stdout};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use crossterm::event::{self, Event, KeyEventKind};
use crossterm::terminal::{self, ClearType, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

use super::explorer::Fetch;
use super::input;
use super::model::{Flow, State, Update};
use super::render;

/// How long the loop waits for a key before it looks for updates and redraws.
const TICK: Duration = Duration::from_millis(100);

/// How often the header's spinner turns.
const SPIN: Duration = Duration::from_millis(500);

/// Raw mode and the alternate screen; dropping it puts the terminal back.
struct Session;

impl Session {
    fn enter() -> Result<Session> {
        terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
        // From here on, the terminal is restored on every way out.
        let session = Session;
        execute!(
            io::stdout(),
            EnterAlternateScreen,
            cursor::Hide,
            terminal::Clear(ClearType::All)
        )
        .context("cannot switch to the terminal's alternate screen")?;
        Ok(session)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Runs the dashboard until the user quits; `fetch` carries the explorer's requests out.
pub fn run(state: &mut State, updates: &Receiver<Update>, fetch: &dyn Fn(Fetch)) -> Result<()> {
    let _session = Session::enter()?;
    let mut term: Terminal<CrosstermBackend<Stdout>> =
        Terminal::new(CrosstermBackend::new(io::stdout())).context("cannot use the terminal")?;
    let started = Instant::now();
    loop {
        while let Ok(u) = updates.try_recv() {
            state.apply(u);
        }
        for f in state.take_requests() {
            fetch(f);
        }
        state.now = unix_now();
        // The header's spinner turns every half second, as talosctl's ticker.
        state.ticks = (started.elapsed().as_millis() / SPIN.as_millis()) as usize;
        term.draw(|f| render::render(state, f.area(), f.buffer_mut()))?;
        if !event::poll(TICK)? {
            continue;
        }
        match event::read()? {
            Event::Key(k) if k.kind != KeyEventKind::Release => {
                let cmd = if state.typing() {
                    input::typing(&k)
                } else {
                    input::command(&k)
                };
                let Some(cmd) = cmd else {
                    continue;
                };
                match state.handle(cmd, term.size()?.height) {
                    Flow::Quit => return Ok(()),
                    // A new view: drawn whole on a cleared screen (`Terminal::clear` would ask
                    // the terminal where its cursor is, which not every terminal answers).
                    Flow::Repaint => {
                        let size = term.size()?;
                        term.resize(Rect::new(0, 0, size.width, size.height))?;
                    }
                    Flow::Continue => {}
                }
            }
            Event::Resize(..) => term.autoresize()?,
            _ => {}
        }
    }
}
