//! Fleet commands through the real binary against simulated clusters: `upgrade --rolling`
//! (control planes one at a time, workers --max-parallel at a time, the health check between,
//! a stop on a node whose kubelet fails health after the upgrade, the printed --resume line
//! finishing the roll), a hook whose before() vetoes, the Rhai `rolling()`, and
//! `apply -f nodes/ --parallel N` and `template -f nodes/ -I --parallel N` (every node file
//! applied or rendered, the report of a failing one).

use talm::sim::net::faults::Faults;
use talm::sim::net::unhealthy::Unhealthy;

use crate::common::cluster::cluster;
use crate::common::expect::{addrs, installer_run, log_stamps, PINNED_NEW};
use crate::common::sim::Nodes;
use crate::common::{net, Dir};

mod folders;

const OLD: &str = "v1.13.7";
const NEW: &str = "ghcr.io/siderolabs/installer:v1.13.9";

/// What the roll did, in the order stderr shows it: `start X`, `done X`, `healthy X`.
fn steps(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in stderr.lines() {
        if let Some(rest) = line.split("- talm: upgrading ").nth(1) {
            out.push(format!("start {}", rest.split(' ').next().unwrap_or("")));
        } else if let Some((node, _)) = line.split_once(": running v") {
            let node = node.rsplit(' ').next().unwrap_or(node);
            out.push(format!("done {node}"));
        } else if let Some(rest) = line.split("rolling: cluster healthy after ").nth(1) {
            out.push(format!("healthy {rest}"));
        }
    }
    out
}

/// What talm itself says on stderr, addresses masked: without the lines that follow a node's
/// upgrade events (`"IP": ...`), whose retries depend on timing.
fn said(stderr: &str) -> String {
    addrs(stderr)
        .lines()
        .filter(|l| !l.starts_with('"'))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The most nodes upgrading at once, seen from the start/done lines.
fn most_at_once(steps: &[String], among: &[String]) -> usize {
    let (mut now, mut most) = (0usize, 0usize);
    for s in steps {
        let (what, node) = s.split_once(' ').unwrap();
        if !among.iter().any(|n| n == node) {
            continue;
        }
        match what {
            "start" => now += 1,
            "done" => now -= 1,
            _ => {}
        }
        most = most.max(now);
    }
    most
}

/// Pins the old installer in each node file (as a project that names its image does); returns
/// the pinned line.
fn pin_old(d: &Dir, files: &[&str]) -> String {
    let pinned = format!("    image: ghcr.io/siderolabs/installer:{OLD}\n");
    for f in files {
        let text = d.read(f);
        assert!(text.contains("\n  install:\n"), "{text}");
        d.write(
            f,
            &text.replacen("\n  install:\n", &format!("\n  install:\n{pinned}"), 1),
        );
    }
    pinned
}

/// The image line a node file names after the roll wrote it.
fn new_pin() -> String {
    format!("    image: {NEW}\n")
}

fn version(nodes: &Nodes, ip: &str) -> String {
    nodes.node(ip).state().version.clone()
}

fn kubelet_fails_at_new(nodes: &Nodes, ip: &str) {
    nodes.node(ip).set_faults(Faults {
        unhealthy: Some(Unhealthy {
            services: vec!["kubelet".into()],
            version: Some("v1.13.9".into()),
        }),
        ..Faults::default()
    });
}

#[test]
fn rolling_upgrade_stops_when_a_node_fails_health_and_resumes() {
    let ips: [String; 6] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    let (cps, ws) = (&ips[..3], &ips[3..]);
    let d = cluster(&nodes, cps, ws);
    // The node files pin the installer they run (written back as each node is done).
    let files = [
        "nodes/cp1.yaml",
        "nodes/cp2.yaml",
        "nodes/cp3.yaml",
        "nodes/w1.yaml",
        "nodes/w2.yaml",
        "nodes/w3.yaml",
    ];
    let pinned = pin_old(&d, &files);
    // The second worker's kubelet does not come up on the new version.
    kubelet_fails_at_new(&nodes, &ws[1]);
    let args = [
        "upgrade",
        "--drain=false",
        "-f",
        "nodes",
        "--rolling",
        "--max-parallel",
        "2",
        "--image",
        NEW,
        "--health-timeout",
        "2s",
    ];
    let o = d.talm(args).run();
    assert_ne!(o.code, 0, "{}", o.stderr);
    let s = steps(&o.stderr);
    // Control planes one at a time, each followed by a passing health check.
    let mut want = Vec::new();
    for cp in cps {
        want.push(format!("start {cp}"));
        want.push(format!("done {cp}"));
        want.push(format!("healthy {cp}"));
    }
    assert_eq!(s[..9], want[..], "{}", o.stderr);
    // Then the first two workers together; the third never starts.
    let mut batch: Vec<String> = s[9..].to_vec();
    assert_eq!(batch.len(), 4, "{}", o.stderr);
    assert!(batch[..2].iter().all(|x| x.starts_with("start ")), "{s:?}");
    batch.sort();
    assert_eq!(
        batch,
        [
            format!("done {}", ws[0]),
            format!("done {}", ws[1]),
            format!("start {}", ws[0]),
            format!("start {}", ws[1]),
        ]
    );
    assert_eq!(most_at_once(&s, ws), 2);
    for ip in &ips[..5] {
        assert_eq!(version(&nodes, ip), "v1.13.9", "{ip}");
    }
    assert_eq!(version(&nodes, &ws[2]), OLD);
    let tail = format!(
        "Error: rolling: the cluster health check failed after {w1}, {w2}: HEALTH\n  done: {c1}, {c2}, {c3}, {w1}, {w2}\n  not started: {w3}\nhint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --max-parallel 2 --image {NEW} --health-timeout 2s --resume\n",
        c1 = cps[0],
        c2 = cps[1],
        c3 = cps[2],
        w1 = ws[0],
        w2 = ws[1],
        w3 = ws[2],
    );
    // Kubernetes names the node by its hostname.
    let name = nodes.node(&ws[1]).hostname().hostname.to_lowercase();
    let health = format!("healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded (waiting for all k8s nodes to report ready: some nodes are not ready: [{name}])");
    assert!(
        o.stderr.ends_with(&tail.replace("HEALTH", &health)),
        "{}",
        o.stderr
    );
    // Each node's file was written as that node finished: the five upgraded name the new
    // image, the one never started still names the old one.
    for f in &files[..5] {
        assert!(d.read(f).contains(&new_pin()), "{f}");
    }
    assert!(d.read(files[5]).contains(&pinned));

    // Once the kubelet is fixed, the printed line finishes the roll: only w3 is upgraded.
    nodes.node(&ws[1]).set_faults(Faults::default());
    let boots: Vec<u64> = ips.iter().map(|ip| nodes.boots(ip)).collect();
    let mut again = args.to_vec();
    again.push("--resume");
    let o = d.talm(again).ok();
    for ip in &ips[..5] {
        assert!(
            o.stderr.contains(&format!(
                "{ip}: already running v1.13.9, skipped (--resume)\n"
            )),
            "{}",
            o.stderr
        );
    }
    assert_eq!(
        steps(&o.stderr),
        [
            format!("start {}", ws[2]),
            format!("done {}", ws[2]),
            format!("healthy {}", ws[2])
        ]
    );
    let after: Vec<u64> = ips.iter().map(|ip| nodes.boots(ip)).collect();
    assert_eq!(after[..5], boots[..5], "skipped nodes did not reboot");
    assert_eq!(after[5], boots[5] + 1);
    assert_eq!(version(&nodes, &ws[2]), "v1.13.9");
    for f in files {
        assert!(d.read(f).contains(&format!("    image: {NEW}\n")), "{f}");
    }
}

#[test]
fn a_hook_that_vetoes_stops_the_roll_before_that_node() {
    let [cp, w1, w2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let pinned = pin_old(&d, &["nodes/cp1.yaml", "nodes/w1.yaml", "nodes/w2.yaml"]);
    d.write(
        "hooks/roll.rhai",
        &format!(
            "fn before(n) {{\n    if n.name == \"{w1}\" {{ log(`hook: not now for ${{n.name}}`); return false; }}\n    true\n}}\nfn after(n) {{ log(`hook: after ${{n.name}}`); }}\n"
        ),
    );
    // The control plane's file was written as it finished, before the veto; the workers' not.
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes",
            "--rolling",
            "--image",
            NEW,
            "--hook",
            "hooks/roll.rhai",
        ])
        .expect()
        .stdout("")
        .status(1)
        .run();
    let run = installer_run("$A1", PINNED_NEW, "v1.13.7", "v1.13.9");
    assert_eq!(
        log_stamps(&said(&o.stderr)),
        format!("\
rolling: control plane $A1
- talm: upgrading $A1 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
{run}$A1: running v1.13.9
Synced machine.install.image in nodes/cp1.yaml to ghcr.io/siderolabs/installer:v1.13.9
hook: after $A1
rolling: checking the cluster's health after $A1
rolling: cluster healthy after $A1
rolling: worker $A2
hook: not now for $A2
Error: rolling: before($A2) vetoed the roll
  done: $A1
  not started: $A2, $A3
hint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --image ghcr.io/siderolabs/installer:v1.13.9 --hook hooks/roll.rhai --resume
")
    );
    assert_eq!(version(&nodes, &cp), "v1.13.9");
    assert_eq!(version(&nodes, &w1), OLD);
    assert_eq!(version(&nodes, &w2), OLD);
    assert!(d.read("nodes/cp1.yaml").contains(&new_pin()));
    assert!(d.read("nodes/w1.yaml").contains(&pinned));
    assert!(d.read("nodes/w2.yaml").contains(&pinned));

    // A hook runs confined to the project, as a playbook: reading outside it stops the roll.
    d.write(
        "hooks/peek.rhai",
        "fn before(n) { project::read(\"/etc\", \"hostname\"); true }\n",
    );
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes",
        "--rolling",
        "--image",
        NEW,
        "--hook",
        "hooks/peek.rhai",
        "--resume",
    ])
    .expect()
    .mask(addrs)
    .stdout("")
    .stderr("\
$A1: already running v1.13.9, skipped (--resume)
rolling: worker $A2
Error: rolling: before($A2) failed: project::read: /etc is outside the project at $DIR
  done: none
  not started: $A2, $A3
hint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --image ghcr.io/siderolabs/installer:v1.13.9 --hook hooks/peek.rhai --resume
")
    .status(1)
    .run();
    assert_eq!(version(&nodes, &w1), OLD);
    // A hook file with neither function is refused before anything starts.
    d.write("hooks/empty.rhai", "let x = 1;\n");
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes",
        "--rolling",
        "--image",
        NEW,
        "--hook",
        "hooks/empty.rhai",
    ])
    .expect().stderr("\
Error: hook hooks/empty.rhai defines neither before(node) nor after(node)
hint: a hook file holds fn before(node) { ... } and/or fn after(node) { ... }; each returns false to stop the roll
").status(1).run();
    assert_eq!(version(&nodes, &w1), OLD);
}

#[test]
fn a_node_failing_its_upgrade_stops_the_roll_named_once() {
    let [cp, w1, w2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let pinned = pin_old(&d, &["nodes/cp1.yaml", "nodes/w1.yaml", "nodes/w2.yaml"]);
    // The first worker refuses its upgrade (the call goes through the control plane's endpoint).
    nodes.node(&w1).state().installed_disk = None;
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes",
            "--rolling",
            "--image",
            NEW,
        ])
        .expect()
        .stdout("")
        .status(1)
        .run();
    let run = installer_run("$A1", PINNED_NEW, "v1.13.7", "v1.13.9");
    let pulled = format!("$A2: pulled image {PINNED_NEW}");
    assert_eq!(
        log_stamps(&said(&o.stderr)),
        format!("\
rolling: control plane $A1
- talm: upgrading $A1 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
{run}$A1: running v1.13.9
Synced machine.install.image in nodes/cp1.yaml to ghcr.io/siderolabs/installer:v1.13.9
rolling: checking the cluster's health after $A1
rolling: cluster healthy after $A1
rolling: worker $A2
- talm: upgrading $A2 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
{pulled}
Error: rolling: node $A2 (via $A1:50000): Upgrade: rpc error: code = FailedPrecondition desc = machine is not installed
  done: $A1
  failed: $A2
  not started: $A3
hint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --image ghcr.io/siderolabs/installer:v1.13.9 --resume
")
    );
    // The control plane's file names the image it runs; the workers' still the old one.
    assert!(d.read("nodes/cp1.yaml").contains(&new_pin()));
    assert!(d.read("nodes/w1.yaml").contains(&pinned));
    assert!(d.read("nodes/w2.yaml").contains(&pinned));
    assert_eq!(version(&nodes, &w1), OLD);
}

#[test]
fn ctrl_c_stops_a_roll_with_its_summary_and_resume_line() {
    interrupt_roll("-INT", 130, "Ctrl-C");
}

#[test]
fn sigterm_stops_a_roll_as_ctrl_c_does() {
    interrupt_roll("-TERM", 143, "SIGTERM");
}

/// A roll of a control plane and two workers sent `signal` during the first worker's turn:
/// talm ends with `code`, naming the signal as `named`.
fn interrupt_roll(signal: &str, code: i32, named: &str) {
    let [cp, w1, w2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2]);
    let pinned = pin_old(&d, &["nodes/cp1.yaml", "nodes/w1.yaml", "nodes/w2.yaml"]);
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
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    // The first worker's turn has begun (the control plane is done): Ctrl-C now.
    let turn = format!("- talm: upgrading {w1} from ");
    while !seen.contains(&turn) {
        let mut line = String::new();
        let n = std::io::BufRead::read_line(&mut stderr, &mut line).unwrap();
        assert!(n > 0, "talm ended before {w1}'s turn: {seen}");
        seen.push_str(&line);
    }
    let kill = std::process::Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::io::Read::read_to_string(&mut stderr, &mut seen).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(code), "{seen}");
    assert!(seen.ends_with(&format!(
        "Error: rolling: interrupted ({named})\n  done: {cp}\n  interrupted: {w1}\n  not started: {w2}\nhint: fix the cause, then resume the roll (nodes already running v1.13.9 are skipped): talm upgrade --drain=false -f nodes --rolling --image {NEW} --resume\n"
    )), "{seen}");
    // The files agree with the nodes where the roll stopped.
    assert_eq!(version(&nodes, &cp), "v1.13.9");
    assert!(d.read("nodes/cp1.yaml").contains(&new_pin()));
    assert!(d.read("nodes/w1.yaml").contains(&pinned));
    assert!(d.read("nodes/w2.yaml").contains(&pinned));
    assert_eq!(version(&nodes, &w2), OLD);
}

#[test]
fn rolling_in_a_playbook_orders_control_planes_first_and_batches_workers() {
    let [cp, w1, w2, w3] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2, &w3], |_| {});
    let d = cluster(&nodes, &[&cp], &[&w1, &w2, &w3]);
    // Workers listed first: the roll still starts with the control plane.
    d.write(
        "roll.rhai",
        "let ns = talos::targets(#{ files: [\"nodes/w1.yaml\", \"nodes/w2.yaml\", \"nodes/w3.yaml\", \"nodes/cp1.yaml\"] });\n\
         let seen = [];\n\
         let r = rolling(ns, |n| { log(`turn ${n.name}`); n.version().tag }, #{ max_parallel: 2, health: false, after: |n| { seen.push(n.name); true } });\n\
         for x in r { out(`${x.node} ${x.role} ${x.result}` + \"\\n\"); }\n\
         out(`after: ${seen.len()}` + \"\\n\");\n",
    );
    let o = d.talm(["run", "roll.rhai"]).ok();
    assert_eq!(
        o.stdout,
        format!("{cp} controlplane {OLD}\n{w1} worker {OLD}\n{w2} worker {OLD}\n{w3} worker {OLD}\nafter: 4\n")
    );
    let turns: Vec<&str> = o
        .stderr
        .lines()
        .filter(|l| l.contains("rolling: "))
        .collect();
    assert_eq!(
        turns,
        [
            format!("rolling: control plane {cp}"),
            format!("rolling: workers {w1}, {w2}"),
            format!("rolling: worker {w3}"),
        ]
    );
    // Typed options: a typo is named.
    d.write(
        "typo.rhai",
        "rolling(talos::targets(#{ files: [\"nodes/cp1.yaml\"] }), |n| 1, #{ max_paralel: 2 });\n",
    );
    d.talm(["run", "typo.rhai"])
        .expect().stderr("\
Error: unknown option \"max_paralel\" for rolling; the options are: max_parallel, health, before, after, skip
hint: did you mean \"max_parallel\" instead of \"max_paralel\"?
hint: `talm help api rolling` describes the options
").status(1).run();
}
