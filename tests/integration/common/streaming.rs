//! A running `talm` whose stdout lines arrive on a channel as it prints them (for commands that
//! stream until stopped, or stream more than a test should hold); killed when dropped.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::Dir;

pub struct Streaming {
    pub child: Child,
    pub lines: mpsc::Receiver<String>,
}

impl Streaming {
    /// `talm ARGS` in `d`, every line of its output kept.
    pub fn start(d: &Dir, args: &[&str]) -> Streaming {
        Streaming::keeping(d, args, usize::MAX)
    }

    /// `talm ARGS` in `d`, its first `keep` lines kept and the rest read and dropped (so a
    /// flood of output costs the test nothing).
    pub fn keeping(d: &Dir, args: &[&str], keep: usize) -> Streaming {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("talm"))
            .args(args)
            .current_dir(d.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for (i, l) in BufReader::new(out)
                .lines()
                .map_while(Result::ok)
                .enumerate()
            {
                if i < keep && tx.send(l).is_err() {
                    break;
                }
            }
        });
        Streaming { child, lines }
    }

    /// The next line, within 30 s.
    pub fn line(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("a line of output within 30s")
    }

    /// Lines until one contains `needle`.
    pub fn until(&self, needle: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let l = self.line();
            let hit = l.contains(needle);
            seen.push(l);
            if hit {
                return seen;
            }
        }
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
