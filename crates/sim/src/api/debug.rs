//! DebugService of a simulated node: ContainerRun reads the spec the stream starts with, checks
//! it as Talos does (`machined::debug`), then runs the container's mini shell over the rest of
//! the stream: stdin bytes in, output out, signals to the process, the exit code last. Routed
//! one-to-one only; os:admin only; a node older than v1.13 has no such service.

use std::sync::Arc;

use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

use super::inspect::{allow, cri_down};
use super::{peer, Route, Stream_, Svc};
use crate::machined::debug::shell::{Start, Step};
use crate::machined::debug::{check_profile, Container};
use crate::machined::lifecycle::{has_v1_13_apis, unknown_service};
use crate::net::server::Peer;
use crate::world::{images, World};
use machine::debug_container_run_request::Request as In;
use machine::debug_container_run_response::Resp as Out;
use talm_wire::proto::machine;

const SERVICE: &str = "machine.DebugService";

type Reply = Result<machine::DebugContainerRunResponse, Status>;

/// Sends a step's output, then its exit code when it ended; false when the container is done
/// (it exited, or the client went away).
async fn send(tx: &mpsc::Sender<Reply>, step: Step) -> bool {
    let frame = |r| Ok(machine::DebugContainerRunResponse { resp: Some(r) });
    if !step.output.is_empty() && tx.send(frame(Out::StdoutData(step.output))).await.is_err() {
        return false;
    }
    match step.exit {
        Some(code) => {
            let _ = tx.send(frame(Out::ExitCode(code))).await;
            false
        }
        None => true,
    }
}

/// The container's life: its start, then each message of the client until it exits. With the
/// drop fault the connection is cut once it started (what it wrote first sent), before it reads
/// any input.
async fn run(
    Container { mut shell, start }: Container,
    mut input: Streaming<machine::DebugContainerRunRequest>,
    tx: mpsc::Sender<Reply>,
    cut: Option<Peer>,
) {
    let first = match start {
        Start::Shell => shell.begin(),
        other => shell.once(&other),
    };
    let more = send(&tx, first).await;
    if let Some(peer) = cut {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        peer.kill.cancel();
        return;
    }
    if !more {
        return;
    }
    loop {
        let step = match input.message().await {
            Ok(Some(m)) => match m.request {
                Some(In::StdinData(d)) => shell.input(&d),
                Some(In::Signal(n)) => match shell.signal(n) {
                    Some(code) => Step {
                        output: vec![],
                        exit: Some(code),
                    },
                    None => continue,
                },
                // The shell draws no screen: a new size changes nothing it writes.
                Some(In::TermResize(_)) => continue,
                Some(In::Spec(_)) | None => {
                    let _ = tx
                        .send(Err(Status::unknown(
                            "debug container: receive loop error: error processing input message: unknown request type: *machine.DebugContainerRunRequest_Spec",
                        )))
                        .await;
                    return;
                }
            },
            // The client closed its side: the container's stdin ends.
            Ok(None) => shell.end(),
            // The client went away.
            Err(_) => return,
        };
        if !send(&tx, step).await {
            return;
        }
    }
}

impl Svc {
    async fn debug_run(
        &self,
        req: Request<Streaming<machine::DebugContainerRunRequest>>,
    ) -> Result<Response<Stream_<machine::DebugContainerRunResponse>>, Status> {
        let peer = peer(&req);
        let drops = self.faults("ContainerRun", &peer).await?;
        let node = match self.route(&req, &format!("/{SERVICE}/ContainerRun"), false)? {
            Route::One(n) => self.target(&n)?,
            _ => Arc::clone(&self.node),
        };
        if !has_v1_13_apis(&node) {
            return Err(unknown_service(SERVICE));
        }
        allow(&peer.roles, &["os:admin"])?;
        let mut input = req.into_inner();
        let spec = match input.message().await {
            Ok(Some(m)) => m.request,
            Ok(None) => {
                return Err(Status::invalid_argument("failed to receive spec: EOF"));
            }
            Err(st) => {
                let text = talm_wire::api::describe(&st);
                return Err(Status::invalid_argument(format!(
                    "failed to receive spec: {text}"
                )));
            }
        };
        let Some(In::Spec(spec)) = spec else {
            return Err(Status::invalid_argument("expected debug container spec"));
        };
        check_profile(&spec)?;
        let store = images::store(&spec.containerd.unwrap_or_default())?;
        if store != images::Store::InMem && !World::of(&node).running("cri") {
            return Err(cri_down("error connecting to containerd: "));
        }
        let container = node.debug_container(store, &spec)?;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(run(container, input, tx, drops.then_some(peer)));
        Ok(Response::new(Box::pin(
            tokio_stream::wrappers::ReceiverStream::new(rx),
        )))
    }
}

#[tonic::async_trait]
impl machine::debug_service_server::DebugService for Svc {
    type ContainerRunStream = Stream_<machine::DebugContainerRunResponse>;

    async fn container_run(
        &self,
        req: Request<Streaming<machine::DebugContainerRunRequest>>,
    ) -> Result<Response<Self::ContainerRunStream>, Status> {
        self.debug_run(req).await
    }
}
