//! The simulated node's life cycle against `talos-api.md`: apply modes and dry runs, upgrade,
//! reset, reboots that keep state, apid-style forwarding between nodes, and injected faults.

use std::time::Duration;

use crate::common::expect::addrs;
use crate::common::net;
use crate::common::sim::*;
use talm::config::generate::MachineType;
use talm::proto::machine;
use talm::sim::net::faults::Faults;
use talm::talos::client::{Client, Options as ClientOptions};
use talm::talos::creds::Auth;

#[test]
fn apply_modes_upgrade_and_reset() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    use machine::apply_configuration_request::Mode;
    let cfg = config(MachineType::ControlPlane, Some("/dev/nvme0n1"));
    let changed = cfg.replacen(
        "machine:\n",
        "machine:\n    sysctls:\n        net.core.somaxconn: \"65535\"\n",
        1,
    );

    let r = h.apply(&h.addr, admin(), &cfg, Mode::Auto, true).unwrap();
    assert!(
        r.mode_details.ends_with("\nNo changes."),
        "{}",
        r.mode_details
    );
    let r = h
        .apply(&h.addr, admin(), &changed, Mode::NoReboot, true)
        .unwrap();
    assert!(
        r.mode_details
            .contains("+        net.core.somaxconn: \"65535\""),
        "{}",
        r.mode_details
    );

    let r = h
        .apply(&h.addr, admin(), &changed, Mode::Try, false)
        .unwrap();
    assert!(
        r.mode_details
            .ends_with("will be automatically reverted back in 1m0s"),
        "{}",
        r.mode_details
    );
    let r = h
        .apply(&h.addr, admin(), &changed, Mode::Staged, false)
        .unwrap();
    assert_eq!(
        r.mode_details,
        "Staged configuration to be applied after the next reboot"
    );
    // Talos applies machine.install at once (CanApplyImmediate); machine.env needs a reboot.
    let other_disk = cfg.replace("disk: /dev/nvme0n1", "disk: /dev/sdb");
    let r = h
        .apply(&h.addr, admin(), &other_disk, Mode::Auto, true)
        .unwrap();
    assert_eq!(r.mode, Mode::NoReboot as i32);
    let with_env = cfg.replacen(
        "machine:\n",
        "machine:\n    env:\n        HTTP_PROXY: http://127.0.0.1:3128\n",
        1,
    );
    let err = h
        .apply(&h.addr, admin(), &with_env, Mode::NoReboot, false)
        .unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1: ApplyConfiguration: rpc error: code = InvalidArgument desc = this config change can't be applied in immediate mode
diff:
--- a
+++ b
@@ -1,7 +1,9 @@
 version: v1alpha1
 machine:
+  env:
+    HTTP_PROXY: http://127.0.0.1:3128
+  type: controlplane
+  token: d8cwfa.eyvpi0xwxyarbfid
   features:
     diskQuotaSupport: true
-  type: controlplane
-  token: d8cwfa.eyvpi0xwxyarbfid
 persist: true
");
    let r = h
        .apply(&h.addr, admin(), &with_env, Mode::Auto, true)
        .unwrap();
    assert_eq!(r.mode, Mode::Reboot as i32);

    // Upgrade: acknowledged, then the node reboots into the new version.
    let boots = h.boots(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    let u = talm::talos::block_on(c.upgrade(machine::UpgradeRequest {
        image: "ghcr.io/siderolabs/installer:v1.13.8".into(),
        ..Default::default()
    }))
    .unwrap();
    assert_eq!(u.ack, "Upgrade request received");
    assert_eq!(u.actor_id.len(), 36);
    h.wait_reboot(&h.addr, boots);
    let c = h.connect(&h.addr, admin()).unwrap();
    assert_eq!(
        talm::talos::block_on(c.version())
            .unwrap()
            .version
            .unwrap()
            .tag,
        "v1.13.8"
    );

    // Reset: validation, then back to maintenance.
    let err = talm::talos::block_on(c.reset(machine::ResetRequest {
        mode: machine::reset_request::WipeMode::SystemDisk as i32,
        user_disks_to_wipe: vec!["/dev/nvme0n1".into()],
        ..Default::default()
    }))
    .unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1: Reset: rpc error: code = Unknown desc = reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter");
    let boots = h.boots(&h.addr);
    talm::talos::block_on(c.reset(machine::ResetRequest {
        graceful: true,
        reboot: true,
        ..Default::default()
    }))
    .unwrap();
    h.wait_reboot(&h.addr, boots);
    let (cn, _, _) = sans(&server_cert(&h.addr));
    assert_eq!(cn, "maintenance-service.talos.dev");
}

#[test]
fn faults_end_with_clear_errors() {
    let refused = Nodes::start(&[net::addr()], |s| s.faults.refuse = true);
    let err = refused
        .connect(&refused.addr, Auth::Insecure)
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        format!("node {}: connect: connection refused", refused.addr)
    );

    let h = Nodes::start(&[net::addr()], |_| {});
    h.node(&h.addr).set_faults(Faults {
        fail: [(
            "Version".to_string(),
            "Unavailable: apid is restarting".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let err = talm::talos::block_on(c.version()).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Version: rpc error: code = Unavailable desc = apid is restarting"
    );

    h.node(&h.addr).set_faults(Faults {
        drop: vec!["List".into()],
        ..Faults::default()
    });
    let err = talm::talos::block_on(c.list("network", "LinkStatuses.net.talos.dev")).unwrap_err();
    assert!(err.to_string().contains("the connection was cut"), "{err}");

    h.node(&h.addr).set_faults(Faults {
        delay: Some(std::time::Duration::from_secs(3)),
        ..Faults::default()
    });
    let c = talm::talos::block_on(Client::connect(
        &h.addr,
        None,
        &ClientOptions {
            auth: Auth::Insecure,
            timeout: Duration::from_millis(500),
        },
    ))
    .unwrap();
    let started = std::time::Instant::now();
    let err = talm::talos::block_on(c.version()).unwrap_err();
    assert!(err.to_string().contains("no answer within"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn reboots_keep_state_and_streams_serve() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap();
    let boots = h.boots(&h.addr);
    let r = talm::talos::block_on(c.reboot(machine::RebootRequest::default())).unwrap();
    assert_eq!(r.actor_id.len(), 36);
    // The API port closes while the node is down.
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(format!("{}:50000", h.addr)).is_ok() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the listener never closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    h.wait_reboot(&h.addr, boots);
    // Down for the reboot, up again with the same config and etcd data.
    let c = h.connect(&h.addr, admin()).unwrap();
    let err = talm::talos::block_on(c.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert_eq!(
        addrs(&err.to_string()),
        "\
node $A1: Bootstrap: rpc error: code = AlreadyExists desc = etcd data directory is not empty"
    );
    let services = talm::talos::block_on(c.services()).unwrap();
    assert!(
        services
            .iter()
            .any(|s| s.id == "etcd" && s.state == "Running"),
        "{services:?}"
    );
    let logs = String::from_utf8(
        talm::talos::block_on(c.logs(machine::LogsRequest {
            id: "kubelet".into(),
            tail_lines: 2,
            ..Default::default()
        }))
        .unwrap(),
    )
    .unwrap();
    assert_eq!(logs.lines().count(), 2, "{logs}");
    let dmesg = String::from_utf8(
        talm::talos::block_on(c.dmesg(machine::DmesgRequest::default())).unwrap(),
    )
    .unwrap();
    assert!(
        dmesg.contains("(boot 3)"),
        "install and reboot are two boots after the first: {dmesg}"
    );
    let watched =
        talm::talos::block_on(c.watch_current("network", "LinkStatuses.net.talos.dev")).unwrap();
    assert_eq!(watched.len(), 2, "lo and eth0");
    assert_eq!(
        talm::talos::block_on(c.hostname()).unwrap().len(),
        "talos-xxx-yyy".len()
    );
}

#[test]
fn configured_nodes_forward_to_each_other() {
    let [a, b] = net::addrs();
    let h = Nodes::start(&[&a, &b], |_| {});
    h.install_control_plane(&a);
    // Through node A to node B, still in maintenance: apid's forward fails its handshake.
    let via = talm::talos::block_on(Client::connect(&a, Some(&b), &opts(admin()))).unwrap();
    let err = talm::talos::block_on(via.version())
        .unwrap_err()
        .to_string();
    assert_eq!(addrs(&err), "\
node $A1 (via $A2:50000): Version: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp $A1:50000: authentication handshake failed: tls: failed to verify certificate: x509: certificate signed by unknown authority\"");
    // Once B is configured (a worker, certified by A as trustd would), A forwards and the reply names B.
    h.install(&b, &config(MachineType::Worker, Some("/dev/nvme0n1")));
    let v = talm::talos::block_on(via.version()).unwrap();
    assert_eq!(v.metadata.unwrap().hostname, b);
    let err =
        talm::talos::block_on(via.bootstrap(machine::BootstrapRequest::default())).unwrap_err();
    assert_eq!(addrs(&err.to_string()), "\
node $A1 (via $A2:50000): Bootstrap: rpc error: code = Unimplemented desc = bootstrap is only available on control plane nodes");
    // COSI goes one-to-one through `node`.
    let mt =
        talm::talos::block_on(via.get("config", "MachineTypes.config.talos.dev", "machine-type"))
            .unwrap()
            .unwrap();
    assert_eq!(mt.spec.unwrap().yaml_spec.trim(), "worker");
}

#[test]
fn try_mode_rolls_back_and_cut_kubeconfig_streams_fail() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let cfg = config(MachineType::ControlPlane, Some("/dev/nvme0n1"));
    let changed = cfg.replacen(
        "machine:\n",
        "machine:\n    sysctls:\n        vm.swappiness: \"1\"\n",
        1,
    );
    let c = h.connect(&h.addr, admin()).unwrap();
    let r = talm::talos::block_on(c.apply(machine::ApplyConfigurationRequest {
        data: changed.into_bytes(),
        mode: machine::apply_configuration_request::Mode::Try as i32,
        dry_run: false,
        try_mode_timeout: Some(prost_types::Duration {
            seconds: 1,
            nanos: 0,
        }),
    }))
    .unwrap();
    assert!(
        r.mode_details.ends_with("reverted back in 1s"),
        "{}",
        r.mode_details
    );
    let current = |c: &Client| {
        let r =
            talm::talos::block_on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
                .unwrap()
                .unwrap();
        r.spec.unwrap().yaml_spec
    };
    assert!(current(&c).contains("vm.swappiness"));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !current(&c).contains("vm.swappiness"),
        "the try-mode config was rolled back"
    );

    h.node(&h.addr).set_faults(Faults {
        drop: vec!["Kubeconfig".into()],
        ..Faults::default()
    });
    let err = talm::talos::block_on(c.kubeconfig()).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("node {}: Kubeconfig:", h.addr)),
        "{err}"
    );
    assert!(
        err.to_string().contains("cut") || err.to_string().contains("unreadable archive"),
        "{err}"
    );
}
