//! A simulated node's services as ServiceList reports them: the states of `node::services`,
//! each with the events Talos records on the way there (timestamped from the boot, the PID of
//! the process the workload runs for it) and its health (machined has no health check).

use super::workload::Workload;
use super::World;
use talm_wire::proto::machine::{ServiceEvent, ServiceEvents, ServiceHealth, ServiceInfo};

fn ts(secs: f64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: secs.floor() as i64,
        nanos: ((secs.fract() * 1e9) as i32).clamp(0, 999_999_999),
    }
}

/// How Talos starts a service: as a goroutine of machined, a process, or a container.
enum Runner {
    Goroutine,
    Process(&'static str),
    Container,
}

fn runner(id: &str) -> Runner {
    match id {
        "machined" => Runner::Goroutine,
        "udevd" => Runner::Process("systemd-udevd"),
        "containerd" | "cri" => Runner::Process("containerd"),
        _ => Runner::Container,
    }
}

/// Seconds after boot at which service `id` starts preparing.
fn start_of(id: &str) -> f64 {
    match id {
        "machined" => 0.4,
        "udevd" => 1.2,
        "containerd" => 1.8,
        "apid" => 2.6,
        "trustd" => 3.1,
        "cri" => 3.9,
        "etcd" => 5.2,
        "kubelet" => 5.9,
        _ => 6.5,
    }
}

/// The ServiceList entries of the node, sorted by ID.
pub fn list(w: &World, load: &Workload) -> Vec<ServiceInfo> {
    let mut out: Vec<ServiceInfo> = w
        .services
        .iter()
        .map(|(id, state)| info(w, load, id, state))
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn info(w: &World, load: &Workload, id: &str, state: &str) -> ServiceInfo {
    let at = w.boot + start_of(id);
    let mut events = vec![ServiceEvent {
        msg: "Running pre stage".into(),
        state: "Preparing".into(),
        ts: Some(ts(at)),
    }];
    let mut last = at;
    if state == "Running" {
        let started = match runner(id) {
            Runner::Goroutine => "Service started as goroutine".to_string(),
            Runner::Process(comm) => {
                // The second containerd (cri) is the one with the CRI config.
                let cri = id == "cri";
                let p = load.procs.iter().find(|p| {
                    p.comm == comm && p.args.iter().any(|a| a.contains("/etc/cri/")) == cri
                });
                match p {
                    Some(p) => {
                        let args: Vec<String> = p.args.iter().map(|a| format!("{a:?}")).collect();
                        format!(
                            "Process Process([{}]) started with PID {}",
                            args.join(" "),
                            p.pid
                        )
                    }
                    None => format!("Process {id} started"),
                }
            }
            Runner::Container => match load.system.iter().find(|c| c.id == id) {
                Some(c) => format!("Started task {id} (PID {}) for container {id}", c.pid),
                None => format!("Started task {id} for container {id}"),
            },
        };
        events.push(ServiceEvent {
            msg: "Creating service runner".into(),
            state: "Preparing".into(),
            ts: Some(ts(at + 0.05)),
        });
        last = at + 0.3;
        events.push(ServiceEvent {
            msg: started,
            state: "Running".into(),
            ts: Some(ts(last)),
        });
    } else if state == "Failed" || state == "Finished" {
        // etcd after a failed start (a recovery that did not restore) or after `etcd leave`.
        last = at + 0.3;
        events.push(ServiceEvent {
            msg: "Creating service runner".into(),
            state: "Preparing".into(),
            ts: Some(ts(at + 0.05)),
        });
        let msg = if state == "Finished" {
            "Service finished successfully".to_string()
        } else {
            format!("Failed to run pre stage: {}", w.etcd_failure)
        };
        events.push(ServiceEvent {
            msg,
            state: state.into(),
            ts: Some(ts(last)),
        });
    } else if id == "etcd" {
        last = at + 0.2;
        events.push(ServiceEvent {
            msg: "Waiting for etcd to be bootstrapped or joined".into(),
            state: "Preparing".into(),
            ts: Some(ts(last)),
        });
    }
    let checked = state == "Running" && id != "machined";
    let failing = checked && w.unhealthy.iter().any(|s| s == id);
    let why = if failing {
        crate::net::unhealthy::message(id)
    } else {
        String::new()
    };
    if checked {
        last += 1.5;
        events.push(ServiceEvent {
            msg: if failing {
                format!("Health check failed: {why}")
            } else {
                "Health check successful".into()
            },
            state: "Running".into(),
            ts: Some(ts(last)),
        });
    }
    ServiceInfo {
        id: id.to_string(),
        state: state.to_string(),
        events: Some(ServiceEvents { events }),
        health: Some(ServiceHealth {
            unknown: !checked,
            healthy: checked && !failing,
            last_message: why,
            // Go's zero time until the health is first checked, as Talos sends it.
            last_change: Some(if checked {
                ts(last)
            } else {
                prost_types::Timestamp {
                    seconds: crate::node::events::GO_ZERO_TIME,
                    nanos: 0,
                }
            }),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;

    #[test]
    fn services_carry_events_and_health() {
        let w = world(Role::ControlPlane, false, 600.0);
        let load = Workload::of(&w);
        let list = list(&w, &load);
        let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "apid",
                "containerd",
                "cri",
                "etcd",
                "kubelet",
                "machined",
                "trustd",
                "udevd"
            ]
        );
        let apid = &list[0];
        let ev = &apid.events.as_ref().unwrap().events;
        let pid = load.system.iter().find(|c| c.id == "apid").unwrap().pid;
        assert_eq!(
            ev[2].msg,
            format!("Started task apid (PID {pid}) for container apid")
        );
        assert_eq!(ev.last().unwrap().msg, "Health check successful");
        assert!(apid.health.as_ref().unwrap().healthy);
        let machined = list.iter().find(|s| s.id == "machined").unwrap();
        assert!(machined.health.as_ref().unwrap().unknown);
        let etcd = list.iter().find(|s| s.id == "etcd").unwrap();
        assert_eq!(etcd.state, "Preparing");
        assert_eq!(
            etcd.events.as_ref().unwrap().events.last().unwrap().msg,
            "Waiting for etcd to be bootstrapped or joined"
        );
        assert!(ev
            .windows(2)
            .all(|p| p[0].ts.unwrap().seconds <= p[1].ts.unwrap().seconds));
    }
}
