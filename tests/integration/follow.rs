//! Streams that run until stopped: `logs -F`, `dmesg -F`, `get -w` through the real binary
//! (reading a few lines, then stopping the child), and the playbook API `n.follow` / `n.watch`
//! with a stop condition.

use std::time::Duration;

use crate::common::net;
use crate::common::sim::Nodes;
use crate::common::streaming::Streaming;
use crate::common::Dir;

#[test]
fn logs_follow_streams_new_lines_from_several_nodes() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = Dir::new();
    let nodes_flag = format!("{a},{b}");
    let s = Streaming::start(
        &d,
        &[
            "logs",
            "machined",
            "-F",
            "--tail",
            "0",
            "-n",
            &nodes_flag,
            "-i",
        ],
    );
    // Nothing old (--tail 0); lines written now arrive, each prefixed with its node.
    std::thread::sleep(Duration::from_millis(500));
    nodes.node(&b).journal.talos("first new line");
    let l = s.line();
    assert!(
        l.starts_with(&format!("{b}: ")) && l.ends_with("[talos] first new line"),
        "{l}"
    );
    nodes.node(&a).journal.talos("second new line");
    let l = s.line();
    assert!(
        l.starts_with(&format!("{a}: ")) && l.ends_with("[talos] second new line"),
        "{l}"
    );
}

#[test]
fn dmesg_follow_prints_history_then_new_records() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let s = Streaming::start(&d, &["dmesg", "-F", "-n", &ip, "-i"]);
    let history = s.until("link up");
    assert!(history[0].contains("Linux version"), "{history:?}");
    // One node is prefixed too, as talosctl prints every line with its node.
    assert!(
        history[0].starts_with(&format!("{ip}: kern: ")),
        "{history:?}"
    );
    nodes.node(&ip).journal.talos("kernel sees this");
    let l = s.until("kernel sees this");
    assert!(
        l.last()
            .unwrap()
            .starts_with(&format!("{ip}: user: warning: [")),
        "{l:?}"
    );
}

#[test]
fn get_watch_prints_what_exists_then_changes() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let s = Streaming::start(&d, &["get", "links", "-w", "-n", &ip, "-i"]);
    let head = s.line();
    assert_eq!(
        head.split_whitespace().take(7).collect::<Vec<_>>(),
        ["NODE", "*", "NAMESPACE", "TYPE", "ID", "VERSION", "ALIAS"]
    );
    let rows = [s.line(), s.line()];
    for (row, id) in rows.iter().zip(["eth0", "lo"]) {
        assert_eq!(
            row.split_whitespace().take(6).collect::<Vec<_>>(),
            [ip.as_str(), "+", "network", "LinkStatus", id, "1"],
            "{row}"
        );
    }
    // A change shows as an update row (a blank mark) as it happens.
    nodes.node(&ip).set_label(
        "network",
        "LinkStatuses.net.talos.dev",
        "eth0",
        "x",
        Some("y"),
    );
    let row = s.line();
    assert_eq!(
        row.split_whitespace().take(6).collect::<Vec<_>>(),
        [ip.as_str(), "network", "LinkStatus", "eth0", "2", "ether"],
        "{row}"
    );
    assert!(row.starts_with(&format!("{ip}       network")), "{row}");
}

#[test]
fn playbooks_follow_and_watch_with_a_stop_condition() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    d.write(
        "streams.rhai",
        &format!(
            r#"
let n = node("{ip}", #{{ insecure: true }});
let seen = [];
n.watch("links", |e| {{
    seen.push(e.event + " " + if e.resource.metadata.id == "" {{ "-" }} else {{ e.resource.metadata.id }});
    e.event != "bootstrapped"
}});
out(seen.reduce(|s, x| s + x + "\n", "") );
let lines = 0;
n.follow("kernel", #{{ tail: -1 }}, |line| {{
    lines += 1;
    out(line + "\n");
    lines < 2
}});
n.watch("links", "nosuch", |e| {{ out("single: " + e.event + "\n"); false }});
"#
        ),
    );
    let o = d.talm(["run", "streams.rhai"]).ok();
    let lines: Vec<&str> = o.stdout.lines().collect();
    assert_eq!(
        lines[..3],
        ["created eth0", "created lo", "bootstrapped -"],
        "{}",
        o.stdout
    );
    assert!(lines[3].contains("Linux version"), "{}", o.stdout);
    assert_eq!(lines[5], "single: destroyed", "{}", o.stdout);
    assert_eq!(lines.len(), 6, "{}", o.stdout);
}

#[test]
fn events_show_history_then_new_events_two_lines_each() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    let s = Streaming::start(&d, &["events", "--tail", "-1", "-n", &ip, "-i"]);
    let head = s.line();
    assert_eq!(
        head.split_whitespace().collect::<Vec<_>>(),
        ["NODE", "ID", "EVENT", "ACTOR", "SOURCE", "MESSAGE"]
    );
    let first = s.line();
    let cells: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(cells[0], ip, "{first}");
    assert_eq!(cells[1].len(), 20, "an xid: {first}");
    assert_eq!(cells[2], "talos/runtime/machine.SequenceEvent");
    // The second line sits under the first: no actor (the node's own boot), source, action.
    let second = s.line();
    assert_eq!(
        second.split_whitespace().collect::<Vec<_>>(),
        ["boot", "START"]
    );
    assert_eq!(
        second.find("boot"),
        first.find(cells[1]),
        "{first}\n{second}"
    );
    let rest = s.until("unmet conditions");
    assert!(
        rest.iter()
            .any(|l| l.contains("apid") && l.contains("RUNNING: Health check successful")),
        "{rest:?}"
    );
    // A new event arrives as it happens, with the actor that caused it.
    nodes
        .node(&ip)
        .events
        .sequence([0; 3], "reboot", true, "actor-1");
    let l = s.line();
    assert!(l.ends_with("talos/runtime/machine.SequenceEvent"), "{l}");
    assert_eq!(
        s.line().split_whitespace().collect::<Vec<_>>(),
        ["actor-1", "reboot", "START"]
    );
}

#[test]
fn playbooks_read_events_and_filter_by_actor() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes
        .node(&ip)
        .events
        .sequence([0; 3], "reboot", true, "actor-7");
    let d = Dir::new();
    d.write(
        "events.rhai",
        &format!(
            r#"
let n = node("{ip}", #{{ insecure: true }});
let seen = [];
n.events(#{{ tail: -1 }}, |e| {{ seen.push(e.source + " " + e.message); e.source != "MAINTENANCE" }});
out(seen[0] + "|" + seen[seen.len() - 1] + "\n");
n.events(#{{ tail: -1, actor_id: "actor-7" }}, |e| {{ out(e.actor_id + " " + e.source + " " + e.message + "\n"); false }});
"#
        ),
    );
    let o = d.talm(["run", "events.rhai"]).ok();
    assert_eq!(
        o.stdout,
        "boot START|MAINTENANCE ready: false, unmet conditions: [config]\nactor-7 reboot START\n"
    );
}

#[test]
fn logs_dash_f_is_told_talms_follow_flag() {
    // talosctl's `logs -f` is talm's `-F`: -f names node files, so the line is refused with a tip.
    let d = Dir::new();
    let tip = "  tip: talosctl's -f (follow) is -F (--follow) in talm; talm's -f names node files (--file)\n";
    let o = d.talm(["logs", "kubelet", "-f"]).run();
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .starts_with("error: a value is required for '--file <PATH>' but none was supplied\n"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains(&format!("\n\n{tip}")), "{}", o.stderr);
    let o = d.talm(["dmesg", "-f"]).run();
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains(tip), "{}", o.stderr);
    // Another command's -f is its own business.
    let o = d.talm(["apply", "-f"]).run();
    assert_eq!(o.code, 1);
    assert!(!o.stderr.contains("tip: talosctl"), "{}", o.stderr);
}
