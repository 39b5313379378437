//! Upgrades as talosctl v1.13 makes them, through the real binary against simulated nodes: the
//! LifecycleService path without waiting and without a reboot, the fallback to the legacy API
//! on a node older than v1.13, the reconcile window's refusal, and the simulator's
//! LifecycleService as a client generated from Talos's own proto sees it.

use crate::common::expect::{
    addrs, installer_run, log_stamps, rebooted, tracker, uuids, BOOT_REPLAY, PINNED_NEW,
};
use crate::common::net;
use crate::common::sim::{admin, Nodes};
use crate::upgrade_apply::configured;

const NEW: &str = "ghcr.io/siderolabs/installer:v1.13.9";
/// The generic preset's node file names no installer image: the writeback passes it by.
const SKIPPED: &str =
    "Skipped nodes/cp.yaml: no machine.install.image key (orphan or side-patch shape)\n";

/// A node's stderr with addresses, log time stamps and actor IDs read as placeholders.
fn masked(stderr: &str) -> String {
    uuids(&log_stamps(&addrs(stderr)))
}

#[test]
fn without_waiting_the_node_is_rebooted_and_checked() {
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
        ])
        .ok();
    // No table: that is the legacy path's answer. The Go talm's check then waits for the boot.
    assert_eq!(o.stdout, "");
    assert_eq!(
        masked(&o.stderr),
        format!(
            "\
- talm: upgrading $A1 from v1.13.7 to {NEW}
{}post-upgrade verify: waiting 1m30s for the node to finish booting...
$A1: running v1.13.9
Skipped nodes/cp.yaml: no machine.install.image key (orphan or side-patch shape)
",
            installer_run("$A1", PINNED_NEW, "v1.13.7", "v1.13.9")
        )
    );
    assert!(nodes.boots(&ip) > boots);
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
}

#[test]
fn no_reboot_installs_for_the_next_boot() {
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
            "--no-reboot",
        ])
        .ok();
    assert_eq!(
        masked(&o.stderr),
        format!(
            "- talm: upgrading $A1 from v1.13.7 to {NEW}\n{}{SKIPPED}",
            installer_run("$A1", PINNED_NEW, "v1.13.7", "v1.13.9")
        )
    );
    assert_eq!(nodes.boots(&ip), boots, "no reboot");
    assert_eq!(nodes.node(&ip).state().version, "v1.13.7");
    // The next reboot runs what was installed.
    d.talm(["reboot", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .mask(uuids)
        .stderr(rebooted("$A1"))
        .run();
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
}

#[test]
fn a_node_older_than_v1_13_takes_the_legacy_path() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |s| s.version = "v1.12.6".into());
    let d = configured(&nodes, &ip);
    let o = d
        .talm(["upgrade", "--drain=false", "-f", "nodes/cp.yaml", "-i", NEW])
        .ok();
    let mut phases = String::new();
    for p in [
        "drain",
        "cleanup",
        "dbus",
        "stopServices",
        "unmount",
        "unmountBind",
        "unmountSystem",
        "volumeFinalize",
        "upgrade",
        "meta",
        "kexec",
        "stopEverything",
        "reboot",
    ] {
        phases += &format!("phase: {p} action: START\nphase: {p} action: STOP\n");
    }
    let followed = tracker(
        "$A1",
        &format!(
            "waiting for actor ID\nactor ID: <UUID>\nsequence: upgrade action: START\n{phases}unavailable, retrying...\n{BOOT_REPLAY}events check condition met\npost check passed\n"
        ),
    );
    assert_eq!(
        masked(&o.stderr),
        format!(
            "\
- talm: upgrading $A1 from v1.12.6 to {NEW}
New upgrade API is not available, falling back to legacy
{followed}$A1: running v1.13.9
Skipped nodes/cp.yaml: no machine.install.image key (orphan or side-patch shape)
"
        )
    );
    assert_eq!(nodes.node(&ip).state().version, "v1.13.9");
}

#[test]
fn the_reconcile_window_must_be_positive() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "-i",
        NEW,
        "--post-upgrade-reconcile-window",
        "0s",
    ])
    .expect()
    .stderr(
        "\
Error: --post-upgrade-reconcile-window must be a positive duration; got 0s
hint: pass a positive duration like 90s or 2m — the default is 90s
",
    )
    .status(1)
    .run();
    assert_eq!(nodes.node(&ip).state().version, "v1.13.7", "nothing ran");
}

/// LifecycleService's messages as Talos's `api/machine/lifecycle.proto` declares them, written
/// out as a client generated from that file has them (talm's own types are not used).
mod upstream {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ContainerdInstance {
        #[prost(int32, tag = "1")]
        pub driver: i32,
        #[prost(int32, tag = "2")]
        pub namespace: i32,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstallArtifactsSource {
        #[prost(string, tag = "1")]
        pub image_name: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct UpgradeRequest {
        #[prost(message, optional, tag = "1")]
        pub containerd: Option<ContainerdInstance>,
        #[prost(message, optional, tag = "2")]
        pub source: Option<InstallArtifactsSource>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstallDestination {
        #[prost(string, tag = "1")]
        pub disk: String,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstallRequest {
        #[prost(message, optional, tag = "1")]
        pub containerd: Option<ContainerdInstance>,
        #[prost(message, optional, tag = "2")]
        pub source: Option<InstallArtifactsSource>,
        #[prost(message, optional, tag = "3")]
        pub destination: Option<InstallDestination>,
    }

    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Response {
        #[prost(string, tag = "1")]
        Message(String),
        #[prost(int32, tag = "2")]
        ExitCode(i32),
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InstallProgress {
        #[prost(oneof = "Response", tags = "1, 2")]
        pub response: Option<Response>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct UpgradeResponse {
        #[prost(message, optional, tag = "1")]
        pub progress: Option<InstallProgress>,
    }
}

/// `LifecycleService/Install` of `image` to `disk`, as the generated client calls it: the
/// status the call ends with (an installed node refuses it before anything runs).
fn install_call(nodes: &Nodes, ip: &str, image: &str, disk: &str) -> tonic::Status {
    let c = nodes.connect(ip, admin()).unwrap();
    talm::talos::block_on(async move {
        let mut grpc = tonic::client::Grpc::new(c.channel());
        grpc.ready().await.unwrap();
        let req = upstream::InstallRequest {
            containerd: None,
            source: Some(upstream::InstallArtifactsSource {
                image_name: image.into(),
            }),
            destination: Some(upstream::InstallDestination { disk: disk.into() }),
        };
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(
            "/machine.LifecycleService/Install",
        );
        let codec =
            tonic_prost::ProstCodec::<upstream::InstallRequest, upstream::UpgradeResponse>::default(
            );
        match grpc
            .server_streaming(tonic::Request::new(req), path, codec)
            .await
        {
            Ok(r) => {
                let mut s = r.into_inner();
                match s.message().await {
                    Err(st) => st,
                    Ok(m) => panic!("Install answered {m:?}"),
                }
            }
            Err(st) => st,
        }
    })
}

/// `LifecycleService/Upgrade` of `image` into the `system` containerd, as the generated client
/// calls it: every reply (`message` or `exit <code>`), or the status it ends with.
fn upgrade_call(nodes: &Nodes, ip: &str, image: &str) -> Result<Vec<String>, tonic::Status> {
    use tokio_stream::StreamExt;
    let c = nodes.connect(ip, admin()).unwrap();
    talm::talos::block_on(async move {
        let mut grpc = tonic::client::Grpc::new(c.channel());
        grpc.ready().await.unwrap();
        let req = upstream::UpgradeRequest {
            // CRI driver, the `system` namespace (talosctl's default for upgrades).
            containerd: Some(upstream::ContainerdInstance {
                driver: 1,
                namespace: 1,
            }),
            source: Some(upstream::InstallArtifactsSource {
                image_name: image.into(),
            }),
        };
        let path = tonic::codegen::http::uri::PathAndQuery::from_static(
            "/machine.LifecycleService/Upgrade",
        );
        let codec =
            tonic_prost::ProstCodec::<upstream::UpgradeRequest, upstream::UpgradeResponse>::default(
            );
        let mut stream = grpc
            .server_streaming(tonic::Request::new(req), path, codec)
            .await?
            .into_inner();
        let mut out = Vec::new();
        while let Some(m) = stream.next().await {
            match m?.progress.and_then(|p| p.response) {
                Some(upstream::Response::Message(t)) => out.push(t),
                Some(upstream::Response::ExitCode(c)) => out.push(format!("exit {c}")),
                None => out.push("empty".into()),
            }
        }
        Ok(out)
    })
}

#[test]
fn lifecycle_service_answers_a_client_generated_from_talos_proto() {
    let [ip, old] = net::addrs();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    // The installer image must be in the store first (talosctl pulls it).
    let st = upgrade_call(&nodes, &ip, NEW).unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (
            tonic::Code::Internal,
            "upgrade failed: installer image \"ghcr.io/siderolabs/installer:v1.13.9\" not found in containerd store: image \"ghcr.io/siderolabs/installer:v1.13.9\": not found"
        )
    );
    let st = upgrade_call(&nodes, &ip, "").unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (
            tonic::Code::InvalidArgument,
            "installer image name is required"
        )
    );
    d.talm([
        "image",
        "pull",
        "--namespace",
        "system",
        NEW,
        "-f",
        "nodes/cp.yaml",
    ])
    .ok();
    let replies = upgrade_call(&nodes, &ip, NEW).unwrap();
    assert_eq!(
        log_stamps(&replies.concat()),
        "\
<log time> running Talos installer v1.13.9
<log time> running pre-flight checks
<log time> host Talos version: v1.13.7
<log time> all pre-flight checks successful
<log time> installation of v1.13.9 complete
exit 0"
    );
    // Install is for a machine not installed yet.
    let st = install_call(&nodes, &ip, NEW, "/dev/nvme0n1");
    assert_eq!(
        (st.code(), st.message()),
        (tonic::Code::AlreadyExists, "machine is already installed")
    );
    // Installed, not running: the next boot runs it.
    let st = nodes.node(&ip).state();
    assert_eq!(
        (st.version.as_str(), st.pending_version.as_deref()),
        ("v1.13.7", Some("v1.13.9"))
    );
    drop(st);

    // A node before v1.13 has no such service.
    let older = Nodes::start(&[&old], |s| s.version = "v1.12.6".into());
    let _ = configured(&older, &old);
    let st = upgrade_call(&older, &old, NEW).unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (
            tonic::Code::Unimplemented,
            "unknown service machine.LifecycleService"
        )
    );
}

#[test]
fn debug_prints_the_kernel_log_of_a_node_that_does_not_come_back() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    // The machine loses its power as it reboots: it stays down.
    nodes.node(&ip).state().changes.powered_off = true;
    let o = d
        .talm([
            "reboot",
            "-f",
            "nodes/cp.yaml",
            "--timeout",
            "2s",
            "--debug",
        ])
        .expect()
        .status(1)
        .run();
    let text = masked(&o.stderr);
    let (followed, rest) = text
        .split_once("console logs for nodes [\"$A1\"]:\n")
        .unwrap();
    assert_eq!(
        followed,
        tracker(
            "$A1",
            "waiting for actor ID\nactor ID: <UUID>\nsequence: reboot action: START\nunavailable, retrying...\n"
        )
    );
    let (console, error) = rest.split_once("Error: ").unwrap();
    // The kernel log the node had before it went away, each line after the node.
    assert!(console.lines().count() > 1, "{console}");
    assert!(console.lines().all(|l| l.starts_with("$A1: ")), "{console}");
    assert_eq!(
        error,
        "\
node $A1: the node did not come back within 2s
hint: look at the node's console or `talm events`; raise --timeout for slow machines
"
    );
}
