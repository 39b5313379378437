//! `talm sim` as a command: serving the nodes of a file and the command line until stopped, and
//! powering a node that was switched off back on.

use crate::common::cluster::until;
use crate::common::expect::{addrs, services_stopped, uuids, RESET_CP_PHASES};
use crate::common::sim::template_node;
use crate::common::{net, Dir};

#[test]
fn sim_command_serves_nodes_until_stopped() {
    let lan = net::subnet(24);
    let (listed, extra) = (lan.host(21), lan.host(22));
    let d = Dir::new();
    d.talm(["sim", "--node", "10.0.0.1"])
        .expect()
        .stderr(
            "\
Error: 10.0.0.1 is not a loopback address
hint: simulated nodes listen on 127.0.0.0/8 (or ::1) only, e.g. --node 127.0.0.11
",
        )
        .status(1)
        .run();
    d.write(
        "bad.yaml",
        &format!("nodes:\n  - address: {}\n    hardwre: {{}}\n", lan.host(20)),
    );
    d.talm(["sim", "--config", "bad.yaml"])
        .expect().stderr("\
Error: bad.yaml: nodes[0]: unknown field `hardwre`, expected one of `address`, `port`, `talos_version`, `hardware`, `faults` at line 3 column 5
hint: see `talm sim --help` for the format: nodes: [{address: 127.0.0.11, hardware: {disks: [...], links: [...]}, faults: {...}}]
").status(1).run();
    d.write(
        "sim.yaml",
        &format!("reboot_delay: 200ms\nnodes:\n  - address: {listed}\n    talos_version: v1.13.5\n    hardware:\n      disks:\n        - {{name: sda, size: 500107862016, model: Samsung SSD 870, serial: S6P}}\n      links:\n        - {{name: enp1s0, mac: \"aa:bb:cc:00:00:21\", bus_path: \"0000:01:00.0\", addresses: [{listed}/24]}}\n      gateway: {}\n", lan.host(254)),
    );
    let bin = assert_cmd::cargo::cargo_bin("talm");
    let mut child = KillOnDrop(
        std::process::Command::new(bin)
            .current_dir(d.path())
            .args(["sim", "--config", "sim.yaml", "--node", &extra])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(format!("{extra}:50000")).is_err() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "talm sim did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let v = d
        .talm(["version", "-n", &listed, "-i", "--short"])
        .ok()
        .stdout;
    assert!(
        v.starts_with(&format!(
            "Client:\nTalos v1.13.7\nServer:\n\tNODE:        {listed}\n\tTag:         v1.13.5\n"
        )),
        "{v}"
    );
    let disks = d.talm(["get", "disks", "-n", &listed, "-i"]).ok().stdout;
    assert!(disks.contains(" sda "), "{disks}");
    let links = d
        .talm(["get", "links", "enp1s0", "-n", &listed, "-i", "-o", "yaml"])
        .ok()
        .stdout;
    assert!(links.contains("hardwareAddr: aa:bb:cc:00:00:21"), "{links}");
    d.talm(["version", "-n", &extra, "-i", "--short"]).ok();
    // SIGTERM stops it cleanly.
    unsafe_kill(child.0.id());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "talm sim exit: {status:?}");
    assert!(std::net::TcpStream::connect(format!("{extra}:50000")).is_err());
}

#[test]
fn sim_command_powers_switched_off_nodes_back_on() {
    let ip = net::addr();
    let d = Dir::project("generic");
    let bin = assert_cmd::cargo::cargo_bin("talm");
    let mut child = KillOnDrop(
        std::process::Command::new(bin)
            .current_dir(d.path())
            .args(["sim", "--node", &ip, "--reboot-delay", "200ms"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let answers = |args: &[&str]| d.talm(args.iter().copied()).run().code == 0;
    until("talm sim listens", || {
        answers(&["version", "-n", &ip, "-i"])
    });
    // Configured, then reset without --reboot: the node powers off, as Talos does.
    d.write("nodes/cp.yaml", &template_node(&d, &ip));
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    until("the node runs its config", || {
        answers(&["version", "-f", "nodes/cp.yaml"])
    });
    d.talm(["reset", "-f", "nodes/cp.yaml", "--wait"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stdout("")
        .stderr(services_stopped("$A1", "reset", RESET_CP_PHASES, ""))
        .run();
    // The tracker ends when the services stop; the machine powers off right after.
    until("the node is off", || {
        !answers(&["version", "-f", "nodes/cp.yaml"])
    });
    d.talm(["version", "-n", &ip, "-i"])
        .expect().stderr(format!("\
Error: node {ip}: connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
    // SIGUSR1 powers it on: it boots again, in maintenance mode after the reset.
    let usr1 = std::process::Command::new("kill")
        .args(["-USR1", &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(usr1.success());
    until("the node is back in maintenance mode", || {
        answers(&["version", "-n", &ip, "-i"])
    });
    unsafe_kill(child.0.id());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "talm sim exit: {status:?}");
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut said).unwrap();
    assert!(
        said.contains(&format!("\nsim {ip}: powered on\n")),
        "{said}"
    );
}

/// A child process that is killed if the test fails before stopping it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn unsafe_kill(pid: u32) {
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .unwrap();
}
