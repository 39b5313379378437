//! `talm support` through the real binary against simulated nodes: the bundle's
//! layout and contents as talosctl writes them, no secret in it, 0600, an existing bundle kept
//! unless the user answers `y`, and what a node refuses listed while the rest is written.

use crate::common::expect::addrs;
use std::collections::BTreeMap;

use talm::talos::block_on;

use crate::common::sim::{admin, template_node, Nodes};
use crate::common::{column, net, Dir, STABILITY_SECRETS};

/// A generic project with its control plane at `cp` and a worker at `worker`, both configured.
fn cluster(nodes: &Nodes, cp: &str, worker: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, cp));
    let w = d
        .talm([
            "template",
            "-e",
            worker,
            "--nodes",
            worker,
            "-t",
            "templates/worker.yaml",
            "-i",
        ])
        .ok()
        .stdout;
    d.write("nodes/worker.yaml", &w);
    for (file, addr) in [("nodes/cp.yaml", cp), ("nodes/worker.yaml", worker)] {
        let boots = nodes.boots(addr);
        d.talm(["apply", "-f", file, "-i"]).ok();
        nodes.wait_reboot(addr, boots);
    }
    d
}

fn unzip(d: &Dir, rel: &str) -> Vec<(String, String)> {
    let bytes = std::fs::read(d.join(rel)).unwrap();
    talm::zip::read(&bytes)
        .unwrap()
        .into_iter()
        .map(|(n, b)| (n, String::from_utf8(b).unwrap()))
        .collect()
}

/// The files talosctl's layout gives `addr`, in its order, asking the node itself what it has:
/// `resources/` for every type with resources, `service-logs/` for every service; and how many
/// files were collected (types without resources count, but write no file).
fn expected_files(nodes: &Nodes, addr: &str) -> (Vec<String>, usize) {
    let c = nodes.connect(addr, admin()).unwrap();
    let mut files: Vec<String> = [
        "dmesg.log",
        "controller-runtime.log",
        "dns-resolve-cache.log",
        "dependencies.dot",
        "mounts",
        "devices",
        "io",
        "processes",
        "summary",
    ]
    .map(String::from)
    .to_vec();
    let mut empty = 0;
    for rd in block_on(c.list("meta", "ResourceDefinitions.meta.cosi.dev")).unwrap() {
        let v = talm::talos::resources::to_value(&rd);
        let ty = v["spec"]["type"].as_str().unwrap();
        let ns = v["spec"]["defaultNamespace"].as_str().unwrap();
        if block_on(c.list(ns, ty)).unwrap().is_empty() {
            empty += 1;
        } else {
            files.push(format!(
                "resources/{}.yaml",
                v["metadata"]["id"].as_str().unwrap()
            ));
        }
    }
    // The kube-system containers (not the pods' sandboxes) by ID, an exited one named so.
    let mut containers = block_on(c.containers(true)).unwrap();
    containers.sort_by(|a, b| a.id.cmp(&b.id));
    for k in containers {
        if k.status != "SANDBOX_READY" && k.pod_id.starts_with("kube-system/") {
            let exited = if k.pid == 0 { "-exited" } else { "" };
            files.push(format!(
                "kubernetes-logs/kube-system/{}{exited}.log",
                k.name
            ));
        }
    }
    for s in block_on(c.services()).unwrap() {
        files.push(format!("service-logs/{}.log", s.id));
        files.push(format!("service-logs/{}.state", s.id));
    }
    files.push("machineconfig.yaml".into());
    let steps = files.len() + empty;
    (
        files.into_iter().map(|f| format!("{addr}/{f}")).collect(),
        steps,
    )
}

/// Every secret of the project's bundle (private keys, tokens, encryption secrets).
fn bundle_secrets() -> Vec<String> {
    fn walk(v: &serde_yaml_ng::Value, key: &str, out: &mut Vec<String>) {
        match v {
            serde_yaml_ng::Value::Mapping(m) => {
                for (k, x) in m {
                    walk(x, k.as_str().unwrap_or_default(), out);
                }
            }
            serde_yaml_ng::Value::String(s) if key != "crt" && key != "id" && s.len() >= 16 => {
                out.push(s.clone())
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        &serde_yaml_ng::from_str(STABILITY_SECRETS).unwrap(),
        "",
        &mut out,
    );
    assert!(out.len() >= 8, "{out:?}");
    out
}

#[test]
fn bundle_holds_talosctls_layout_without_secrets() {
    let [cp, worker] = net::addrs();
    let (cp, worker) = (cp.as_str(), worker.as_str());
    let nodes = Nodes::start(&[cp, worker], |_| {});
    let d = cluster(&nodes, cp, worker);
    // Both nodes through the control plane's API, four files at a time each.
    let o = d
        .talm([
            "support",
            "-f",
            "nodes/cp.yaml,nodes/worker.yaml",
            "-w",
            "4",
        ])
        .ok();
    let (cp_files, cp_steps) = expected_files(&nodes, cp);
    let (worker_files, worker_steps) = expected_files(&nodes, worker);
    // No errors; not on a terminal, a line per node when it is done (in the order they finish).
    for line in [
        format!("{cp}: {cp_steps}/{cp_steps} collected\n"),
        format!("{worker}: {worker_steps}/{worker_steps} collected\n"),
    ] {
        assert!(o.stderr.contains(&line), "{line:?} in {}", o.stderr);
    }
    assert_eq!(o.stderr.lines().count(), 3, "{}", o.stderr);
    assert!(o
        .stderr
        .ends_with("Support bundle is written to support.zip\n"));
    assert_eq!(d.mode("support.zip"), 0o600);
    let entries = unzip(&d, "support.zip");
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [cp_files, worker_files].concat(),
        "talosctl's files, node by node"
    );
    assert!(names.contains(&format!("{cp}/service-logs/etcd.state").as_str()));
    assert!(
        !names.contains(&format!("{worker}/service-logs/etcd.state").as_str()),
        "workers run no etcd"
    );
    let files: BTreeMap<&str, &str> = entries
        .iter()
        .map(|(n, c)| (n.as_str(), c.as_str()))
        .collect();
    // A file of the bundle: `node`'s `rel`.
    let file = |node: &str, rel: &str| files[format!("{node}/{rel}").as_str()];

    // The version summary as talosctl writes it: the client's block, then the node's.
    let v = block_on(nodes.connect(cp, admin()).unwrap().version()).unwrap();
    let v = v.version.unwrap();
    let summary = file(cp, "summary");
    // The client's block is `talm version --client`'s, word for word.
    let client = d.talm(["version", "--client"]).ok().stdout;
    assert!(summary.starts_with(&client), "{summary}");
    assert!(
        summary.ends_with(&format!(
            "\nServer:\n\tTag:         {}\n\tSHA:         {}\n\tBuilt:       {}\n\tGo version:  {}\n\tOS/Arch:     {}/{}\n",
            v.tag, v.sha, v.built, v.go_version, v.os, v.arch
        )),
        "{summary}"
    );
    assert_eq!(v.tag, "v1.13.7");

    // Logs are the node's own, byte for byte; states as `talosctl service ID` prints them.
    let kubelet = d
        .talm(["logs", "kubelet", "-f", "nodes/worker.yaml"])
        .ok()
        .stdout;
    // talm prints each line with its node, as talosctl; the bundle keeps the bare log.
    let bare = |text: &str, node: &str| {
        let prefix = format!("{node}: ");
        text.lines()
            .map(|l| format!("{}\n", l.strip_prefix(&prefix).unwrap_or(l)))
            .collect::<String>()
    };
    assert_eq!(
        file(worker, "service-logs/kubelet.log"),
        bare(&kubelet, worker)
    );
    let dmesg = d.talm(["dmesg", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert_eq!(file(cp, "dmesg.log"), bare(&dmesg, cp));
    // What talosctl's own commands print of the node: its PCI devices, the controller graph
    // with resources, a kube-system container's log.
    let devices = d
        .talm(["read", "/proc/bus/pci/devices", "-f", "nodes/cp.yaml"])
        .ok()
        .stdout;
    assert_eq!(file(cp, "devices"), devices);
    assert!(devices.contains("\tvirtio-pci\n"), "{devices}");
    let graph = d
        .talm([
            "inspect",
            "dependencies",
            "--with-resources",
            "-f",
            "nodes/cp.yaml",
        ])
        .ok()
        .stdout;
    assert_eq!(file(cp, "dependencies.dot"), graph);
    let proxy = block_on(nodes.connect(worker, admin()).unwrap().containers(true))
        .unwrap()
        .into_iter()
        .find(|k| k.name == "kube-proxy")
        .unwrap();
    let log = d
        .talm(["logs", "-k", &proxy.id, "-f", "nodes/worker.yaml"])
        .ok()
        .stdout;
    // The container logs a line every 20 s: the bundle holds what the later call starts with.
    let bundled = file(worker, "kubernetes-logs/kube-system/kube-proxy.log");
    assert!(!bundled.is_empty());
    assert!(bare(&log, worker).starts_with(bundled), "{bundled}");
    assert!(log.contains(" stderr F I0101 "), "{log}");
    // Processes and mounts as go-talos-support tabulates them: talm's own tables without the
    // node column.
    let cells = |text: &str, skip: usize| -> Vec<Vec<String>> {
        text.lines()
            .map(|l| {
                l.split("   ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .skip(skip)
                    .map(String::from)
                    .collect()
            })
            .collect()
    };
    // What stays while the node runs: file system, size, mount point (usage moves).
    let lasting = |rows: Vec<Vec<String>>| -> Vec<[String; 3]> {
        rows.into_iter()
            .map(|r| [r[0].clone(), r[1].clone(), r[5].clone()])
            .collect()
    };
    let mounts = d.talm(["mounts", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert_eq!(
        lasting(cells(file(cp, "mounts"), 0)),
        lasting(cells(&mounts, 1))
    );
    let processes = cells(file(cp, "processes"), 0);
    assert_eq!(
        processes[0],
        ["PID", "STATE", "THREADS", "CPU-TIME", "VIRTMEM", "RESMEM", "COMMAND"]
    );
    assert_eq!(processes[1][0], "1", "{processes:?}");
    assert_eq!(processes[1][6], "/sbin/init", "{processes:?}");
    assert!(
        processes[1..].iter().all(|p| p[1].len() == 1),
        "a state letter each: {processes:?}"
    );
    // Disk I/O counters per device, as the DiskStats call answers them (a moment later: the
    // counters only grow).
    let stats = block_on(nodes.connect(cp, admin()).unwrap().disk_stats()).unwrap();
    let io = cells(file(cp, "io"), 0);
    assert_eq!(
        io[0],
        [
            "NAME",
            "IO_TIME",
            "IO_TIME_WEIGHTED",
            "DISK_WRITE_SECTORS",
            "DISK_READ_SECTORS"
        ]
    );
    assert_eq!(io.len(), stats.devices.len() + 1, "{io:?}");
    for (row, d) in io[1..].iter().zip(&stats.devices) {
        assert_eq!(row[0], d.name);
        assert!(row[1].parse::<u64>().unwrap() <= d.io_time_ms, "{row:?}");
        assert!(row[3].parse::<u64>().unwrap() <= d.write_sectors, "{row:?}");
    }
    assert!(file(cp, "controller-runtime.log").contains(
        " [talos] setting hostname {\"component\": \"controller-runtime\", \"controller\": \"network.HostnameSpecController\""
    ));
    assert!(
        file(cp, "service-logs/kubelet.state")
            .starts_with("ID       kubelet\nSTATE    Running\nHEALTH   OK\n"),
        "{}",
        file(cp, "service-logs/kubelet.state")
    );

    // Resources as YAML documents; a sensitive type's spec is redacted.
    let mc = file(cp, "resources/machineconfigs.config.talos.dev.yaml");
    assert!(
        mc.starts_with("metadata:\n    namespace: config\n    type: MachineConfigs.config.talos.dev\n    id: v1alpha1\n    version: "),
        "{mc}"
    );
    assert!(mc.ends_with("\nspec: <REDACTED>\n"), "{mc}");
    let links = crate::common::yaml_docs(file(worker, "resources/linkstatuses.net.talos.dev.yaml"));
    assert!(links.len() >= 2);
    assert!(links
        .iter()
        .all(|l| l["metadata"]["namespace"] == "network" && l["spec"].is_mapping()));
    assert!(links
        .iter()
        .any(|l| l["metadata"]["id"] == "eth0" && l["spec"]["busPath"] == "0000:00:03.0"));

    // The machine config is there with every secret replaced; no secret anywhere in the bundle.
    let config: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(file(cp, "machineconfig.yaml")).unwrap();
    assert_eq!(config["machine"]["type"], "controlplane");
    for (path, v) in [
        ("machine.token", &config["machine"]["token"]),
        ("machine.ca.key", &config["machine"]["ca"]["key"]),
        ("cluster.secret", &config["cluster"]["secret"]),
        ("cluster.token", &config["cluster"]["token"]),
        ("cluster.ca.key", &config["cluster"]["ca"]["key"]),
        (
            "cluster.serviceAccount.key",
            &config["cluster"]["serviceAccount"]["key"],
        ),
    ] {
        assert_eq!(v, "<REDACTED>", "{path}");
    }
    assert!(
        config["machine"]["ca"]["crt"]
            .as_str()
            .is_some_and(|c| c.len() > 100),
        "certificates stay"
    );
    for secret in bundle_secrets() {
        for (name, content) in &entries {
            assert!(
                !content.contains(&secret),
                "{name} holds a secret of secrets.yaml"
            );
        }
    }
}

#[test]
fn existing_bundle_is_kept_unless_the_user_says_y() {
    let cp = net::addr();
    let nodes = Nodes::start(&[&cp], |_| {});
    let d = cluster_of_one(&nodes, &cp);
    d.write("support.zip", "an older bundle");
    for answer in [None, Some("n\n"), Some("yes\n")] {
        let run = d.talm(["support", "-f", "nodes/cp.yaml"]);
        let run = match answer {
            Some(a) => run.stdin(a),
            None => run,
        };
        let o = run
            .expect()
            .stderr(
                "\
support.zip already exists, overwrite? [y/N]: Error: operation aborted
hint: support.zip is kept; answer y to replace it, or name another file with -O FILE
",
            )
            .status(1)
            .run();
        assert!(
            o.stderr
                .starts_with("support.zip already exists, overwrite? [y/N]: "),
            "{}",
            o.stderr
        );
        assert_eq!(d.read("support.zip"), "an older bundle", "{answer:?}");
    }
    // Verbose: a line per file; a file per resource type the node registers, by name.
    let mut types: Vec<String> = include_str!("../fixtures/talos/resources-v1.13/types.txt")
        .lines()
        .filter_map(|l| l.split('\t').nth(1))
        .map(|t| format!("$A1: collect {}.yaml\n", t.to_ascii_lowercase()))
        .collect();
    types.sort();
    let resources = types.concat();
    d.talm(["support", "-f", "nodes/cp.yaml", "-v"])
        .stdin("Y\n")
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(format!(
            "\
support.zip already exists, overwrite? [y/N]: $A1: collect dmesg.log
$A1: collect controller-runtime.log
$A1: collect dns-resolve-cache.log
$A1: collect dependencies.dot
$A1: collect mounts
$A1: collect devices
$A1: collect io
$A1: collect processes
$A1: collect summary
{resources}$A1: collect apid.log
$A1: collect apid.state
$A1: collect containerd.log
$A1: collect containerd.state
$A1: collect cri.log
$A1: collect cri.state
$A1: collect etcd.log
$A1: collect etcd.state
$A1: collect kubelet.log
$A1: collect kubelet.state
$A1: collect machined.log
$A1: collect machined.state
$A1: collect trustd.log
$A1: collect trustd.state
$A1: collect udevd.log
$A1: collect udevd.state
$A1: collect machineconfig.yaml
Support bundle is written to support.zip
"
        ))
        .run();
    assert!(unzip(&d, "support.zip")
        .iter()
        .any(|(n, _)| *n == format!("{cp}/summary")));
    assert_eq!(d.mode("support.zip"), 0o600);
    // No file is left behind beside it.
    let names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".talm-txn") || n.ends_with(".tmp"))
        .collect();
    assert!(names.is_empty(), "{names:?}");
    // On a terminal: a bar per node, finished, and the last line on a line of its own.
    let (ok, screen) = d.talm_in_tty("support -f nodes/cp.yaml -O tty.zip -w 2", "");
    assert!(ok, "{screen}");
    assert!(
        screen.contains(&format!("[====================] 100% {cp}: collect ")),
        "{screen}"
    );
    assert!(
        screen.contains("\nSupport bundle is written to tty.zip"),
        "{screen}"
    );
    assert!(!screen.contains("collected"), "bars, not lines: {screen}");
    assert_eq!(d.mode("tty.zip"), 0o600);
    // Somewhere that is a folder: refused by name.
    std::fs::create_dir(d.join("bundles")).unwrap();
    d.talm(["support", "-f", "nodes/cp.yaml", "-O", "bundles"])
        .stdin("y\n")
        .expect()
        .mask(addrs)
        .stderr(
            "\
bundles already exists, overwrite? [y/N]: $A1: 193/193 collected
Error: archive::zip: bundles is a folder
hint: name a file, e.g. -O support.zip
",
        )
        .status(1)
        .run();
}

fn cluster_of_one(nodes: &Nodes, cp: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, cp));
    let boots = nodes.boots(cp);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(cp, boots);
    d
}

#[test]
fn refusals_are_listed_and_the_rest_is_written() {
    let [maint, nobody] = net::addrs();
    let _nodes = Nodes::start(&[&maint], |_| {});
    let d = Dir::new();
    // A node in maintenance mode answers reads only (its logs too): its config is refused.
    let o = d
        .talm(["support", "-n", &maint, "-i", "-O", "maint.zip"])
        .ok();
    let source = column(3, &["SOURCE", &maint]);
    // Every sensitive type (by ID), then the config itself.
    let mut sensitive: Vec<&str> = talm::registry::registry()
        .types
        .iter()
        .filter(|t| t.sensitive)
        .map(|t| t.ty.as_str())
        .collect();
    sensitive.sort_by_key(|t| t.to_ascii_lowercase());
    let mut refused = format!(
        "Processed with errors:\n   {}ERROR\n   {}devices: Read: not authorized\n",
        source("SOURCE"),
        source(&maint)
    );
    for ty in sensitive {
        refused += &format!(
            "   {}resources/{}.yaml: list {ty}: not authorized\n",
            source(&maint),
            ty.to_ascii_lowercase()
        );
    }
    // No CRI runs yet; the rest of the node's files are there.
    refused += &format!(
        "   {}kubernetes-logs: Containers: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial unix /run/containerd/containerd.sock: connect: no such file or directory\"\n",
        source(&maint)
    );
    refused += &format!(
        "   {}machineconfig.yaml: get MachineConfigs.config.talos.dev: not authorized\n",
        source(&maint)
    );
    assert_eq!(
        o.stderr,
        format!("{maint}: 184/184 collected\n{refused}hint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)\nSupport bundle is written to maint.zip\n")
    );
    let names: Vec<String> = unzip(&d, "maint.zip").into_iter().map(|(n, _)| n).collect();
    for rel in [
        "summary",
        "resources/linkstatuses.net.talos.dev.yaml",
        "service-logs/apid.state",
        "dmesg.log",
    ] {
        assert!(
            names.contains(&format!("{maint}/{rel}")),
            "{rel}: {names:?}"
        );
    }
    assert!(
        !names.iter().any(|n| n.ends_with("machineconfig.yaml")),
        "{names:?}"
    );

    // Nothing at all collected: no bundle, an error.
    d.talm([
        "support", "-n", &nobody, "-e", &nobody, "-i", "-O", "none.zip",
    ])
    .expect()
    .stderr({
        let c = column(3, &["SOURCE", &nobody]);
        format!(
            "\
Processed with errors:
   {}ERROR
   {}connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
Error: nothing could be collected from any node
hint: check that the nodes answer (talm version -n NODE) and that the talosconfig holds an admin certificate
",
            c("SOURCE"),
            c(&nobody)
        )
    })
    .status(1)
    .run();
    assert!(!d.exists("none.zip"));
    d.talm(["support", "-i", "-O", "x.zip"])
        .expect()
        .stderr(
            "\
Error: nodes are not set for the command
hint: use --nodes, a node file's modeline (-f), or set nodes in the talosconfig context
",
        )
        .status(1)
        .run();

    // What the command is made of is there for playbooks too.
    let api = d.talm(["help", "api"]).ok().stdout;
    for name in [
        "archive::zip",
        "progress::bars",
        "step",
        "finish",
        "config::redact_secrets",
    ] {
        assert!(api.contains(&format!("  {name} ")), "{name} listed");
    }
    let m = d.talm(["help", "api", "resources_yaml"]).ok().stdout;
    assert!(
        m.starts_with("resources_yaml(_: Node, _: string, _: string, _: bool) -> string\n"),
        "{m}"
    );
}

#[test]
fn an_odd_name_from_a_node_costs_its_entry_not_the_bundle() {
    let cp = net::addr();
    // A system extension whose name climbs out of the bundle's folder once made a path.
    let nodes = Nodes::start(&[&cp], |s| {
        s.hardware.extensions = vec!["odd/../../x".into()];
    });
    let d = cluster_of_one(&nodes, &cp);
    let source = column(3, &["SOURCE", &cp]);
    d.talm(["support", "-f", "nodes/cp.yaml", "-O", "b.zip"])
        .expect()
        .stdout("")
        .stderr(format!(
            "{cp}: 195/195 collected\nProcessed with errors:\n   {}ERROR\n   \
             {}skipped: archive entry name \"{cp}/service-logs/ext-odd/../../x.state\" is not a relative file path\n   \
             {}service-logs/ext-odd/../../x.log: Logs: rpc error: code = Unknown desc = log \"ext-odd/../../x\" was not registered\n\
             Support bundle is written to b.zip\n",
            source("SOURCE"),
            source(&cp),
            source(&cp)
        ))
        .run();
    let names: Vec<String> = unzip(&d, "b.zip").into_iter().map(|(n, _)| n).collect();
    assert!(
        names.contains(&format!("{cp}/service-logs/apid.log")),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.contains("..")), "{names:?}");
}
