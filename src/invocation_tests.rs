//! Table tests of `from_cli`: argv in, script, ARGS, project and session out.

use std::time::Duration;

use clap::Parser;
use serde_json::json;

use super::*;

fn inv(argv: &[&str]) -> Result<Invocation> {
    let mut full = vec!["talm"];
    full.extend_from_slice(argv);
    from_cli(Cli::try_parse_from(full).map_err(|e| anyhow::anyhow!("{e}"))?)
}

/// The script and ARGS of a command line.
fn script_of(argv: &[&str]) -> (&'static str, Value) {
    match inv(argv).unwrap().action {
        Action::Script { script, args, .. } => (script, args),
        other => panic!("{argv:?}: {other:?}"),
    }
}

/// Command lines and the bundled script each runs.
const COMMANDS: &[(&[&str], &str)] = &[
    (&["init", "-p", "generic", "-N", "c"], "init"),
    (&["talosconfig"], "talosconfig"),
    (&["migrate", "--dry-run"], "migrate"),
    (
        &["template", "-t", "templates/controlplane.yaml", "--offline"],
        "template",
    ),
    (
        &["gen", "config", "c", "https://10.0.0.1:6443"],
        "gen_config",
    ),
    (&["apply", "-f", "nodes/a.yaml"], "apply"),
    (&["upgrade", "-f", "nodes/a.yaml"], "upgrade"),
    (&["version", "-n", "10.0.0.1"], "version"),
    (&["get", "links"], "get"),
    (&["g", "links"], "get"),
    (&["kubeconfig"], "kubeconfig"),
    (&["rotate-ca", "--dry-run=false"], "rotate_ca"),
    (&["reboot"], "reboot"),
    (&["reset"], "reset"),
    (&["logs", "kubelet"], "logs"),
    (&["dmesg"], "logs"),
    (&["events", "--tail", "-1"], "events"),
    (&["services"], "service"),
    (&["service", "etcd"], "service"),
    (&["ps", "--sort", "cpu"], "processes"),
    (&["free"], "memory"),
    (&["containers", "-k"], "containers"),
    (&["stats"], "stats"),
    (&["mounts"], "mounts"),
    (&["ss", "-l"], "netstat"),
    (&["cat", "/etc/os-release"], "read"),
    (&["ls", "/var"], "list"),
    (&["cp", "/var/log", "-"], "copy"),
    (&["du", "/var"], "usage"),
    (&["time"], "time"),
    (&["cg", "--preset", "cpu"], "cgroups"),
    (&["inspect", "dependencies"], "inspect_dependencies"),
    (
        &["inspect", "dependencies", "--with-resources"],
        "inspect_dependencies",
    ),
    (&["image", "list"], "image_list"),
    (&["images", "ls"], "image_list"),
    (&["dashboard"], "dashboard"),
    (&["bootstrap"], "bootstrap"),
    (&["bootstrap", "--recover-from", "db.snapshot"], "bootstrap"),
    (&["health", "--wait-timeout", "1m"], "health"),
    (&["etcd", "members"], "etcd"),
    (&["etcd", "snapshot", "db.snapshot"], "etcd"),
    (&["etcd", "alarm", "list"], "etcd"),
    (&["etcd", "downgrade", "validate", "3.5"], "etcd"),
    (&["discover"], "discover"),
    (&["scan", "10.0.0.0/24"], "scan"),
    (&["support", "-n", "10.0.0.1"], "support"),
    (&["service", "kubelet", "restart"], "service"),
    (&["restart", "apid"], "restart"),
    (&["restart", "-k", "kube-system/x:y:z"], "restart"),
    (&["rollback"], "rollback"),
    (&["shutdown", "--force"], "shutdown"),
    (&["reboot", "--mode", "force"], "reboot"),
    (&["reset", "--wait"], "reset"),
    (&["wipe", "disk", "sdb", "--method", "ZEROES"], "wipe_disk"),
    (&["meta", "write", "0x0c", "v"], "meta"),
    (&["meta", "delete", "12"], "meta"),
    (&["image", "pull", "nginx"], "image_pull"),
    (&["images", "p", "nginx"], "image_pull"),
    (&["image", "k8s-bundle"], "image_bundle"),
    (&["image", "default"], "image_bundle"),
    (&["image", "talos-bundle", "v1.13.7"], "image_bundle"),
    (&["image", "remove", "nginx"], "image_remove"),
    (&["image", "rm", "nginx"], "image_remove"),
    (&["pcap", "-i", "eth0"], "pcap"),
    (&["tcpdump"], "pcap"),
    (&["debug", "alpine", "--args", "sh,-c,exit 3"], "debug"),
    (&["edit", "machineconfig"], "edit"),
    (&["patch", "mc", "-p", "@p.yaml"], "patch"),
];

#[test]
fn commands_map_to_scripts() {
    for (argv, want) in COMMANDS {
        assert_eq!(script_of(argv).0, *want, "{argv:?}");
    }
}

/// A script a command names is bundled, and every bundled script compiles: a renamed or broken
/// script fails here, not when a user first runs its command.
#[test]
fn named_scripts_are_bundled_and_every_script_compiles() {
    use crate::embedded::{find, SCRIPTS};
    for (argv, want) in COMMANDS {
        assert!(
            find(SCRIPTS, &format!("{want}.rhai")).is_some(),
            "{argv:?} names scripts/{want}.rhai, which is not bundled"
        );
    }
    let engine = crate::runtime::engine(
        &crate::runtime::Limits::PLAYBOOK,
        &crate::runtime::Session::default(),
    );
    for (name, source) in SCRIPTS.iter() {
        if let Err(e) = engine.compile(source) {
            panic!("scripts/{name} does not compile: {e}");
        }
    }
}

#[test]
fn flags_become_args_as_declared() {
    let (_, a) = script_of(&[
        "get",
        "links",
        "eth0",
        "-o",
        "json",
        "-n",
        "10.0.0.1,10.0.0.2",
        "-i",
    ]);
    assert_eq!(a["kind"], "links");
    assert_eq!(a["id"], "eth0");
    assert_eq!(a["output"], "json");
    assert_eq!(a["nodes"], json!(["10.0.0.1", "10.0.0.2"]));
    assert_eq!(a["insecure"], true);
    assert_eq!(a["namespace"], Value::Null);
    assert_eq!(a["files"], json!([]));

    let (_, a) = script_of(&[
        "apply",
        "-f",
        "nodes/a.yaml",
        "-m",
        "no-reboot",
        "--talos-version",
        "v1.12",
        "--set",
        "a=1",
    ]);
    assert_eq!(a["mode"], "no-reboot");
    assert_eq!(a["timeout"], "1m");
    assert_eq!(a["talos_version"], "v1.12");
    assert_eq!(a["kubernetes_version"], Value::Null);
    assert_eq!(a["values"]["set"], json!(["a=1"]));
    assert_eq!(a["values"]["values"], json!([]));

    let (_, a) = script_of(&["reset", "--wipe-mode", "system-disk", "--graceful=false"]);
    assert_eq!(a["wipe_mode"], "system-disk");
    assert_eq!(a["graceful"], false);

    let (_, a) = script_of(&["dmesg", "--tail", "5"]);
    assert_eq!(
        (a["service"].clone(), a["tail"].clone()),
        (json!("kernel"), json!(5))
    );

    let (_, a) = script_of(&["gen", "config", "c", "https://e:6443", "-t", "worker"]);
    assert_eq!(a["output_types"], json!(["worker"]));

    let (_, a) = script_of(&["version", "-n", "10.0.0.1"]);
    assert_eq!(a["client"]["tag"], crate::version::TALOS_MACHINERY);
    let v = inv(&["version", "--client"]).unwrap();
    assert_eq!((v.project, v.session), (Project::None, None));

    let (_, a) = script_of(&["init", "-p", "generic", "-N", "c"]);
    assert_eq!(
        (a["root"].clone(), a["root_explicit"].clone()),
        (json!("."), json!(false))
    );
    let (_, a) = script_of(&["init", "--root", "x"]);
    assert_eq!(
        (a["root"].clone(), a["root_explicit"].clone()),
        (json!("x"), json!(true))
    );
}

/// Flags that talosctl's command lines spell their own way.
#[test]
fn talosctl_spellings_are_taken() {
    let graceful = |argv: &[&str]| script_of(argv).1["graceful"].clone();
    assert_eq!(graceful(&["reset", "--graceful"]), json!(true));
    assert_eq!(graceful(&["reset", "--graceful=false"]), json!(false));
    let sort = |argv: &[&str]| script_of(argv).1["sort"].clone();
    assert_eq!(sort(&["processes", "-s", "cpu"]), json!("cpu"));
    assert_eq!(sort(&["processes", "--sort", "mem"]), json!("rss"));
    assert_eq!(script_of(&["mount"]).0, script_of(&["mounts"]).0);
}

#[test]
fn projects_and_sessions() {
    let i = inv(&[
        "version",
        "-f",
        "nodes/a.yaml",
        "--call-timeout",
        "5s",
        "--context",
        "c",
    ])
    .unwrap();
    assert_eq!(
        i.project,
        Project::Optional {
            flags: ProjectFlags::default(),
            files: vec!["nodes/a.yaml".into()]
        }
    );
    assert_eq!(
        i.session,
        Some(SessionSpec {
            talosconfig: None,
            context: "c".into(),
            timeout: Some(Duration::from_secs(5)),
            outputs: vec![],
            skip_verify: false,
        })
    );
    let i = inv(&["template", "--root", "p", "-t", "t.yaml", "--offline"]).unwrap();
    assert!(
        matches!(i.project, Project::Required { ref flags, .. } if flags.root.as_deref() == Some("p"))
    );
    assert_eq!(
        inv(&["gen", "config", "c", "https://e:6443"])
            .unwrap()
            .project,
        Project::None
    );
    assert_eq!(inv(&["init"]).unwrap().project, Project::Create);
    // migrate finds its project without the drift check (its templates may be the Go talm's).
    assert!(
        matches!(inv(&["migrate", "--root", "p"]).unwrap().project, Project::Adopt(ref f) if f.root.as_deref() == Some("p"))
    );
    assert_eq!(inv(&["scan", "10.0.0.1"]).unwrap().session, None);
    assert_eq!(inv(&["apply"]).unwrap().action, Action::Nothing);
}

#[test]
fn durations_are_checked_once() {
    let zero = |argv: &[&str]| inv(argv).unwrap_err().to_string();
    assert_eq!(
        zero(&["version", "--call-timeout", "0s"]),
        "--call-timeout \"0s\" is zero, which leaves no time at all"
    );
    assert!(
        zero(&["apply", "-f", "n.yaml", "--timeout", "0s"]).starts_with("--timeout \"0s\" is zero")
    );
    assert!(zero(&["upgrade", "--timeout", "0s"]).starts_with("--timeout \"0s\" is zero"));
    assert!(inv(&["upgrade", "--timeout", "0s", "--wait=false"]).is_ok());
    assert!(
        zero(&["upgrade", "--timeout", "0s", "--stage"]).starts_with("--timeout \"0s\" is zero")
    );
    assert_eq!(
        zero(&["upgrade", "-i", "x:v1", "--insecure"]),
        "cannot use --wait and --insecure together"
    );
    assert!(inv(&["upgrade", "-i", "x:v1", "--insecure", "--wait=false"]).is_ok());
    assert!(zero(&["scan", "10.0.0.1", "--timeout", "0s"]).starts_with("--timeout \"0s\" is zero"));
    // Bad text is refused by clap's parser, explained as talm's own error.
    let e = Cli::try_parse_from(["talm", "version", "--call-timeout=-5s"]).unwrap_err();
    let ours = crate::cli::values::explained(&e).expect("a duration error is explained");
    assert_eq!(ours.to_string(), "--call-timeout \"-5s\" is negative");
}

#[test]
fn other_actions() {
    assert!(matches!(
        inv(&["run", "x.rhai", "a", "-b"]).unwrap().action,
        Action::Playbook { ref file, ref args, max_ops: None } if file == "x.rhai" && args["args"] == json!(["a", "-b"])
    ));
    assert!(matches!(
        inv(&["mything", "a"]).unwrap().action,
        Action::External { ref name, ref args } if name == "mything" && args["args"] == json!(["a"])
    ));
    let Action::Sim(o) = inv(&["sim", "--node", "127.0.0.11", "--reboot-delay", "2s"])
        .unwrap()
        .action
    else {
        panic!()
    };
    assert_eq!(
        (o.nodes, o.port, o.reboot_delay),
        (
            vec!["127.0.0.11".to_string()],
            50000,
            Duration::from_secs(2)
        )
    );
    let Action::Sim(o) = inv(&[
        "sim",
        "--node-range",
        "127.0.1.0/24",
        "--node-range",
        "127.0.2.1-127.0.2.9",
    ])
    .unwrap()
    .action
    else {
        panic!()
    };
    assert_eq!(o.ranges, ["127.0.1.0/24", "127.0.2.1-127.0.2.9"]);
    assert_eq!(
        inv(&["help", "api"]).unwrap().action,
        Action::Help(vec!["api".into()])
    );
}

#[test]
fn support_may_write_only_its_output() {
    let i = inv(&["support", "-n", "10.0.0.1"]).unwrap();
    assert_eq!(i.session.unwrap().outputs, ["support.zip"]);
    let i = inv(&[
        "support",
        "-n",
        "10.0.0.1",
        "-O",
        "out/b.zip",
        "-w",
        "4",
        "-v",
    ])
    .unwrap();
    assert_eq!(i.session.unwrap().outputs, ["out/b.zip"]);
    let (_, a) = script_of(&["support", "-n", "10.0.0.1", "--num-workers", "3"]);
    assert_eq!(a["output"], "support.zip");
    assert_eq!(a["num_workers"], 3);
    assert_eq!(a["verbose"], false);
    // The client's block is the one `talm version` prints.
    assert_eq!(a["client"], crate::version::client_block());
    assert!(inv(&["support", "-w", "0"]).is_err());
    assert_eq!(
        inv(&["version", "-n", "10.0.0.1"])
            .unwrap()
            .session
            .unwrap()
            .outputs,
        Vec::<String>::new()
    );
}

#[test]
fn patch_files_are_read_by_dispatch_in_order() {
    let i = inv(&[
        "patch",
        "mc",
        "-p",
        "{}",
        "--patch-file",
        "p.yaml",
        "-p",
        "@q.yaml",
    ])
    .unwrap();
    let Action::Script { prep, .. } = i.action else {
        panic!("{:?}", i.action)
    };
    assert_eq!(
        prep,
        Prep::ReadPatches(vec!["{}".into(), "@q.yaml".into(), "@p.yaml".into()])
    );
    let e = inv(&["wipe", "disk", "sdb", "--method", "fast"]).unwrap_err();
    assert!(
        e.to_string().contains("invalid wipe method \"fast\""),
        "{e}"
    );
}
