//! `rotate-ca` survives an interruption (issue 36): the real binary, killed at a step of the
//! rotation it announces and holds there (`TALM_TXN_PAUSE_AT`, so no kill races the clock),
//! leaves its journal in `.talm/rotate-ca.yaml`; the rerun with the same flags resumes it and
//! the project ends on the new CAs, while contradicting flags are refused.

use crate::common::expect::addrs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::sim::Nodes;
use crate::common::{net, Dir};
use crate::rotate::{cas, cluster, yaml};

/// How long a run may take to reach the point it is held at.
const REACH: Duration = Duration::from_secs(120);

/// The file talm announces its pause points in: outside the project, so no part of it.
fn points_file(d: &Dir) -> PathBuf {
    let name = d.path().file_name().unwrap().to_string_lossy().into_owned();
    std::env::temp_dir().join(format!("talm-points-{name}"))
}

fn announced(file: &Path, line: &str) -> bool {
    std::fs::read_to_string(file).is_ok_and(|t| t.lines().any(|l| l == line))
}

/// Runs talm in the project with `args`, held at the pause point `point`; once it is there, kills
/// it (SIGKILL). Fails when talm ends before reaching the point or does not reach it in time.
fn killed_at(d: &Dir, args: &[&str], point: &str) {
    let file = points_file(d);
    let _ = std::fs::remove_file(&file);
    let log = d.path().with_extension("stderr");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("talm"))
        .current_dir(d.path())
        .args(args)
        .env("TALM_TXN_PAUSE_FILE", &file)
        .env("TALM_TXN_PAUSE_AT", point)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let line = format!("at {point}");
    let deadline = Instant::now() + REACH;
    while !announced(&file, &line) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "talm ended ({status}) before reaching the pause point {point:?}; it announced:\n{}\nstderr:\n{}",
                std::fs::read_to_string(&file).unwrap_or_default(),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        assert!(
            Instant::now() < deadline,
            "talm did not reach {point:?} within {REACH:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_file(&file);
    let _ = std::fs::remove_file(&log);
}

fn rotate_args<'a>(cp: &'a str, workers: &'a str) -> Vec<&'a str> {
    vec![
        "rotate-ca",
        "-f",
        "nodes/cp1.yaml",
        "--control-plane-nodes",
        cp,
        "--worker-nodes",
        workers,
        "--dry-run=false",
    ]
}

#[test]
fn rotate_ca_killed_after_the_first_node_switched_ca_resumes() {
    let [cp, w1, w2] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w1, &w2], |_| {});
    let d = cluster(&nodes, &cp, &[&w1, &w2]);
    let (old_os, old_k8s, _) = cas(&nodes, &cp);
    let workers = format!("{w1},{w2}");
    let args = rotate_args(&cp, &workers);

    // Held once the control plane, first of the issuing step, issues from the new CA.
    killed_at(&d, &args, "rotate-ca talos step 2 node 1");
    let (switched, _, accepted) = cas(&nodes, &cp);
    assert_ne!(switched, old_os, "the control plane moved to the new CA");
    assert_eq!(accepted, vec![old_os.clone()], "and accepts the old one");
    for w in [&w1, &w2] {
        assert_eq!(cas(&nodes, w).0, old_os, "{w} still issues from the old CA");
    }
    assert_eq!(d.mode(".talm/rotate-ca.yaml"), 0o600);
    assert_eq!(d.read(".talm/.gitignore"), "*\n");
    let journal = yaml(&d.read(".talm/rotate-ca.yaml"));
    assert_eq!(
        journal["talos"]["new"]["crt"].as_str(),
        Some(switched.as_str())
    );

    // The project still holds the old CA, which the control plane no longer presents: the
    // failure says a rotation is unfinished and how to carry it on.
    let o = d
        .talm(["version", "-n", &cp, "-e", &cp])
        .expect().mask(addrs).stderr("\
Error: node $A1: connect: the node's certificate is not signed by the talosconfig's CA
hint: the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context
hint: a CA rotation is unfinished (.talm/rotate-ca.yaml): the nodes may be between two CAs; `talm rotate-ca --control-plane-nodes $A1 --worker-nodes $A2,$A3 --dry-run=false` with the same flags as the first run resumes it
").status(1).run();
    let hint = format!(
        "hint: a CA rotation is unfinished (.talm/rotate-ca.yaml): the nodes may be between two CAs; `talm rotate-ca --control-plane-nodes {cp} --worker-nodes {w1},{w2} --dry-run=false` with the same flags as the first run resumes it"
    );
    assert!(o.stderr.lines().any(|l| l == hint), "{}", o.stderr);

    let o = d.talm(&args).ok();
    assert_eq!(
        o.stderr.lines().next(),
        Some("> Resuming the CA rotation journaled in .talm/rotate-ca.yaml: Talos API, step 2 of 3 (\"Making new Talos CA the issuing CA, old Talos CA the accepted CA\"), 1 of 3 nodes done"),
        "{}",
        o.stderr
    );
    for line in [
        "> Making new Talos CA the issuing CA, old Talos CA the accepted CA...".to_string(),
        format!("  - {cp}: OK (done before the interruption)"),
        format!("  - {w1}: OK"),
        "> Removing old Kubernetes CA from the accepted CAs...".to_string(),
        "> CA rotation completed successfully!".to_string(),
    ] {
        assert!(
            o.stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{}",
            o.stdout
        );
    }
    assert!(
        !o.stdout.contains("> Adding new Talos CA as accepted"),
        "the step done before is not done again:\n{}",
        o.stdout
    );
    assert!(!d.exists(".talm/rotate-ca.yaml"), "the journal is removed");

    // Every node runs the CA the interrupted run had moved the control plane to; the project
    // holds it, and its talosconfig reaches each node.
    let (os, k8s, _) = cas(&nodes, &cp);
    assert_eq!(os, switched);
    assert_ne!(k8s, old_k8s);
    for ip in [&cp, &w1, &w2] {
        assert_eq!(cas(&nodes, ip), (os.clone(), k8s.clone(), vec![]), "{ip}");
        d.talm(["version", "-n", ip, "-e", ip]).ok();
    }
    let secrets = yaml(&d.read("secrets.yaml"));
    assert_eq!(secrets["certs"]["os"]["crt"].as_str(), Some(os.as_str()));
    assert_eq!(secrets["certs"]["k8s"]["crt"].as_str(), Some(k8s.as_str()));
    let tc = yaml(&d.read("talosconfig"));
    assert_eq!(
        tc["contexts"]["mycluster"]["ca"].as_str(),
        Some(os.as_str())
    );

    // A rotation after that one starts afresh and runs clean.
    let o = d.talm(&args).ok();
    assert!(!o.stderr.contains("Resuming"), "{}", o.stderr);
    assert!(
        o.stdout
            .lines()
            .any(|l| l == "> CA rotation completed successfully!"),
        "{}",
        o.stdout
    );
    assert_ne!(cas(&nodes, &w2).0, os);
    assert!(!d.exists(".talm/rotate-ca.yaml"));
}

#[test]
fn rotate_ca_refuses_flags_that_contradict_its_journal() {
    let [cp, w] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w], |_| {});
    let d = cluster(&nodes, &cp, &[&w]);
    killed_at(&d, &rotate_args(&cp, &w), "rotate-ca talos step 1 node 1");
    let journal = d.read(".talm/rotate-ca.yaml");
    let config = |ip: &str| nodes.node(ip).state().config.as_ref().unwrap().text();
    let before = (config(&cp), config(&w));

    let o = d
        .talm([
            "rotate-ca",
            "-f",
            "nodes/cp1.yaml",
            "--control-plane-nodes",
            &cp,
            "--kubernetes=false",
            "--dry-run=false",
        ])
        .run();
    assert_eq!(o.code, 1);
    assert_eq!(o.stdout, "");
    assert_eq!(
        o.stderr,
        format!(
            "Error: the CA rotation journaled in .talm/rotate-ca.yaml is unfinished and was started with other flags: it rotates the Talos API and Kubernetes API CAs, this run the Talos API CA; its worker nodes are [\"{w}\"], this run names []\n\
             hint: finish it with the same flags (`talm rotate-ca --control-plane-nodes {cp} --worker-nodes {w} --dry-run=false`, with the -n/-e or -f of the first run), or delete .talm/rotate-ca.yaml to start over\n"
        )
    );
    assert_eq!(d.read(".talm/rotate-ca.yaml"), journal, "the journal stays");
    assert_eq!((config(&cp), config(&w)), before, "no node was touched");
}

#[test]
fn rotate_ca_killed_in_the_kubernetes_phase_resumes_there() {
    let [cp, w] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w], |_| {});
    let d = cluster(&nodes, &cp, &[&w]);
    let (old_os, old_k8s, _) = cas(&nodes, &cp);
    let args = rotate_args(&cp, &w);

    // Held once the control plane issues from the new Kubernetes CA: the Talos phase is over and
    // the project follows it already.
    killed_at(&d, &args, "rotate-ca kubernetes step 2 node 1");
    let (os, k8s_switched, _) = cas(&nodes, &cp);
    assert_ne!(os, old_os);
    assert_ne!(k8s_switched, old_k8s);
    assert_eq!(cas(&nodes, &w).1, old_k8s, "the worker is not there yet");
    let secrets = yaml(&d.read("secrets.yaml"));
    assert_eq!(secrets["certs"]["os"]["crt"].as_str(), Some(os.as_str()));
    assert_eq!(
        secrets["certs"]["k8s"]["crt"].as_str(),
        Some(old_k8s.as_str())
    );

    let o = d.talm(&args).ok();
    assert_eq!(
        o.stderr.lines().next(),
        Some("> Resuming the CA rotation journaled in .talm/rotate-ca.yaml: Kubernetes API, step 2 of 3 (\"Making new Kubernetes CA the issuing CA, old Kubernetes CA the accepted CA\"), 1 of 2 nodes done"),
        "{}",
        o.stderr
    );
    assert!(
        !o.stdout.contains("> Starting Talos API PKI rotation"),
        "the Talos phase is not done again:\n{}",
        o.stdout
    );
    for line in [
        format!("  - {cp}: OK (done before the interruption)"),
        format!("  - {w}: OK"),
        "> CA rotation completed successfully!".to_string(),
    ] {
        assert!(
            o.stdout.lines().any(|l| l == line),
            "missing {line:?} in:\n{}",
            o.stdout
        );
    }
    assert!(!d.exists(".talm/rotate-ca.yaml"));
    for ip in [&cp, &w] {
        assert_eq!(
            cas(&nodes, ip),
            (os.clone(), k8s_switched.clone(), vec![]),
            "{ip}"
        );
        d.talm(["version", "-n", ip, "-e", ip]).ok();
    }
    let secrets = yaml(&d.read("secrets.yaml"));
    assert_eq!(
        secrets["certs"]["k8s"]["crt"].as_str(),
        Some(k8s_switched.as_str())
    );
    let kc = yaml(&d.read("kubeconfig"));
    assert_eq!(
        kc["clusters"][0]["cluster"]["certificate-authority-data"].as_str(),
        Some(k8s_switched.as_str())
    );
}
