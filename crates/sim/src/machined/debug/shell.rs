//! The process a simulated debug container runs: a small busybox-like shell, not a real one.
//! It knows `echo`, `hostname`, `uname`, `cat`, `pwd`, `true`, `false` and `exit`, single and
//! double quotes, `$?`, `;` and `#` comments, and nothing else (`sh: NAME: not found`, 127).
//! Its files are the node's: the host's root under `/host` (as Talos mounts it), `/proc` and
//! `/sys` (host namespaces), `/etc/hosts` and `/etc/resolv.conf` (the host's); the image's own
//! files are not simulated. With a terminal it prompts `/ # `, echoes what is typed and ends
//! lines with CR LF, as a pty does; without one it reads commands from stdin until its end.

use crate::world::fs::Fs;

/// What the shell sees of the node.
#[derive(Clone, Debug)]
pub struct Host {
    pub hostname: String,
    /// The node's root filesystem.
    pub fs: Fs,
}

/// Busybox ash's prompt for root in `/`.
const PROMPT: &str = "/ # ";

/// Commands that are files in the image (`/bin/NAME`), so a container's arguments can name them.
const PROGRAMS: &[&str] = &["echo", "hostname", "uname", "cat", "pwd", "true", "false"];

/// Shells a container's arguments can start.
const SHELLS: &[&str] = &["sh", "ash"];

/// What the container does with its arguments.
#[derive(Debug, PartialEq, Eq)]
pub enum Start {
    /// A shell reading stdin.
    Shell,
    /// `sh -c LINE`: the line, then its status.
    Line(String),
    /// A program of the image with its arguments, then its status.
    Program(Vec<String>),
    /// The first argument is no program of the image.
    NotFound(String),
}

/// How the container's arguments start it (none: the image's entrypoint, a shell).
pub fn start_of(args: &[String]) -> Start {
    let Some(first) = args.first() else {
        return Start::Shell;
    };
    let name = first.rsplit('/').next().unwrap_or(first);
    let path_ok = !first.contains('/')
        || [format!("/bin/{name}"), format!("/usr/bin/{name}")].contains(first);
    if SHELLS.contains(&name) && path_ok {
        return match args.get(1).map(String::as_str) {
            Some("-c") => Start::Line(args.get(2).cloned().unwrap_or_default()),
            _ => Start::Shell,
        };
    }
    if PROGRAMS.contains(&name) && path_ok {
        let mut words = vec![name.to_string()];
        words.extend(args[1..].iter().cloned());
        return Start::Program(words);
    }
    Start::NotFound(first.clone())
}

/// What one step of the shell gives: bytes written, and the exit code once it ends.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Step {
    pub output: Vec<u8>,
    pub exit: Option<i32>,
}

/// A running shell.
pub struct Shell {
    host: Host,
    tty: bool,
    status: i32,
    line: Vec<u8>,
}

impl Shell {
    pub fn new(host: Host, tty: bool) -> Shell {
        Shell {
            host,
            tty,
            status: 0,
            line: Vec::new(),
        }
    }

    /// The shell starting: its first prompt with a terminal.
    pub fn begin(&self) -> Step {
        Step {
            output: if self.tty { PROMPT.into() } else { vec![] },
            exit: None,
        }
    }

    /// Runs what the container was started with (a line or a program) and ends with its
    /// status; a shell reading stdin does not end here.
    pub fn once(&mut self, start: &Start) -> Step {
        let mut out = Vec::new();
        let exit = match start {
            Start::Line(line) => self.run_line(line, &mut out),
            Start::Program(words) => self.command(words, &mut out),
            Start::Shell | Start::NotFound(_) => return self.begin(),
        };
        Step {
            output: self.terminal(out),
            exit: Some(exit.unwrap_or(self.status)),
        }
    }

    /// Bytes from stdin.
    pub fn input(&mut self, data: &[u8]) -> Step {
        let mut out = Vec::new();
        for &b in data {
            let exit = if self.tty {
                self.typed(b, &mut out)
            } else if b == b'\n' {
                self.enter(&mut out)
            } else {
                self.line.push(b);
                None
            };
            if exit.is_some() {
                return Step { output: out, exit };
            }
        }
        Step {
            output: out,
            exit: None,
        }
    }

    /// Stdin ended: without a terminal the last line runs and the shell ends with its status;
    /// with one the terminal hangs up (SIGHUP, 128 + 1).
    pub fn end(&mut self) -> Step {
        if self.tty {
            return Step {
                output: vec![],
                exit: Some(128 + 1),
            };
        }
        let mut out = Vec::new();
        let exit = match self.line.is_empty() {
            true => None,
            false => self.enter(&mut out),
        };
        Step {
            output: out,
            exit: Some(exit.unwrap_or(self.status)),
        }
    }

    /// A signal for the shell's process: the exit code when it ends it (128 + its number). An
    /// interactive shell ignores SIGINT, SIGQUIT and SIGTERM; every shell ignores the signals
    /// whose default is to ignore (SIGCHLD, SIGCONT, SIGURG, SIGWINCH) or to stop.
    pub fn signal(&self, number: i32) -> Option<i32> {
        let ignored: &[i32] = if self.tty {
            &[2, 3, 15, 17, 18, 19, 20, 21, 22, 23, 28]
        } else {
            &[17, 18, 19, 20, 21, 22, 23, 28]
        };
        (!ignored.contains(&number)).then_some(128 + number)
    }

    /// One byte typed at the terminal: echoed, edited, or the end of the line.
    fn typed(&mut self, b: u8, out: &mut Vec<u8>) -> Option<i32> {
        match b {
            b'\r' | b'\n' => {
                out.extend_from_slice(b"\r\n");
                let exit = self.enter(out);
                if exit.is_none() {
                    out.extend_from_slice(PROMPT.as_bytes());
                }
                exit
            }
            0x7f | 0x08 => {
                if self.line.pop().is_some() {
                    out.extend_from_slice(b"\x08 \x08");
                }
                None
            }
            0x03 => {
                self.line.clear();
                self.status = 130;
                out.extend_from_slice(b"^C\r\n");
                out.extend_from_slice(PROMPT.as_bytes());
                None
            }
            0x04 if self.line.is_empty() => {
                out.extend_from_slice(b"\r\n");
                Some(self.status)
            }
            b if b >= 0x20 => {
                self.line.push(b);
                out.push(b);
                None
            }
            _ => None,
        }
    }

    /// The line is complete: it runs.
    fn enter(&mut self, out: &mut Vec<u8>) -> Option<i32> {
        let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
        let mut written = Vec::new();
        let exit = self.run_line(&line, &mut written);
        out.extend(self.terminal(written));
        exit
    }

    /// A pty's output processing: LF becomes CR LF.
    fn terminal(&self, text: Vec<u8>) -> Vec<u8> {
        if !self.tty {
            return text;
        }
        let mut out = Vec::with_capacity(text.len());
        for b in text {
            if b == b'\n' {
                out.push(b'\r');
            }
            out.push(b);
        }
        out
    }

    /// Runs each command of a line; `Some(code)` when one was `exit`.
    fn run_line(&mut self, line: &str, out: &mut Vec<u8>) -> Option<i32> {
        let commands = match split(line, self.status) {
            Ok(c) => c,
            Err(e) => {
                out.extend_from_slice(format!("sh: syntax error: {e}\n").as_bytes());
                self.status = 2;
                return None;
            }
        };
        for words in commands.iter().filter(|w| !w.is_empty()) {
            if let Some(code) = self.command(words, out) {
                return Some(code);
            }
        }
        None
    }

    /// One command; `Some(code)` when it ends the shell.
    fn command(&mut self, words: &[String], out: &mut Vec<u8>) -> Option<i32> {
        let (name, args) = match words.split_first() {
            Some((n, a)) => (n.as_str(), a),
            None => return None,
        };
        let mut say = |s: &str| out.extend_from_slice(s.as_bytes());
        self.status = match name {
            "exit" => {
                return Some(match args.first() {
                    None => self.status,
                    Some(a) => match a.parse::<i64>() {
                        Ok(n) => n.rem_euclid(256) as i32,
                        Err(_) => {
                            say(&format!("sh: exit: Illegal number: {a}\n"));
                            2
                        }
                    },
                });
            }
            "echo" => {
                let (newline, words) = match args.first().map(String::as_str) {
                    Some("-n") => (false, &args[1..]),
                    _ => (true, args),
                };
                say(&words.join(" "));
                if newline {
                    say("\n");
                }
                0
            }
            "hostname" => {
                say(&format!("{}\n", self.host.hostname));
                0
            }
            "pwd" => {
                say("/\n");
                0
            }
            "true" => 0,
            "false" => 1,
            "uname" => match uname(&self.host, args) {
                Ok(text) => {
                    say(&text);
                    0
                }
                Err(text) => {
                    say(&text);
                    1
                }
            },
            "cat" => {
                let mut status = 0;
                for path in args {
                    match read(&self.host, path) {
                        Ok(bytes) => out.extend(bytes),
                        Err(text) => {
                            out.extend_from_slice(text.as_bytes());
                            status = 1;
                        }
                    }
                }
                status
            }
            other => {
                say(&format!("sh: {other}: not found\n"));
                127
            }
        };
        None
    }
}

/// A line as ash splits it: `;` between commands, whitespace between words, quotes, backslash
/// escapes, `$?` (the last status), `#` starting a comment at a word's start.
fn split(line: &str, status: i32) -> Result<Vec<Vec<String>>, String> {
    let mut commands = vec![vec![]];
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let push = |commands: &mut Vec<Vec<String>>, word: &mut String| {
        if let Some(c) = commands.last_mut() {
            c.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\r' => {
                if in_word {
                    push(&mut commands, &mut word);
                    in_word = false;
                }
            }
            ';' => {
                if in_word {
                    push(&mut commands, &mut word);
                    in_word = false;
                }
                commands.push(vec![]);
            }
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("unterminated quoted string".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') if matches!(chars.peek(), Some('"' | '\\' | '$')) => {
                            word.extend(chars.next());
                        }
                        Some('$') if chars.peek() == Some(&'?') => {
                            chars.next();
                            word.push_str(&status.to_string());
                        }
                        Some(c) => word.push(c),
                        None => return Err("unterminated quoted string".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '$' if chars.peek() == Some(&'?') => {
                chars.next();
                in_word = true;
                word.push_str(&status.to_string());
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        push(&mut commands, &mut word);
    }
    Ok(commands)
}

/// `uname` of the node: its release and build from `/proc/version`.
fn uname(host: &Host, args: &[String]) -> Result<String, String> {
    let version = host
        .fs
        .stat("/proc/version")
        .map(|(_, e)| String::from_utf8_lossy(&e.content()).into_owned())
        .unwrap_or_default();
    let release = version.split_whitespace().nth(2).unwrap_or("").to_string();
    let build = version
        .find('#')
        .map(|i| version[i..].trim_end().to_string())
        .unwrap_or_default();
    let mut fields = Vec::new();
    for a in args {
        let Some(flags) = a.strip_prefix('-') else {
            return Err(format!("uname: unrecognized argument: {a}\n"));
        };
        for f in flags.chars() {
            match f {
                'a' => fields.extend(['s', 'n', 'r', 'v', 'm', 'o']),
                's' | 'n' | 'r' | 'v' | 'm' | 'o' => fields.push(f),
                other => return Err(format!("uname: unrecognized option: {other}\n")),
            }
        }
    }
    if fields.is_empty() {
        fields.push('s');
    }
    let text: Vec<&str> = ['s', 'n', 'r', 'v', 'm', 'o']
        .iter()
        .filter(|f| fields.contains(f))
        .map(|f| match f {
            's' | 'o' => "Linux",
            'n' => host.hostname.as_str(),
            'r' => release.as_str(),
            'v' => build.as_str(),
            _ => "x86_64",
        })
        .collect();
    Ok(text.join(" ") + "\n")
}

/// What `cat PATH` reads in the container: the node's files where the container shares them.
fn read(host: &Host, path: &str) -> Result<Vec<u8>, String> {
    let missing = || format!("cat: can't open '{path}': No such file or directory\n");
    let clean = crate::world::fs::clean(path);
    let on_host = if let Some(rest) = clean.strip_prefix("/host") {
        match rest {
            "" => "/".to_string(),
            r if r.starts_with('/') => r.to_string(),
            _ => return Err(missing()),
        }
    } else if clean.starts_with("/proc/")
        || clean.starts_with("/sys/")
        || clean == "/etc/hosts"
        || clean == "/etc/resolv.conf"
    {
        clean
    } else {
        return Err(missing());
    };
    match host.fs.stat(&on_host) {
        Err(_) => Err(missing()),
        Ok((_, e)) if e.is_dir() => Err("cat: read error: Is a directory\n".into()),
        Ok((_, e)) => Ok(e.content()),
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;
