//! `talm repl` under a pseudo-terminal (util-linux `script`) and on plain stdin: completion of
//! API functions and variables, multi-line input, help, YAML output, Ctrl-C, history, and node
//! connections kept between lines.

use crate::common::sim::Nodes;
use crate::common::{net, Dir};

/// Runs `talm repl` under a terminal, typing `keys`; returns the screen.
fn repl_in_tty(d: &Dir, keys: &str) -> String {
    use std::io::Write;
    let cmd = format!("{} repl", env!("CARGO_BIN_EXE_talm"));
    let mut child = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(d.path())
        .env("TALM_REPL_HISTORY", d.join("history"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("util-linux `script` runs talm under a terminal");
    let mut stdin = child.stdin.take().unwrap();
    for chunk in keys.split_inclusive(['\n', '\t', '\x03']) {
        stdin.write_all(chunk.as_bytes()).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(150));
    }
    stdin.write_all(b"\x04").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn completes_functions_and_variables_in_a_terminal() {
    let d = Dir::new();
    let screen = repl_in_tty(
        &d,
        "let answer_value = 40;\nanswer_va\t + 2\nhelp wait_re\t\nnot finished\x03\n1 + 1\n",
    );
    assert!(screen.contains("42"), "variable completed: {screen}");
    assert!(
        screen.contains("wait_ready(_: Node, _: int) -> bool"),
        "function completed: {screen}"
    );
    assert!(screen.contains("Waits up to `seconds`"), "{screen}");
    assert!(screen.contains("^C"), "{screen}");
    assert!(screen.contains('2'), "{screen}");
    let history = d.read("history");
    assert!(history.contains("let answer_value = 40;"), "{history}");
}

#[test]
fn reads_stdin_keeps_nodes_and_prints_yaml() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let input = format!("let n = node(\"{ip}\", #{{ insecure: true }});\nlet v = n.version();\nv.tag\nlet m = #{{\n  disks: n.get(\"disks\").len(),\n  links: [\"lo\", \"eth0\"]\n}};\nm\nn.get(\"links\", \"nope\")\nnosuch()\n");
    let o = d
        .talm(["repl"])
        .env("TALM_REPL_HISTORY", d.join("history"))
        .stdin(&input)
        .ok();
    assert!(o.stdout.contains("v1.13.7"), "{}", o.stdout);
    assert!(
        o.stdout.contains("disks: 1\nlinks:\n    - lo\n    - eth0"),
        "{}",
        o.stdout
    );
    assert!(
        o.stderr.contains("Function not found: nosuch"),
        "{}",
        o.stderr
    );
    drop(nodes);
}

#[test]
fn functions_variables_and_imports_are_kept_and_errors_point_at_their_place() {
    let d = Dir::new();
    let input = "fn dbl(x) { x * 2 }\ndbl(21)\nlet base = 20;\nimport \"talm/fleet\" as fleet;\nfleet::joined([\"a\", \"b\"])\ndbl(base) + 2\nlet m = dbl(base) + nosuch(2);\n";
    let o = d
        .talm(["repl"])
        .env("TALM_REPL_HISTORY", d.join("history"))
        .stdin(input)
        .ok();
    assert_eq!(o.stdout, "42\na, b\n42\n");
    assert_eq!(
        o.stderr,
        "talm repl: Rhai with the talm API. `help` lists it, Tab completes, Ctrl-D ends.\n\
         let m = dbl(base) + nosuch(2);\n\
         \x20                   ^\n\
         Error: repl:1:21: Function not found: nosuch (i64)\n\
         hint: the script repl failed at the position shown\n"
    );
}
