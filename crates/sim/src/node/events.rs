//! A simulated node's event stream (MachineService.Events): a ring of the last 1000 events
//! (at most 990 replayable, as Talos keeps a safety gap), lost at reboot, with xid event IDs
//! that sort by time. Boots, sequences started by API calls (with their actor IDs) and service
//! state changes are published; followers are woken when one is added.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

use prost::Message;
use tokio::sync::watch;

use talm_wire::proto::common;
use talm_wire::proto::machine::{
    self, machine_status_event, sequence_event, service_state_event, MachineStatusEvent,
    SequenceEvent, ServiceStateEvent,
};

/// Events kept, and how many of them stay out of reach of replays.
const CAPACITY: usize = 1000;
const GAP: usize = 10;

/// One published event (its payload already packed).
#[derive(Debug, Clone)]
pub struct Published {
    pub id: String,
    pub actor_id: String,
    pub data: prost_types::Any,
}

#[derive(Default)]
struct Ring {
    /// Events since boot, oldest first (at most CAPACITY).
    events: VecDeque<Published>,
    /// How many were ever published this boot: a reader's position.
    total: u64,
}

pub struct Events {
    inner: Mutex<Ring>,
    /// Each checked service's health this boot: healthy or not, and since when.
    health: Mutex<HashMap<String, (bool, prost_types::Timestamp)>>,
    /// Bumped on every new event.
    pub grew: watch::Sender<u64>,
}

impl Default for Events {
    fn default() -> Events {
        Events {
            inner: Mutex::new(Ring::default()),
            health: Mutex::new(HashMap::new()),
            grew: watch::channel(0).0,
        }
    }
}

/// Go's zero `time.Time` in Unix seconds: the last change of a health never checked, as
/// Talos's `timestamppb.New(status.LastChange)` sends it.
pub const GO_ZERO_TIME: i64 = -62_135_596_800;

fn now() -> prost_types::Timestamp {
    let t = time::OffsetDateTime::now_utc();
    prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        nanos: t.nanosecond() as i32,
    }
}

/// A new xid: 4-byte big-endian Unix seconds, 3-byte machine id, 2-byte pid, 3-byte counter,
/// as 20 lower-case base32hex characters.
pub fn xid(machine: [u8; 3]) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0x5a_3c_11);
    let secs = time::OffsetDateTime::now_utc().unix_timestamp() as u32;
    let pid = std::process::id() as u16;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut b = [0u8; 12];
    b[..4].copy_from_slice(&secs.to_be_bytes());
    b[4..7].copy_from_slice(&machine);
    b[7..9].copy_from_slice(&pid.to_be_bytes());
    b[9..].copy_from_slice(&n.to_be_bytes()[1..]);
    encode(&b)
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghijklmnopqrstuv";

fn encode(b: &[u8; 12]) -> String {
    let mut bits: u128 = 0;
    for x in b {
        bits = (bits << 8) | u128::from(*x);
    }
    // 96 bits, padded to 100 at the low end: 20 characters of 5 bits.
    bits <<= 4;
    (0..20)
        .rev()
        .map(|i| ALPHABET[((bits >> (i * 5)) & 31) as usize] as char)
        .collect()
}

/// The Unix seconds of an xid, or why it is not one.
pub fn xid_seconds(id: &str) -> Result<u32, &'static str> {
    if id.len() != 20 {
        return Err("xid: invalid ID");
    }
    let mut bits: u128 = 0;
    for c in id.bytes() {
        let v = ALPHABET
            .iter()
            .position(|a| *a == c)
            .ok_or("xid: invalid ID")?;
        bits = (bits << 5) | v as u128;
    }
    bits >>= 4;
    Ok((bits >> 64) as u32)
}

fn any<M: Message>(name: &str, m: &M) -> prost_types::Any {
    prost_types::Any {
        type_url: format!("talos/runtime/machine.{name}"),
        value: m.encode_to_vec(),
    }
}

/// A service's state as its event action.
fn service_action(state: &str) -> service_state_event::Action {
    use service_state_event::Action::*;
    match state {
        "Running" => Running,
        "Preparing" => Preparing,
        "Waiting" => Waiting,
        "Stopping" => Stopping,
        "Finished" => Finished,
        "Failed" => Failed,
        "Skipped" => Skipped,
        "Starting" => Starting,
        _ => Initialized,
    }
}

impl Events {
    fn lock(&self) -> MutexGuard<'_, Ring> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn publish(&self, machine: [u8; 3], actor_id: &str, data: prost_types::Any) {
        let mut r = self.lock();
        r.events.push_back(Published {
            id: xid(machine),
            actor_id: actor_id.to_string(),
            data,
        });
        if r.events.len() > CAPACITY {
            r.events.pop_front();
        }
        r.total += 1;
        drop(r);
        self.grew.send_modify(|g| *g += 1);
    }

    /// A sequence starting or stopping, on behalf of `actor_id` ("" for the node's own).
    pub fn sequence(&self, m: [u8; 3], name: &str, start: bool, actor_id: &str) {
        let action = if start {
            sequence_event::Action::Start
        } else {
            sequence_event::Action::Stop
        };
        let e = SequenceEvent {
            sequence: name.into(),
            action: action as i32,
            error: None,
        };
        self.publish(m, actor_id, any("SequenceEvent", &e));
    }

    /// A task of a sequence starting or stopping, on behalf of `actor_id`.
    pub fn task(&self, m: [u8; 3], name: &str, start: bool, actor_id: &str) {
        let action = if start {
            machine::task_event::Action::Start
        } else {
            machine::task_event::Action::Stop
        };
        let e = machine::TaskEvent {
            task: name.into(),
            action: action as i32,
        };
        self.publish(m, actor_id, any("TaskEvent", &e));
    }

    /// A phase of a sequence starting or stopping, on behalf of `actor_id`.
    pub fn phase(&self, m: [u8; 3], name: &str, start: bool, actor_id: &str) {
        let action = if start {
            machine::phase_event::Action::Start
        } else {
            machine::phase_event::Action::Stop
        };
        let e = machine::PhaseEvent {
            phase: name.into(),
            action: action as i32,
        };
        self.publish(m, actor_id, any("PhaseEvent", &e));
    }

    /// A service changing state, with its health then: unknown (and Go's zero time) until it
    /// first runs, then healthy while it runs, with when that last changed (Talos's health
    /// state moves `LastChange` only when the health flips).
    pub fn service(&self, m: [u8; 3], service: &str, state: &str, message: &str, actor: &str) {
        let healthy = state == "Running";
        let mut health = self.health.lock().unwrap_or_else(|e| e.into_inner());
        let known = match health.get_mut(service) {
            Some(h) if h.0 != healthy => {
                *h = (healthy, now());
                Some(h.1)
            }
            Some(h) => Some(h.1),
            None if healthy => Some(health.entry(service.into()).or_insert((true, now())).1),
            None => None,
        };
        drop(health);
        let e = ServiceStateEvent {
            service: service.into(),
            action: service_action(state) as i32,
            message: message.into(),
            health: Some(machine::EventServiceHealth {
                unknown: known.is_none(),
                healthy,
                last_message: String::new(),
                last_change: Some(known.unwrap_or(prost_types::Timestamp {
                    seconds: GO_ZERO_TIME,
                    nanos: 0,
                })),
            }),
        };
        self.publish(m, actor, any("ServiceStateEvent", &e));
    }

    /// The machine's stage and readiness.
    pub fn status(&self, m: [u8; 3], maintenance: bool) {
        use machine_status_event::{machine_status::UnmetCondition, MachineStage, MachineStatus};
        let (stage, status) = if maintenance {
            (
                MachineStage::Maintenance,
                MachineStatus {
                    ready: false,
                    unmet_conditions: vec![UnmetCondition {
                        name: "config".into(),
                        reason: "machine config is not loaded".into(),
                    }],
                },
            )
        } else {
            (
                MachineStage::Running,
                MachineStatus {
                    ready: true,
                    unmet_conditions: vec![],
                },
            )
        };
        let e = MachineStatusEvent {
            stage: stage as i32,
            status: Some(status),
        };
        self.publish(m, "", any("MachineStatusEvent", &e));
    }

    /// A boot: the ring starts over with the boot sequence and each service coming up.
    pub fn boot(&self, m: [u8; 3], services: &[(&str, &str)], maintenance: bool) {
        *self.lock() = Ring::default();
        self.health
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.sequence(m, "boot", true, "");
        for (svc, state) in services {
            let msg = if *state == "Running" {
                "Health check successful"
            } else {
                "Waiting for service to start"
            };
            self.service(m, svc, state, msg, "");
        }
        self.sequence(m, "boot", false, "");
        self.status(m, maintenance);
    }

    /// What a reader starting now gets first, per the request, and the position after it.
    pub fn start(&self, req: &machine::EventsRequest) -> Result<(Vec<Published>, u64), String> {
        let set = [
            req.tail_events != 0,
            !req.tail_id.is_empty(),
            req.tail_seconds != 0,
        ];
        if set.iter().filter(|s| **s).count() > 1 {
            let text = if set[0] {
                "WithTailEvents can't be specified at the same time with WithTailID or WithTailDuration"
            } else {
                "WithTailID can't be specified at the same time with WithTailDuration"
            };
            return Err(text.into());
        }
        let r = self.lock();
        let reachable = r.events.len().min(CAPACITY - GAP);
        let recent = r.events.iter().skip(r.events.len() - reachable);
        let past: Vec<Published> = if req.tail_events != 0 {
            let n = if req.tail_events < 0 {
                reachable
            } else {
                (req.tail_events as usize).min(reachable)
            };
            recent.skip(reachable - n).cloned().collect()
        } else if !req.tail_id.is_empty() {
            xid_seconds(&req.tail_id).map_err(|e| format!("error parsing tail_id: {e}"))?;
            recent.filter(|e| e.id > req.tail_id).cloned().collect()
        } else if req.tail_seconds > 0 {
            let since =
                time::OffsetDateTime::now_utc().unix_timestamp() - i64::from(req.tail_seconds);
            recent
                .filter(|e| xid_seconds(&e.id).is_ok_and(|s| i64::from(s) > since))
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        Ok((past, r.total))
    }

    /// Events published after position `from`, and the new position (`None` when a reboot
    /// emptied the ring under the reader, which then ends).
    pub fn since(&self, from: u64) -> Option<(Vec<Published>, u64)> {
        let r = self.lock();
        if from > r.total {
            return None;
        }
        let new = (r.total - from) as usize;
        let keep = new.min(r.events.len());
        Some((
            r.events
                .iter()
                .skip(r.events.len() - keep)
                .cloned()
                .collect(),
            r.total,
        ))
    }

    /// The hello event every stream starts with.
    pub fn hello(m: [u8; 3], actor_id: &str) -> Published {
        Published {
            id: xid(m),
            actor_id: actor_id.into(),
            data: prost_types::Any::default(),
        }
    }
}

impl Published {
    /// The wire form, from `hostname`.
    pub fn to_wire(&self, hostname: &str) -> machine::Event {
        machine::Event {
            metadata: Some(common::Metadata {
                hostname: hostname.into(),
                ..Default::default()
            }),
            data: Some(self.data.clone()),
            id: self.id.clone(),
            actor_id: self.actor_id.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xids_sort_by_time_and_decode() {
        let a = xid([1, 2, 3]);
        let b = xid([1, 2, 3]);
        assert_eq!(a.len(), 20);
        assert!(a < b, "{a} {b}");
        assert!(a.bytes().all(|c| ALPHABET.contains(&c)));
        let now = time::OffsetDateTime::now_utc().unix_timestamp() as u32;
        assert!(xid_seconds(&a).unwrap().abs_diff(now) <= 1);
        assert_eq!(xid_seconds("nope"), Err("xid: invalid ID"));
    }

    /// The health each service event carries, by service, in order.
    fn healths(e: &Events, service: &str) -> Vec<machine::EventServiceHealth> {
        let (past, _) = e
            .start(&machine::EventsRequest {
                tail_events: -1,
                ..Default::default()
            })
            .unwrap();
        past.iter()
            .filter(|p| p.data.type_url.ends_with("ServiceStateEvent"))
            .map(|p| ServiceStateEvent::decode(p.data.value.as_slice()).unwrap())
            .filter(|s| s.service == service)
            .map(|s| s.health.unwrap())
            .collect()
    }

    #[test]
    fn service_health_carries_when_it_last_changed() {
        let e = Events::default();
        let before = time::OffsetDateTime::now_utc().unix_timestamp();
        e.boot([0; 3], &[("apid", "Running"), ("etcd", "Preparing")], false);
        // A service not yet checked: Talos's zero time (Go's time.Time{}).
        let etcd = &healths(&e, "etcd")[0];
        assert!(etcd.unknown);
        assert_eq!(etcd.last_change.unwrap().seconds, GO_ZERO_TIME);
        let apid = healths(&e, "apid")[0].last_change.unwrap();
        assert!(apid.seconds >= before, "{apid:?}");
        // Another event with the same health keeps the time; a change of health moves it.
        std::thread::sleep(std::time::Duration::from_millis(5));
        e.service([0; 3], "apid", "Running", "Health check successful", "");
        e.service(
            [0; 3],
            "apid",
            "Finished",
            "Service finished successfully",
            "",
        );
        let h = healths(&e, "apid");
        assert_eq!(h[1].last_change, Some(apid));
        assert!(!h[2].healthy);
        let at = |t: prost_types::Timestamp| (t.seconds, t.nanos);
        assert!(at(h[2].last_change.unwrap()) > at(apid), "{h:?}");
    }

    #[test]
    fn tails_and_positions() {
        let e = Events::default();
        e.boot([0; 3], &[("apid", "Running"), ("etcd", "Preparing")], false);
        let all = |tail| machine::EventsRequest {
            tail_events: tail,
            ..Default::default()
        };
        let (past, pos) = e.start(&all(-1)).unwrap();
        assert_eq!((past.len(), pos), (5, 5));
        assert_eq!(e.start(&all(2)).unwrap().0.len(), 2);
        assert_eq!(e.start(&all(0)).unwrap().0.len(), 0);
        e.sequence([0; 3], "reboot", true, "actor");
        let (new, pos) = e.since(5).unwrap();
        assert_eq!((new.len(), pos, new[0].actor_id.as_str()), (1, 6, "actor"));
        let both = machine::EventsRequest {
            tail_events: 1,
            tail_id: "x".into(),
            ..Default::default()
        };
        assert!(e
            .start(&both)
            .unwrap_err()
            .starts_with("WithTailEvents can't"));
        let bad = machine::EventsRequest {
            tail_id: "x".into(),
            ..Default::default()
        };
        assert_eq!(
            e.start(&bad).unwrap_err(),
            "error parsing tail_id: xid: invalid ID"
        );
    }
}
