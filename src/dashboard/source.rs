//! Where the dashboard's data comes from: one poller per node calling the same RPCs talosctl's
//! dashboard polls (Hostname, Version, ServiceList, SystemStat, LoadAvg, Memory, CPUInfo once)
//! every interval, and one poller for the log pane (the tail of the chosen service's log on the
//! chosen node). Both send `Update`s to the terminal loop and stop when told to.

use std::sync::mpsc::Sender;
use std::time::Duration;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::model::{CpuTimes, Cpus, Health, Memory, Sample, Service, Update};
use crate::proto::machine;
use crate::talos::client::Client;

/// Lines of a service's log the pane asks for.
pub const TAIL_LINES: i32 = 500;

/// An error as one line: the call and node, then its causes.
fn text(e: &anyhow::Error) -> String {
    format!("{e:#}")
}

/// A service row from the node's `ServiceInfo`.
pub fn service(s: &machine::ServiceInfo) -> Service {
    let health = match &s.health {
        None => Health::Unknown,
        Some(h) if h.unknown => Health::Unknown,
        Some(h) if h.healthy => Health::Ok,
        Some(_) => Health::Fail,
    };
    let last_event = s
        .events
        .as_ref()
        .and_then(|e| e.events.last())
        .map(|e| e.msg.clone());
    let message = match &s.health {
        Some(h) if !h.last_message.is_empty() => h.last_message.clone(),
        _ => last_event.unwrap_or_default(),
    };
    Service {
        id: s.id.clone(),
        state: s.state.clone(),
        health,
        message,
    }
}

/// Busy and idle seconds as talosctl adds them up (iowait counts as idle).
pub fn cpu_times(s: &machine::SystemStat) -> Option<CpuTimes> {
    let c = s.cpu_total.as_ref()?;
    Some(CpuTimes {
        busy: c.user + c.nice + c.system + c.irq + c.steal + c.soft_irq,
        idle: c.idle + c.iowait,
    })
}

/// Memory in use as talosctl counts it: total less free, cached and buffers.
pub fn memory(m: &machine::MemInfo) -> Memory {
    Memory {
        total_kib: m.memtotal,
        used_kib: m
            .memtotal
            .saturating_sub(m.memfree)
            .saturating_sub(m.cached)
            .saturating_sub(m.buffers),
    }
}

/// One poll of a node; `with_cpus` also asks for the CPU list (it does not change).
pub async fn sample(client: &Client, with_cpus: bool) -> Sample {
    let cpus = async {
        if with_cpus {
            Some(client.cpu_info().await)
        } else {
            None
        }
    };
    let (hostname, version, services, stat, load, mem, cpus) = tokio::join!(
        client.hostname(),
        client.version(),
        client.services(),
        client.system_stat(),
        client.load_avg(),
        client.memory(),
        cpus,
    );
    let failures: Vec<String> = [
        hostname.as_ref().err(),
        version.as_ref().err(),
        services.as_ref().err(),
        stat.as_ref().err(),
        load.as_ref().err(),
        mem.as_ref().err(),
    ]
    .into_iter()
    .flatten()
    .map(text)
    .collect();
    // Like talosctl, a call the node refuses only leaves its field empty; a node that answers
    // nothing says why.
    let error = (failures.len() == 6).then(|| failures[0].clone());
    Sample {
        hostname: hostname.ok(),
        version: version
            .ok()
            .and_then(|v| v.version)
            .map(|v| v.tag)
            .filter(|t| !t.is_empty()),
        boot_time: stat.as_ref().ok().map(|s| s.boot_time),
        cpu: stat.as_ref().ok().and_then(cpu_times),
        cpus: cpus.and_then(Result::ok).and_then(|list| {
            list.first().map(|c| Cpus {
                count: list.len(),
                mhz: c.cpu_mhz,
            })
        }),
        memory: mem.ok().map(|m| memory(&m)),
        load: load.ok().map(|l| [l.load1, l.load5, l.load15]),
        services: services.ok().map(|s| s.iter().map(service).collect()),
        error,
    }
}

/// Polls node `index` every `interval` until `stop`.
pub async fn poll_node(
    index: usize,
    client: Client,
    interval: Duration,
    tx: Sender<Update>,
    stop: CancellationToken,
) {
    let mut have_cpus = false;
    loop {
        let s = tokio::select! {
            _ = stop.cancelled() => return,
            s = sample(&client, !have_cpus) => s,
        };
        have_cpus |= s.cpus.is_some();
        if tx
            .send(Update::Sample {
                node: index,
                sample: s,
            })
            .is_err()
        {
            return;
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

/// The last lines of a node's log text.
pub fn lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut out: Vec<String> = text.split('\n').map(str::to_string).collect();
    if out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// Fetches the tail of the log `target` names (node index, service), again every `interval`
/// and at once when the target changes, until `stop`.
pub async fn poll_logs(
    clients: Vec<Client>,
    interval: Duration,
    mut target: watch::Receiver<Option<(usize, String)>>,
    tx: Sender<Update>,
    stop: CancellationToken,
) {
    loop {
        let current = target.borrow_and_update().clone();
        if let Some((node, service)) = current {
            if let Some(client) = clients.get(node) {
                let req = machine::LogsRequest {
                    namespace: "system".into(),
                    id: service.clone(),
                    driver: 0,
                    follow: false,
                    tail_lines: TAIL_LINES,
                };
                let result = tokio::select! {
                    _ = stop.cancelled() => return,
                    r = client.logs(req) => r.map(|b| lines(&b)).map_err(|e| text(&e)),
                };
                let u = Update::Logs {
                    node,
                    service,
                    result,
                };
                if tx.send(u).is_err() {
                    return;
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            changed = target.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_rows_as_talosctl_reads_them() {
        let info =
            |health: Option<machine::ServiceHealth>, events: Vec<&str>| machine::ServiceInfo {
                id: "etcd".into(),
                state: "Running".into(),
                events: Some(machine::ServiceEvents {
                    events: events
                        .into_iter()
                        .map(|m| machine::ServiceEvent {
                            msg: m.into(),
                            ..Default::default()
                        })
                        .collect(),
                }),
                health,
            };
        let h = |unknown, healthy, msg: &str| {
            Some(machine::ServiceHealth {
                unknown,
                healthy,
                last_message: msg.into(),
                last_change: None,
            })
        };
        assert_eq!(service(&info(None, vec![])).health, Health::Unknown);
        assert_eq!(
            service(&info(h(true, false, ""), vec![])).health,
            Health::Unknown
        );
        let ok = service(&info(
            h(false, true, ""),
            vec!["Starting", "Health check successful"],
        ));
        assert_eq!(
            (ok.health, ok.message.as_str()),
            (Health::Ok, "Health check successful")
        );
        let bad = service(&info(h(false, false, "probe failed"), vec!["x"]));
        assert_eq!(
            (bad.health, bad.message.as_str()),
            (Health::Fail, "probe failed")
        );
    }

    #[test]
    fn cpu_and_memory_as_talosctl_counts_them() {
        let stat = machine::SystemStat {
            cpu_total: Some(machine::CpuStat {
                user: 1.0,
                nice: 0.5,
                system: 2.0,
                idle: 10.0,
                iowait: 3.0,
                irq: 0.25,
                soft_irq: 0.25,
                steal: 1.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            cpu_times(&stat),
            Some(CpuTimes {
                busy: 5.0,
                idle: 13.0
            })
        );
        let m = memory(&machine::MemInfo {
            memtotal: 1000,
            memfree: 300,
            cached: 200,
            buffers: 50,
            ..Default::default()
        });
        assert_eq!((m.total_kib, m.used_kib), (1000, 450));
    }

    #[test]
    fn log_text_becomes_lines() {
        assert_eq!(lines(b"a\nb\n"), ["a", "b"]);
        assert_eq!(lines(b"a\n\nb"), ["a", "", "b"]);
        assert!(lines(b"").is_empty());
    }
}
