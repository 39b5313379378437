//! Progress of work for several nodes at once (`parallel()`, the bring-up playbook): off a
//! terminal every line an item prints carries its node (`NODE: line`), whole and in order per
//! node; under a terminal (util-linux `script`) each node has a line with its stage, a total
//! bar counts the items, and lines logged meanwhile are all there.

use std::collections::BTreeMap;

use crate::common::sim::Nodes;
use crate::common::{net, Dir};

const BRINGUP: &str = include_str!("../../scripts/bringup.rhai");

/// Stderr split into its unprefixed lines, in order, and each node's lines, in order.
fn by_node<'a>(text: &'a str, nodes: &[String]) -> (Vec<&'a str>, BTreeMap<String, Vec<&'a str>>) {
    let mut plain = Vec::new();
    let mut each: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    'line: for line in text.lines() {
        for n in nodes {
            if let Some(rest) = line.strip_prefix(&format!("{n}: ")) {
                each.entry(n.clone()).or_default().push(rest);
                continue 'line;
            }
        }
        plain.push(line);
    }
    (plain, each)
}

#[test]
fn bring_up_off_a_terminal_prefixes_each_line_with_its_node() {
    let ips: [String; 3] = net::addrs();
    let _nodes = Nodes::start(&ips, |_| {});
    let d = Dir::new();
    d.write("bringup.rhai", BRINGUP);
    let o = d
        .talm(["run", "bringup.rhai", "cluster", &ips[0], &ips[1], &ips[2]])
        .ok();
    let root = d.path().join("cluster").canonicalize().unwrap();
    let root = root.display();
    let (plain, each) = by_node(&o.stderr, &ips);
    let mut want_plain = vec![
        format!("[1/7] init: cozystack project \"mycluster\" in {root}, control-plane endpoint https://{}:6443", ips[0]),
        "[2/7] template -i: discover 3 node(s) in maintenance mode and render their node files".to_string(),
        "[3/7] apply -i: send each node its config; they install and reboot".to_string(),
        "[4/7] wait until every node answers with the cluster's certificate".to_string(),
        format!("[5/7] bootstrap etcd on {}", ips[0]),
        "[6/7] kubeconfig".to_string(),
    ];
    for ip in &ips {
        want_plain.push(format!("  {ip}: Talos v1.13.7, configured (RBAC true)"));
    }
    want_plain.push("[7/7] the cluster's nodes, through the Kubernetes API".to_string());
    want_plain.push(format!(
        "done: {root}/kubeconfig (kubectl --kubeconfig {root}/kubeconfig get nodes)"
    ));
    let plain: Vec<&str> = plain
        .into_iter()
        .filter(|l| l.starts_with('[') || l.starts_with("  ") || l.starts_with("done: "))
        .collect();
    assert_eq!(plain, want_plain, "{}", o.stderr);
    for (i, ip) in ips.iter().enumerate() {
        let file = format!("{root}/nodes/node{}.yaml", i + 1);
        assert_eq!(
            each.get(ip).cloned().unwrap_or_default(),
            [
                format!("- talm: file={file}, nodes=[{ip}], endpoints=[{ip}], templates=[templates/controlplane.yaml]"),
                "Updated.".to_string(),
                format!("- talm: file={file}, nodes=[{ip}], endpoints=[{ip}]"),
                format!("node {ip}: talm: drift verification unavailable on maintenance connection"),
                "Applied configuration without a reboot".to_string(),
            ],
            "{ip}:\n{}",
            o.stderr
        );
    }
}

#[test]
fn several_items_prefix_stdout_and_stderr_one_item_does_not() {
    let d = Dir::new();
    d.write(
        "p.rhai",
        r#"
parallel(["10.0.0.1", "10.0.0.2"], |ip| {
    log(`hello from ${ip}`);
    out("half ");
    out("a line\nand the rest");
    warn("careful");
}, 1);
parallel(["10.0.0.3"], |ip| { log(`alone ${ip}`); out("one\n"); });
parallel([1, 2], |x| { log(`item ${x}`); }, 1);
parallel([#{ node: "10.0.0.4" }, #{ other: 1 }], |m| { log("map"); }, 1);
"#,
    );
    let o = d.talm(["run", "p.rhai"]).ok();
    assert_eq!(
        o.stderr,
        "10.0.0.1: hello from 10.0.0.1\n10.0.0.1: WARN: careful\n\
         10.0.0.2: hello from 10.0.0.2\n10.0.0.2: WARN: careful\n\
         alone 10.0.0.3\n\
         1: item 1\n2: item 2\n\
         10.0.0.4: map\n#2: map\n"
    );
    assert_eq!(
        o.stdout,
        "10.0.0.1: half a line\n10.0.0.1: and the rest\n\
         10.0.0.2: half a line\n10.0.0.2: and the rest\n\
         one\n"
    );
}

#[test]
fn lines_of_items_running_at_once_never_mix() {
    let d = Dir::new();
    d.write(
        "many.rhai",
        r#"
let names = [];
for i in 1..=8 { names.push(`node-${i}`); }
let xs = "";
for i in 0..120 { xs += "x"; }
parallel(names, |name| {
    for k in 0..300 {
        log(`line ${k} of ${name}: ${xs}`);
        out("data " + k + " of " + name + "\n");
    }
});
"#,
    );
    let o = d.talm(["run", "many.rhai"]).ok();
    let x = "x".repeat(120);
    for (text, what) in [(&o.stderr, "line"), (&o.stdout, "data")] {
        let mut next: BTreeMap<String, usize> = BTreeMap::new();
        for line in text.lines() {
            let (name, rest) = line.split_once(": ").expect("a prefixed line");
            let k = next.entry(name.to_string()).or_default();
            let want = if what == "line" {
                format!("line {k} of {name}: {x}")
            } else {
                format!("data {k} of {name}")
            };
            assert_eq!(rest, want, "{what} lines of {name} in order, whole");
            *k += 1;
        }
        assert_eq!(next.len(), 8, "{what}: every node");
        assert!(next.values().all(|k| *k == 300), "{what}: {next:?}");
    }
}

#[test]
fn an_item_that_names_no_node_takes_the_node_its_work_dials() {
    let ips: [String; 2] = net::addrs();
    let _nodes = Nodes::start(&ips, |_| {});
    let d = Dir::new();
    d.write(
        "p.rhai",
        &format!(
            r#"
let ips = ["{}", "{}"];
let r = parallel([0, 1], |i| {{
    let n = node(ips[i], #{{ insecure: true }});
    log(`tag ${{n.version().tag}}`);
}}, 1);
"#,
            ips[0], ips[1]
        ),
    );
    let o = d.talm(["run", "p.rhai"]).ok();
    assert_eq!(
        o.stderr,
        format!("{}: tag v1.13.7\n{}: tag v1.13.7\n", ips[0], ips[1])
    );
}

/// Columns of the terminal the tests run talm under.
const COLUMNS: usize = 100;

/// Runs `talm ARGS` under a pseudo-terminal of `COLUMNS` columns (util-linux `script`); returns
/// whether it succeeded and the rows the terminal showed, escape sequences left out: the
/// progress lines are drawn padded to the terminal's width, so every `COLUMNS` characters
/// after a carriage return or line end make a row.
fn rows_in_tty(d: &Dir, args: &str) -> (bool, Vec<String>) {
    let cmd = format!(
        "stty cols {COLUMNS} rows 40; {} {args}",
        env!("CARGO_BIN_EXE_talm")
    );
    let out = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` runs talm under a terminal");
    let raw = String::from_utf8_lossy(&out.stdout);
    let mut text = String::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    let mut rows = Vec::new();
    for segment in text.split(['\n', '\r']) {
        let chars: Vec<char> = segment.chars().collect();
        for row in chars.chunks(COLUMNS) {
            let row: String = row.iter().collect();
            if !row.trim().is_empty() {
                rows.push(row.trim_end().to_string());
            }
        }
    }
    (out.status.success(), rows)
}

#[test]
fn a_terminal_shows_each_nodes_stage_and_a_total_without_losing_lines() {
    let ips: [String; 3] = net::addrs();
    let _nodes = Nodes::start(&ips, |_| {});
    let d = Dir::new();
    d.write(
        "p.rhai",
        &format!(
            r#"
let ips = ["{}", "{}", "{}"];
let r = parallel(ips, |ip| {{
    let n = node(ip, #{{ insecure: true }});
    let facts = n.discover();
    sleep(0.6);
    log(`found Talos ${{facts.version.tag}}`);
    sleep(0.3);
}});
log("all found");
"#,
            ips[0], ips[1], ips[2]
        ),
    );
    let (ok, lines) = rows_in_tty(&d, "run p.rhai");
    assert!(ok, "{}", lines.join("\n"));
    let shown = |ip: &str, word: &str| {
        lines.iter().any(|l| {
            l.trim_start()
                .strip_prefix(ip)
                .is_some_and(|rest| rest.trim_start() == word)
        })
    };
    for ip in &ips {
        assert!(
            shown(ip, "discover"),
            "{ip} discover:\n{}",
            lines.join("\n")
        );
        assert!(shown(ip, "done"), "{ip} done:\n{}", lines.join("\n"));
        let logged = format!("{ip}: found Talos v1.13.7");
        assert_eq!(
            lines.iter().filter(|l| **l == logged).count(),
            1,
            "{logged}:\n{}",
            lines.join("\n")
        );
    }
    assert!(
        lines.iter().any(|l| l.contains("] 3/3 done")),
        "the total bar:\n{}",
        lines.join("\n")
    );
    assert!(
        lines.iter().any(|l| l == "all found"),
        "{}",
        lines.join("\n")
    );
}

/// The last row the terminal showed for `ip`'s progress line (`  IP  word`).
fn last_row_of<'a>(rows: &'a [String], ip: &str) -> Option<&'a str> {
    rows.iter().rev().map(String::as_str).find(|r| {
        r.trim_start()
            .strip_prefix(ip)
            .is_some_and(|rest| rest.starts_with(' '))
    })
}

/// The last count the total bar showed: `2/4 done, 1 failed` (the bar and the time left out).
fn last_total(rows: &[String]) -> Option<String> {
    rows.iter().rev().find_map(|r| {
        let (_, rest) = r.split_once("] ")?;
        let (count, _) = rest.rsplit_once(" (")?;
        count.contains(" done").then(|| count.to_string())
    })
}

#[test]
fn a_terminal_shows_how_each_node_ended_and_counts_the_nodes_done() {
    let ips: [String; 4] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    let d = Dir::project("generic");
    for (i, ip) in ips.iter().enumerate() {
        d.write(
            &format!("nodes/n{}.yaml", i + 1),
            &crate::common::sim::template_node(&d, ip),
        );
    }
    // The third node answers nothing: one at a time, the fourth is never started.
    nodes
        .node(&ips[2])
        .set_faults(talm::sim::net::faults::Faults {
            fail: [("*".to_string(), "Unavailable: network is down".to_string())].into(),
            ..Default::default()
        });
    let (ok, rows) = rows_in_tty(&d, "apply -f nodes/ -i --dry-run --parallel 1");
    assert!(!ok, "{}", rows.join("\n"));
    // A node's line, cut to the terminal's width.
    let width = ips.iter().map(|ip| ip.len()).max().unwrap();
    let line = |ip: &str, end: &str| {
        let full = format!("  {ip:width$}  {end}");
        let cut: String = full.chars().take(COLUMNS).collect();
        cut.trim_end().to_string()
    };
    let ends: Vec<Option<&str>> = ips.iter().map(|ip| last_row_of(&rows, ip)).collect();
    let want = [
        line(&ips[0], "done"),
        line(&ips[1], "done"),
        line(
            &ips[2],
            &format!(
                "failed: node {}: list Disks.block.talos.dev: rpc error: code = Unavailable desc = network is down",
                ips[2]
            ),
        ),
        line(&ips[3], "not started"),
    ];
    assert_eq!(
        ends,
        want.iter().map(|l| Some(l.as_str())).collect::<Vec<_>>(),
        "{}",
        rows.join("\n")
    );
    assert_eq!(
        last_total(&rows).as_deref(),
        Some("2/4 done, 1 failed, 1 not started"),
        "{}",
        rows.join("\n")
    );
}
