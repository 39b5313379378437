//! Exact expectations of one `talm` run, in the manner of just's test builder: the whole stdout,
//! stderr and exit code, compared after substituting what varies per run (the test's folder,
//! addresses, durations), with a line diff that points at the test on a mismatch.
//!
//! ```ignore
//! d.talm(["apply", "--mode", "soon"])
//!     .expect()
//!     .stderr("error: ...\n")
//!     .status(1)
//!     .run();
//! ```
//!
//! stdout and stderr are compared only when given; the exit code is always compared and is 0
//! unless `.status(..)` says otherwise, so an expectation cannot pass on a failure by forgetting
//! it. The test's folder reads `$DIR` in both streams.

use super::{Dir, Out, Run};
use std::path::Path;

/// What one run must print and return.
pub struct Expect {
    run: Run,
    stdout: Option<String>,
    stderr: Option<String>,
    status: i32,
    norm: Normalise,
}

/// What varies per run, read as placeholders before comparing.
#[derive(Default)]
struct Normalise {
    subs: Vec<(String, String)>,
    masks: Vec<fn(&str) -> String>,
}

impl Normalise {
    /// `dir` (and its canonical path, if that differs) as `$DIR`.
    fn folder(dir: &Path) -> Normalise {
        let mut subs = Vec::new();
        if let Ok(real) = dir.canonicalize() {
            if real != dir {
                subs.push((real.display().to_string(), "$DIR".to_string()));
            }
        }
        subs.push((dir.display().to_string(), "$DIR".to_string()));
        Normalise {
            subs,
            masks: Vec::new(),
        }
    }

    fn apply(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (actual, placeholder) in &self.subs {
            if !actual.is_empty() {
                text = text.replace(actual.as_str(), placeholder);
            }
        }
        for mask in &self.masks {
            text = mask(&text);
        }
        text
    }
}

impl Run {
    /// An exact expectation of this run: add `.stdout(..)`, `.stderr(..)`, `.status(..)`, then
    /// `.run()`.
    pub fn expect(self) -> Expect {
        let norm = self
            .dir
            .as_deref()
            .map(Normalise::folder)
            .unwrap_or_default();
        Expect {
            run: self,
            stdout: None,
            stderr: None,
            status: 0,
            norm,
        }
    }
}

impl Expect {
    /// The whole of stdout, after substitutions.
    pub fn stdout(mut self, text: impl Into<String>) -> Expect {
        self.stdout = Some(text.into());
        self
    }

    /// The whole of stderr, after substitutions.
    pub fn stderr(mut self, text: impl Into<String>) -> Expect {
        self.stderr = Some(text.into());
        self
    }

    /// The exit code (0 when not given).
    pub fn status(mut self, code: i32) -> Expect {
        self.status = code;
        self
    }

    /// Reads every `actual` in both streams as `placeholder` (an address from `common::net`
    /// as `$A`, say). Substitutions apply in the order given, after the folder's `$DIR`.
    pub fn replace(mut self, actual: impl AsRef<str>, placeholder: &str) -> Expect {
        self.norm
            .subs
            .push((actual.as_ref().to_string(), placeholder.to_string()));
        self
    }

    /// Passes both streams through `mask` after the substitutions ([`durations`], say).
    pub fn mask(mut self, mask: fn(&str) -> String) -> Expect {
        self.norm.masks.push(mask);
        self
    }

    /// Runs talm and compares; on a mismatch, panics at the test with a diff of each stream
    /// that differs. Returns the output as talm printed it.
    #[track_caller]
    pub fn run(self) -> Out {
        let Expect {
            run,
            stdout,
            stderr,
            status,
            norm,
        } = self;
        let args = run.args.clone();
        let out = run.run();
        let mut report = String::new();
        if out.code != status {
            report += &format!("exit code: expected {status}, got {}\n", out.code);
        }
        for (name, want, got) in [
            ("stdout", &stdout, &out.stdout),
            ("stderr", &stderr, &out.stderr),
        ] {
            if let Some(want) = want {
                let got = norm.apply(got);
                if *want != got {
                    report += &format!(
                        "{name} differs (- expected, + actual):\n{}",
                        diff(want, &got)
                    );
                }
            }
        }
        if !report.is_empty() {
            panic!(
                "talm {:?}\n{report}\n--- whole stdout ---\n{}--- whole stderr ---\n{}",
                args, out.stdout, out.stderr
            );
        }
        out
    }
}

/// One refused command line: the arguments, the exit code and the whole of stderr (stdout must
/// be empty and the folder unchanged).
pub type Refusal<'a> = (&'a [&'a str], i32, &'a str);

impl Dir {
    /// Runs a command that must fail with exactly `stderr` and `status`, print nothing on
    /// stdout and leave the folder unchanged; returns stderr as talm printed it.
    #[track_caller]
    pub fn refuses(&self, args: &[&str], status: i32, stderr: &str) -> String {
        let before = self.snapshot();
        let out = self
            .talm(args)
            .expect()
            .stdout("")
            .stderr(stderr)
            .status(status)
            .run();
        assert_eq!(
            self.snapshot(),
            before,
            "a refused command changed the folder"
        );
        out.stderr
    }

    /// Runs every row in this folder and checks each exactly; reports every row that differs
    /// at once, at the test.
    #[track_caller]
    pub fn refuses_each(&self, rows: &[Refusal<'_>]) {
        let before = self.snapshot();
        let mut report = String::new();
        for (args, status, stderr) in rows {
            let out = self.talm(*args).run();
            let got = Normalise::folder(self.path()).apply(&out.stderr);
            let mut row = String::new();
            if out.code != *status {
                row += &format!("  exit code: expected {status}, got {}\n", out.code);
            }
            if !out.stdout.is_empty() {
                row += &format!("  stdout is not empty:\n{}", out.stdout);
            }
            if got != *stderr {
                row += &format!(
                    "  stderr differs (- expected, + actual):\n{}",
                    diff(stderr, &got)
                );
            }
            if self.snapshot() != before {
                row += "  the folder changed\n";
            }
            if !row.is_empty() {
                report += &format!("talm {args:?}\n{row}");
            }
        }
        assert!(report.is_empty(), "refused command lines differ:\n{report}");
    }
}

/// Reads every Go duration (`1.5s`, `120ms`, `2m3s`, `850µs`) as `<DURATION>`.
pub fn durations(text: &str) -> String {
    const UNITS: [&str; 7] = ["ns", "µs", "us", "ms", "h", "m", "s"];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        let starts_word = !prev.is_some_and(|p| p.is_alphanumeric() || p == '.');
        if starts_word && c.is_ascii_digit() {
            if let Some(len) = duration_len(rest, &UNITS) {
                out += "<DURATION>";
                prev = rest[..len].chars().last();
                rest = &rest[len..];
                continue;
            }
        }
        out.push(c);
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// The length of the duration at the start of `s` (one or more number-unit pairs, not followed
/// by a letter or digit), if there is one.
fn duration_len(s: &str, units: &[&str]) -> Option<usize> {
    let mut at = 0;
    loop {
        let digits = s[at..]
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len() - at);
        if digits == 0 {
            break;
        }
        let after = at + digits;
        let unit = units.iter().find(|u| s[after..].starts_with(**u))?;
        at = after + unit.len();
        if !s[at..].starts_with(|c: char| c.is_ascii_digit()) {
            break;
        }
    }
    let ends = !s[at..].starts_with(|c: char| c.is_alphanumeric());
    (at > 0 && ends).then_some(at)
}

/// A line diff of `want` against `got`: `  ` common, `- ` expected only, `+ ` actual only.
/// A missing or extra final newline is said in words.
pub fn diff(want: &str, got: &str) -> String {
    let a: Vec<&str> = want.lines().collect();
    let b: Vec<&str> = got.lines().collect();
    let mut out = String::new();
    if a.len() * b.len() > 4_000_000 {
        out += &format!("- {want}\n+ {got}\n");
        return out;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out += &format!("  {}\n", a[i]);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out += &format!("- {}\n", a[i]);
            i += 1;
        } else {
            out += &format!("+ {}\n", b[j]);
            j += 1;
        }
    }
    if want.ends_with('\n') != got.ends_with('\n') {
        out += &format!(
            "(the expected text {} with a newline, the actual text {})\n",
            if want.ends_with('\n') {
                "ends"
            } else {
                "does not end"
            },
            if got.ends_with('\n') {
                "does"
            } else {
                "does not"
            }
        );
    }
    if want != got && a == b && want.ends_with('\n') == got.ends_with('\n') {
        out += &format!("(the texts differ in line endings)\n- {want:?}\n+ {got:?}\n");
    }
    out
}

/// Reads every UUID in its canonical form (8-4-4-4-12 lower-case hex digits, such as an actor
/// ID a node answers with) as `<UUID>`.
pub fn uuids(text: &str) -> String {
    const GROUPS: [usize; 5] = [8, 4, 4, 4, 12];
    let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    let bytes = text.as_bytes();
    let is_uuid_at = |at: usize| {
        let mut i = at;
        for (n, len) in GROUPS.iter().enumerate() {
            if n > 0 {
                if bytes.get(i) != Some(&b'-') {
                    return false;
                }
                i += 1;
            }
            if i + len > bytes.len() || !bytes[i..i + len].iter().all(|b| hex(*b)) {
                return false;
            }
            i += len;
        }
        !bytes
            .get(i)
            .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'-')
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let starts = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'-');
        if starts && is_uuid_at(at) {
            out += "<UUID>";
            at += 36;
            continue;
        }
        let c = text[at..].chars().next().expect("inside the text");
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// Reads every compact UTC time stamp (`20261206T023032Z`, as in the folders `talm migrate`
/// saves to) as `<UTC time>`.
pub fn utc_stamps(text: &str) -> String {
    let b = text.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let starts = at == 0 || !b[at - 1].is_ascii_alphanumeric();
        let fits = at + 16 <= b.len()
            && digits(at..at + 8)
            && b[at + 8] == b'T'
            && digits(at + 9..at + 15)
            && b[at + 15] == b'Z'
            && !b.get(at + 16).is_some_and(u8::is_ascii_alphanumeric);
        if starts && fits {
            out += "<UTC time>";
            at += 16;
            continue;
        }
        let c = text[at..].chars().next().expect("inside the text");
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// Reads every address of `common::net`'s range (127.100.0.0/14) as `$A1`, `$A2`... in the order
/// each first appears, so an expectation keeps which lines name the same node.
pub fn addrs(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let prev = text[..at].chars().last();
        let starts = !prev.is_some_and(|p| p.is_ascii_digit() || p == '.');
        if starts {
            if let Some(len) = net_addr_len(&text[at..]) {
                let addr = &text[at..at + len];
                let n = match seen.iter().position(|s| s == addr) {
                    Some(i) => i + 1,
                    None => {
                        seen.push(addr.to_string());
                        seen.len()
                    }
                };
                out += &format!("$A{n}");
                at += len;
                continue;
            }
        }
        let c = text[at..].chars().next().expect("inside the text");
        out.push(c);
        at += c.len_utf8();
    }
    out
}

/// The length of the address of 127.100.0.0/14 at the start of `s`, if there is one.
fn net_addr_len(s: &str) -> Option<usize> {
    let mut octets = Vec::new();
    let mut at = 0;
    for i in 0..4 {
        if i > 0 {
            s[at..].starts_with('.').then_some(())?;
            at += 1;
        }
        let digits = s[at..]
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(s.len() - at);
        if digits == 0 || digits > 3 {
            return None;
        }
        octets.push(s[at..at + digits].parse::<u32>().ok()?);
        at += digits;
    }
    let whole =
        octets.iter().all(|o| *o < 256) && octets[0] == 127 && (100..=103).contains(&octets[1]);
    let ends = !s[at..].starts_with(|c: char| c.is_ascii_digit());
    (whole && ends).then_some(at)
}

#[test]
fn the_masks_read_what_varies_and_keep_the_rest() {
    assert_eq!(
        durations("took 1.5s, then 2m3s and 850µs; v1.13 and 30sec stay"),
        "took <DURATION>, then <DURATION> and <DURATION>; v1.13 and 30sec stay"
    );
    assert_eq!(
        addrs("node 127.100.0.5: down; 127.103.1.2 and 127.100.0.5 again; 127.0.0.1 and 127.100.0.50 stay apart"),
        "node $A1: down; $A2 and $A1 again; 127.0.0.1 and $A3 stay apart"
    );
    assert_eq!(
        utc_stamps("migrate/edits-20261206T023032Z/ and 20261206T023032Zx stay"),
        "migrate/edits-<UTC time>/ and 20261206T023032Zx stay"
    );
    assert_eq!(
        uuids("actor ID: cc0cfc87-ebd3-472f-89e1-cfb707aec690; x-cc0cfc87-ebd3-472f-89e1-cfb707aec690 and CC0CFC87-EBD3-472F-89E1-CFB707AEC690 stay"),
        "actor ID: <UUID>; x-cc0cfc87-ebd3-472f-89e1-cfb707aec690 and CC0CFC87-EBD3-472F-89E1-CFB707AEC690 stay"
    );
}

#[test]
fn a_diff_marks_the_lines_that_differ() {
    assert_eq!(diff("a\nb\nc\n", "a\nx\nc\n"), "  a\n- b\n+ x\n  c\n");
    assert_eq!(
        diff("a\n", "a"),
        "  a\n(the expected text ends with a newline, the actual text does not)\n"
    );
}

#[test]
#[should_panic(
    expected = "stderr differs (- expected, + actual):\n- Error: no\n+ Error: unknown command \"nosuch\""
)]
fn an_expectation_that_differs_fails_with_a_diff() {
    super::Dir::new()
        .talm(["nosuch"])
        .expect()
        .stderr("Error: no\nhint: see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`\n")
        .status(1)
        .run();
}

/// Reads every Go `log` time stamp (`2026/12/06 05:19:44`, as the Talos installer prints its
/// lines) as `<log time>`.
pub fn log_stamps(text: &str) -> String {
    let re = regex::Regex::new(r"\b\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\b").expect("a valid pattern");
    re.replace_all(text, "<log time>").into_owned()
}

/// What a LifecycleService upgrade of `node` (as an expectation names it, e.g. `$A1`) from
/// Talos `from` to the installer `image` tagged `to` prints before its reboot, time stamps
/// read by [`log_stamps`].
pub fn installer_run(node: &str, image_pinned: &str, from: &str, to: &str) -> String {
    format!(
        "\
{node}: pulled image {image_pinned}
{node}: <log time> running Talos installer {to}
{node}: <log time> running pre-flight checks
{node}: <log time> host Talos version: {from}
{node}: <log time> all pre-flight checks successful
{node}: <log time> installation of {to} complete
{node}: Exit code: 0
{node}: upgrade completed
"
    )
}

/// The name a simulated node answers when it has pulled `ghcr.io/siderolabs/installer:v1.13.9`:
/// pinned to its (simulated) digest.
pub const PINNED_NEW: &str = "ghcr.io/siderolabs/installer@sha256:206763757a62abcab912afe06481fac038928d6912bc2d8ee501d66c86cdf728";

/// The boot events a simulated node's new boot replays to talosctl's tracker (after the
/// sequence's START), in its order.
pub const BOOT_REPLAY: &str = "\
sequence: boot action: START
service: apid message: Health check successful healthy: true
service: containerd message: Health check successful healthy: true
service: cri message: Health check successful healthy: true
service: etcd message: Waiting for service to start healthy: false
service: kubelet message: Health check successful healthy: true
service: machined message: Health check successful healthy: true
service: trustd message: Health check successful healthy: true
service: udevd message: Health check successful healthy: true
sequence: boot action: STOP
";

/// talosctl's tracker lines for `node` (as an expectation names it): `lines`, each after
/// `"<node>": `, the actor ID read by [`uuids`].
pub fn tracker(node: &str, lines: &str) -> String {
    lines
        .lines()
        .map(|l| format!("\"{node}\": {l}\n"))
        .collect()
}

/// The tracker following a reboot of `node` until it is back on a new boot.
pub fn rebooted(node: &str) -> String {
    tracker(
        node,
        &format!(
            "waiting for actor ID\nactor ID: <UUID>\nsequence: reboot action: START\nunavailable, retrying...\n{BOOT_REPLAY}events check condition met\npost check passed\n"
        ),
    )
}

/// The tracker following `sequence` of `node` through `phases` (each started and stopped)
/// until the `stopAllServices` task of its `stopEverything` phase; `then` follows.
pub fn services_stopped(node: &str, sequence: &str, phases: &[&str], then: &str) -> String {
    let mut lines =
        format!("waiting for actor ID\nactor ID: <UUID>\nsequence: {sequence} action: START\n");
    for p in phases {
        lines += &format!("phase: {p} action: START\nphase: {p} action: STOP\n");
    }
    lines += "phase: stopEverything action: START\nevents check condition met\n";
    lines += then;
    tracker(node, &lines)
}

/// The phases a graceful reset of a control plane runs before it stops its services, wiping
/// labels (STATE and EPHEMERAL: kexec kept).
pub const RESET_CP_PHASES: &[&str] = &[
    "drain",
    "cleanup",
    "dbus",
    "leave",
    "preReset",
    "stopServices",
    "umount",
    "unmountBind",
    "unmountSystem",
    "volumeFinalize",
    "kexec",
];

/// The phases a shutdown (not forced) runs before it stops its services.
pub const SHUTDOWN_PHASES: &[&str] = &[
    "storeShutdown",
    "drain",
    "cleanup",
    "dbus",
    "stopServices",
    "umount",
    "unmountBind",
    "unmountSystem",
    "volumeFinalize",
];

/// The checks of `talm health`, in order.
pub const HEALTH_CHECKS: [&str; 16] = [
    "etcd to be healthy",
    "etcd members to be consistent across nodes",
    "etcd members to be control plane nodes",
    "apid to be ready",
    "all nodes memory sizes",
    "all nodes disk sizes",
    "no diagnostics",
    "kubelet to be healthy",
    "all nodes to finish boot sequence",
    "all k8s nodes to report",
    "all control plane static pods to be running",
    "all control plane components to be ready",
    "all k8s nodes to report ready",
    "kube-proxy to report ready",
    "coredns to report ready",
    "all k8s nodes to report schedulable",
];
