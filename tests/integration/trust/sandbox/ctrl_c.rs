//! Ctrl-C: a playbook (in a loop, a `sleep`, `parallel()`) stops with 130 within a moment; the
//! REPL stops the running line and goes on; with no script running Ctrl-C still ends talm, and
//! commands that install no handler keep their own behaviour.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{net, Dir};

/// Starts talm, waits for `ready` on its stdout (or stderr when `on_stderr`), sends SIGINT and
/// waits for the exit; returns (exit code, stderr, time from SIGINT to exit).
fn interrupt(
    d: &Dir,
    args: &[&str],
    ready: &str,
    on_stderr: bool,
) -> (Option<i32>, String, Duration) {
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(args)
        .current_dir(d.path())
        .env("TALM_REPL_HISTORY", d.join("history"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    if on_stderr {
        while !seen.contains(ready) {
            assert!(
                stderr.read_line(&mut seen).unwrap() > 0,
                "ended early: {seen}"
            );
        }
    } else {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains(ready) {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "ended before {ready:?}"
            );
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    let sent = Instant::now();
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if sent.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("talm {args:?} did not stop on Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = sent.elapsed();
    drop(stdin);
    std::io::Read::read_to_string(&mut stderr, &mut seen).unwrap();
    (status.code(), seen, took)
}

#[test]
fn ctrl_c_stops_a_playbook_with_130() {
    let d = Dir::new();
    d.write("spin.rhai", "out(\"started\\n\");\nloop {}\n");
    let (code, err, took) = interrupt(
        &d,
        &["run", "--max-ops", "0", "spin.rhai"],
        "started",
        false,
    );
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("spin.rhai:2:6: interrupted (Ctrl-C)"), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    d.write(
        "nap.rhai",
        "out(\"started\\n\");\nsleep(60);\nout(\"woke\\n\");\n",
    );
    let (code, err, took) = interrupt(&d, &["run", "nap.rhai"], "started", false);
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("interrupted (Ctrl-C)"), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");

    // Items of parallel() stop too, and the playbook ends instead of collecting their errors.
    d.write(
        "par.rhai",
        "let r = parallel([1, 2, 3], |x| { if x == 1 { out(\"started\\n\"); } sleep(60); x });\nout(`collected ${r}\\n`);\n",
    );
    let (code, err, took) = interrupt(&d, &["run", "par.rhai"], "started", false);
    assert_eq!(code, Some(130), "{err}");
    assert!(!err.contains("collected"), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}

#[test]
fn ctrl_c_in_the_repl_stops_the_line_only() {
    use std::io::Write;
    let d = Dir::new();
    let mut child = Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["repl"])
        .current_dir(d.path())
        .env("TALM_REPL_HISTORY", d.join("history"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"out(\"started\\n\"); let i = 0; loop { i += 1; }\n")
        .unwrap();
    let mut line = String::new();
    while !line.contains("started") {
        line.clear();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "repl ended early");
    }
    std::thread::sleep(Duration::from_millis(200));
    let kill = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(kill.success());
    stdin.write_all(b"out(`after ${i > 0}`);\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("interrupted (Ctrl-C)"), "{err}");
    assert!(rest.contains("after true"), "the session goes on: {rest}");
}

#[test]
fn ctrl_c_outside_a_running_script_still_ends_talm() {
    // The REPL waiting for input: the handler does not swallow Ctrl-C.
    let d = Dir::new();
    let (code, err, took) = interrupt(&d, &["repl"], "talm repl:", true);
    assert_eq!(code, Some(130), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // A command that installs no handler keeps its own Ctrl-C behaviour.
    let (code, err, took) = interrupt(
        &d,
        &["sim", "--node", &net::addr()],
        "serving until interrupted",
        true,
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(took < Duration::from_secs(2), "took {took:?}");
}
