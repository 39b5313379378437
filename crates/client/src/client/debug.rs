//! DebugService.ContainerRun (Talos v1.13 and later, one-to-one): one bidirectional stream that
//! starts a debug container from an image the node holds, carries stdin, signals and terminal
//! sizes to it, and brings back its output (stdout and stderr together), then its exit code.
//! The stream stays open as long as the container runs: no call deadline applies to it.

use anyhow::Result;
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tonic::Streaming;

use super::Client;
use talm_wire::proto::common::ContainerdInstance;
use talm_wire::proto::machine;

use machine::debug_container_run_request::Request as In;
use machine::debug_container_run_response::Resp as Out;

/// The Talos debug service.
const DEBUG: &str = "machine.DebugService";

/// The call as errors name it.
const CALL: &str = "ContainerRun";

/// Requests queued ahead of the stream, as talosctl's channel of 100.
const QUEUED: usize = 100;

/// The largest message either way, as talosctl sets it for this call (4 MiB).
const MESSAGE: usize = 4 << 20;

/// What a debug container runs, as talosctl's `debug` asks for it (the privileged profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DebugSpec {
    pub containerd: ContainerdInstance,
    /// The image's name in that containerd (talosctl passes the digest-pinned name its pull
    /// answered).
    pub image: String,
    /// The process's arguments; empty runs the image's own entrypoint.
    pub args: Vec<String>,
    /// Whether the container gets a terminal (talosctl: whether its stdin is one).
    pub tty: bool,
}

/// One message from the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DebugOutput {
    /// Bytes the container wrote (stdout and stderr share the stream).
    Data(Vec<u8>),
    /// The container ended with this code; the last message.
    Exit(i32),
}

/// A running debug container: send it input, read its output.
pub struct DebugRun {
    client: Client,
    input: Option<mpsc::Sender<machine::DebugContainerRunRequest>>,
    output: Streaming<machine::DebugContainerRunResponse>,
}

impl DebugRun {
    async fn send(&self, request: In) -> bool {
        match &self.input {
            Some(tx) => tx
                .send(machine::DebugContainerRunRequest {
                    request: Some(request),
                })
                .await
                .is_ok(),
            None => false,
        }
    }

    /// Bytes for the container's stdin; false once the input side is closed or gone.
    pub async fn stdin(&self, data: Vec<u8>) -> bool {
        self.send(In::StdinData(data)).await
    }

    /// A signal for the container's process (its number, as Linux numbers it).
    pub async fn signal(&self, number: i32) -> bool {
        self.send(In::Signal(number)).await
    }

    /// The size of the terminal the container writes to.
    pub async fn resize(&self, width: i32, height: i32) -> bool {
        self.send(In::TermResize(machine::DebugContainerTerminalResize {
            width,
            height,
        }))
        .await
    }

    /// Ends the input side (the container's stdin sees its end).
    pub fn close_stdin(&mut self) {
        self.input = None;
    }

    /// The container's next message; `None` when the node ended the stream without an exit
    /// code.
    pub async fn next(&mut self) -> Result<Option<DebugOutput>> {
        loop {
            match self.output.next().await {
                None => return Ok(None),
                Some(Err(st)) => return Err(self.client.stream_failed(CALL, DEBUG, &st).await),
                Some(Ok(m)) => match m.resp {
                    Some(Out::StdoutData(d)) => return Ok(Some(DebugOutput::Data(d))),
                    Some(Out::ExitCode(c)) => return Ok(Some(DebugOutput::Exit(c))),
                    None => continue,
                },
            }
        }
    }
}

impl Client {
    /// DebugService.ContainerRun (`node` routing): sends `spec` first and returns the running
    /// container. The node's refusal (no such image, not an admin) comes from the opening or
    /// from the first [`DebugRun::next`].
    pub async fn debug_run(&self, spec: DebugSpec) -> Result<DebugRun> {
        let (tx, rx) = mpsc::channel(QUEUED);
        let first = machine::DebugContainerRunRequest {
            request: Some(In::Spec(machine::DebugContainerRunRequestSpec {
                containerd: Some(spec.containerd),
                image_name: spec.image,
                args: spec.args,
                env: Default::default(),
                profile: machine::debug_container_run_request_spec::Profile::Privileged as i32,
                tty: spec.tty,
            })),
        };
        // The queue is empty: the spec always fits.
        let _ = tx.try_send(first);
        let mut c = machine::debug_service_client::DebugServiceClient::new(self.channel.clone())
            .max_decoding_message_size(MESSAGE)
            .max_encoding_message_size(MESSAGE);
        let request = self.stream_request(tokio_stream::wrappers::ReceiverStream::new(rx), false);
        let output = match c.container_run(request).await {
            Ok(r) => r.into_inner(),
            Err(st) => return Err(self.stream_failed(CALL, DEBUG, &st).await),
        };
        Ok(DebugRun {
            client: self.clone(),
            input: Some(tx),
            output,
        })
    }
}
