//! `talm debug`: the node pulls the image, then runs its debug container (the simulator's mini
//! shell) attached to talm's stdin and stdout; the container's exit code is talm's. Through
//! the wire, DebugService.ContainerRun answers as Talos does: its refusals, and a container
//! with a terminal that prompts, echoes and hangs up when its stdin ends.

use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::common::net;
use crate::common::sim::{admin, Nodes};
use crate::upgrade_apply::configured;
use talm::proto::common::{ContainerDriver, ContainerdInstance, ContainerdNamespace};
use talm::proto::machine::debug_container_run_request::Request as In;
use talm::proto::machine::debug_container_run_request_spec::Profile;
use talm::proto::machine::debug_container_run_response::Resp as Out;
use talm::proto::machine::debug_service_client::DebugServiceClient;
use talm::proto::machine::{DebugContainerRunRequest, DebugContainerRunRequestSpec};
use talm::sim::net::faults::Faults;

/// The digest in a pinned name reads as `<digest>`.
fn digests(text: &str) -> String {
    let re = regex::Regex::new("sha256:[0-9a-f]{64}").unwrap();
    re.replace_all(text, "sha256:<digest>").into_owned()
}

#[test]
fn piped_commands_run_in_the_container_and_its_exit_code_is_talms() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let hostname = nodes.node(&ip).hostname().hostname;
    let pulled = format!("{ip}: pulled image docker.io/library/alpine@sha256:<digest>\n");

    let o = d
        .talm(["debug", "alpine:3.23", "-f", "nodes/cp.yaml"])
        .stdin("hostname\necho \"a  b\" c\nuname -r\n")
        .run();
    assert_eq!(
        (o.code, o.stdout, digests(&o.stderr)),
        (
            0,
            format!("{hostname}\na  b c\n6.18.3-talos\n"),
            pulled.clone()
        )
    );

    // `exit 3` ends the container with 3; talm says so and exits 1, as talosctl does. What
    // follows never runs.
    let o = d
        .talm(["debug", "alpine:3.23", "-f", "nodes/cp.yaml"])
        .stdin("echo before\nexit 3\necho after\n")
        .run();
    assert_eq!(
        (o.code, o.stdout, digests(&o.stderr)),
        (
            1,
            "before\n".to_string(),
            format!("{pulled}Error: container exited with code 3\n")
        )
    );

    // --args runs a program of the image instead of its shell; stdin is not read.
    let o = d
        .talm([
            "debug",
            "alpine:3.23",
            "--args",
            "sh,-c,cat /host/etc/hostname; exit 7",
            "-f",
            "nodes/cp.yaml",
        ])
        .stdin("")
        .run();
    assert_eq!(
        (o.code, o.stdout),
        (1, format!("{hostname}\n")),
        "{}",
        o.stderr
    );
}

#[test]
fn an_image_the_node_cannot_pull_or_a_missing_program_fails_as_talosctl_says() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.talm(["debug", "registry.invalid/tools:1", "-f", "nodes/cp.yaml"])
        .stdin("")
        .expect()
        .replace(&ip, "$IP")
        .stdout("")
        .stderr("Error: failed to pull image: error from node $IP: rpc error: code = NotFound desc = error pulling image: registry.invalid/tools:1: not found\n")
        .status(1)
        .run();
    let o = d
        .talm([
            "debug",
            "alpine:3.23",
            "--args",
            "bash",
            "-f",
            "nodes/cp.yaml",
        ])
        .stdin("")
        .run();
    assert_eq!(
        (o.code, o.stdout, digests(&o.stderr)),
        (
            1,
            String::new(),
            format!("{ip}: pulled image docker.io/library/alpine@sha256:<digest>\nError: rpc error: code = Unknown desc = failed to create task: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: exec: \"bash\": executable file not found in $PATH: unknown\n")
        )
    );
}

/// The container's output added to `screen` until it ends with `needle`; the screen so far.
async fn read_until(
    stream: &mut tonic::Streaming<talm::proto::machine::DebugContainerRunResponse>,
    screen: &mut String,
    needle: &str,
) -> String {
    while !screen.ends_with(needle) {
        let m = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match m.resp {
            Some(Out::StdoutData(b)) => screen.push_str(&String::from_utf8_lossy(&b)),
            other => panic!("{other:?} before {needle:?} in {screen:?}"),
        }
    }
    screen.clone()
}

/// A spec for the in-memory containerd.
fn spec(image: &str, profile: Profile, tty: bool) -> DebugContainerRunRequest {
    DebugContainerRunRequest {
        request: Some(In::Spec(DebugContainerRunRequestSpec {
            containerd: Some(ContainerdInstance {
                driver: ContainerDriver::Containerd as i32,
                namespace: ContainerdNamespace::NsSystem as i32,
            }),
            image_name: image.into(),
            args: vec![],
            env: Default::default(),
            profile: profile as i32,
            tty,
        })),
    }
}

#[test]
fn container_run_answers_through_the_wire_as_talos() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let hostname = nodes.node(&ip).hostname().hostname;
    let out = d
        .talm([
            "image",
            "pull",
            "--namespace",
            "inmem",
            "alpine:3.23",
            "-f",
            "nodes/cp.yaml",
        ])
        .ok();
    let pinned = out
        .stderr
        .trim_end()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string();
    let client = nodes.connect(&ip, admin()).unwrap();
    talm::talos::block_on(async {
        let mut c = DebugServiceClient::new(client.channel());
        // What a refusal says: one stream with nothing but the spec.
        let refusal = |first: DebugContainerRunRequest| {
            let mut c = c.clone();
            async move {
                let (tx, rx) = mpsc::channel(4);
                tx.send(first).await.unwrap();
                let st = match c.container_run(ReceiverStream::new(rx)).await {
                    Err(st) => st,
                    Ok(r) => r.into_inner().message().await.unwrap_err(),
                };
                (st.code(), st.message().to_string())
            }
        };
        assert_eq!(
            refusal(spec("docker.io/library/busybox:1", Profile::Privileged, false)).await,
            (
                tonic::Code::NotFound,
                "image docker.io/library/busybox:1 not found: image \"docker.io/library/busybox:1\": not found".into()
            )
        );
        assert_eq!(
            refusal(spec(&pinned, Profile::Unspecified, false)).await,
            (
                tonic::Code::InvalidArgument,
                "unsupported debug container profile: PROFILE_UNSPECIFIED".into()
            )
        );
        assert_eq!(
            refusal(DebugContainerRunRequest {
                request: Some(In::StdinData(b"x".to_vec()))
            })
            .await,
            (
                tonic::Code::InvalidArgument,
                "expected debug container spec".into()
            )
        );

        // With a terminal: the prompt, the typed line echoed, CR LF line ends; the client
        // closing its side hangs the terminal up (128 + SIGHUP), as Talos's own test expects.
        let (tx, rx) = mpsc::channel(4);
        tx.send(spec(&pinned, Profile::Privileged, true))
            .await
            .unwrap();
        let mut stream = c
            .container_run(ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let mut screen = String::new();
        assert_eq!(read_until(&mut stream, &mut screen, "/ # ").await, "/ # ");
        tx.send(DebugContainerRunRequest {
            request: Some(In::StdinData(b"hostname\r".to_vec())),
        })
        .await
        .unwrap();
        assert_eq!(
            read_until(&mut stream, &mut screen, &format!("{hostname}\r\n/ # ")).await,
            format!("/ # hostname\r\n{hostname}\r\n/ # ")
        );
        drop(tx);
        let last = stream.message().await.unwrap().unwrap();
        assert_eq!(last.resp, Some(Out::ExitCode(129)));
        assert!(stream.message().await.unwrap().is_none());
    });
}

/// Under a terminal (util-linux `script`), talm puts it in raw mode and the container gets one:
/// its prompt, its echo of what is typed, CR LF line ends; `exit 4` is said. (The
/// terminal itself echoes the input it is handed before talm starts: only the end is compared.)
#[test]
fn under_a_terminal_the_container_gets_one_and_talm_types_into_it() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let hostname = nodes.node(&ip).hostname().hostname;
    let (ok, screen) = d.talm_in_tty("debug alpine:3.23 -f nodes/cp.yaml", "hostname\rexit 4\r");
    let want = format!(
        "{ip}: pulled image docker.io/library/alpine@sha256:<digest>\r\n/ # hostname\r\n{hostname}\r\n/ # exit 4\r\nError: container exited with code 4\r\n"
    );
    assert!(!ok, "{screen:?}");
    assert!(digests(&screen).ends_with(&want), "{screen:?}");
}

/// talosctl's refusal of more than one node; then SIGTERM to talm goes to the container, whose
/// shell it ends (128 + 15); talm says so and exits 1.
#[test]
fn one_node_only_and_signals_go_to_the_container() {
    use std::io::{BufRead, Write};
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let two = format!("{ip},127.0.0.9");
    d.talm(["debug", "alpine:3.23", "-f", "nodes/cp.yaml", "-n", &two])
        .stdin("")
        .expect()
        .replace(&ip, "$IP")
        .stdout("")
        .stderr("Error: expected exactly one node, got [$IP 127.0.0.9]\nhint: run a debug container on one node: talm debug IMAGE -n IP\n")
        .status(1)
        .run();

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["debug", "alpine:3.23", "-f", "nodes/cp.yaml"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"echo ready\n").unwrap();
    // The container answered: talm is attached and forwards signals from now on.
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: a signal to the child this test started and still holds.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(
        (out.status.code(), digests(&String::from_utf8_lossy(&out.stderr))),
        (
            Some(1),
            format!("{ip}: pulled image docker.io/library/alpine@sha256:<digest>\nError: container exited with code 143\n")
        )
    );
}

/// The drop fault cuts the connection as the container starts, before it reads stdin: talm
/// says so.
#[test]
fn a_cut_stream_ends_talm_with_the_cut() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    nodes.node(&ip).set_faults(Faults {
        drop: vec!["ContainerRun".into()],
        ..Faults::default()
    });
    let o = d
        .talm(["debug", "alpine:3.23", "-f", "nodes/cp.yaml"])
        .stdin("hostname\n")
        .run();
    assert_eq!(
        (o.code, o.stdout, digests(&o.stderr)),
        (
            1,
            String::new(),
            format!("{ip}: pulled image docker.io/library/alpine@sha256:<digest>\nError: node {ip}: ContainerRun: the connection was cut during the call (the node closed it)\nhint: the node may be rebooting or the network dropped; retry once it answers again\n")
        )
    );
}
