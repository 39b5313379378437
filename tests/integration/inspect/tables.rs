//! Every inspection command's table (and `-o json|yaml`) as talosctl prints it, for a control
//! plane and a worker.

use super::{cluster, play, words};
use crate::common::expect::addrs;
use crate::common::{column, net};

const NETSTAT: &str = "all: false, listening: false, verbose: false, extend: false, programs: false, timers: false, pods: false, tcp: false, udp: false, udplite: false, raw: false, ipv4: false, ipv6: false, pod: \"\", output: \"\"";

#[test]
fn tables_are_printed_as_talosctl_prints_them() {
    let [cp, worker] = net::addrs();
    let (cp, worker) = (cp.as_str(), worker.as_str());
    let (nodes, d) = cluster(cp, worker);
    let both = [cp, worker];
    // The NODE column of a table of both nodes, of the worker alone, of the control plane alone.
    let node = column(3, &["NODE", cp, worker]);
    let node_w = column(3, &["NODE", worker]);
    let node_cp = column(3, &["NODE", cp]);

    // Containers of Talos's containerd: every column as wide as its widest cell plus three.
    let out = play(&d, "containers", &both, "kubernetes: false, output: \"\"")
        .ok()
        .stdout;
    let pid = |n: &str, id: &str| {
        let w = talm::sim::world::World::of(nodes.node(n));
        talm::sim::world::workload::Workload::of(&w)
            .system
            .iter()
            .find(|c| c.id == id)
            .unwrap()
            .pid
    };
    // The PID column is as wide as the node's process IDs make it.
    let pids = [
        (cp, "apid"),
        (cp, "etcd"),
        (cp, "kubelet"),
        (cp, "trustd"),
        (worker, "apid"),
        (worker, "kubelet"),
        (worker, "trustd"),
    ]
    .map(|(n, id)| pid(n, id).to_string());
    let pid_cells: Vec<&str> = std::iter::once("PID")
        .chain(pids.iter().map(String::as_str))
        .collect();
    let p = column(3, &pid_cells);
    let expected = format!(
        "{}NAMESPACE   ID        IMAGE                                {}STATUS\n\
         {}system      apid                                           {}RUNNING\n\
         {}system      etcd      registry.k8s.io/etcd:v3.6.12         {}RUNNING\n\
         {}system      kubelet   ghcr.io/siderolabs/kubelet:v1.36.2   {}RUNNING\n\
         {}system      trustd                                         {}RUNNING\n\
         {}system      apid                                           {}RUNNING\n\
         {}system      kubelet   ghcr.io/siderolabs/kubelet:v1.36.2   {}RUNNING\n\
         {}system      trustd                                         {}RUNNING\n",
        node("NODE"),
        p("PID"),
        node(cp),
        p(&pids[0]),
        node(cp),
        p(&pids[1]),
        node(cp),
        p(&pids[2]),
        node(cp),
        p(&pids[3]),
        node(worker),
        p(&pids[4]),
        node(worker),
        p(&pids[5]),
        node(worker),
        p(&pids[6])
    );
    assert_eq!(out, expected);

    // The CRI's pods: a sandbox, then its containers hanging under it.
    let out = play(
        &d,
        "containers",
        &[worker],
        "kubernetes: true, output: \"\"",
    )
    .ok()
    .stdout;
    let rows = words(&out);
    assert_eq!(
        rows[0],
        ["NODE", "NAMESPACE", "ID", "IMAGE", "PID", "STATUS"]
    );
    assert!(
        rows[1][2].starts_with("kube-system/kube-flannel-")
            && rows[1][3] == "registry.k8s.io/pause:3.10.1"
            && rows[1][5] == "SANDBOX_READY",
        "{out}"
    );
    assert_eq!(rows[2][2], "└─");
    assert!(
        rows[2][3].contains(":install-cni:")
            && rows[2][4] == "ghcr.io/siderolabs/install-cni:v1.13.0"
            && rows[2][5] == "0"
            && rows[2][6] == "CONTAINER_EXITED",
        "{out}"
    );
    assert!(
        out.lines().nth(2).unwrap().starts_with(&format!(
            "{}k8s.io      └─ kube-system/kube-flannel-",
            node_w(worker)
        )),
        "{out}"
    );
    assert!(
        rows.iter()
            .any(|r| r.len() == 7 && r[3].contains(":kube-proxy:") && r[6] == "CONTAINER_RUNNING"),
        "{out}"
    );

    // Stats: memory in decimal megabytes with two decimals, CPU in nanoseconds.
    let out = play(&d, "stats", &[cp], "kubernetes: false, output: \"\"")
        .ok()
        .stdout;
    let rows = words(&out);
    assert_eq!(rows[0], ["NODE", "NAMESPACE", "ID", "MEMORY(MB)", "CPU"]);
    let etcd = rows.iter().find(|r| r[2] == "etcd").unwrap();
    assert!(
        etcd[3].split_once('.').is_some_and(|(_, f)| f.len() == 2),
        "{out}"
    );
    assert!(
        etcd[4].parse::<u64>().unwrap() > 0 && etcd[4].ends_with("000"),
        "microsecond CPU in nanoseconds: {out}"
    );

    // Processes: columnize (two spaces), the biggest resident set first, full command lines.
    let out = play(&d, "processes", &[cp], "sort: \"rss\", output: \"\"")
        .ok()
        .stdout;
    let first = out.lines().next().unwrap();
    // The PID column is as wide as the node's highest process ID.
    let w = talm::sim::world::World::of(nodes.node(cp));
    let highest = talm::sim::world::workload::Workload::of(&w)
        .procs
        .iter()
        .map(|p| p.pid)
        .max()
        .unwrap()
        .to_string();
    assert!(
        first.starts_with(&format!(
            "{}{}STATE  THREADS  CPU-TIME  VIRTMEM  RESMEM  LABEL",
            column(2, &["NODE", cp])("NODE"),
            column(2, &["PID", &highest])("PID")
        )),
        "{out}"
    );
    assert!(first.ends_with("  COMMAND"), "{out}");
    assert!(
        out.lines()
            .nth(1)
            .unwrap()
            .contains("/usr/local/bin/kube-apiserver --admission-control-config-file="),
        "{out}"
    );
    let init = out
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("1"))
        .unwrap();
    assert!(
        init.ends_with("system_u:system_r:init_t:s0            /sbin/init"),
        "{init}"
    );
    let by_cpu = play(&d, "processes", &[cp], "sort: \"cpu\", output: \"json\"")
        .ok()
        .stdout;
    let procs: Vec<serde_json::Value> = serde_json::from_str(&by_cpu).unwrap();
    let cpu: Vec<f64> = procs
        .iter()
        .map(|p| p["cpu_time"].as_f64().unwrap())
        .collect();
    assert!(cpu.windows(2).all(|w| w[0] >= w[1]), "{cpu:?}");

    // Memory: MiB, used = total - free - cache - buffers.
    let out = play(&d, "memory", &both, "verbose: false, output: \"\"")
        .ok()
        .stdout;
    let rows = words(&out);
    assert_eq!(
        rows[0],
        [
            "NODE",
            "TOTAL",
            "USED",
            "FREE",
            "SHARED",
            "BUFFERS",
            "CACHE",
            "AVAILABLE"
        ]
    );
    assert_eq!(rows[1][1], "3933");
    assert_eq!((rows[1][0], rows[2][0]), (cp, worker));
    let n: Vec<i64> = rows[1][1..].iter().map(|x| x.parse().unwrap()).collect();
    assert!((n[0] - n[2] - n[5] - n[4] - n[1]).abs() <= 3, "{out}");
    let verbose = play(&d, "memory", &[worker], "verbose: true, output: \"\"")
        .ok()
        .stdout;
    let v: Vec<&str> = verbose.lines().collect();
    assert_eq!(v.len(), 49);
    assert_eq!(
        (v[0], v[1]),
        (format!("NODE: {worker}").as_str(), "MemTotal: 4027520 kB")
    );
    assert_eq!(v[41], "HugePagesTotal: 0");
    assert_eq!(v[45], "Hugepagesize: 2048 kB");

    // Mounts: sizes in GB, kernel file systems left out.
    let out = play(&d, "mounts", &[cp], "output: \"\"").ok().stdout;
    let rows = words(&out);
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "{}FILESYSTEM       SIZE(GB)   USED(GB)   AVAILABLE(GB)   PERCENT USED   MOUNTED ON",
            node_cp("NODE")
        )
    );
    let var = rows.iter().find(|r| r.last() == Some(&"/var")).unwrap();
    assert_eq!(var[1], "/dev/nvme0n1p4");
    assert!(var[5].ends_with('%'), "{out}");
    assert!(!rows.iter().any(|r| r.last() == Some(&"/proc")), "{out}");

    // Netstat: listening sockets of the worker with their programs.
    let out = play(
        &d,
        "netstat",
        &[worker],
        &NETSTAT
            .replace("listening: false", "listening: true")
            .replace("programs: false", "programs: true"),
    )
    .ok()
    .stdout;
    let rows = words(&out);
    assert_eq!(
        out.lines().next().unwrap(),
        format!(
            "{}Proto   Recv-Q   Send-Q   Local Address     Foreign Address   State    PID/Program name",
            node_w("NODE")
        )
    );
    let apid = rows.iter().find(|r| r[4] == ":::50000").unwrap();
    assert_eq!((apid[1], apid[5], apid[6]), ("tcp6", ":::*", "LISTEN"));
    assert_eq!(apid[7], format!("{}/apid", pid(worker, "apid")));
    let udp = rows
        .iter()
        .find(|r| r[1] == "udp" && r[4] == "0.0.0.0:8472")
        .unwrap();
    assert_eq!(
        udp.len(),
        7,
        "a UDP socket has no state, and a kernel socket no program: {out}"
    );
    assert_eq!(udp[6], "-");
    // Connected (the default) with timers: kubelet and kube-proxy talk to the cluster endpoint
    // of the worker's config (https://127.0.0.1:6443 in these tests).
    let out = play(
        &d,
        "netstat",
        &[worker],
        &NETSTAT.replace("timers: false", "timers: true"),
    )
    .ok()
    .stdout;
    let conn = words(&out)
        .into_iter()
        .skip(1)
        .find(|r| r[5] == "127.0.0.1:6443")
        .unwrap();
    assert_eq!((conn[6], conn[7]), ("ESTABLISHED", "keepalive"));
    assert!(
        conn[8].starts_with('(') && conn[8].ends_with("/0/0)"),
        "{out}"
    );
    // Pod sockets, named by their pod; a pod argument reaches only its node.
    let out = play(
        &d,
        "netstat",
        &both,
        &NETSTAT
            .replace("listening: false", "listening: true")
            .replace("pods: false", "pods: true"),
    )
    .ok()
    .stdout;
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("{}tcp6", node(cp)))
                && l.contains(":::53 ")
                && l.contains("kube-system/coredns-")),
        "{out}"
    );
    let pod = out
        .lines()
        .find_map(|l| {
            l.split_whitespace()
                .find(|w| w.starts_with("kube-system/coredns-"))
        })
        .unwrap()
        .to_string();
    let out = play(
        &d,
        "netstat",
        &both,
        &NETSTAT
            .replace("all: false", "all: true")
            .replace("pod: \"\"", &format!("pod: {pod:?}")),
    )
    .ok()
    .stdout;
    let rows = words(&out);
    assert!(
        rows.len() > 2 && rows[1..].iter().all(|r| r[0] == cp),
        "{out}"
    );
    assert!(rows.iter().any(|r| r[5] == "10.96.0.1:443"), "{out}");
    play(
        &d,
        "netstat",
        &both,
        &NETSTAT.replace("pod: \"\"", "pod: \"kube-system/nope\""),
    )
    .expect()
    .stderr("Error: pod kube-system/nope not found\n")
    .status(1)
    .run();
    play(
        &d,
        "netstat",
        &both,
        &NETSTAT
            .replace("pods: false", "pods: true")
            .replace("pod: \"\"", "pod: \"x/y\""),
    )
    .expect()
    .stderr("Error: cannot use --pods and specify a pod\n")
    .status(1)
    .run();

    // Time: Go's Time.String() in UTC.
    let out = play(&d, "time", &both, "check: \"\", output: \"\"")
        .ok()
        .stdout;
    let rows = words(&out);
    assert_eq!(
        rows[0],
        ["NODE", "NTP-SERVER", "NODE-TIME", "NTP-SERVER-TIME"]
    );
    assert_eq!(rows[1][1], "time.cloudflare.com");
    assert_eq!(
        (rows[1][4], rows[1][5], rows[1][8], rows[1][9]),
        ("+0000", "UTC", "+0000", "UTC")
    );
    let out = play(
        &d,
        "time",
        &[cp],
        "check: \"ntp.example.org\", output: \"\"",
    )
    .ok()
    .stdout;
    assert_eq!(words(&out)[1][1], "ntp.example.org");
    play(&d, "time", &[cp], "check: \"ntp.invalid\", output: \"\"")
        .expect().mask(addrs).stderr("Error: node $A1: TimeCheck: rpc error: code = Unknown desc = error querying NTP server \"ntp.invalid\": lookup ntp.invalid on 127.0.0.53:53: no such host\n").status(1).run();

    // Services: the list, and one service's events newest first.
    let out = play(&d, "service", &both, "id: \"\", action: \"\", output: \"\"")
        .ok()
        .stdout;
    assert!(
        out.starts_with(&format!(
            "{}SERVICE      STATE     HEALTH   LAST CHANGE   LAST EVENT\n",
            node("NODE")
        )),
        "{out}"
    );
    let machined = words(&out)
        .into_iter()
        .find(|r| r[0] == worker && r[1] == "machined")
        .unwrap();
    assert_eq!((machined[3], machined[5]), ("?", "ago"));
    assert!(machined[4].ends_with('s'), "{out}");
    let out = play(
        &d,
        "service",
        &both,
        "id: \"etcd\", action: \"status\", output: \"\"",
    )
    .ok()
    .stdout;
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(
        &l[..4],
        [
            format!("NODE     {cp}").as_str(),
            "ID       etcd",
            "STATE    Running",
            "HEALTH   OK"
        ]
    );
    assert!(
        l[4].starts_with("EVENTS   [Running]: Health check successful (")
            && l[4].ends_with(" ago)"),
        "{out}"
    );
    assert!(
        l[5].starts_with(&format!(
            "         [Running]: Started task etcd (PID {}) for container etcd (",
            pid(cp, "etcd")
        )),
        "{out}"
    );
    assert_eq!(l.len(), 8);
    play(
        &d,
        "service",
        &[worker],
        "id: \"etcd\", action: \"\", output: \"\"",
    )
    .expect()
    .stderr("Error: service \"etcd\" is not registered on any nodes\n")
    .status(1)
    .run();
    play(
        &d,
        "service",
        &[worker],
        "id: \"kubelet\", action: \"frob\", output: \"\"",
    )
    .expect()
    .stderr("Error: unsupported service action: \"frob\"\n")
    .status(1)
    .run();

    // Images of the CRI: tag, digest and ID names, SI sizes, sorted labels, RFC 3339 times.
    let out = play(
        &d,
        "image_list",
        &[worker],
        "namespace: \"cri\", output: \"\"",
    )
    .ok()
    .stdout;
    let rows = words(&out);
    assert_eq!(
        rows[0],
        ["NODE", "IMAGE", "DIGEST", "SIZE", "LABELS", "CREATED"]
    );
    let pause = rows
        .iter()
        .find(|r| r[1] == "registry.k8s.io/pause:3.10.1")
        .unwrap();
    assert_eq!(
        &pause[3..],
        [
            "320",
            "kB",
            "io.cri-containerd.image=managed,io.cri-containerd.pinned=pinned",
            "2025-06-04T01:20:00Z"
        ]
    );
    assert!(!out.contains("kube-apiserver"), "{out}");
    let system = play(
        &d,
        "image_list",
        &[cp],
        "namespace: \"system\", output: \"\"",
    )
    .ok()
    .stdout;
    assert!(system.contains("registry.k8s.io/etcd:v3.6.12"), "{system}");
    play(&d, "image_list", &[cp], "namespace: \"nope\", output: \"\"")
        .expect()
        .mask(addrs)
        .stderr("Error: error from node $A1: unsupported namespace \"nope\"\nhint: use cri (Kubernetes images), system (etcd, kubelet) or inmem\n")
        .status(1)
        .run();

    // Data instead of tables.
    let json = play(
        &d,
        "containers",
        &both,
        "kubernetes: false, output: \"json\"",
    )
    .ok()
    .stdout;
    let items: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    assert_eq!(items.len(), 7);
    assert_eq!(items[0]["node"], cp);
    let yaml = play(&d, "mounts", &[cp], "output: \"yaml\"").ok().stdout;
    assert!(yaml.contains("mounted_on: /var"), "{yaml}");
}
