//! Who may look at what (roles, maintenance), calls through an endpoint, nodes that are down,
//! the node methods from a playbook, and values that move with time.

use crate::common::expect::addrs;
use talm::proto::machine;
use talm::talos::client::Client;

use super::{cluster, play, words};
use crate::common::net;
use crate::common::sim::{admin, mutual, opts, Nodes};

fn client(endpoint: &str, target: Option<&str>, auth: talm::talos::creds::Auth) -> Client {
    talm::talos::block_on(Client::connect(endpoint, target, &opts(auth))).unwrap()
}

#[test]
fn roles_maintenance_and_nodes_that_are_down() {
    // A control plane, a worker, a node in maintenance, and one where nothing listens.
    let [cp, worker, fresh, down] = net::addrs();
    let (cp, worker, fresh, down) = (cp.as_str(), worker.as_str(), fresh.as_str(), down.as_str());
    let (_nodes, d) = cluster(cp, worker);
    let _maintenance = Nodes::start(&[fresh], |_| {});

    // A reader may look but not read or copy files.
    let reader = client(cp, None, mutual(&["os:reader"]));
    assert!(!talm::talos::block_on(reader.processes())
        .unwrap()
        .is_empty());
    let err = talm::talos::block_on(reader.read("/etc/hostname", |_| Ok(()))).unwrap_err();
    assert_eq!(err.to_string(), format!("node {cp}: Read: not authorized"));
    let err = talm::talos::block_on(reader.copy("/etc", |_| Ok(()))).unwrap_err();
    assert!(err.to_string().ends_with("Copy: not authorized"), "{err}");
    let mut seen = 0;
    talm::talos::block_on(reader.list_files(
        machine::ListRequest {
            root: "/etc".into(),
            ..Default::default()
        },
        |_| {
            seen += 1;
            Ok(())
        },
    ))
    .unwrap();
    assert!(seen > 5);

    // Through an endpoint, a node's reply names it; the same call to the worker is proxied.
    let via = client(cp, Some(worker), admin());
    let mut text = Vec::new();
    talm::talos::block_on(via.read("/etc/hosts", |b| {
        text.extend_from_slice(b);
        Ok(())
    }))
    .unwrap();
    assert!(String::from_utf8(text)
        .unwrap()
        .starts_with(&format!("127.0.0.1   localhost\n{worker}   ")));

    // Maintenance: readers only, and no Kubernetes runtime yet.
    let m = client(fresh, None, talm::talos::creds::Auth::Insecure);
    let procs = talm::talos::block_on(m.processes()).unwrap();
    assert!(
        procs.iter().any(|p| p.command == "apid") && !procs.iter().any(|p| p.command == "kubelet")
    );
    let err = talm::talos::block_on(m.read("/etc/hostname", |_| Ok(()))).unwrap_err();
    assert!(err.to_string().ends_with("Read: not authorized"), "{err}");
    let err = talm::talos::block_on(m.containers(true)).unwrap_err();
    assert!(err.to_string().contains("rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\""), "{err}");
    assert_eq!(talm::talos::block_on(m.containers(false)).unwrap().len(), 1);
    let err = talm::talos::block_on(m.image_list(talm::proto::common::ContainerdInstance {
        driver: 1,
        namespace: 2,
    }))
    .unwrap_err();
    assert!(
        err.to_string().contains("error connecting to containerd:"),
        "{err}"
    );
    let mem = talm::talos::block_on(m.memory()).unwrap();
    assert!(mem.memfree < mem.memtotal);

    // One node of two is down: its error comes in-band, the other's table is printed.
    let out = play(
        &d,
        "containers",
        &[cp, down],
        "kubernetes: false, output: \"\"",
    )
    .ok();
    assert!(
        out.stdout.starts_with("NODE ") && out.stdout.contains(&format!("{cp}   system")),
        "{}",
        out.stdout
    );
    assert!(out.stderr.starts_with(&format!("WARNING: 1 error occurred:\n\t* node {down} (via {cp}:50000): Containers: rpc error: code = Unavailable desc = connection error:")), "{}", out.stderr);
    play(&d, "processes", &[cp, down], "sort: \"rss\", output: \"\"")
        .expect().mask(addrs).stderr("Error: node $A1 (via $A2:50000): Processes: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: connect: connection refused\"\n").status(1).run();
    // The node methods from a playbook, with typed options; all of them in `talm help api`.
    d.write("look.rhai", &format!(r#"
let n = node("{cp}");
let ps = n.processes();
let etc = n.list("/etc/cri", #{{ recurse: true, types: ["f"] }});
let files = [];
for f in etc {{ files.push(f.relative_name); }}
let du = n.usage("/etc/cri");
let host = n.read("/etc/hostname");
host.trim();
out(`${{ps[0].pid}} ${{files}} ${{du[-1].relative_name}} ${{n.service("apid").health}} ${{host == n.time().node || true}}`);
"#));
    let out = d.talm(["run", "look.rhai"]).ok().stdout;
    assert_eq!(
        out,
        "1 [\"conf.d/cri.toml\", \"containerd.toml\"] . OK true"
    );
    d.write(
        "typo.rhai",
        &format!("node(\"{cp}\").containers(#{{ kubernets: true }});\n"),
    );
    let o = d
        .talm(["run", "typo.rhai"])
        .expect()
        .stderr(
            "\
Error: unknown option \"kubernets\" for n.containers; the options are: kubernetes
hint: did you mean \"kubernetes\" instead of \"kubernets\"?
hint: `talm help api containers` describes the options
",
        )
        .status(1)
        .run();
    assert!(
        o.stderr
            .contains("did you mean \"kubernetes\" instead of \"kubernets\"?"),
        "{}",
        o.stderr
    );
    let api = d.talm(["help", "api"]).ok().stdout;
    for name in [
        "containers",
        "stats",
        "processes",
        "memory",
        "mounts",
        "netstat",
        "read",
        "read_out",
        "list",
        "usage",
        "copy",
        "copy_out",
        "copy_to",
        "time",
        "cgroups",
        "service",
        "images",
        "table",
        "columnize",
    ] {
        assert!(api.contains(&format!("  {name} ")), "{name} listed: {api}");
    }

    // A stream's in-band error is listed after the entries of the nodes that answered.
    let out = play(&d, "list", &[cp, down], "path: \"/etc/cri\", long: false, recurse: false, depth: 1, humanize: false, type: [], output: \"\"").run();
    assert_ne!(out.code, 0);
    assert_eq!(words(&out.stdout).len(), 4, "{}", out.stdout);
    assert!(
        out.stderr.contains(&format!(
            "1 error occurred:\n rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp {down}:50000: connect: connection refused\""
        )),
        "{}",
        out.stderr
    );
}

#[test]
fn values_move_with_time() {
    let cp = net::addr();
    let nodes = Nodes::start(&[&cp], |_| {});
    nodes.install_control_plane(&cp);
    let c = nodes.connect(&cp, admin()).unwrap();
    talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap();
    let cpu = || -> f64 {
        talm::talos::block_on(c.processes())
            .unwrap()
            .iter()
            .map(|p| p.cpu_time)
            .sum()
    };
    let stats = || {
        talm::talos::block_on(c.stats(false))
            .unwrap()
            .iter()
            .find(|s| s.id == "etcd")
            .unwrap()
            .cpu_usage
    };
    let (a, sa) = (cpu(), stats());
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (b, sb) = (cpu(), stats());
    assert!(b > a, "{a} -> {b}");
    assert!(sb > sa, "{sa} -> {sb}");
    let mem = talm::talos::block_on(c.memory()).unwrap();
    let mut text = Vec::new();
    talm::talos::block_on(c.read("/proc/meminfo", |x| {
        text.extend_from_slice(x);
        Ok(())
    }))
    .unwrap();
    let total = String::from_utf8(text)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(total, format!("MemTotal:        {} kB", mem.memtotal));
}
