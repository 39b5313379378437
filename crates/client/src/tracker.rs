//! talosctl's action tracker (`--wait`): the boot ID is read, the node's events are watched from
//! before the action is called, the action's own events are reported until the node goes away,
//! then the new boot's history is replayed until the machine is RUNNING and ready, and finally
//! the boot ID must have changed. Progress lines go to stderr as talosctl prints them off a
//! terminal: `"<node>": <message>`.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use anyhow::Result;
use prost::Message;

use super::client::Client;
use super::errors::{self, Kind};
use talm_base::error::hinted;
use talm_wire::proto::machine;

/// Where the tracker's progress goes: one line per update.
pub trait Report {
    fn update(&mut self, node: &str, message: &str);
}

/// talosctl's non-terminal reporter: `"<node>": <message>` on stderr (the node quoted as Go's `%q`).
pub struct Plain;

impl Report for Plain {
    fn update(&mut self, node: &str, message: &str) {
        talm_base::output::err(&format!("{}: {message}", quoted(node)));
    }
}

/// Go's `%q` of a node name (addresses and host names need no escapes beyond these).
pub fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// What one event means to the tracker.
#[derive(Debug, PartialEq)]
enum Seen {
    /// The completion predicate of a reboot or upgrade: RUNNING and ready.
    Done,
    /// The watch must be re-opened (a `reboot` sequence, the `stopAllServices` task).
    Reopen(String),
    /// A progress line.
    Progress(String),
    Nothing,
}

/// What the tracker waits for, as talosctl's predicates and post checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Goal {
    /// Reboot, upgrade: the machine RUNNING and ready, then a new boot ID.
    Rebooted,
    /// Shutdown, reset: any `stopAllServices` task; after a reset with `reboot`, the node
    /// answering in maintenance mode or on a new boot ID.
    ServicesStopped { then_back: bool },
}

fn action_name<E: TryFrom<i32>>(v: i32, name: impl Fn(&E) -> &'static str) -> String {
    E::try_from(v)
        .map(|e| name(&e))
        .unwrap_or("UNKNOWN")
        .to_string()
}

/// Reads an event as talosctl's tracker does: `goal`'s predicate first, then the progress line.
fn seen(e: &machine::Event, goal: Goal) -> Seen {
    let Some(data) = &e.data else {
        return Seen::Nothing;
    };
    let v = data.value.as_slice();
    match data.type_url.strip_prefix("talos/runtime/machine.") {
        Some("MachineStatusEvent") => {
            use machine::machine_status_event::MachineStage;
            let Ok(m) = machine::MachineStatusEvent::decode(v) else {
                return Seen::Nothing;
            };
            let status = m.status.unwrap_or_default();
            if goal == Goal::Rebooted && m.stage == MachineStage::Running as i32 && status.ready {
                return Seen::Done;
            }
            let unmet: Vec<String> = status
                .unmet_conditions
                .iter()
                .map(|c| format!("{{{} {}}}", c.name, c.reason))
                .collect();
            Seen::Progress(format!(
                "stage: {} ready: {} unmetCond: [{}]",
                action_name(m.stage, MachineStage::as_str_name),
                status.ready,
                unmet.join(" ")
            ))
        }
        Some("SequenceEvent") => {
            let Ok(s) = machine::SequenceEvent::decode(v) else {
                return Seen::Nothing;
            };
            let mut text = format!(
                "sequence: {} action: {}",
                s.sequence,
                action_name(s.action, machine::sequence_event::Action::as_str_name)
            );
            if let Some(err) = &s.error {
                // talosctl prints the two values swapped, as its source does.
                text.push_str(&format!(
                    " error: [code: {} message: {}]",
                    err.message, err.code
                ));
            }
            if s.sequence == "reboot" {
                return Seen::Reopen(text);
            }
            Seen::Progress(text)
        }
        Some("PhaseEvent") => match machine::PhaseEvent::decode(v) {
            Ok(p) => Seen::Progress(format!(
                "phase: {} action: {}",
                p.phase,
                action_name(p.action, machine::phase_event::Action::as_str_name)
            )),
            Err(_) => Seen::Nothing,
        },
        Some("TaskEvent") => match machine::TaskEvent::decode(v) {
            Ok(t) => {
                if t.task == "stopAllServices" && matches!(goal, Goal::ServicesStopped { .. }) {
                    return Seen::Done;
                }
                let text = format!(
                    "task: {} action: {}",
                    t.task,
                    action_name(t.action, machine::task_event::Action::as_str_name)
                );
                if t.task == "stopAllServices" {
                    Seen::Reopen(text)
                } else {
                    Seen::Progress(text)
                }
            }
            Err(_) => Seen::Nothing,
        },
        Some("ServiceStateEvent") => match machine::ServiceStateEvent::decode(v) {
            Ok(e) => Seen::Progress(format!(
                "service: {} message: {} healthy: {}",
                e.service,
                e.message,
                e.health.is_some_and(|h| h.healthy)
            )),
            Err(_) => Seen::Nothing,
        },
        _ => Seen::Nothing,
    }
}

const BOOT_ID: &str = "/proc/sys/kernel/random/boot_id";

/// The node's boot ID; `None` when the client may not read it (an operator certificate).
async fn boot_id(c: &Client) -> Result<Option<String>> {
    let mut bytes = Vec::new();
    match c
        .read(BOOT_ID, |chunk| {
            bytes.extend_from_slice(chunk);
            Ok(())
        })
        .await
    {
        Ok(()) => Ok(Some(String::from_utf8_lossy(&bytes).trim().to_string())),
        Err(e) if errors::kind(&e) == Some(Kind::Denied) => Ok(None),
        Err(e) => Err(e),
    }
}

fn events_from(tail: i32) -> machine::EventsRequest {
    machine::EventsRequest {
        tail_events: tail,
        ..Default::default()
    }
}

/// Whether the node answers in maintenance mode (a reset with `reboot` is done then).
pub type Probe<'a> = &'a (dyn Fn() -> Pin<Box<dyn Future<Output = bool> + Send + 'a>> + Sync);

/// Runs `action` on the node (it returns the actor ID) and waits, within `limit`, for `goal`:
/// the node's events are watched from before the action, the action's own are reported, and a
/// watch the node ends (it went down) is reopened with the new boot's history. `dial` opens a
/// fresh connection; `maintenance` answers whether a reset node is back in maintenance mode.
#[allow(clippy::too_many_arguments)]
pub async fn track<D, DF, A, AF>(
    node: &str,
    dial: D,
    action: A,
    goal: Goal,
    maintenance: Option<Probe<'_>>,
    limit: Duration,
    report: &mut dyn Report,
) -> Result<String>
where
    D: Fn() -> DF,
    DF: Future<Output = Result<Client>>,
    A: FnOnce(Client) -> AF,
    AF: Future<Output = Result<String>>,
{
    let deadline = Instant::now().checked_add(limit);
    let left = || deadline.map(|d| d.saturating_duration_since(Instant::now()));
    let gave_up = |what: &str| {
        hinted(
            format!(
                "node {node}: {what} within {}",
                talm_base::duration::text(limit)
            ),
            "look at the node's console or `talm events`; raise --timeout for slow machines",
        )
    };
    let not_back = match goal {
        Goal::Rebooted => "the node did not come back",
        Goal::ServicesStopped { .. } => "the node did not stop its services",
    };
    let c = dial().await?;
    let before = match goal {
        Goal::Rebooted | Goal::ServicesStopped { then_back: true } => boot_id(&c).await?,
        Goal::ServicesStopped { then_back: false } => None,
    };
    let mut events = c.events(events_from(0)).await?;
    report.update(node, "waiting for actor ID");
    let actor = action(c).await?;
    report.update(node, &format!("actor ID: {actor}"));
    let mut replayed = false;
    'watch: loop {
        loop {
            let next = match left() {
                None => Ok(events.next().await),
                Some(l) if l.is_zero() => return Err(gave_up(not_back)),
                Some(l) => tokio::time::timeout(l, events.next()).await,
            };
            let event = match next {
                Err(_) => return Err(gave_up(not_back)),
                Ok(Ok(Some(e))) => e,
                // The node went down: its stream ended or broke.
                Ok(Ok(None)) | Ok(Err(_)) => break,
            };
            let ours = event.actor_id == actor || (replayed && event.actor_id.is_empty());
            match seen(&event, goal) {
                Seen::Done => {
                    report.update(node, "events check condition met");
                    break 'watch;
                }
                Seen::Reopen(text) if ours => {
                    report.update(node, &text);
                    break;
                }
                Seen::Progress(text) if ours => report.update(node, &text),
                _ => {}
            }
        }
        report.update(node, "unavailable, retrying...");
        talm_base::progress::stage(talm_base::progress::Stage::Reboot);
        events = loop {
            if left().is_some_and(|l| l.is_zero()) {
                return Err(gave_up(not_back));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            let reopened = async { dial().await?.events(events_from(-1)).await };
            if let Ok(s) = reopened.await {
                break s;
            }
        };
        replayed = true;
        talm_base::progress::stage(talm_base::progress::Stage::Ready);
    }
    let Some(before) = before else {
        return Ok(actor);
    };
    // talosctl's post check: retried while the node is down (reported) or on the same boot.
    loop {
        let back = match maintenance {
            Some(probe) => probe().await,
            None => false,
        };
        let now = if back {
            Ok(None)
        } else {
            match dial().await {
                Ok(c) => boot_id(&c).await.map(|id| id.filter(|id| *id != before)),
                Err(e) => Err(e),
            }
        };
        match now {
            Ok(Some(_)) => {
                report.update(node, "post check passed");
                return Ok(actor);
            }
            Ok(None) if back => {
                report.update(node, "post check passed");
                return Ok(actor);
            }
            Ok(None) => {}
            Err(_) => report.update(node, "unavailable, retrying..."),
        }
        if left().is_some_and(|l| l.is_zero()) {
            return Err(gave_up("the node did not reboot"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<M: Message>(kind: &str, m: &M, actor: &str) -> machine::Event {
        machine::Event {
            data: Some(prost_types::Any {
                type_url: format!("talos/runtime/machine.{kind}"),
                value: m.encode_to_vec(),
            }),
            actor_id: actor.into(),
            ..Default::default()
        }
    }

    #[test]
    fn events_read_as_talosctl_tracks_them() {
        use machine::machine_status_event::{MachineStage, MachineStatus};
        let running = |ready| MachineStatusEvent {
            stage: MachineStage::Running as i32,
            status: Some(MachineStatus {
                ready,
                unmet_conditions: vec![],
            }),
        };
        use machine::MachineStatusEvent;
        assert_eq!(
            seen(
                &event("MachineStatusEvent", &running(true), ""),
                Goal::Rebooted
            ),
            Seen::Done
        );
        assert_eq!(
            seen(
                &event("MachineStatusEvent", &running(false), ""),
                Goal::Rebooted
            ),
            Seen::Progress("stage: RUNNING ready: false unmetCond: []".into())
        );
        let seq = |name: &str| machine::SequenceEvent {
            sequence: name.into(),
            action: machine::sequence_event::Action::Start as i32,
            error: None,
        };
        assert_eq!(
            seen(
                &event("SequenceEvent", &seq("upgrade"), "a"),
                Goal::Rebooted
            ),
            Seen::Progress("sequence: upgrade action: START".into())
        );
        assert!(matches!(
            seen(&event("SequenceEvent", &seq("reboot"), "a"), Goal::Rebooted),
            Seen::Reopen(_)
        ));
        // Shutdown and reset end at any stopAllServices task; a reboot re-watches there.
        let stop = machine::TaskEvent {
            task: "stopAllServices".into(),
            action: machine::task_event::Action::Start as i32,
        };
        let stopped = Goal::ServicesStopped { then_back: false };
        assert_eq!(
            seen(&event("TaskEvent", &stop, "other"), stopped),
            Seen::Done
        );
        assert_eq!(
            seen(&event("TaskEvent", &stop, "a"), Goal::Rebooted),
            Seen::Reopen("task: stopAllServices action: START".into())
        );
        assert_eq!(
            seen(&event("MachineStatusEvent", &running(true), ""), stopped),
            Seen::Progress("stage: RUNNING ready: true unmetCond: []".into())
        );
        assert_eq!(quoted("10.0.0.1"), "\"10.0.0.1\"");
    }
}
