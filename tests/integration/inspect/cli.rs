//! Every inspection command through the real command line (flags, aliases, `-o`), printing what
//! its script prints when run with the same `ARGS`.

use super::{cluster, play, words};
use crate::common::net;

#[test]
fn commands_run_from_the_command_line() {
    let [cp, worker] = net::addrs();
    let (_nodes, d) = cluster(&cp, &worker);
    let nodes = format!("{cp},{worker}");
    let cli = |args: &[&str]| {
        let mut a: Vec<&str> = args.to_vec();
        a.extend(["-n", &nodes, "-e", &cp]);
        d.talm(a).ok().stdout
    };
    let both = [cp.as_str(), worker.as_str()];
    // Output that does not move with time: the same text either way.
    let same: &[(&[&str], &str, &str)] = &[
        (&["containers"], "containers", "kubernetes: false, output: \"\""),
        (&["c", "-k"], "containers", "kubernetes: true, output: \"\""),
        (&["ls", "/etc"], "list", "path: \"/etc\", long: false, recurse: false, depth: 1, humanize: false, type: [], output: \"\""),
        (&["list", "/etc", "-t", "d", "-o", "json"], "list", "path: \"/etc\", long: false, recurse: false, depth: 1, humanize: false, type: [\"d\"], output: \"json\""),
        (&["image", "list"], "image_list", "namespace: \"cri\", output: \"\""),
        (&["images", "ls", "--namespace", "system"], "image_list", "namespace: \"system\", output: \"\""),
        (&["ss", "-l", "-p"], "netstat", "pod: \"\", all: false, listening: true, verbose: false, extend: false, programs: true, timers: false, pods: false, tcp: false, udp: false, udplite: false, raw: false, ipv4: false, ipv6: false, output: \"\""),
    ];
    for (args, script, extra) in same {
        let want = play(&d, script, &both, extra).ok().stdout;
        assert_eq!(cli(args), want, "{args:?}");
    }
    // Files are read from one node at a time.
    for (args, path) in [
        (["read", "/etc/hostname"], "/etc/hostname"),
        (["cat", "/etc/os-release"], "/etc/os-release"),
    ] {
        let want = play(&d, "read", &[cp.as_str()], &format!("path: {path:?}"))
            .ok()
            .stdout;
        let mut a = args.to_vec();
        a.extend(["-n", &cp, "-e", &cp]);
        assert_eq!(d.talm(a).ok().stdout, want, "{args:?}");
    }
    // Output that moves with time: the same header, a row per node or more.
    let moving: &[(&[&str], &str)] = &[
        (&["stats"], "NODE"),
        (&["ps", "--sort", "cpu"], "NODE"),
        (&["free"], "NODE"),
        (&["mounts"], "NODE"),
        (&["du", "/etc"], "NODE"),
        (&["time"], "NODE"),
        (&["service"], "NODE"),
    ];
    for (args, first) in moving {
        let out = cli(args);
        let rows = words(&out);
        assert_eq!(rows[0][0], *first, "{args:?}: {out}");
        assert!(rows.len() > 2, "{args:?}: {out}");
    }
    // One service's state: the same lines as its script prints, but for the ages.
    let ages = |t: String| {
        t.lines()
            .map(|l| {
                l.rsplit_once(" (")
                    .map_or(l, |(a, _)| a)
                    .split(" ago")
                    .next()
                    .unwrap_or(l)
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    let want = play(
        &d,
        "service",
        &both,
        "id: \"etcd\", action: \"\", output: \"\"",
    )
    .ok()
    .stdout;
    assert_eq!(ages(cli(&["services", "etcd"])), ages(want));
    // Data output, parsed.
    let json = cli(&["memory", "-o", "json"]);
    assert!(
        json.trim_start().starts_with('{') || json.trim_start().starts_with('['),
        "{json}"
    );
    // A sort talosctl does not know sorts by resident memory, as talosctl's does: within each
    // node's rows the RESMEM column (columns two spaces apart, sizes as "54 MB") never grows.
    let resident = cli(&["processes", "--sort", "pid"])
        .lines()
        .skip(1)
        .map(|l| {
            let cells: Vec<&str> = l
                .split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect();
            let (n, unit) = cells[6].split_once(' ').unwrap();
            let scale = match unit {
                "B" => 1.0,
                "kB" => 1e3,
                "MB" => 1e6,
                "GB" => 1e9,
                other => panic!("size unit {other:?} in {l:?}"),
            };
            (cells[0].to_string(), n.parse::<f64>().unwrap() * scale)
        })
        .collect::<Vec<(String, f64)>>();
    assert!(
        resident.len() > 1
            && resident
                .windows(2)
                .all(|w| w[0].0 != w[1].0 || w[0].1 >= w[1].1),
        "{resident:?}"
    );
    // Bad choices are refused by the command line, naming the flag.
    d.talm(["image", "list", "--namespace", "k8s", "-n", &cp])
        .expect()
        .stderr(
            "\
error: invalid value 'k8s' for '--namespace <NAMESPACE>'
  [possible values: cri, system, inmem]

For more information, try '--help'.
",
        )
        .status(1)
        .run();
}
