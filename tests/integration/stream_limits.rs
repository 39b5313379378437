//! Streams from a node that are larger, slower or longer than expected (the simulator's `flood`
//! fault), through the real binary: talm prints as the data comes, its memory stays bounded
//! whatever the node sends, and a call deadline measures silence, not the length of a stream.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::net;
use crate::common::sim::Nodes;
use crate::common::streaming::Streaming;
use crate::common::Dir;
use talm::sim::net::faults::Faults;
use talm::sim::net::flood::Flood;

/// The lines of a flooded talm's output a test keeps (the rest is read and dropped).
const KEPT: usize = 16;
/// How much a flooded talm must have read before its memory is looked at.
const FLOODED: u64 = 128 << 20;
/// The most memory (peak resident set) talm may reach meanwhile.
const BOUND_KIB: u64 = 96 << 10;

/// A node whose `call` stream is `chunk` over and over (`count` times, then silent; or endless),
/// and the fault, which counts what was sent.
fn flooded(call: &str, chunk: String, count: Option<u64>) -> (String, Nodes, Flood) {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let flood = Flood {
        calls: vec![call.into()],
        chunk,
        count,
        then_silent: true,
        ..Flood::default()
    };
    nodes.node(&ip).set_faults(Faults {
        flood: Some(flood.clone()),
        ..Faults::default()
    });
    (ip, nodes, flood)
}

/// What a streaming talm's process shows of its memory.
trait Memory {
    fn proc_field(&self, file: &str, key: &str) -> u64;
    fn peak_after(&self, flood: &Flood, bytes: u64) -> u64;
}

impl Memory for Streaming {
    /// A field of /proc/PID/FILE, in its unit.
    fn proc_field(&self, file: &str, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc/PID/{file}:\n{text}"))
    }

    /// Waits (up to 120 s) until the node has sent `bytes`, then talm's peak memory in KiB.
    fn peak_after(&self, flood: &Flood, bytes: u64) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(120);
        while flood.sent() < bytes {
            assert!(
                Instant::now() < deadline,
                "the node sent {bytes} bytes within 120s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        self.proc_field("status", "VmHWM:")
    }
}

/// A log line of 1 KiB.
fn log_line() -> String {
    format!("a line of a log that never ends {}", "=".repeat(991))
}

/// 64 KiB of log lines.
fn log_lines() -> String {
    format!("{}\n", log_line()).repeat(64)
}

#[test]
fn logs_prints_an_endless_log_as_it_comes_in_bounded_memory() {
    let (ip, _nodes, flood) = flooded("Logs", log_lines(), None);
    let d = Dir::new();
    let t = Streaming::keeping(
        &d,
        &["logs", "machined", "--tail", "5", "-n", &ip, "-i"],
        KEPT,
    );
    assert_eq!(t.line(), format!("{ip}: {}", log_line()));
    let peak = t.peak_after(&flood, FLOODED);
    assert!(peak < BOUND_KIB, "peak memory {peak} KiB");
}

#[test]
fn logs_follow_cuts_a_line_that_never_ends() {
    let (ip, _nodes, flood) = flooded("Logs", "x".repeat(8 << 10), None);
    let d = Dir::new();
    let t = Streaming::keeping(&d, &["logs", "machined", "-F", "-n", &ip, "-i"], KEPT);
    assert_eq!(t.line(), format!("{ip}: {}", "x".repeat(64 << 10)));
    assert_eq!(t.line(), format!("{ip}: {}", "x".repeat(64 << 10)));
    let peak = t.peak_after(&flood, FLOODED);
    assert!(peak < BOUND_KIB, "peak memory {peak} KiB");
}

#[test]
fn dmesg_tail_keeps_only_the_last_lines_of_a_huge_history() {
    // 128 MiB of kernel log, then the stream stays open: nothing is printed yet (the last lines
    // are not known), and only those are held.
    let (ip, _nodes, flood) = flooded("Dmesg", log_lines(), Some(FLOODED / (64 << 10)));
    let d = Dir::new();
    let t = Streaming::keeping(&d, &["dmesg", "--tail", "2", "-n", &ip, "-i"], KEPT);
    let peak = t.peak_after(&flood, FLOODED);
    assert!(peak < BOUND_KIB, "peak memory {peak} KiB");
    assert!(t.lines.try_recv().is_err(), "nothing printed yet");
}

#[test]
fn dmesg_tail_prints_the_last_lines_when_the_log_ends() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        flood: Some(Flood {
            calls: vec!["Dmesg".into()],
            chunk: "kern: one\nkern: two\nkern: three\n".into(),
            count: Some(3),
            ..Flood::default()
        }),
        ..Faults::default()
    });
    let d = Dir::new();
    let out = d
        .talm(["dmesg", "--tail", "2", "-n", &ip, "-i"])
        .ok()
        .stdout;
    assert_eq!(out, format!("{ip}: kern: two\n{ip}: kern: three\n"));
}

/// A Read stream of 15 chunks, one every 200 ms: longer than the call timeout, never silent
/// for that long.
#[test]
fn read_outlasts_the_call_timeout_while_data_flows() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        flood: Some(Flood {
            calls: vec!["Read".into()],
            chunk: "0123456789\n".into(),
            count: Some(15),
            every: Some(Duration::from_millis(200)),
            ..Flood::default()
        }),
        ..Faults::default()
    });
    let d = Dir::new();
    let args = [
        "read",
        "/etc/hostname",
        "-n",
        &ip,
        "-i",
        "--call-timeout",
        "1s",
    ];
    let out = d.talm(args).ok().stdout;
    assert_eq!(out, "0123456789\n".repeat(15));

    // Silent for longer than the timeout after two chunks: the deadline still holds.
    nodes.node(&ip).set_faults(Faults {
        flood: Some(Flood {
            calls: vec!["Read".into()],
            chunk: "0123456789\n".into(),
            count: Some(2),
            every: Some(Duration::from_millis(200)),
            then_silent: true,
            ..Flood::default()
        }),
        ..Faults::default()
    });
    let started = Instant::now();
    d.talm(args)
        .expect()
        .stderr(format!(
            "\
Error: node {ip}: Read: no answer within 1s
hint: the node is slow or unreachable; raise --call-timeout, or check the network
"
        ))
        .status(1)
        .run();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the deadline held"
    );
}

/// SIGTERM in the middle of a slow snapshot: talm ends as the signal would and leaves no
/// `.part` behind.
#[test]
fn etcd_snapshot_leaves_no_part_file_when_terminated() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        flood: Some(Flood {
            calls: vec!["EtcdSnapshot".into()],
            chunk: "x".repeat(4096),
            every: Some(Duration::from_millis(100)),
            ..Flood::default()
        }),
        ..Faults::default()
    });
    let d = Dir::new();
    let mut t = Streaming::keeping(&d, &["etcd", "snapshot", "db.snap", "-n", &ip, "-i"], KEPT);
    let part = d.join("db.snap.part");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::metadata(&part).map_or(0, |m| m.len()) == 0 {
        assert!(
            Instant::now() < deadline,
            "db.snap.part written to within 30s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = t.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = t.child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + 15), "{status:?}");
    assert!(!part.exists(), "db.snap.part is left behind");
    assert!(!d.join("db.snap").exists(), "no snapshot saved");
}

#[test]
fn a_corrupt_copy_stream_is_named_with_the_node_and_what_was_kept() {
    // Junk instead of a gzip'd tar, and then the stream stays open: the call must end at the
    // damage, not at the deadline.
    let (ip, _nodes, _flood) = flooded("Copy", "not a gzip stream\n".into(), Some(3));
    let d = crate::common::Dir::new();
    let o = d
        .talm(["cp", "/etc", "out", "-n", &ip, "-e", &ip, "-i"])
        .run();
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!(
            "Error: node {ip}: error copying: the archive the node sent does not unpack: error reading tar header: invalid gzip header\nhint: what was unpacked before it stays in out; retry, or look at the node's files with `talm list /etc`\n"
        )
    );
}

#[test]
fn an_empty_or_junk_snapshot_is_named_and_not_saved() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    for count in [0, 3] {
        nodes.node(&ip).set_faults(Faults {
            flood: Some(Flood {
                calls: vec!["EtcdSnapshot".into()],
                chunk: "junk".into(),
                count: Some(count),
                ..Flood::default()
            }),
            ..Faults::default()
        });
        let o = d
            .talm(["etcd", "snapshot", "db.snap", "-n", &ip, "-i"])
            .run();
        assert_eq!(o.code, 1);
        assert_eq!(
            o.stderr,
            format!(
                "Error: node {ip}: the snapshot the node sent is no etcd snapshot: sha256 checksum not found (size {}); nothing was saved to \"db.snap\"\nhint: check etcd on the node (`talm etcd status`, `talm service etcd`), then take the snapshot again\n",
                count * 4
            )
        );
        assert!(!d.exists("db.snap") && !d.exists("db.snap.part"));
    }
}

#[test]
fn a_log_read_whole_by_a_playbook_is_cut_off_at_the_limit() {
    let (ip, _nodes, _flood) = flooded("Logs", log_lines(), None);
    let d = Dir::new();
    d.write(
        "logs.rhai",
        &format!("let n = node(\"{ip}\", #{{ insecure: true }});\nout(n.logs(\"machined\", #{{}}).len().to_string());\n"),
    );
    let o = d.talm(["run", "logs.rhai"]).run();
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert_eq!(o.stdout, "");
    assert_eq!(
        o.stderr,
        format!(
            "Error: node {ip}: Logs: the answer passed 64 MiB, more than talm holds in memory for one call\n\
             hint: the node sends without end: check it (`talm dmesg`, `talm service`); logs of any length are read line by line by `talm logs` (with --tail)\n"
        )
    );
}
