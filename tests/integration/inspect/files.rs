//! A node's files: `read`, `list`, `usage`, `copy` (a tar.gz, or unpacked) and `cgroups`.

use crate::common::expect::addrs;
use std::io::Read;

use super::{cluster, play, words};
use crate::common::{column, net};

#[test]
fn files_are_read_listed_measured_and_copied() {
    let [cp, worker] = net::addrs();
    let (cp, worker) = (cp.as_str(), worker.as_str());
    // The NODE column of a table of the control plane.
    let node = column(3, &["NODE", cp]);
    let (nodes, d) = cluster(cp, worker);
    let hostname = nodes.node(cp).hostname().hostname;

    let out = play(&d, "read", &[cp], "path: \"/etc/hostname\"")
        .ok()
        .stdout;
    assert_eq!(out, format!("{hostname}\n"));
    let os = play(&d, "read", &[cp], "path: \"/etc/os-release\"")
        .ok()
        .stdout;
    assert!(
        os.contains("VERSION_ID=1.13.7\n"),
        "a link is followed: {os}"
    );
    let proc_ = play(&d, "read", &[cp], "path: \"/proc/1/cmdline\"")
        .ok()
        .stdout;
    assert_eq!(proc_, "/sbin/init\0");
    play(&d, "read", &[cp], "path: \"/etc/nope\"")
        .expect().mask(addrs).stderr("Error: error reading: rpc error: code = NotFound desc = stat /etc/nope: no such file or directory\n").status(1).run();
    play(&d, "read", &[cp], "path: \"/etc\"")
        .expect()
        .mask(addrs)
        .stderr(
            "Error: error reading: rpc error: code = Unknown desc = path must be a regular file\n",
        )
        .status(1)
        .run();
    play(&d, "read", &[cp, worker], "path: \"/etc/hostname\"")
        .expect()
        .stderr(
            "\
Error: command \"read\" is not supported with multiple nodes
hint: read from one node: talm read -f nodes/node1.yaml /etc/hostname
",
        )
        .status(1)
        .run();

    let list = |extra: &str| play(&d, "list", &[cp], &format!("{extra}, output: \"\""));
    let out = list(
        "path: \"/etc/cri\", long: false, recurse: false, depth: 1, humanize: false, type: []",
    )
    .ok()
    .stdout;
    assert_eq!(
        out,
        format!(
            "{}NAME\n{}.\n{}conf.d\n{}containerd.toml\n",
            node("NODE"),
            node(cp),
            node(cp),
            node(cp)
        )
    );
    let out = list(
        "path: \"/etc/cri\", long: false, recurse: true, depth: 1, humanize: false, type: [\"f\"]",
    )
    .ok()
    .stdout;
    assert_eq!(
        out,
        format!(
            "{}NAME\n{}conf.d/cri.toml\n{}containerd.toml\n",
            node("NODE"),
            node(cp),
            node(cp)
        )
    );
    let out =
        list("path: \"/etc\", long: true, recurse: false, depth: 1, humanize: true, type: [\"l\"]")
            .ok()
            .stdout;
    let rows = words(&out);
    assert_eq!(
        rows[0],
        ["NODE", "MODE", "UID", "GID", "SIZE(B)", "LASTMOD", "LABEL", "NAME"]
    );
    let os = rows.iter().find(|r| r.contains(&"os-release")).unwrap();
    assert_eq!(os[1], "Lrwxrwxrwx");
    assert_eq!(
        &os[os.len() - 3..],
        ["os-release", "->", "../usr/lib/os-release"]
    );
    assert!(os.contains(&"system_u:object_r:etc_t:s0"), "{out}");
    list("path: \"/\", long: false, recurse: true, depth: 3, humanize: false, type: []")
        .expect()
        .stderr(
            "Error: only one of flags --recurse and --depth can be specified at the same time\n",
        )
        .status(1)
        .run();
    list("path: \"/\", long: false, recurse: false, depth: 1, humanize: false, type: [\"fx\"]")
        .expect()
        .stderr("Error: invalid file type: x\nhint: use f (regular file), d (directory) or l (symbolic link)\n")
        .status(1)
        .run();
    list("path: \"/nope\", long: false, recurse: false, depth: 1, humanize: false, type: []")
        .expect().stdout("NODE   NAME\n").stderr("Error: 1 error occurred:\n rpc error: code = Unknown desc = lstat /nope: no such file or directory\n").status(1).run();

    // Usage: folders after their contents, the path itself last, one level by default.
    let out = play(
        &d,
        "usage",
        &[cp],
        "paths: [\"/etc/cri\"], depth: 1, all: true, threshold: 0, humanize: false, output: \"\"",
    )
    .ok()
    .stdout;
    let rows = words(&out);
    assert_eq!(rows[0], ["NODE", "SIZE", "NAME"]);
    let names: Vec<&str> = rows[1..].iter().map(|r| r[2]).collect();
    // Depth 1 shows the children only; machined sends a file before the folder it leaves.
    assert_eq!(names, ["containerd.toml", "conf.d", "."]);
    let sizes: Vec<u64> = rows[1..].iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(sizes[2], sizes[0] + sizes[1]);
    let out = play(&d, "usage", &[cp], "paths: [\"/nope\", \"/etc/cri\"], depth: 0, all: false, threshold: 0, humanize: false, output: \"\"").expect().stderr("\
Error: 1 error occurred:
 lstat /nope: no such file or directory
").status(1).run();
    assert!(
        out.stdout.ends_with(&format!("{}174    .\n", node(cp))),
        "{}",
        out.stdout
    );

    // Copy: a .tar.gz on stdout, or unpacked into a folder that must not hold the files yet.
    play(
        &d,
        "copy",
        &[cp],
        "source: \"/etc/cri\", destination: \"-\"",
    )
    .ok();
    // The archive's bytes, unchanged (the builder's output is text).
    let raw = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .current_dir(d.path())
        .args(["run", "copy.rhai"])
        .output()
        .unwrap();
    assert!(raw.status.success());
    let bytes = raw.stdout;
    let mut names = vec![];
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(bytes.as_slice()));
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let name = e.path().unwrap().display().to_string();
        if name == "containerd.toml" {
            let mut s = String::new();
            e.read_to_string(&mut s).unwrap();
            assert!(s.starts_with("version = 3\n"), "{s}");
        }
        names.push(name);
    }
    assert_eq!(names, ["conf.d/", "conf.d/cri.toml", "containerd.toml"]);
    play(&d, "copy", &[cp], "source: \"/etc\", destination: \"out\"").ok();
    assert_eq!(d.read("out/hostname"), format!("{hostname}\n"));
    assert_eq!(
        std::fs::read_link(d.join("out/os-release"))
            .unwrap()
            .display()
            .to_string(),
        "../usr/lib/os-release"
    );
    play(&d, "copy", &[cp], "source: \"/etc\", destination: \"out\"").expect().mask(addrs).stderr("\
Error: node $A1: error copying: the archive the node sent does not unpack: error creating directory \"out/cni\": File exists (os error 17)
hint: what was unpacked before it stays in out; retry, or look at the node's files with `talm list /etc`
").status(1).run();
    d.write("file", "x");
    play(&d, "copy", &[cp], "source: \"/etc\", destination: \"file\"")
        .expect()
        .stderr(
            "\
Error: local path \"file\" should be a directory
hint: give a folder to unpack into, or `-` to write the .tar.gz to stdout
",
        )
        .status(1)
        .run();
    play(
        &d,
        "copy",
        &[cp, worker],
        "source: \"/etc\", destination: \"-\"",
    )
    .expect()
    .stderr(
        "\
Error: command \"copy\" is not supported with multiple nodes
hint: copy from one node: talm copy -f nodes/node1.yaml /etc -
",
    )
    .status(1)
    .run();

    // Cgroups: the tree with pods, containers and processes named.
    let out = play(
        &d,
        "cgroups",
        &[cp],
        "preset: \"process\", schema_file: \"\", skip_cri_resolve: false, output: \"\"",
    )
    .ok()
    .stdout;
    let l: Vec<&str> = out.lines().collect();
    assert!(
        l[0].starts_with("NAME")
            && l[0].ends_with("PidsCurrent   PidsPeak   PidsMax    Procs     Threads   Processes"),
        "{out}"
    );
    assert!(l[1].starts_with(". "), "{out}");
    assert!(out.contains("├──init ") && out.contains("[init]"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains("──apid ") && l.ends_with("[apid]")),
        "{out}"
    );
    assert!(
        out.contains("└──system ") && out.contains("    ├──apid "),
        "the last child's children are indented with spaces: {out}"
    );
    assert!(
        out.contains("kube-system/kube-apiserver-")
            && out.contains("sandbox ")
            && out.contains("[pause]"),
        "{out}"
    );
    let raw = play(
        &d,
        "cgroups",
        &[cp],
        "preset: \"memory\", schema_file: \"\", skip_cri_resolve: true, output: \"\"",
    )
    .ok()
    .stdout;
    assert!(
        raw.contains("├──pod"),
        "pods keep their cgroup names: {raw}"
    );
    assert!(
        raw.lines()
            .any(|l| l.contains("apid ") && l.contains("128 MiB")),
        "apid's memory.max: {raw}"
    );
    play(
        &d,
        "cgroups",
        &[cp],
        "preset: \"disk\", schema_file: \"\", skip_cri_resolve: false, output: \"\"",
    )
    .expect()
    .stderr(
        "\
Error: invalid preset name: disk (valid [cpu cpuset io memory process psi swap])
hint: run `talm cgroups --preset memory`, for one
",
    )
    .status(1)
    .run();
    play(
        &d,
        "cgroups",
        &[cp],
        "preset: \"\", schema_file: \"\", skip_cri_resolve: false, output: \"\"",
    )
    .expect()
    .stderr(
        "\
Error: either schema file or preset must be specified
hint: pick a preset: [cpu cpuset io memory process psi swap]
",
    )
    .status(1)
    .run();
}

#[test]
fn copy_carries_long_link_targets_whole() {
    let [cp, worker] = net::addrs();
    let (_nodes, d) = cluster(&cp, &worker);
    // Every /var/log/containers entry links to a pod's log under /var/log/pods: targets past a
    // tar header's 100 bytes, which used to end the stream with a partial archive.
    let raw = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .current_dir(d.path())
        .args(["cp", "/var/log", "-", "-n", &cp, "-e", &cp])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&raw.stderr), "");
    assert!(raw.status.success());
    let mut links = vec![];
    let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(raw.stdout.as_slice()));
    for e in ar.entries().unwrap() {
        let e = e.unwrap();
        if let Some(t) = e.link_name().unwrap() {
            links.push((
                e.path().unwrap().display().to_string(),
                t.display().to_string(),
            ));
        }
    }
    let long: Vec<_> = links.iter().filter(|(_, t)| t.len() > 100).collect();
    assert!(!long.is_empty(), "{links:?}");
    d.talm(["cp", "/var/log", "out", "-n", &cp, "-e", &cp]).ok();
    for (name, target) in long {
        assert_eq!(
            std::fs::read_link(d.join(&format!("out/{name}")))
                .unwrap()
                .display()
                .to_string(),
            *target
        );
    }
}
