//! Changing nodes through the real binary against simulated nodes, each change seen through
//! another command: service start/stop/restart and container restarts (service, logs), rollback
//! after an upgrade (version), shutdown and force reboot, reset --wait, disk wipes (get
//! discoveredvolumes; the system disk refused), META (get metakeys), image pulls (image list),
//! patch (dry run and real) and edit (with EDITOR set to a script) of the machine config.

use crate::common::expect::{
    addrs, rebooted, services_stopped, uuids, RESET_CP_PHASES, SHUTDOWN_PHASES,
};
use crate::common::sim::{mutual, template_node, Nodes};
use crate::common::{net, version_client, Dir, VERSION_SIM_SERVER};
use talm::talos::client::ServiceAction;

mod config_edits;

/// A generic project with `ip` configured as its control plane (`nodes/cp.yaml`).
fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, ip));
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

/// A two-column table as the tabwriter prints it (padding 3).
fn table2(rows: &[(&str, &str)]) -> String {
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0) + 3;
    rows.iter().map(|(a, b)| format!("{a:<w$}{b}\n")).collect()
}

/// The words of the line of `text` whose first words are `start`.
fn row<'a>(text: &'a str, start: &[&str]) -> Option<Vec<&'a str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() >= start.len() && w[..start.len()] == *start)
}

#[test]
fn services_start_stop_restart_and_containers_restart() {
    let [ip, fresh] = net::addrs();
    let nodes = Nodes::start(&[&ip], |s| s.hardware.extensions = vec!["hello".into()]);
    let d = configured(&nodes, &ip);
    let f = ["-f", "nodes/cp.yaml"];
    let svc = |args: &[&str]| {
        let mut a = vec!["service"];
        a.extend_from_slice(args);
        a.extend_from_slice(&f);
        d.talm(a)
    };

    let list = svc(&[]).ok().stdout;
    assert_eq!(
        row(&list, &[&ip, "ext-hello"]).unwrap()[2],
        "Running",
        "{list}"
    );
    let o = svc(&["ext-hello", "stop"]).ok();
    assert_eq!(
        o.stdout,
        table2(&[("NODE", "RESPONSE"), (&ip, "Service \"ext-hello\" stopped")])
    );
    let list = svc(&[]).ok().stdout;
    let r = row(&list, &[&ip, "ext-hello"]).unwrap();
    assert_eq!(r[2], "Finished", "{list}");
    assert_eq!(r.last(), Some(&"successfully"), "{list}");
    let status = svc(&["ext-hello"]).ok().stdout;
    assert!(row(&status, &["STATE", "Finished"]).is_some(), "{status}");
    assert!(
        status.contains("[Finished]: Service finished successfully ("),
        "{status}"
    );
    // Stopping a stopped service, starting a running one: left as they are.
    svc(&["ext-hello", "stop"]).ok();
    svc(&["ext-hello", "start"])
        .expect()
        .stdout(table2(&[
            ("NODE", "RESPONSE"),
            (&ip, "Service \"ext-hello\" started"),
        ]))
        .stderr("")
        .run();
    let list = svc(&[]).ok().stdout;
    assert_eq!(
        row(&list, &[&ip, "ext-hello"]).unwrap()[2],
        "Running",
        "{list}"
    );
    svc(&["apid", "start"]).ok();
    let machined = d
        .talm(["logs", "machined", "-f", "nodes/cp.yaml"])
        .ok()
        .stdout;
    assert!(
        machined.contains("service[ext-hello](Finished): Service finished successfully"),
        "{machined}"
    );

    // Talos's permissions: kubelet restarts but does not stop; core services neither.
    svc(&["kubelet", "stop"]).expect().stderr(format!("Error: error starting service: 1 error occurred:\n\t* {ip}: rpc error: code = Unknown desc = service \"kubelet\" doesn't support stop operation via API\n\n\n")).status(1).run();
    svc(&["apid", "restart"])
        .expect().mask(addrs).stderr("Error: error starting service: 1 error occurred:\n\t* $A1: rpc error: code = Unknown desc = service \"apid\" doesn't support restart operation via API\n\n\n").status(1).run();
    svc(&["nosuch", "start"]).expect().mask(addrs).stderr("Error: error starting service: 1 error occurred:\n\t* $A1: rpc error: code = Unknown desc = service \"nosuch\" not defined\n\n\n").status(1).run();
    svc(&["kubelet", "restart"]).ok();
    let status = svc(&["kubelet"]).ok().stdout;
    let events: Vec<&str> = status.lines().filter(|l| l.contains("]: ")).collect();
    assert!(
        events[0].contains("[Running]: Started task kubelet (PID "),
        "{status}"
    );
    assert!(
        events[3].contains("[Finished]: Service finished successfully"),
        "{status}"
    );

    // A container restart: the service shows the exit and the new task.
    let o = d.talm(["restart", "apid", "-f", "nodes/cp.yaml"]).ok();
    assert_eq!(o.stdout, "");
    let status = svc(&["apid"]).ok().stdout;
    assert!(
        status.contains("[Waiting]: Error running Containerd"),
        "{status}"
    );
    assert!(row(&status, &["STATE", "Running"]).is_some(), "{status}");
    d.talm(["restart", "nosuch", "-f", "nodes/cp.yaml"]).expect().stderr(format!("Error: error restarting process: 1 error occurred:\n\t* {ip}: rpc error: code = Unknown desc = container \"nosuch\" not found\n\n\n")).status(1).run();

    // Roles: readers may not, operators may; maintenance mode makes everyone a reader.
    let reader = nodes.connect(&ip, mutual(&["os:reader"])).unwrap();
    let e =
        talm::talos::block_on(reader.service_action("ext-hello", ServiceAction::Stop)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("node {ip}: ServiceStop: not authorized")
    );
    let operator = nodes.connect(&ip, mutual(&["os:operator"])).unwrap();
    let said = talm::talos::block_on(operator.service_action("ext-hello", ServiceAction::Restart))
        .unwrap();
    assert_eq!(said, "Service \"ext-hello\" restarted");
    let _m = Nodes::start(&[&fresh], |_| {});
    d.talm(["service", "apid", "restart", "-n", &fresh, "-i"])
        .expect()
        .stderr(
            "Error: error starting service: rpc error: code = PermissionDenied desc = not authorized\nhint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)\n"
        )
        .status(1)
        .run();
}

#[test]
fn rollback_reboot_force_and_shutdown() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let before = nodes.node(&ip).state().version.clone();
    d.talm(["rollback", "-f", "nodes/cp.yaml"]).expect().mask(addrs).stderr("\
- talm: rolling back $A1
Error: error executing rollback: node $A1: Rollback: rpc error: code = Unknown desc = previous UKI not found
").status(1).run();
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "--image",
        "ghcr.io/siderolabs/installer:v1.13.9",
    ])
    .ok();
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
    // Rollback says what it asked and, as reboot does, returns once the node is back.
    let boots = nodes.boots(&ip);
    let o = d.talm(["rollback", "-f", "nodes/cp.yaml"]).ok();
    assert_eq!(o.stdout, "");
    assert_eq!(
        o.stderr,
        format!("- talm: rolling back {ip}\n{ip}: back, running {before}\n")
    );
    assert_eq!(nodes.boots(&ip), boots + 1);
    assert_eq!(nodes.node(&ip).state().version, before);
    d.talm(["version", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
    // --wait=false returns once the node took the request.
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "--image",
        "ghcr.io/siderolabs/installer:v1.13.9",
    ])
    .ok();
    let boots = nodes.boots(&ip);
    let o = d
        .talm(["rollback", "-f", "nodes/cp.yaml", "--wait=false"])
        .ok();
    assert_eq!(o.stderr, format!("- talm: rolling back {ip}\n"));
    nodes.wait_reboot(&ip, boots);
    assert_eq!(nodes.node(&ip).state().version, before);

    let boots = nodes.boots(&ip);
    d.talm(["reboot", "-f", "nodes/cp.yaml", "--mode", "force", "--wait"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(rebooted("$A1"))
        .run();
    assert!(nodes.boots(&ip) > boots);

    d.talm(["shutdown", "-f", "nodes/cp.yaml", "--wait"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped("$A1", "shutdown", SHUTDOWN_PHASES, ""))
        .run();
    nodes.wait_down(&ip);
    d.talm(["version", "-f", "nodes/cp.yaml"])
        .expect().stderr(format!("\
Error: node {ip}: connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
}

#[test]
fn reset_waits_for_maintenance_or_power_off() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = configured(&nodes, &a);
    d.talm(["reset", "-f", "nodes/cp.yaml", "--reboot", "--wait"])
        .expect()
        .mask(addrs)
        .stdout("")
        .mask(uuids)
        .stderr(services_stopped(
            "$A1",
            "reset",
            RESET_CP_PHASES,
            "post check passed\n",
        ))
        .run();
    assert!(nodes.node(&a).state().in_maintenance());
    let e = Dir::project("generic");
    e.write("nodes/cp.yaml", &template_node(&e, &b));
    let boots = nodes.boots(&b);
    e.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(&b, boots);
    // Without --reboot the tracker ends when the services stop (talosctl: no post check).
    e.talm(["reset", "-f", "nodes/cp.yaml", "--wait"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped("$A1", "reset", RESET_CP_PHASES, ""))
        .run();
    nodes.wait_down(&b);
    e.talm(["version", "-n", &b, "-i"])
        .expect().stderr(format!("\
Error: node {b}: connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
}

#[test]
fn wipe_disk_refuses_volumes_and_changes_the_disk() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |s| {
        let base = s.hardware.disks[0].clone();
        let mut data = talm::sim::node::hardware::Disk {
            name: "vdb".into(),
            size: 10_000_000_000,
            transport: "virtio".into(),
            partitions: vec!["xfs".into(), "ext4".into()],
            ..base.clone()
        };
        data.wwid = String::new();
        data.serial = String::new();
        let ro = talm::sim::node::hardware::Disk {
            name: "vdc".into(),
            readonly: true,
            partitions: vec![],
            ..data.clone()
        };
        s.hardware.disks.extend([data, ro]);
    });
    let d = configured(&nodes, &ip);
    let system = nodes.node(&ip).state().installed_disk.clone().unwrap();
    assert_eq!(system, "nvme0n1");
    let wipe = |args: &[&str]| {
        let mut a = vec!["wipe", "disk"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-f", "nodes/cp.yaml"]);
        d.talm(a)
    };
    let dv = || {
        d.talm(["get", "discoveredvolumes", "-f", "nodes/cp.yaml"])
            .ok()
            .stdout
    };
    let before = dv();
    assert!(
        row(&before, &[&ip, "runtime", "DiscoveredVolume", "vdb1"]).is_some(),
        "{before}"
    );
    let vdb2 = row(&before, &[&ip, "runtime", "DiscoveredVolume", "vdb2"]).unwrap();
    assert_eq!(vdb2[5..], ["partition", "5.0", "GB", "ext4"], "{before}");

    wipe(&["nvme0n1"]).expect().stderr(format!("Error: 1 error occurred:\n\t* {ip}: rpc error: code = FailedPrecondition desc = blockdevice \"nvme0n1\" is in use by volume \"EFI\"\n\n\n")).status(1).run();
    wipe(&["nvme0n1p4"]).expect().mask(addrs).stderr("Error: 1 error occurred:\n\t* $A1: rpc error: code = FailedPrecondition desc = blockdevice \"nvme0n1p4\" is in use by volume \"EPHEMERAL\"\n\n\n").status(1).run();
    wipe(&["nosuch"]).expect().mask(addrs).stderr("Error: 1 error occurred:\n\t* $A1: rpc error: code = NotFound desc = blockdevice \"nosuch\" not found\n\n\n").status(1).run();
    wipe(&["vdc"]).expect().mask(addrs).stderr("Error: 1 error occurred:\n\t* $A1: rpc error: code = FailedPrecondition desc = blockdevice \"vdc\" is read-only\n\n\n").status(1).run();
    wipe(&["vdb", "--method", "fast"])
        .expect()
        .stderr(
            "\
error: invalid value 'fast' for '--method <METHOD>': invalid wipe method \"fast\"

For more information, try '--help'.
",
        )
        .status(1)
        .run();
    // Every device is checked before any is wiped.
    wipe(&["vdb1", "nvme0n1p3"]).expect().mask(addrs).stderr("Error: 1 error occurred:\n\t* $A1: rpc error: code = FailedPrecondition desc = blockdevice \"nvme0n1p3\" is in use by volume \"STATE\"\n\n\n").status(1).run();
    assert_eq!(dv(), before);

    wipe(&["vdb2", "--drop-partition"]).ok();
    wipe(&["vdb1"]).ok();
    let after = dv();
    assert!(
        row(&after, &[&ip, "runtime", "DiscoveredVolume", "vdb2"]).is_none(),
        "{after}"
    );
    let vdb1 = row(&after, &[&ip, "runtime", "DiscoveredVolume", "vdb1"]).unwrap();
    assert_eq!(vdb1[5..], ["partition", "5.0", "GB"], "wiped: {after}");
    wipe(&["vdb", "--method", "ZEROES"]).ok();
    let after = dv();
    assert!(
        row(&after, &[&ip, "runtime", "DiscoveredVolume", "vdb1"]).is_none(),
        "{after}"
    );
    assert!(
        row(&after, &[&ip, "runtime", "DiscoveredVolume", "nvme0n1p4"]).is_some(),
        "{after}"
    );
}

#[test]
fn meta_keys_are_written_read_and_deleted() {
    let [ip, fresh] = net::addrs();
    let nodes = Nodes::start(&[&ip, &fresh], |_| {});
    let d = configured(&nodes, &ip);
    let f = ["-f", "nodes/cp.yaml"];
    let run = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend_from_slice(&f);
        d.talm(a)
    };
    assert_eq!(
        run(&["meta", "write", "0x0c", "hello world"]).ok().stdout,
        ""
    );
    let y = run(&["get", "metakeys", "0x0c", "-o", "yaml"]).ok().stdout;
    assert!(y.contains("value: hello world"), "{y}");
    let t = run(&["get", "meta"]).ok().stdout;
    let r = row(&t, &[&ip, "runtime", "MetaKey", "0x0c"]).unwrap();
    assert_eq!(r[5..], ["hello", "world"], "{t}");
    run(&["meta", "delete", "12"]).ok();
    let t = run(&["get", "meta"]).ok().stdout;
    assert!(!t.contains("0x0c"), "{t}");
    run(&["meta", "delete", "0b1100"])
        .expect()
        .stderr(format!(
            "Error: 1 error occurred:\n\t* {ip}: rpc error: code = NotFound desc = meta key not found\n\n\n"
        ))
        .status(1)
        .run();
    run(&["meta", "write", "256", "x"])
        .expect()
        .stderr("Error: strconv.ParseUint: parsing \"256\": value out of range\nhint: META keys are 0 to 255 (0x00 to 0xff); 0x0c to 0x0e are free for users\n")
        .status(1)
        .run();
    d.talm(["meta", "write", "0x0d", "x", "-n", &fresh, "-i"])
        .expect()
        .stderr("Error: rpc error: code = PermissionDenied desc = not authorized\nhint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)\n")
        .status(1)
        .run();
}

#[test]
fn image_pull_adds_to_the_image_list() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let before = d.talm(["image", "list", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert!(!before.contains("nginx"), "{before}");
    let o = d
        .talm(["image", "pull", "nginx:1.27", "-f", "nodes/cp.yaml"])
        .ok();
    assert!(
        o.stderr.contains(&format!(
            "{ip}: pulled image docker.io/library/nginx@sha256:"
        )),
        "{}",
        o.stderr
    );
    let after = d.talm(["image", "list", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert!(
        row(&after, &[&ip, "docker.io/library/nginx:1.27"]).is_some(),
        "{after}"
    );
    let system = d
        .talm([
            "images",
            "ls",
            "--namespace",
            "system",
            "-f",
            "nodes/cp.yaml",
        ])
        .ok()
        .stdout;
    assert!(!system.contains("nginx"), "{system}");
    // As talosctl, which asks each node one-to-one: `error from node N: <status>`.
    d.talm([
        "image",
        "pull",
        "registry.invalid/app:1",
        "-f",
        "nodes/cp.yaml",
    ])
    .expect().mask(addrs).stderr("Error: error from node $A1: rpc error: code = NotFound desc = error pulling image: registry.invalid/app:1: not found\n").status(1).run();

    // Remove takes that name out of the list (the image's other names stay); a second time
    // the node says it has no such image.
    let nginx = [
        "image",
        "rm",
        "docker.io/library/nginx:1.27",
        "-f",
        "nodes/cp.yaml",
    ];
    d.talm(nginx).expect().stdout("").stderr("").run();
    let removed = d.talm(["image", "list", "-f", "nodes/cp.yaml"]).ok().stdout;
    assert!(
        row(&removed, &[&ip, "docker.io/library/nginx:1.27"]).is_none(),
        "{removed}"
    );
    assert!(
        removed.contains("docker.io/library/nginx@sha256:"),
        "{removed}"
    );
    d.talm(nginx).expect().mask(addrs).stderr("Error: error from node $A1: rpc error: code = NotFound desc = image docker.io/library/nginx:1.27 not found\n").status(1).run();
}
