//! `talm` in a pseudo-terminal (util-linux `script`) for the dashboard's tests: keys in, the
//! screen read back through a small VT100, with what moves masked.

use std::io::{Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Names each node `<host>-<i>` by its place in `addrs`, counting from 1.
pub fn named<'a>(host: &'a str, addrs: &'a [String]) -> impl Fn(&mut talm::sim::NodeSpec) + 'a {
    move |spec| {
        let addr = spec.addr.to_string();
        let i = addrs
            .iter()
            .position(|a| *a == addr)
            .expect("a node of the list");
        spec.hardware.hostname = format!("{host}-{}", i + 1);
    }
}

/// Just enough of a VT100 to follow what ratatui's crossterm backend writes (cursor moves,
/// clears, text), so the test reads the screen as the user sees it.
pub fn screen_of(transcript: &str, rows: usize, cols: usize) -> Vec<String> {
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut x, mut y) = (0usize, 0usize);
    let mut chars = transcript.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                Some('[') => {
                    let mut params = String::new();
                    let mut last = ' ';
                    for p in chars.by_ref() {
                        if ('\u{40}'..='\u{7e}').contains(&p) {
                            last = p;
                            break;
                        }
                        params.push(p);
                    }
                    let nums: Vec<usize> = params
                        .trim_start_matches('?')
                        .split(';')
                        .map(|n| n.parse().unwrap_or(0))
                        .collect();
                    match last {
                        'H' | 'f' => {
                            y = nums.first().copied().unwrap_or(1).max(1) - 1;
                            x = nums.get(1).copied().unwrap_or(1).max(1) - 1;
                        }
                        'J' => grid = vec![vec![' '; cols]; rows],
                        'K' if y < rows => grid[y][x.min(cols)..].iter_mut().for_each(|c| *c = ' '),
                        _ => {}
                    }
                }
                Some('(') | Some(')') => {
                    chars.next();
                }
                _ => {}
            },
            '\r' => x = 0,
            '\n' => y += 1,
            c if c.is_control() => {}
            c => {
                if y < rows && x < cols {
                    grid[y][x] = c;
                }
                x += 1;
            }
        }
    }
    grid.into_iter().map(|r| r.into_iter().collect()).collect()
}

/// `talm` running under a pseudo-terminal of `ROWS` × `COLS` (util-linux `script`), its output
/// collected as it comes.
pub struct Tty {
    child: Child,
    out: Arc<Mutex<Vec<u8>>>,
}

pub const ROWS: usize = 30;
pub const COLS: usize = 100;

impl Drop for Tty {
    /// A failed test must not leave talm running (it would hold the terminal, and whatever
    /// the test run holds).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Tty {
    pub fn spawn(args: &str) -> Tty {
        let cmd = format!(
            "stty rows {ROWS} cols {COLS} && exec {} {args}",
            env!("CARGO_BIN_EXE_talm")
        );
        let mut child = Command::new("script")
            .args(["-qfec", &cmd, "/dev/null"])
            .env("TERM", "xterm-256color")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("util-linux `script` runs talm under a terminal");
        let out = Arc::new(Mutex::new(Vec::new()));
        let mut stdout = child.stdout.take().unwrap();
        let sink = Arc::clone(&out);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        Tty { child, out }
    }

    pub fn transcript(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    pub fn screen(&self) -> Vec<String> {
        screen_of(&self.transcript(), ROWS, COLS)
    }

    /// Waits until the screen (its rows joined by newlines) passes `ok`.
    pub fn wait_until(&self, what: &str, ok: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            let all = screen.join("\n");
            if ok(&all) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {what}:\n{all}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen shows every one of `texts`.
    pub fn wait_for(&self, texts: &[&str]) -> Vec<String> {
        self.wait_until(&format!("{texts:?}"), |all| {
            texts.iter().all(|t| all.contains(t))
        })
    }

    pub fn keys(&mut self, keys: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(keys.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// Waits for the process to end (at most `within`) and returns whether it succeeded.
    pub fn wait(&mut self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.success();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "talm dashboard did not exit within {within:?}:\n{}",
                    self.screen().join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The screen with what moves masked: the header's spinner, uptime, PROCS, CPU and RAM use,
/// and the kernel log's timestamps.
pub fn masked(screen: &[String]) -> Vec<String> {
    let header = regex::Regex::new(
        r"^[┐┘└┌] (.*): uptime [0-9hms]+, (.*) RAM, PROCS [0-9]+, CPU [0-9.]+%, RAM [0-9.]+%",
    )
    .unwrap();
    let stamp = regex::Regex::new(r"\[\d{4}-\d\d-\d\dT[0-9:.]+Z\]").unwrap();
    // The machine's UUID (random per run), wrapped over two rows of the Talos panel.
    let uuid = regex::Regex::new(
        r"^ UUID       [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f] ",
    )
    .unwrap();
    let rest = regex::Regex::new(r"^ [0-9a-f]{11} ").unwrap();
    let mut wrapped = false;
    screen
        .iter()
        .map(|l| {
            let l = header.replace(l, "* $1: uptime *, $2 RAM, PROCS *, CPU *, RAM *");
            let l = stamp.replace(&l, "[TIME]");
            let l = if wrapped {
                wrapped = false;
                rest.replace(&l, " <uuid rest> ").into_owned()
            } else if uuid.is_match(&l) {
                wrapped = true;
                uuid.replace(&l, " UUID       <uuid: 8-4-4-4-1 hex>    ")
                    .into_owned()
            } else {
                l.into_owned()
            };
            l.trim_end().to_string()
        })
        .collect()
}

/// The screen with the YAML view's timestamps masked as well.
pub fn masked_yaml(screen: &[String]) -> Vec<String> {
    let when = regex::Regex::new(r"(created|updated): \d{4}-\d\d-\d\dT[0-9:]+Z").unwrap();
    masked(screen)
        .iter()
        .map(|l| when.replace(l, "$1: <time>").into_owned())
        .collect()
}

/// A box's row: `l`, `text` padded to the box's width, `r`.
pub fn boxed(l: char, text: &str, r: char) -> String {
    format!("{l}{text:<w$}{r}", w = COLS - 2)
}

/// A box's top border with `title` centred, as tview draws it.
pub fn top(title: &str) -> String {
    let room = COLS - 2;
    let len = title.chars().count();
    let left = (room - len) / 2;
    format!(
        "╔{}{title}{}╗",
        "═".repeat(left),
        "═".repeat(room - len - left)
    )
}
