//! Fleet steps over folders of node files (apply and template --parallel), their report and flags, and a roll's edge cases.

use super::*;
use crate::common::expect::addrs;

/// Adds a sysctl to the body of the node file `rel` (applied without a reboot).
fn with_sysctl(d: &Dir, rel: &str) {
    let text = d.read(rel);
    assert!(!text.contains("\n  sysctls:\n"), "{text}");
    let text = text.replacen(
        "\nmachine:\n",
        "\nmachine:\n  sysctls:\n    vm.max_map_count: \"262144\"\n",
        1,
    );
    d.write(rel, &text);
}

#[test]
fn apply_a_folder_of_node_files_in_parallel_and_report_a_failure() {
    let ips: [String; 6] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    let d = cluster(&nodes, &ips[..3], &ips[3..]);
    let files = [
        "nodes/cp1.yaml",
        "nodes/cp2.yaml",
        "nodes/cp3.yaml",
        "nodes/w1.yaml",
        "nodes/w2.yaml",
        "nodes/w3.yaml",
    ];
    for f in files {
        with_sysctl(&d, f);
    }
    let o = d.talm(["apply", "-f", "nodes/", "--parallel", "3"]).ok();
    for (f, ip) in files.iter().zip(&ips) {
        assert!(
            o.stderr
                .contains(&format!("- talm: file={f}, nodes=[{ip}]")),
            "{}",
            o.stderr
        );
        let cfg = nodes.node(ip).state().config.clone().unwrap();
        assert!(cfg.text().contains("vm.max_map_count: \"262144\""), "{ip}");
    }

    // A node that refuses its config: the last file, so every other one was started.
    nodes.node(&ips[5]).set_faults(Faults {
        fail: [(
            "ApplyConfiguration".to_string(),
            "Unavailable: disk is on fire".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    let o = d.talm(["apply", "-f", "nodes/", "--parallel", "3"]).run();
    assert_ne!(o.code, 0);
    assert!(o.stderr.ends_with(&format!(
        "Error: apply: 1 of 6 node files failed; no new one started after the first failure\n  applied: nodes/cp1.yaml, nodes/cp2.yaml, nodes/cp3.yaml, nodes/w1.yaml, nodes/w2.yaml\n  failed: nodes/w3.yaml: node {}: ApplyConfiguration: rpc error: code = Unavailable desc = disk is on fire\n  not started: none\nhint: fix the failure, then apply the files not applied (applying a node file again is safe)\n",
        ips[5]
    )), "{}", o.stderr);

    // One at a time, a failure on the second file leaves the rest unstarted.
    nodes.node(&ips[5]).set_faults(Faults::default());
    nodes.node(&ips[1]).set_faults(Faults {
        fail: [(
            "ApplyConfiguration".to_string(),
            "Unavailable: disk is on fire".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    let o = d.talm(["apply", "-f", "nodes", "--parallel", "1"]).run();
    assert_ne!(o.code, 0);
    assert!(o.stderr.ends_with(&format!(
        "Error: apply: 1 of 6 node files failed; no new one started after the first failure\n  applied: nodes/cp1.yaml\n  failed: nodes/cp2.yaml: node {}: ApplyConfiguration: rpc error: code = Unavailable desc = disk is on fire\n  not started: nodes/cp3.yaml, nodes/w1.yaml, nodes/w2.yaml, nodes/w3.yaml\nhint: fix the failure, then apply the files not applied (applying a node file again is safe)\n",
        ips[1]
    )), "{}", o.stderr);
    assert!(
        !o.stderr.contains("- talm: file=nodes/cp3.yaml"),
        "{}",
        o.stderr
    );

    // Ambiguous lines are refused: a side-patch in fleet mode, --nodes over several files.
    d.write("patches/extra.yaml", "machine:\n  sysctls:\n    a: \"1\"\n");
    d.refuses(&["apply", "-f", "nodes", "-f", "patches/extra.yaml"], 1, "\
Error: -f names a folder, so every file is a node file: patches/extra.yaml has no modeline, so it is no node file of its own
hint: side-patches stack on one node file: apply them per node, e.g. talm apply -f nodes/cp1.yaml -f patch.yaml (a folder given to -f must hold only node files)
");
    d.refuses(&["apply", "-f", "nodes/cp1.yaml", "-f", "patches/extra.yaml", "--parallel", "2"], 1, "\
Error: --parallel applies every -f file as a node file of its own: patches/extra.yaml has no modeline, so it is no node file of its own
hint: side-patches stack on one node file: apply them per node, e.g. talm apply -f nodes/cp1.yaml -f patch.yaml (a folder given to -f must hold only node files)
");
    d.refuses(&["apply", "-f", "nodes", "--nodes", &ips[0]], 1, "\
Error: --nodes with 6 node files: each node file names its own nodes
hint: drop --nodes to apply every file to the nodes of its modeline, or apply one file: talm apply -f FILE --nodes IP
");
    // Without a folder or --parallel, several -f files keep the Go talm's meaning.
    d.refuses(&["apply", "-f", "nodes/cp1.yaml", "-f", "nodes/cp2.yaml"], 1, "\
Error: side-patch nodes/cp2.yaml carries its own modeline; the apply chain treats only the first -f file as the anchor and stacks subsequent files as side-patches
hint: apply node files one at a time: for f in nodes/*.yaml; do talm apply -f $f; done
");
}

/// The node files `files` cut back to their modelines, as a bring-up writes them first.
fn modelines_only(d: &Dir, files: &[&str]) {
    for f in files {
        let text = d.read(f);
        let modeline = text.lines().next().unwrap();
        assert!(modeline.starts_with("# talm: "), "{text}");
        d.write(f, &format!("{modeline}\n"));
    }
}

#[test]
fn template_renders_node_files_in_parallel_and_reports_a_failure() {
    let ips: [String; 4] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    let d = cluster(&nodes, &ips[..2], &ips[2..]);
    let files = [
        "nodes/cp1.yaml",
        "nodes/cp2.yaml",
        "nodes/w1.yaml",
        "nodes/w2.yaml",
    ];
    // Printed renders come out in the files' order, as one file at a time prints them.
    let one = d.talm(["template", "-f", "nodes"]).ok().stdout;
    assert_eq!(one.matches("\n---\n").count(), 3, "{one}");
    let many = d.talm(["template", "-f", "nodes", "--parallel", "4"]).ok();
    assert_eq!(many.stdout, one);

    // In place: every file filled from its own node, each line naming it, and the same files
    // as one at a time writes.
    modelines_only(&d, &files);
    let o = d
        .talm(["template", "-f", "nodes/", "-I", "--parallel", "3"])
        .ok();
    let parallel: Vec<String> = files.iter().map(|f| d.read(f)).collect();
    for (f, ip) in files.iter().zip(&ips) {
        for line in [
            format!("{ip}: - talm: file={f}, nodes=[{ip}]"),
            format!("{ip}: Updated."),
        ] {
            assert!(o.stderr.contains(&line), "{line} in\n{}", o.stderr);
        }
    }
    modelines_only(&d, &files);
    d.talm(["template", "-f", "nodes/", "-I"]).ok();
    for (f, text) in files.iter().zip(&parallel) {
        assert!(text.contains("\nmachine:\n"), "{f}: {text}");
        assert_eq!(&d.read(f), text, "{f}");
    }

    // A node that answers nothing: the files after it are not started, the one before it is
    // written, and the failed one is left as it was.
    nodes.node(&ips[1]).set_faults(Faults {
        fail: [("*".to_string(), "Unavailable: network is down".to_string())].into(),
        ..Faults::default()
    });
    modelines_only(&d, &files);
    d.talm(["template", "-f", "nodes", "-I", "--parallel", "1"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
$A1: - talm: file=nodes/cp1.yaml, nodes=[$A1], endpoints=[$A1], templates=[templates/controlplane.yaml]
$A1: Updated.
$A2: - talm: file=nodes/cp2.yaml, nodes=[$A2], endpoints=[$A2], templates=[templates/controlplane.yaml]
Error: template: 1 of 4 node files failed; no new one started after the first failure
  written: nodes/cp1.yaml
  failed: nodes/cp2.yaml: node $A2: list Disks.block.talos.dev: rpc error: code = Unavailable desc = network is down
  not started: nodes/w1.yaml, nodes/w2.yaml
hint: fix the failure, then render the files not rendered (rendering a node file again is safe)
")
        .status(1)
        .run();
    assert_eq!(d.read(files[0]), parallel[0]);
    for f in &files[1..] {
        assert_eq!(d.read(f).lines().count(), 1, "{f}");
    }
    d.refuses(
        &[
            "template",
            "-t",
            "templates/controlplane.yaml",
            "--offline",
            "--parallel",
            "2",
        ],
        1,
        "\
Error: --parallel renders node files: pass them with -f
hint: for example: talm template -f nodes/ -I --parallel 4
",
    );
}

#[test]
fn the_fleet_step_reports_what_failed_in_its_own_words() {
    // `talm/fleet`, which `apply --parallel` and `template --parallel` share, from a playbook:
    // a script error is reported by its message, and the files after it are not started.
    let d = Dir::new();
    d.write(
        "step.rhai",
        "import \"talm/fleet\" as fleet;\n\
         let seen = fleet::each([\"a.yaml\", \"b.yaml\"], 1, |f| f.len(), #{ command: \"step\", done: \"done\", hint: \"h\" });\n\
         log(`lengths ${seen}`);\n\
         fn bad(f) { if f == \"b.yaml\" { no_such_thing } else { 1 } }\n\
         fleet::each([\"a.yaml\", \"b.yaml\", \"c.yaml\"], 1, |f| bad(f), #{ command: \"step\", done: \"done\", hint: \"try again\" });\n",
    );
    let o = d.talm(["run", "step.rhai"]).run();
    assert_ne!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stderr,
        "lengths [6, 6]\n\
         Error: step: 1 of 3 node files failed; no new one started after the first failure\n  \
         done: a.yaml\n  \
         failed: b.yaml: step.rhai:4:32: Variable not found: no_such_thing\n  \
         not started: c.yaml\n\
         hint: try again\n"
    );
}

#[test]
fn fleet_flags_say_what_they_risk_and_need() {
    let d = Dir::new();
    let help = d.talm(["apply", "--help"]).ok().stdout;
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains("Applying to all control planes at once can cost etcd quorum"),
        "{help}"
    );
    let help = d.talm(["upgrade", "--help"]).ok().stdout;
    assert!(help.contains("--rolling"), "{help}");
    d.talm(["upgrade", "--resume", "-i", NEW])
        .expect()
        .stderr(
            "\
error: the following required arguments were not provided:
  --rolling

Usage: talm upgrade --rolling --resume --image <REF>

For more information, try '--help'.
",
        )
        .status(1)
        .run();
    d.talm(["upgrade", "--rolling", "--wait=false", "-i", NEW])
        .expect()
        .stderr(
            "\
Error: cannot use --rolling and --wait=false together
hint: a roll follows each node back up and checks the cluster before the next; drop --wait=false
",
        )
        .status(1)
        .run();
}

#[test]
fn a_roll_of_workers_alone_checks_the_cluster_through_their_endpoint() {
    let [cp, w] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w]);
    // The worker reached through the control plane, as a project's endpoints usually are.
    let text = d.read("nodes/w1.yaml");
    let own = format!("endpoints=[\"{w}\"]");
    assert!(text.contains(&own), "{text}");
    d.write(
        "nodes/w1.yaml",
        &text.replacen(&own, &format!("endpoints=[\"{cp}\"]"), 1),
    );
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/w1.yaml",
            "--rolling",
            "--image",
            NEW,
        ])
        .ok();
    assert_eq!(
        steps(&o.stderr),
        [
            format!("start {w}"),
            format!("done {w}"),
            format!("healthy {w}")
        ]
    );
    assert_eq!(version(&nodes, &w), "v1.13.9");
    assert_eq!(version(&nodes, &cp), OLD);
}

#[test]
fn ctrl_c_during_a_health_check_stops_the_roll_at_once() {
    let [cp, w1] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1]);
    pin_old(&d, &["nodes/cp1.yaml", "nodes/w1.yaml"]);
    // The worker's kubelet never comes up on the new version: the check after it waits.
    kubelet_fails_at_new(&nodes, &w1);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .args([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes",
            "--rolling",
            "--image",
            NEW,
        ])
        .args(["--health-timeout", "5m"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // The worker's turn has ended: the check after it waits now.
    let checking = format!("rolling: checking the cluster's health after {w1}\n");
    while !seen.contains(&checking) {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "talm ended before the health check: {seen}");
        seen.push_str(&line);
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::io::Read::read_to_string(&mut stderr, &mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}");
    assert!(seen.ends_with(&format!(
        "\nError: rolling: interrupted (Ctrl-C)\n  done: {cp}, {w1}\n  not started: none\nhint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --image {NEW} --health-timeout 5m --resume\n"
    )), "{seen}");
}
