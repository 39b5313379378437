//! The node's event stream (MachineService.Events) as talosctl reads and prints it: the hello
//! event is waited for and dropped, each payload is decoded by its type URL into the SOURCE
//! and MESSAGE columns of `talosctl events`.

use anyhow::Result;
use prost::Message;
use tokio_stream::StreamExt;
use tonic::Streaming;

use super::client::Client;
use super::errors::MACHINE;
use talm_wire::proto::machine;

/// An open event stream (past the hello event).
pub struct EventStream {
    client: Client,
    stream: Streaming<machine::Event>,
}

impl EventStream {
    /// The next event, `None` when the node ended the stream.
    pub async fn next(&mut self) -> Result<Option<machine::Event>> {
        match self.stream.next().await {
            None => Ok(None),
            Some(Ok(e)) => {
                self.client.in_band("Events", e.metadata.as_ref())?;
                Ok(Some(e))
            }
            Some(Err(st)) => Err(self.client.stream_failed("Events", MACHINE, &st).await),
        }
    }
}

impl Client {
    /// Opens the node's event stream; returns once the node sent its hello event.
    pub async fn events(&self, req: machine::EventsRequest) -> Result<EventStream> {
        let mut c = self.machine();
        let req = self.stream_request(req, true);
        let stream = self
            .call("Events", MACHINE, async {
                let mut s = c.events(req).await?.into_inner();
                // The hello event: the stream is registered from here on.
                s.message().await?;
                Ok(s)
            })
            .await?;
        Ok(EventStream {
            client: self.clone(),
            stream,
        })
    }
}

/// An event as `talosctl events` shows it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Shown {
    pub node: String,
    pub id: String,
    /// The payload's type URL (`talos/runtime/machine.ServiceStateEvent`).
    pub event: String,
    pub actor_id: String,
    pub source: String,
    pub message: String,
}

fn name<E: std::fmt::Debug>(e: Option<E>) -> String {
    e.map(|e| format!("{e:?}").to_uppercase())
        .unwrap_or_default()
}

/// Decodes an event; `None` for the hello event and payloads talosctl does not know.
pub fn show(e: &machine::Event) -> Option<Shown> {
    let data = e.data.as_ref()?;
    let kind = data.type_url.strip_prefix("talos/runtime/machine.")?;
    let v = data.value.as_slice();
    let (source, message) = match kind {
        "SequenceEvent" => {
            let s = machine::SequenceEvent::decode(v).ok()?;
            let msg = match &s.error {
                Some(err) if !err.message.is_empty() => format!("error: {}", err.message),
                _ => name(machine::sequence_event::Action::try_from(s.action).ok()),
            };
            (s.sequence, msg)
        }
        "PhaseEvent" => {
            let p = machine::PhaseEvent::decode(v).ok()?;
            (
                p.phase,
                name(machine::phase_event::Action::try_from(p.action).ok()),
            )
        }
        "TaskEvent" => {
            let t = machine::TaskEvent::decode(v).ok()?;
            (
                t.task,
                name(machine::task_event::Action::try_from(t.action).ok()),
            )
        }
        "ServiceStateEvent" => {
            let s = machine::ServiceStateEvent::decode(v).ok()?;
            let action = name(machine::service_state_event::Action::try_from(s.action).ok());
            (s.service, format!("{action}: {}", s.message))
        }
        "ConfigLoadErrorEvent" => (
            "error".into(),
            machine::ConfigLoadErrorEvent::decode(v).ok()?.error,
        ),
        "ConfigValidationErrorEvent" => (
            "error".into(),
            machine::ConfigValidationErrorEvent::decode(v).ok()?.error,
        ),
        "AddressEvent" => {
            let a = machine::AddressEvent::decode(v).ok()?;
            (a.hostname, format!("ADDRESSES: {}", a.addresses.join(",")))
        }
        "MachineStatusEvent" => {
            let m = machine::MachineStatusEvent::decode(v).ok()?;
            let stage = name(machine::machine_status_event::MachineStage::try_from(m.stage).ok());
            let status = m.status.unwrap_or_default();
            let unmet: Vec<String> = status
                .unmet_conditions
                .iter()
                .map(|c| c.name.clone())
                .collect();
            (
                stage,
                format!(
                    "ready: {}, unmet conditions: [{}]",
                    status.ready,
                    unmet.join(" ")
                ),
            )
        }
        // Go prints its placeholders for a restart event's missing cells.
        "RestartEvent" => ("%!s(MISSING)".into(), "%!s(MISSING)".into()),
        _ => return None,
    };
    Some(Shown {
        node: e
            .metadata
            .as_ref()
            .map(|m| m.hostname.clone())
            .unwrap_or_default(),
        id: e.id.clone(),
        event: data.type_url.clone(),
        actor_id: e.actor_id.clone(),
        source,
        message,
    })
}

/// The rows `talosctl events` prints for one event (two lines, cells aligned under the header).
pub fn rows(s: &Shown, node: &str) -> [Vec<String>; 2] {
    let node = if s.node.is_empty() { node } else { &s.node };
    [
        vec![node.to_string(), s.id.clone(), s.event.clone()],
        vec![s.actor_id.clone(), s.source.clone(), s.message.clone()],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<M: Message>(kind: &str, m: &M) -> machine::Event {
        machine::Event {
            metadata: None,
            data: Some(prost_types::Any {
                type_url: format!("talos/runtime/machine.{kind}"),
                value: m.encode_to_vec(),
            }),
            id: "d3v1a8k2m0s1g2h3i4j0".into(),
            actor_id: String::new(),
        }
    }

    #[test]
    fn payloads_become_source_and_message() {
        let s = machine::ServiceStateEvent {
            service: "etcd".into(),
            action: machine::service_state_event::Action::Running as i32,
            message: "Health check successful".into(),
            health: None,
        };
        let shown = show(&event("ServiceStateEvent", &s)).unwrap();
        assert_eq!(
            (shown.source.as_str(), shown.message.as_str()),
            ("etcd", "RUNNING: Health check successful")
        );
        let q = machine::SequenceEvent {
            sequence: "boot".into(),
            action: machine::sequence_event::Action::Start as i32,
            error: None,
        };
        assert_eq!(show(&event("SequenceEvent", &q)).unwrap().message, "START");
        let m = machine::MachineStatusEvent {
            stage: machine::machine_status_event::MachineStage::Maintenance as i32,
            status: Some(machine::machine_status_event::MachineStatus {
                ready: false,
                unmet_conditions: vec![
                    machine::machine_status_event::machine_status::UnmetCondition {
                        name: "config".into(),
                        reason: String::new(),
                    },
                ],
            }),
        };
        let shown = show(&event("MachineStatusEvent", &m)).unwrap();
        assert_eq!(
            (shown.source.as_str(), shown.message.as_str()),
            ("MAINTENANCE", "ready: false, unmet conditions: [config]")
        );
        // The hello event is no event to show.
        assert_eq!(show(&machine::Event::default()), None);
    }
}
