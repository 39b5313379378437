//! etcd snapshots: recovery through reset and bootstrap --recover-from, damaged snapshots, refusals; the Rhai API of checks and members.

use super::*;

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
\t* $A1: rpc error: code = Unknown desc = failed to query etcd status: connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"
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
Error: error executing bootstrap: 1 error occurred:
\t* $A1: rpc error: code = AlreadyExists desc = etcd data directory is not empty


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
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: error getting members: 1 error occurred:
\t* $A1: rpc error: code = Unimplemented desc = member list is only available on control plane nodes
",
        )
        .status(1)
        .run();
    d.talm(["health", "-f", "nodes/worker.yaml", "--wait-timeout", "5s"])
        .expect().stderr("Error: healthcheck error: rpc error: code = Unimplemented desc = cluster health check is only available on control plane nodes\n").status(1).run();
    d.talm(["etcd", "status", "-n", &fresh, "-i"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: error getting status: 1 error occurred:
\t* $A1: rpc error: code = Unimplemented desc = machine type is not set, cannot use etcd status API
",
        )
        .status(1)
        .run();
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
        .stderr("Error: error reading: rpc error: code = PermissionDenied desc = not authorized\nhint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`\n")
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
