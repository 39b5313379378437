//! Saving what a node sends to a local file that cannot take it, through the real binary with
//! its file size limited (RLIMIT_FSIZE, so writes fail with EFBIG as on a full disk): the
//! error names the node, what was being done, the path and the OS error, says what was left,
//! and hints at what to do.

use crate::common::net;
use crate::common::sim::{template_node, Nodes};
use crate::common::Dir;
use talm::sim::net::faults::Faults;
use talm::sim::net::flood::Flood;

/// The limit talm's files may grow to.
const LIMIT: u64 = 64 << 10;
/// What talm says of a write past the file size limit.
const TOO_LARGE_HINT: &str = "hint: the file passed the largest size allowed here (the file system's limit, or this process's `ulimit -f`): raise the limit, or choose a path on a file system that holds files this large";

#[test]
fn a_snapshot_that_cannot_be_written_names_the_file_and_removes_the_part() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    // A snapshot stream of 256 KiB, four times what the file may hold.
    nodes.node(&ip).set_faults(Faults {
        flood: Some(Flood {
            calls: vec!["EtcdSnapshot".into()],
            chunk: "x".repeat(4096),
            count: Some(64),
            ..Flood::default()
        }),
        ..Faults::default()
    });
    let d = Dir::new();
    let o = d
        .talm_file_size_limit(LIMIT, ["etcd", "snapshot", "db.snap", "-n", &ip, "-i"])
        .run();
    assert_eq!(
        o.stderr,
        format!(
            "Error: node {ip}: etcd snapshot: cannot write \"db.snap.part\": File too large (os error 27); the partial file \"db.snap.part\" was removed; nothing was saved to \"db.snap\"\n{TOO_LARGE_HINT}\n"
        )
    );
    assert_eq!((o.code, o.stdout.as_str()), (1, ""));
    assert!(!d.exists("db.snap") && !d.exists("db.snap.part"));
}

#[test]
fn a_copied_file_that_cannot_be_written_is_named_and_removed() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, &ip));
    nodes.configure(&d, &ip);
    // The node's CA bundle is larger than 2 KiB; its folder is made before it.
    let o = d
        .talm_file_size_limit(2048, ["cp", "/etc/ssl", "out", "-f", "nodes/node1.yaml"])
        .run();
    assert_eq!(
        o.stderr,
        format!(
            "Error: node {ip}: copy /etc/ssl: cannot write \"out/certs/ca-certificates.crt\": File too large (os error 27); it was not written (nothing of it is left); what was unpacked before it stays in out\n{TOO_LARGE_HINT}\n"
        )
    );
    assert_eq!((o.code, o.stdout.as_str()), (1, ""));
    assert!(d.exists("out/certs"));
    assert!(!d.exists("out/certs/ca-certificates.crt"));
}
