//! Gaps of issue 11 closed against the Go talm and talosctl, through the real binary and
//! simulated nodes: `--debug` on template and apply (the `talosctl gen config` calls and the
//! patches, nothing sent), reboot/shutdown/reset waiting by default (`--wait=false` to return
//! at once), `upgrade --wait=false` printing talosctl's `NODE ACK STARTED` table, and the etcd
//! checks a control plane makes before an upgrade.

use crate::common::expect::{
    addrs, rebooted, services_stopped, uuids, RESET_CP_PHASES, SHUTDOWN_PHASES,
};
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

const NEW: &str = "ghcr.io/siderolabs/installer:v1.13.9";

/// A generic project with `ip` configured as its control plane (`nodes/cp.yaml`).
fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, ip));
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

/// The Talos patches of a render (its documents with `machine` or `cluster`), each without
/// its trailing newlines, and the cluster name and endpoint they set.
fn patches(body: &str) -> (Vec<String>, String, String) {
    let mut docs = vec![String::new()];
    for line in body.split_inclusive('\n') {
        if line.trim_end() == "---" {
            docs.push(String::new());
        } else {
            docs.last_mut().unwrap().push_str(line);
        }
    }
    let (mut name, mut endpoint) = (String::new(), String::new());
    let mut out = Vec::new();
    for doc in docs {
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&doc).unwrap();
        if v.get("machine").is_none() && v.get("cluster").is_none() {
            continue;
        }
        let at = |path: &[&str]| {
            path.iter()
                .try_fold(&v, |cur, k| cur.get(*k))
                .and_then(|x| x.as_str())
                .map(str::to_string)
        };
        name = at(&["cluster", "clusterName"]).unwrap_or(name);
        endpoint = at(&["cluster", "controlPlane", "endpoint"]).unwrap_or(endpoint);
        out.push(doc.trim_end_matches('\n').to_string());
    }
    (out, name, endpoint)
}

/// What `--debug` prints: both generations, each with the patches.
fn debug_text(d: &Dir, body: &str, kind: &str, versions: (&str, &str)) -> String {
    let (docs, name, endpoint) = patches(body);
    let secrets = d.join("secrets.yaml").display().to_string();
    let mut out = String::new();
    let phases = [
        (
            1,
            "dummy".to_string(),
            "clusterEndpoint".to_string(),
            "controlplane",
        ),
        (2, name, endpoint, kind),
    ];
    for (n, name, endpoint, kind) in phases {
        // Unknown name and endpoint stay placeholders.
        let name = if name.is_empty() {
            "dummy".into()
        } else {
            name
        };
        let endpoint = if endpoint.is_empty() {
            "clusterEndpoint".into()
        } else {
            endpoint
        };
        out += &format!(
            "# DEBUG(phase {n}): talosctl gen config {name} {endpoint} -t {kind} --with-secrets={secrets} --talos-version={} --kubernetes-version={} -o -\n",
            versions.0, versions.1
        );
        let flag = if kind == "worker" {
            "--config-patch-worker"
        } else {
            "--config-patch-control-plane"
        };
        for p in &docs {
            out += &format!("\n---\n# DEBUG(phase {n}): {flag}=\n{p}\n");
        }
    }
    out
}

/// The rendered body of a `template` output (after the modeline and the banner).
fn body(out: &str) -> String {
    out.splitn(3, '\n').nth(2).unwrap_or("").to_string()
}

#[test]
fn debug_prints_the_gen_config_calls_and_sends_nothing() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    let versions = [
        "--talos-version",
        "v1.12",
        "--kubernetes-version",
        "v1.34.3",
    ];
    for (template, kind) in [
        ("templates/controlplane.yaml", "controlplane"),
        ("templates/worker.yaml", "worker"),
    ] {
        let mut args = vec!["template", "-e", &ip, "--nodes", &ip, "-i", "-t", template];
        args.extend(versions);
        let plain = d.talm(&args).ok().stdout;
        args.push("--debug");
        let o = d.talm(&args).ok();
        assert_eq!(
            o.stdout,
            debug_text(&d, &body(&plain), kind, ("v1.12", "v1.34.3")),
            "{kind}"
        );
    }
    // Empty patches: just the two calls, with the placeholders.
    d.write("templates/empty.yaml", "");
    let o = d
        .talm([
            "template",
            "-e",
            &ip,
            "--nodes",
            &ip,
            "-i",
            "-t",
            "templates/empty.yaml",
            "--debug",
        ])
        .ok();
    assert_eq!(o.stdout, debug_text(&d, "", "controlplane", ("", "")));

    // Through a node in maintenance mode: apply prints what template prints and sends nothing.
    d.write("nodes/cp.yaml", &template_node(&d, &ip));
    let t = d
        .talm(["template", "-f", "nodes/cp.yaml", "-i", "--debug"])
        .ok();
    let plain = d
        .talm(["template", "-f", "nodes/cp.yaml", "-i"])
        .ok()
        .stdout;
    assert_eq!(
        t.stdout,
        debug_text(&d, &body(&plain), "controlplane", ("", ""))
    );
    let a = d
        .talm(["apply", "-f", "nodes/cp.yaml", "-i", "--debug"])
        .ok();
    assert_eq!(a.stdout, t.stdout);
    assert!(
        nodes.node(&ip).state().in_maintenance(),
        "--debug applies nothing"
    );
    // Chart.yaml templateOptions.debug turns it on too.
    let chart = d
        .read("Chart.yaml")
        .replace("  full: false\n", "  full: false\n  debug: true\n");
    d.write("Chart.yaml", &chart);
    let o = d.talm(["template", "-f", "nodes/cp.yaml", "-i"]).ok();
    assert_eq!(o.stdout, t.stdout);
}

#[test]
fn reboot_shutdown_and_reset_wait_by_default() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = configured(&nodes, &a);

    // talosctl's action tracker follows each by default.
    let boots = nodes.boots(&a);
    d.talm(["reboot", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(rebooted("$A1"))
        .run();
    assert!(
        nodes.boots(&a) > boots,
        "back on a new boot when it returns"
    );
    let boots = nodes.boots(&a);
    d.talm(["reboot", "-f", "nodes/cp.yaml", "--wait=false"])
        .expect()
        .stdout("")
        .stderr("")
        .run();
    nodes.wait_reboot(&a, boots);

    // reset: talosctl refuses to follow a maintenance connection.
    d.talm(["reset", "-f", "nodes/cp.yaml", "-i"])
        .expect()
        .stderr(
            "\
Error: cannot use --wait and --insecure together
hint: a node in maintenance mode cannot be followed; pass --wait=false
",
        )
        .status(1)
        .run();
    // With --reboot: until the services stop, then the node answers in maintenance mode.
    d.talm(["reset", "-f", "nodes/cp.yaml", "--reboot"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped(
            "$A1",
            "reset",
            RESET_CP_PHASES,
            "post check passed\n",
        ))
        .run();
    assert!(nodes.node(&a).state().in_maintenance());

    let e = configured(&nodes, &b);
    e.talm(["shutdown", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped("$A1", "shutdown", SHUTDOWN_PHASES, ""))
        .run();
    nodes.wait_down(&b);
    e.talm(["version", "-f", "nodes/cp.yaml"])
        .expect().stderr(format!("\
Error: node {b}: connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
}

#[test]
fn upgrade_without_waiting_prints_talosctls_table() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let boots = nodes.boots(&ip);
    let o = d
        .talm([
            "upgrade",
            "--drain=false",
            "-f",
            "nodes/cp.yaml",
            "-i",
            NEW,
            "--wait=false",
            "--legacy",
        ])
        .ok();
    let w = ip.len().max(4) + 3;
    let ack = "Upgrade request received";
    let lines: Vec<&str> = o.stdout.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 2, "{}", o.stdout);
    assert_eq!(lines[0], format!("{:<w$}{:<27}STARTED\n", "NODE", "ACK"));
    let started = lines[1]
        .strip_prefix(&format!("{ip:<w$}{ack:<27}"))
        .and_then(|r| r.strip_suffix("   \n"))
        .unwrap_or_else(|| panic!("{}", o.stdout));
    let go_time = regex::Regex::new(
        r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,9})? \+0000 UTC m=\+\d+\.\d{9}$",
    )
    .unwrap();
    assert!(go_time.is_match(started), "{started:?}");
    assert!(!o.stderr.contains("actor ID:"), "no tracking: {}", o.stderr);
    nodes.wait_reboot(&ip, boots);
}

#[test]
fn a_control_plane_upgrade_that_would_lose_etcd_quorum_is_refused() {
    let [a, b, c] = net::addrs();
    let nodes = Nodes::start(&[&a, &b, &c], |_| {});
    let d = Dir::project("generic");
    for (i, ip) in [&a, &b, &c].iter().enumerate() {
        let file = format!("nodes/cp{}.yaml", i + 1);
        d.write(&file, &template_node(&d, ip));
        let boots = nodes.boots(ip);
        d.talm(["apply", "-f", &file, "-i"]).ok();
        nodes.wait_reboot(ip, boots);
    }
    d.talm(["bootstrap", "-f", "nodes/cp1.yaml"]).ok();
    let start = std::time::Instant::now();
    while [&a, &b, &c]
        .iter()
        .any(|ip| nodes.node(ip).state().etcd.is_none())
    {
        assert!(
            start.elapsed().as_secs() < 10,
            "the control planes join etcd"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let gone = nodes.node(&c).state().etcd.as_ref().unwrap().id;
    let version = nodes.node(&b).state().version.clone();
    // The legacy path: Talos checks etcd there (LifecycleService.Upgrade does not).
    let upgrade = [
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp2.yaml",
        "-i",
        NEW,
        "--wait=false",
        "--legacy",
    ];

    // A member that is down: every member must be healthy.
    d.talm(["shutdown", "-f", "nodes/cp3.yaml"]).ok();
    // talosctl's tracker ends when the services stop; the machine goes off right after.
    nodes.wait_down(&c);
    d.talm(upgrade).fails_with(&format!(
        "error validating etcd for upgrade: etcd member {gone:016x} is not healthy; all members must be healthy to perform an upgrade"
    ));
    // Two members: upgrading one would leave the other without quorum.
    d.talm([
        "etcd",
        "remove-member",
        &format!("{gone:016x}"),
        "-f",
        "nodes/cp1.yaml",
    ])
    .ok();
    d.talm(upgrade).expect().mask(addrs).stderr("\
WARNING: Forcing use of legacy upgrade method. This flag is deprecated and will be removed in Talos 1.18.
- talm: upgrading $A1 from v1.13.7 to ghcr.io/siderolabs/installer:v1.13.9
Error: node $A1: Upgrade: rpc error: code = Unknown desc = error validating etcd for upgrade: etcd member count(2) is insufficient to maintain quorum if upgrade commences
").status(1).run();
    assert!(
        nodes.node(&b).state().last_upgrade.is_none(),
        "refused before anything started"
    );
    assert_eq!(nodes.node(&b).state().version, version);
    // --force (talm's -F) skips the checks, as Talos does.
    let boots = nodes.boots(&b);
    d.talm(upgrade.iter().copied().chain(["-F"])).ok();
    nodes.wait_reboot(&b, boots);
    assert!(nodes.node(&b).state().last_upgrade.is_some());
}

/// A worker reached through the control plane's endpoint (as its node file says) is followed
/// through its reset until it answers in maintenance mode at its own address: no endpoint
/// proxies to a maintenance node, so through the endpoint it stays unavailable forever.
#[test]
fn reset_of_a_worker_behind_an_endpoint_ends_when_it_is_in_maintenance() {
    let [cp, worker] = net::addrs();
    let nodes = Nodes::start(&[&cp, &worker], |_| {});
    let d = nodes.cluster(&cp, &worker);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["reset", "-f", "nodes/worker.yaml", "--reboot"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read as it comes, so a long wait never fills the pipe.
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut pipe, &mut text).unwrap();
        text
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "reset still following the worker after 120 s:\n{}",
                reader.join().unwrap()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = reader.join().unwrap();
    assert!(status.success(), "{stderr}");
    assert!(
        stderr.ends_with(&format!("\"{worker}\": post check passed\n")),
        "{stderr}"
    );
    assert!(nodes.node(&worker).state().in_maintenance());
}
