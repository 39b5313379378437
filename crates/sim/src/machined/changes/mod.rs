//! What the API changes on a simulated node and Talos keeps: services started and stopped
//! (until the next boot), META tags, wiped block devices, pulled images, the previous Talos
//! version (rollback's other boot entry) and the power switch (shutdown). The calls that make
//! these changes live in the submodules; the views (ServiceList, ImageService.List, COSI) read
//! them through the overlays here.

pub mod disks;
pub mod images;
pub mod meta;
pub mod ops;

use std::collections::{BTreeMap, BTreeSet};

use crate::world::images::Store;
use talm_wire::proto::machine::{ServiceEvent, ServiceHealth, ServiceInfo};

/// A service event recorded by an API change.
#[derive(Debug, Clone)]
pub struct Event {
    pub msg: String,
    pub state: &'static str,
    /// Unix seconds.
    pub at: f64,
}

/// A service whose state an API call changed in this boot.
#[derive(Debug, Clone)]
pub struct Service {
    pub state: &'static str,
    pub events: Vec<Event>,
}

/// The changes, as part of the node's state.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    /// Services changed this boot, by ID.
    pub services: BTreeMap<String, Service>,
    /// META tags by key (persisted on the META partition).
    pub meta: BTreeMap<u8, Vec<u8>>,
    /// Block devices whose signatures (FAST) or contents (ZEROES) were wiped.
    pub wiped: BTreeSet<String>,
    /// Partitions dropped from their disk's GPT.
    pub dropped: BTreeSet<String>,
    /// Images pulled through the API: the store and the reference as containerd names it.
    pub pulled: Vec<(Store, String)>,
    /// Image records removed through the API: the store and the name.
    pub removed: Vec<(Store, String)>,
    /// The Talos version of the other boot entry (before the last upgrade).
    pub previous_version: Option<String>,
    /// Powered off by a shutdown: the node stays down.
    pub powered_off: bool,
}

/// Service events a service keeps (Talos's ring).
const EVENTS_KEPT: usize = 64;

impl Changes {
    /// What a boot forgets: service changes live in machined's memory.
    pub fn boot(&mut self) {
        self.services.clear();
    }

    /// What a reset wipes: the whole system disk takes META and the boot entries with it; a
    /// wipe of labels takes META only when it is named.
    pub fn reset(&mut self, req: Option<&talm_wire::proto::machine::ResetRequest>) {
        let labels: Vec<&str> = req
            .map(|r| {
                r.system_partitions_to_wipe
                    .iter()
                    .map(|p| p.label.as_str())
                    .collect()
            })
            .unwrap_or_default();
        if labels.is_empty() || labels.contains(&"META") {
            self.meta.clear();
        }
        if labels.is_empty() {
            self.previous_version = None;
        }
        self.services.clear();
    }
}

fn ts(secs: f64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: secs.floor() as i64,
        nanos: ((secs.fract() * 1e9) as i32).clamp(0, 999_999_999),
    }
}

/// The extension services of a configured node (`ext-<name>`), as ServiceList first shows
/// them: started after the Kubernetes stack.
pub fn extension_services(ext: &[String], boot: f64) -> Vec<ServiceInfo> {
    ext.iter()
        .enumerate()
        .map(|(i, name)| {
            let id = format!("ext-{name}");
            let at = boot + 7.0 + i as f64 * 0.2;
            let events = vec![
                ServiceEvent {
                    msg: "Running pre stage".into(),
                    state: "Preparing".into(),
                    ts: Some(ts(at)),
                },
                ServiceEvent {
                    msg: "Creating service runner".into(),
                    state: "Preparing".into(),
                    ts: Some(ts(at + 0.05)),
                },
                ServiceEvent {
                    msg: format!("Started task {id} (PID {}) for container {id}", 3100 + i),
                    state: "Running".into(),
                    ts: Some(ts(at + 0.3)),
                },
            ];
            ServiceInfo {
                id,
                state: "Running".into(),
                events: Some(talm_wire::proto::machine::ServiceEvents { events }),
                health: Some(ServiceHealth {
                    unknown: true,
                    ..Default::default()
                }),
            }
        })
        .collect()
}

/// The ServiceList of a node with this boot's API changes laid over it: the state replaced,
/// the events appended (the last 64 kept), the health following the state.
pub fn overlay(mut list: Vec<ServiceInfo>, changes: &Changes) -> Vec<ServiceInfo> {
    for s in &mut list {
        let Some(c) = changes.services.get(&s.id) else {
            continue;
        };
        s.state = c.state.to_string();
        let events = s.events.get_or_insert_with(Default::default);
        events.events.extend(c.events.iter().map(|e| ServiceEvent {
            msg: e.msg.clone(),
            state: e.state.to_string(),
            ts: Some(ts(e.at)),
        }));
        let extra = events.events.len().saturating_sub(EVENTS_KEPT);
        events.events.drain(..extra);
        let health = s.health.get_or_insert_with(Default::default);
        if !health.unknown {
            let last = c.events.last().map(|e| ts(e.at));
            health.healthy = c.state == "Running";
            health.last_message = if health.healthy {
                String::new()
            } else {
                "service not running".into()
            };
            health.last_change = last;
        }
    }
    list.sort_by(|a, b| a.id.cmp(&b.id));
    list
}
