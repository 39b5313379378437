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

use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

/// The checks of `talm health`, in order.
const CHECKS: [&str; 16] = [
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

fn reader_talosconfig(d: &Dir) -> String {
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

    // From this client: the same Talos-side checks over each node's API.
    let cps = format!("{a},{b},{c}");
    let o = d
        .talm([
            "health",
            "-f",
            "nodes/cp1.yaml",
            "--server=false",
            "--control-plane-nodes",
            &cps,
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
            .contains("waiting for all k8s nodes to report: SKIP\n"),
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
    let o = d
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
    let line = format!("waiting for etcd to be healthy: 1 error occurred:\n\t* {c}: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp {c}:50000: connect: connection refused\"\n");
    assert!(o.stderr.contains(&line), "{}", o.stderr);
    assert!(
        o.stderr
            .contains("hint: the check \"etcd to be healthy\" did not pass within 2s"),
        "{}",
        o.stderr
    );
    assert!(
        !o.stderr.contains("waiting for apid to be ready"),
        "{}",
        o.stderr
    );
    let o = d
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
    assert!(
        o.stderr.contains(&format!(
            "waiting for etcd to be healthy: 1 error occurred:\n\t* node {c}"
        )),
        "{}",
        o.stderr
    );

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
    .fails_with(&format!(
        "failed to remove member {gone}: etcdserver: member not found"
    ));
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
\t* node $A1: EtcdStatus: rpc error: code = Unknown desc = failed to query etcd status: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"
").status(1).run();
    // Alone, the first cannot hand leadership over, nor leave.
    d.talm(["etcd", "forfeit-leadership", "-f", "nodes/cp1.yaml"])
        .expect().mask(addrs).stderr("\
Error: 1 error occurred:
\t* node $A1: EtcdForfeitLeadership: rpc error: code = Unknown desc = failed to forfeit leadership: cannot forfeit leadership, only one member
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

#[test]
fn snapshot_recovery_tables_and_refusals() {
    let [cp, worker, fresh] = net::addrs();
    let nodes = Nodes::start(&[&cp, &worker, &fresh], |_| {});
    let d = cluster(&nodes, &[&cp], Some(&worker));

    // `etcd status`, exactly as talosctl prints it.
    let (size, in_use, leader, index, term, me) = {
        let m = nodes.node(&cp).state().etcd.clone().unwrap();
        let c = m.lock();
        (c.size(), c.in_use(), c.leader, c.raft_index, c.term, m.id)
    };
    let o = d.talm(["etcd", "status", "-f", "nodes/cp1.yaml"]).ok();
    let pct = format!("{:.2}", in_use as f64 / size as f64 * 100.0);
    let h = talm_base::humanize::bytes;
    let want = go_table(&[
        row(&[
            "NODE",
            "MEMBER",
            "DB SIZE",
            "IN USE",
            "LEADER",
            "RAFT INDEX",
            "RAFT TERM",
            "RAFT APPLIED INDEX",
            "LEARNER",
            "PROTOCOL",
            "STORAGE",
            "ERRORS",
        ]),
        vec![
            cp.clone(),
            format!("{me:016x}"),
            h(size),
            format!("{} ({pct}%)", h(in_use)),
            format!("{leader:016x}"),
            index.to_string(),
            term.to_string(),
            index.to_string(),
            "false".into(),
            "3.6.12".into(),
            "3.6.0".into(),
            String::new(),
        ],
    ]);
    assert_eq!(o.stdout, want);
    assert_eq!(leader, me);
    d.talm(["etcd", "alarm", "list", "-f", "nodes/cp1.yaml"])
        .ok();
    d.talm(["etcd", "defrag", "-f", "nodes/cp1.yaml"]).ok();
    let o = d
        .talm([
            "etcd",
            "downgrade",
            "validate",
            "3.5",
            "-f",
            "nodes/cp1.yaml",
        ])
        .ok();
    assert_eq!(
        o.stdout,
        go_table(&[
            row(&["NODE", "MESSAGE"]),
            vec![
                cp.clone(),
                "downgrade validate success, cluster version 3.6.0".into()
            ]
        ])
    );
    d.talm(["etcd", "downgrade", "enable", "3.4", "-f", "nodes/cp1.yaml"])
        .expect().mask(addrs).stderr("Error: node $A1: EtcdDowngradeEnable: rpc error: code = InvalidArgument desc = etcd downgrade is only supported to 3.5 and later versions\n").status(1).run();

    // Snapshot: written whole, 0600, with the trailer and etcd's figures.
    let o = d
        .talm(["etcd", "snapshot", "db.snap", "-f", "nodes/cp1.yaml"])
        .ok();
    let bytes = std::fs::read(d.join("db.snap")).unwrap();
    assert_eq!(bytes.len() % 512, 32);
    let info = talm_wire::snapshot::info(&bytes).unwrap();
    let figures = format!(
        "hash {:08x}, revision {}, total keys {}, total size {}",
        info.hash, info.revision, info.total_keys, info.total_size
    );
    assert_eq!(
        o.stdout,
        format!(
            "etcd snapshot saved to \"db.snap\" ({} bytes)\nsnapshot info: {figures}\n",
            bytes.len()
        )
    );
    assert_eq!(d.mode("db.snap"), 0o600);
    assert!(!d.exists("db.snap.part"));
    // An existing file is replaced only when asked (no terminal to ask on: refused) or forced.
    let o = d
        .talm(["etcd", "snapshot", "db.snap", "-f", "nodes/cp1.yaml"])
        .run();
    assert_eq!((o.code, o.stdout.as_str()), (1, ""));
    assert!(
        o.stderr.ends_with("Error: operation aborted\nhint: db.snap is kept; answer y to replace it, pass --force, or name another file\n"),
        "{}",
        o.stderr
    );
    assert_eq!(std::fs::read(d.join("db.snap")).unwrap(), bytes);
    d.talm([
        "etcd",
        "snapshot",
        "db.snap",
        "--force",
        "-f",
        "nodes/cp1.yaml",
    ])
    .ok();
    // A copy with one byte changed inside the database.
    let mut bad = bytes.clone();
    let at = bad.len() - 100;
    bad[at] ^= 0x5a;
    std::fs::write(d.join("bad.snap"), &bad).unwrap();

    // Wipe the node (reset), configure it again: etcd has no data.
    let boots = nodes.boots(&cp);
    d.talm(["reset", "-f", "nodes/cp1.yaml", "--reboot"]).ok();
    nodes.wait_reboot(&cp, boots);
    let boots = nodes.boots(&cp);
    d.talm(["apply", "-f", "nodes/cp1.yaml", "-i"]).ok();
    nodes.wait_reboot(&cp, boots);
    d.talm(["etcd", "status", "-f", "nodes/cp1.yaml"])
        .expect().mask(addrs).stderr("\
Error: error getting status: 1 error occurred:
\t* node $A1: EtcdStatus: rpc error: code = Unknown desc = failed to query etcd status: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"
").status(1).run();

    // A damaged snapshot is refused before anything is sent.
    d.talm([
        "bootstrap",
        "-f",
        "nodes/cp1.yaml",
        "--recover-from",
        "bad.snap",
    ])
    .fails_with("snapshot \"bad.snap\" is damaged: expected sha256 [");
    // A file with a good trailer that is no bbolt database is refused, hash check or not.
    std::fs::write(
        d.join("junk.snap"),
        talm_wire::snapshot::seal(&[0x42u8; 8192]),
    )
    .unwrap();
    for skip in [false, true] {
        let mut args = vec![
            "bootstrap",
            "-f",
            "nodes/cp1.yaml",
            "--recover-from",
            "junk.snap",
        ];
        if skip {
            args.push("--recover-skip-hash-check");
        }
        d.talm(args).expect().stderr("\
Error: snapshot \"junk.snap\" is not a valid etcd database: not a bbolt database: meta page 0: invalid database (magic 0x42424242, not 0xed0cdaed)
hint: give a file saved by `talm etcd snapshot` (or etcdctl snapshot save), or a copy of etcd's member/snap/db with --recover-skip-hash-check
").status(1).run();
    }
    assert!(nodes.node(&cp).state().etcd_recovery.is_none());
    // The good one brings the keyspace back.
    let o = d
        .talm([
            "bootstrap",
            "-f",
            "nodes/cp1.yaml",
            "--recover-from",
            "db.snap",
        ])
        .ok();
    assert!(
        o.stderr
            .contains(&format!("recovering from snapshot \"db.snap\": {figures}")),
        "{}",
        o.stderr
    );
    // The keyspace and revision are back; the member metadata is the new one-member
    // cluster's (so the hash differs, as after a real etcd restore).
    let o = d
        .talm(["etcd", "snapshot", "again.snap", "-f", "nodes/cp1.yaml"])
        .ok();
    let again = std::fs::read(d.join("again.snap")).unwrap();
    let same = format!(
        "revision {}, total keys {}, total size ",
        info.revision, info.total_keys
    );
    assert!(o.stdout.contains(&same), "{}", o.stdout);
    let keyspace = |b: &[u8]| {
        let db = talm_wire::snapshot::decode(&b[..b.len() - 32]).unwrap();
        (db.revision, db.kvs, db.members.len())
    };
    assert_eq!(keyspace(&again), keyspace(&bytes));
    d.talm(["bootstrap", "-f", "nodes/cp1.yaml"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
- talm: bootstrapping etcd on $A1
Error: node $A1: Bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty
",
        )
        .status(1)
        .run();

    // A saved snapshot whose figures cannot be read is kept, with a warning.
    nodes.node(&cp).set_faults(Faults {
        damaged_etcd_snapshot: true,
        ..Faults::default()
    });
    let o = d
        .talm(["etcd", "snapshot", "dmg.snap", "-f", "nodes/cp1.yaml"])
        .ok();
    nodes.node(&cp).set_faults(Faults::default());
    let dmg = std::fs::read(d.join("dmg.snap")).unwrap();
    assert_eq!(
        o.stdout,
        format!(
            "etcd snapshot saved to \"dmg.snap\" ({} bytes)\n",
            dmg.len()
        )
    );
    assert!(
        o.stderr.contains("WARNING: snapshot info of \"dmg.snap\" is unavailable: not a bbolt database: meta page 0: invalid database (magic 0xefbeadde, not 0xed0cdaed) (the file is kept)"),
        "{}",
        o.stderr
    );
    assert!(!d.exists("dmg.snap.part"));

    // Refusals: a worker, a maintenance node, a reader's certificate.
    d.talm(["etcd", "members", "-f", "nodes/worker.yaml"])
        .expect().mask(addrs).stderr("\
Error: error getting members: 1 error occurred:
\t* node $A1: EtcdMemberList: rpc error: code = Unimplemented desc = member list is only available on control plane nodes
").status(1).run();
    d.talm(["health", "-f", "nodes/worker.yaml", "--wait-timeout", "5s"])
        .expect().stderr("Error: healthcheck error: rpc error: code = Unimplemented desc = cluster health check is only available on control plane nodes\n").status(1).run();
    d.talm(["etcd", "status", "-n", &fresh, "-i"])
        .expect().mask(addrs).stderr("\
Error: error getting status: 1 error occurred:
\t* node $A1: EtcdStatus: rpc error: code = Unimplemented desc = machine type is not set, cannot use etcd status API
").status(1).run();
    d.write("reader.talosconfig", &reader_talosconfig(&d));
    let reader = [
        "--talosconfig",
        "reader.talosconfig",
        "-f",
        "nodes/cp1.yaml",
    ];
    let args =
        |words: &[&'static str]| -> Vec<&str> { words.iter().copied().chain(reader).collect() };
    d.talm(args(&["etcd", "members"])).ok();
    d.talm(args(&["etcd", "snapshot", "r.snap"]))
        .expect()
        .mask(addrs)
        .stderr("Error: error reading: node $A1: EtcdSnapshot: not authorized\n")
        .status(1)
        .run();
    d.talm(args(&["etcd", "leave"]))
        .expect().mask(addrs).stderr("\
Error: node $A1: EtcdLeaveCluster: not authorized
hint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`
").status(1).run();
    d.talm(args(&["etcd", "defrag"]))
        .expect().mask(addrs).stderr("\
Error: node $A1: EtcdDefragment: not authorized
hint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`
").status(1).run();
    d.talm(args(&["bootstrap", "--recover-from", "db.snap"]))
        .fails_with("not authorized");
    assert!(!d.exists("r.snap"));
}

#[test]
fn rhai_api_returns_checks_and_members_as_data() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = cluster(&nodes, &[&ip], None);
    d.write(
        "check.rhai",
        r#"
let n = talos::targets(#{ files: ["nodes/cp1.yaml"] })[0];
let checks = n.health(#{ wait_timeout: "30s" });
out(`${checks.len()} ${checks[0].check}=${checks[0].state} ${checks[-1].ok}` + "\n");
let all = cluster_health(#{ files: ["nodes/cp1.yaml"], wait_timeout: "30s" });
out(`${all.len()}` + "\n");
let ms = n.etcd_members();
out(`${ms.len()} ${ms[0].peer_urls[0]} ${n.etcd_status().leader == ms[0].id}` + "\n");
let s = n.etcd_snapshot("b.snap");
let i = etcd_snapshot_info("b.snap");
out(`${s.hash == i.hash} ${i.total_keys > 0}` + "\n");
"#,
    );
    let o = d.talm(["run", "check.rhai"]).ok();
    assert_eq!(
        o.stdout,
        format!("16 etcd to be healthy=OK true\n16\n1 https://{ip}:2380 true\ntrue true\n")
    );
    let api = d.talm(["help", "api"]).ok().stdout;
    for f in [
        "etcd_members",
        "etcd_snapshot",
        "etcd_leave",
        "health",
        "cluster_health",
    ] {
        assert!(api.contains(f), "help api lacks {f}");
    }
}
