//! Failures of node commands read as talosctl prints them: its first lines (`error executing
//! bootstrap: 1 error occurred:` and the node's status in grpc-go's words), talm's hint after.
//! A node's own refusal comes back through apid named by the node, in go-multierror's list; a
//! refusal of the endpoint (the client's role) or a failed connection is the error alone.

use crate::common::expect::addrs;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};
use crate::health_etcd::reader_talosconfig;
use talm::sim::net::faults::Faults;

const REFUSED_HINT: &str = "hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment\n";

/// A generic project with `ip` configured as its control plane (`nodes/cp.yaml`).
fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, ip));
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

#[test]
fn a_nodes_refusal_is_listed_by_node() {
    let [ip] = net::addrs();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let talm = |args: &[&str]| d.talm(args.iter().chain(&["-f", "nodes/cp.yaml"]));

    talm(&["etcd", "members"]).expect().mask(addrs).stderr("\
Error: error getting members: 1 error occurred:
\t* $A1: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"
").status(1).run();
    talm(&["bootstrap"]).ok();
    talm(&["bootstrap"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: 1 error occurred:
\t* $A1: rpc error: code = AlreadyExists desc = etcd data directory is not empty


",
        )
        .status(1)
        .run();
    talm(&["service", "nosuch", "start"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: error starting service: 1 error occurred:
\t* $A1: rpc error: code = Unknown desc = service \"nosuch\" not defined


",
        )
        .status(1)
        .run();
    talm(&["restart", "nosuch"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: error restarting process: 1 error occurred:
\t* $A1: rpc error: code = Unknown desc = container \"nosuch\" not found


",
        )
        .status(1)
        .run();
    // Streams say the status alone; list prints its header first, then the errors.
    talm(&["read", "/nope"])
        .expect()
        .stderr(
            "\
Error: error reading: rpc error: code = NotFound desc = stat /nope: no such file or directory
",
        )
        .status(1)
        .run();
    talm(&["list", "/nope"])
        .expect()
        .stdout("NODE   NAME\n")
        .stderr(
            "\
Error: 1 error occurred:
 rpc error: code = Unknown desc = lstat /nope: no such file or directory
",
        )
        .status(1)
        .run();

    // The endpoint refuses a reader before any node is asked.
    d.write("reader.talosconfig", &reader_talosconfig(&d));
    d.talm(["bootstrap", "-f", "nodes/cp.yaml", "--talosconfig", "reader.talosconfig"])
        .expect().mask(addrs).stderr("\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: rpc error: code = PermissionDenied desc = not authorized
hint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`
").status(1).run();
}

#[test]
fn a_node_that_is_down_fails_the_call() {
    let d = Dir::project("generic");
    let nobody = net::addr();
    let talm = |args: &[&str]| {
        d.talm(args.iter().chain(&["-n", &nobody, "-e", &nobody]))
            .expect()
            .mask(addrs)
            .status(1)
    };
    let refused = "rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"";
    talm(&["bootstrap"])
        .stderr(format!("- talm: bootstrapping etcd on $A1\nError: error executing bootstrap: {refused}\n{REFUSED_HINT}"))
        .run();
    for (args, prefix) in [
        (&["read", "/etc/hostname"][..], "error reading file"),
        (&["list", "/"], "error fetching logs"),
        (&["logs", "kubelet"], "error fetching logs"),
        (&["copy", "/etc/hostname", "-"], "error copying"),
        (&["copy", "/etc/hostname", "out"], "error copying"),
        (&["kubeconfig"], "error copying"),
        (&["service"], "error listing services"),
        (&["service", "apid", "stop"], "error starting service"),
        (&["restart", "apid"], "error restarting process"),
        (&["etcd", "members"], "error getting members"),
    ] {
        talm(args)
            .stderr(format!("Error: {prefix}: {refused}\n{REFUSED_HINT}"))
            .run();
    }
}

#[test]
fn events_say_a_nodes_error_once() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        fail: [(
            "Events".to_string(),
            "Unavailable: events are down".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    let d = Dir::new();
    d.talm(["events", "-n", &ip, "-i"])
        .expect()
        .stdout("")
        .stderr("Error: 1 error occurred:\n rpc error: code = Unavailable desc = events are down\n")
        .status(1)
        .run();
    // A node that is down: the call's error alone.
    let nobody = net::addr();
    d.talm(["events", "-n", &nobody, "-i"])
        .expect()
        .mask(addrs)
        .stderr(format!("Error: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"\n{REFUSED_HINT}"))
        .status(1)
        .run();
}

#[test]
fn logs_say_a_nodes_refusal_as_talosctl() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        fail: [("Logs".to_string(), "Unavailable: logs are down".to_string())].into(),
        ..Faults::default()
    });
    // The node's refusal comes inside apid's reply: `ERROR:` once, exit 1, nothing more.
    Dir::new()
        .talm(["logs", "apid", "-n", &ip, "-i"])
        .expect()
        .stdout("")
        .stderr("ERROR: rpc error: code = Unavailable desc = logs are down\n")
        .status(1)
        .run();
}

#[test]
fn dmesg_reads_its_stream_as_talosctl() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    nodes.node(&ip).set_faults(Faults {
        fail: [("Dmesg".to_string(), "Unavailable: kmsg is gone".to_string())].into(),
        ..Faults::default()
    });
    let d = Dir::new();
    d.talm(["dmesg", "-n", &ip, "-i"])
        .expect()
        .stderr("Error: 1 error occurred:\n rpc error: code = Unavailable desc = kmsg is gone\n")
        .status(1)
        .run();
    let nobody = net::addr();
    d.talm(["dmesg", "-n", &nobody, "-i"])
        .expect()
        .mask(addrs)
        .stderr(format!("Error: error getting dmesg: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"\n{REFUSED_HINT}"))
        .status(1)
        .run();
}
