//! Health and etcd through the real binary against simulated nodes: the health check passing on
//! a bootstrapped cluster and failing on a powered-off node (naming node and check), etcd
//! membership as control planes join, leave and are removed, exact `etcd members`/`status`
//! tables, snapshot → reset → `bootstrap --recover-from` bringing the keyspace back, a damaged
//! snapshot refused, refusals by role, machine type and maintenance, and the Rhai API.

use crate::common::expect::addrs;
use std::time::Duration;

use talm::secrets::bundle::Bundle;
use talm::sim::net::faults::Faults;
use time::OffsetDateTime;

use crate::common::expect::HEALTH_CHECKS as CHECKS;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

mod snapshots;

/// Go's tabwriter with padding 3: every cell but a row's last as wide as its column plus 3.
fn go_table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            rows.iter()
                .filter(|r| i + 1 < r.len())
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if i + 1 < r.len() {
                out.push_str(&format!("{c:<w$}", w = width[i] + 3));
            } else {
                out.push_str(c);
            }
        }
        out.push('\n');
    }
    out
}

fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// Waits until `ok` holds (10 s at most).
fn until(what: &str, ok: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !ok() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A generic project whose control planes `cps` are configured as `nodes/cpN.yaml` (etcd
/// bootstrapped on the first, the others joined) and `worker` as `nodes/worker.yaml`.
fn cluster(nodes: &Nodes, cps: &[&str], worker: Option<&str>) -> Dir {
    let d = Dir::project("generic");
    for (i, ip) in cps.iter().enumerate() {
        let file = format!("nodes/cp{}.yaml", i + 1);
        d.write(&file, &template_node(&d, ip));
        let boots = nodes.boots(ip);
        d.talm(["apply", "-f", &file, "-i"]).ok();
        nodes.wait_reboot(ip, boots);
    }
    if let Some(w) = worker {
        let out = d
            .talm([
                "template",
                "-e",
                w,
                "--nodes",
                w,
                "-t",
                "templates/worker.yaml",
                "-i",
            ])
            .ok()
            .stdout;
        d.write("nodes/worker.yaml", &out);
        let boots = nodes.boots(w);
        d.talm(["apply", "-f", "nodes/worker.yaml", "-i"]).ok();
        nodes.wait_reboot(w, boots);
    }
    d.talm(["bootstrap", "-f", "nodes/cp1.yaml"]).ok();
    until("every control plane runs etcd", || {
        cps.iter().all(|ip| nodes.node(ip).state().etcd.is_some())
    });
    d
}

fn member_id(nodes: &Nodes, ip: &str) -> u64 {
    nodes.node(ip).state().etcd.as_ref().unwrap().id
}

fn hostname(nodes: &Nodes, ip: &str) -> String {
    nodes.node(ip).hostname().hostname
}

/// `etcd members` as talosctl prints it, asked of `node`, for the members at `ips`.
fn members_table(nodes: &Nodes, node: &str, ips: &[&str]) -> String {
    let mut rows = vec![row(&[
        "NODE",
        "ID",
        "HOSTNAME",
        "PEER URLS",
        "CLIENT URLS",
        "LEARNER",
    ])];
    for ip in ips {
        rows.push(vec![
            node.to_string(),
            format!("{:016x}", member_id(nodes, ip)),
            hostname(nodes, ip),
            format!("https://{ip}:2380"),
            format!("https://{ip}:2379"),
            "false".into(),
        ]);
    }
    go_table(&rows)
}

/// The member order of the cluster: the bootstrap node first, then the joiners in join order.
fn member_order(nodes: &Nodes, ip: &str) -> Vec<String> {
    let m = nodes.node(ip).state().etcd.clone().unwrap();
    let c = m.lock();
    c.members.iter().map(|x| x.addr.clone()).collect()
}

pub(crate) fn reader_talosconfig(d: &Dir) -> String {
    let bundle = Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let (ca, key) = bundle.os_ca().unwrap();
    let cert =
        talm::secrets::pki::client_cert(&ca, &key, &["os:reader"], OffsetDateTime::now_utc())
            .unwrap();
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    format!(
        "context: mycluster\ncontexts:\n    mycluster:\n        endpoints:\n            - 127.0.0.11\n        ca: {}\n        crt: {}\n        key: {}\n",
        b64(&ca),
        b64(&cert.cert_pem),
        b64(&cert.key.to_talos_pem().unwrap())
    )
}

#[test]
fn health_and_membership_follow_the_cluster() {
    let [a, b, c] = net::addrs();
    let nodes = Nodes::start(&[&a, &b, &c], |_| {});
    let d = cluster(&nodes, &[&a, &b, &c], None);

    // Healthy: every check reports its start and OK, in Talos's order, on stderr only.
    let o = d
        .talm(["health", "-f", "nodes/cp1.yaml", "--wait-timeout", "30s"])
        .ok();
    assert_eq!(o.stdout, "");
    let mut sorted: Vec<std::net::IpAddr> =
        [&a, &b, &c].iter().map(|ip| ip.parse().unwrap()).collect();
    sorted.sort();
    let quoted: Vec<String> = sorted.iter().map(|ip| format!("\"{ip}\"")).collect();
    let mut want = format!("discovered nodes: [{}]\n", quoted.join(" "));
    for check in CHECKS {
        want.push_str(&format!(
            "waiting for {check}: ...\nwaiting for {check}: OK\n"
        ));
    }
    assert_eq!(o.stderr, want);

    // From this client: the same checks over each node's API, the Kubernetes ones through the
    // API at --k8s-endpoint (the cluster's endpoint names no node here).
    let cps = format!("{a},{b},{c}");
    let o = d
        .talm([
            "health",
            "-f",
            "nodes/cp1.yaml",
            "--server=false",
            "--control-plane-nodes",
            &cps,
            "--k8s-endpoint",
            &a,
            "--wait-timeout",
            "10s",
        ])
        .ok();
    assert!(
        o.stderr.contains("waiting for etcd to be healthy: OK\n"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("waiting for etcd members to be consistent across nodes: OK\n"),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr
            .contains("waiting for all k8s nodes to report: OK\n"),
        "{}",
        o.stderr
    );

    // The members as the first control plane's etcd lists them, exactly.
    let order = member_order(&nodes, &a);
    assert_eq!(order.len(), 3, "{order:?}");
    assert_eq!(order[0], a, "the bootstrap node is the first member");
    let ips: Vec<&str> = order.iter().map(String::as_str).collect();
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &ips));

    // A node that is down fails the first check, naming it; the command fails.
    nodes.node(&c).power_off();
    until("the third node is down", || {
        *nodes.node(&c).up.borrow() == 0
    });
    d
        .talm(["health", "-f", "nodes/cp1.yaml", "--wait-timeout", "2s"])
        .expect().mask(addrs).stderr("\
discovered nodes: [\"$A1\" \"$A2\" \"$A3\"]
waiting for etcd to be healthy: ...
waiting for etcd to be healthy: 1 error occurred:
\t* $A3: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A3:50000: connect: connection refused\"
Error: healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded
hint: the check \"etcd to be healthy\" did not pass within 2s: 1 error occurred:
\t* $A3: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A3:50000: connect: connection refused\"
").status(1).run();
    d
        .talm([
            "health",
            "-f",
            "nodes/cp1.yaml",
            "--server=false",
            "--control-plane-nodes",
            &cps,
            "--wait-timeout",
            "1s",
        ])
        .expect().mask(addrs).stderr("\
waiting for etcd to be healthy: ...
waiting for etcd to be healthy: 1 error occurred:
\t* node $A1 (via $A2:50000): ServiceList: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"
Error: context deadline exceeded
hint: the check \"etcd to be healthy\" did not pass within 1s: 1 error occurred:
\t* node $A1 (via $A2:50000): ServiceList: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"
").status(1).run();

    // The dead member is removed through a live one; the cluster keeps quorum.
    let gone = member_id(&nodes, &c);
    d.talm([
        "etcd",
        "remove-member",
        &format!("{gone:016x}"),
        "-f",
        "nodes/cp1.yaml",
    ])
    .ok();
    let ips: Vec<&str> = order
        .iter()
        .map(String::as_str)
        .filter(|ip| *ip != c)
        .collect();
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &ips));
    d.talm([
        "etcd",
        "remove-member",
        &format!("{gone:016x}"),
        "-f",
        "nodes/cp1.yaml",
    ])
    .expect()
    .mask(addrs)
    .stdout("")
    .stderr(format!(
        "Error: 1 error occurred:\n\t* $A1: rpc error: code = NotFound desc = failed to remove member {gone}: etcdserver: member not found\n"
    ))
    .status(1)
    .run();
    d.talm(["etcd", "remove-member", "xyz", "-f", "nodes/cp1.yaml"])
        .expect().stderr("\
Error: 1 error occurred:
\t* error parsing member ID: error parsing etcd member id: strconv.ParseUint: parsing \"xyz\": invalid syntax
").status(1).run();

    // The second control plane leaves: its etcd stops, the first is alone.
    d.talm(["etcd", "leave", "-f", "nodes/cp2.yaml"]).ok();
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &[&a]));
    let services = d.talm(["service", "-f", "nodes/cp2.yaml"]).ok().stdout;
    assert!(
        services
            .lines()
            .any(|l| l.split_whitespace().take(3).collect::<Vec<_>>()
                == [b.as_str(), "etcd", "Finished"]),
        "{services}"
    );
    d.talm(["etcd", "status", "-f", "nodes/cp2.yaml"])
        .expect().mask(addrs).stderr("\
Error: error getting status: 1 error occurred:
\t* $A1: rpc error: code = Unknown desc = failed to query etcd status: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"
").status(1).run();
    // Alone, the first cannot hand leadership over, nor leave.
    d.talm(["etcd", "forfeit-leadership", "-f", "nodes/cp1.yaml"])
        .expect().mask(addrs).stderr("\
Error: 1 error occurred:
\t* $A1: rpc error: code = Unknown desc = failed to forfeit leadership: cannot forfeit leadership, only one member
").status(1).run();
    d.talm(["etcd", "leave", "-f", "nodes/cp1.yaml"])
        .expect().mask(addrs).stderr("Error: node $A1: EtcdLeaveCluster: rpc error: code = Unknown desc = failed to leave cluster: etcdserver: re-configuration failed due to not enough started members\n").status(1).run();
    // Several nodes: refused where talosctl refuses.
    d.talm([
        "etcd",
        "leave",
        "-f",
        "nodes/cp1.yaml",
        "-f",
        "nodes/cp2.yaml",
    ])
    .expect()
    .stderr(
        "\
Error: command \"etcd leave\" is not supported with multiple nodes
hint: give one control-plane node
",
    )
    .status(1)
    .run();
    d.talm(["health", "-f", "nodes/cp1.yaml", "-f", "nodes/cp2.yaml"])
        .expect()
        .stderr(
            "\
Error: command \"health\" is not supported with multiple nodes
hint: check the cluster from one control plane: talm health -f nodes/cp1.yaml
",
        )
        .status(1)
        .run();
}

#[test]
fn a_graceful_reset_leaves_etcd_first() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = cluster(&nodes, &[&a, &b], None);
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &[&a, &b]));
    let boots = nodes.boots(&b);
    d.talm(["reset", "-f", "nodes/cp2.yaml", "--reboot"]).ok();
    nodes.wait_reboot(&b, boots);
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &[&a]));
    // Configured again, it joins as a new member.
    let boots = nodes.boots(&b);
    d.talm(["apply", "-f", "nodes/cp2.yaml", "-i"]).ok();
    nodes.wait_reboot(&b, boots);
    until("the reset node joins again", || {
        nodes.node(&b).state().etcd.is_some()
    });
    let o = d.talm(["etcd", "members", "-f", "nodes/cp1.yaml"]).ok();
    assert_eq!(o.stdout, members_table(&nodes, &a, &[&a, &b]));
}
