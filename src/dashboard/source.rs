//! Where the dashboard's data comes from: one poller per node calling the RPCs talosctl's
//! dashboard polls (Hostname, Version, ServiceList, SystemStat, LoadAvg, Memory, Processes,
//! NetworkDeviceStats, DiskStats, CPUInfo once), reading the resources its panels watch through COSI `Get`/`List`, and the
//! node's kernel log (Dmesg), every interval. It sends `Update`s to the terminal loop and
//! stops when told to.

use std::sync::mpsc::Sender;
use std::time::Duration;

use serde_yaml_ng::Value;
use tokio_util::sync::CancellationToken;

use super::model::{CpuTimes, Cpus, Health, Memory, Sample, Service, Update};
use super::panels::Resources;
use crate::proto::machine;
use crate::talos::client::Client;

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
    let (hostname, version, services, stat, load, mem, cpus, procs, net, disk, resources) = tokio::join!(
        client.hostname(),
        client.version(),
        client.services(),
        client.system_stat(),
        client.load_avg(),
        client.memory(),
        cpus,
        client.processes(),
        client.network_device_stats(),
        client.disk_stats(),
        resources(client),
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
        memory: mem.as_ref().ok().map(memory),
        load: load.ok().map(|l| [l.load1, l.load5, l.load15]),
        services: services.ok().map(|s| s.iter().map(service).collect()),
        procs: procs.as_ref().ok().map(Vec::len),
        stat: stat.as_ref().ok().cloned(),
        meminfo: mem.as_ref().ok().copied(),
        processes: procs.ok(),
        net: net.ok(),
        disk: disk.ok(),
        resources: (failures.len() < 6).then_some(resources),
        error,
    }
}

/// A resource's spec, `None` when the node has none or refuses to say.
async fn spec(client: &Client, namespace: &str, ty: &str, id: &str) -> Option<Value> {
    let r = client.get(namespace, ty, id).await.ok()??;
    Some(spec_of(&r))
}

fn spec_of(r: &crate::proto::cosi::resource::Resource) -> Value {
    let text = r.spec.as_ref().map(|s| s.yaml_spec.as_str()).unwrap_or("");
    talm_base::yaml::from_str(text).unwrap_or(Value::Null)
}

/// (ID, spec) of every resource of a type, `None` when the node refuses the list.
async fn specs(client: &Client, namespace: &str, ty: &str) -> Option<Vec<(String, Value)>> {
    let list = client.list(namespace, ty).await.ok()?;
    Some(
        list.iter()
            .map(|r| {
                let id = r
                    .metadata
                    .as_ref()
                    .map(|m| m.id.clone())
                    .unwrap_or_default();
                (id, spec_of(r))
            })
            .collect(),
    )
}

/// The resources talosctl's header and Summary panels watch.
pub async fn resources(c: &Client) -> Resources {
    let (sysinfo, cluster, members, siderolink, machine_status, security) = tokio::join!(
        spec(
            c,
            "hardware",
            "SystemInformations.hardware.talos.dev",
            "systeminformation"
        ),
        spec(c, "cluster", "Infos.cluster.talos.dev", "current"),
        specs(c, "cluster", "Members.cluster.talos.dev"),
        spec(
            c,
            "config",
            "SiderolinkStatuses.siderolink.talos.dev",
            "siderolink-status"
        ),
        spec(c, "runtime", "MachineStatuses.runtime.talos.dev", "machine"),
        spec(c, "runtime", "SecurityStates.talos.dev", "securitystate"),
    );
    let (machine_type, kubelet, pods, hostname, version) = tokio::join!(
        spec(c, "config", "MachineTypes.config.talos.dev", "machine-type"),
        spec(c, "k8s", "KubeletSpecs.kubernetes.talos.dev", "kubelet"),
        specs(c, "k8s", "StaticPodStatuses.kubernetes.talos.dev"),
        spec(c, "network", "HostnameStatuses.net.talos.dev", "hostname"),
        spec(c, "runtime", "Versions.runtime.talos.dev", "version"),
    );
    let (addresses, routes, status, resolvers, time_servers) = tokio::join!(
        specs(c, "network", "NodeAddresses.net.talos.dev"),
        specs(c, "network", "RouteStatuses.net.talos.dev"),
        spec(c, "network", "NetworkStatuses.net.talos.dev", "status"),
        spec(c, "network", "ResolverStatuses.net.talos.dev", "resolvers"),
        spec(
            c,
            "network",
            "TimeServerStatuses.net.talos.dev",
            "timeservers"
        ),
    );
    Resources {
        system_information: sysinfo,
        cluster_info: cluster,
        members: members.map(|m| m.into_iter().map(|(id, _)| id).collect()),
        siderolink,
        machine_status,
        security_state: security,
        machine_type,
        kubelet_spec: kubelet,
        static_pods: pods.unwrap_or_default(),
        hostname,
        version,
        addresses: addresses
            .unwrap_or_default()
            .into_iter()
            .filter(|(id, _)| id == "routed" || id == "routed-no-k8s")
            .collect(),
        routes: routes
            .unwrap_or_default()
            .into_iter()
            .map(|(_, v)| v)
            .collect(),
        network_status: status,
        resolvers,
        time_servers,
    }
}

/// The node's kernel log, as lines.
pub async fn kernel_log(client: &Client) -> Result<Vec<String>, String> {
    let req = machine::DmesgRequest {
        follow: false,
        tail: false,
    };
    client
        .dmesg(req)
        .await
        .map(|b| {
            lines(&b)
                .into_iter()
                .map(|l| l.trim().to_string())
                .filter(|l| !l.is_empty())
                .collect()
        })
        .map_err(|e| text(&e))
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
                sample: Box::new(s),
            })
            .is_err()
        {
            return;
        }
        let kernel = tokio::select! {
            _ = stop.cancelled() => return,
            k = kernel_log(&client) => k,
        };
        if tx
            .send(Update::Kernel {
                node: index,
                result: kernel,
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
