//! A simulated node's sockets as the Netstat call reports them: the listeners of the services
//! and pods that run (apid, trustd, etcd, kube-apiserver, kubelet, kube-proxy, the host DNS,
//! CoreDNS in its own network namespace) and the connections between them, each owned by a
//! process of the workload; filtered by state, protocol and network namespace as Talos does.

use tonic::Status;

use super::workload::Workload;
use super::World;
use talm_wire::proto::machine::connect_record::{Process, State, TimerActive};
use talm_wire::proto::machine::{netstat_request, ConnectRecord, NetstatRequest};

/// One socket: protocol, endpoints, state, owner and namespace ("" = host).
#[derive(Clone, Debug)]
struct Sock {
    proto: &'static str,
    local: (String, u32),
    remote: (String, u32),
    state: State,
    /// The owning process's command (`comm`); empty for kernel sockets.
    owner: String,
    uid: u32,
    netns: String,
}

fn any(proto: &str) -> String {
    if proto.ends_with('6') {
        "::"
    } else {
        "0.0.0.0"
    }
    .to_string()
}

struct Table<'a> {
    w: &'a World,
    out: Vec<Sock>,
}

impl Table<'_> {
    fn listen(
        &mut self,
        proto: &'static str,
        ip: &str,
        port: u32,
        owner: &str,
        uid: u32,
        netns: &str,
    ) {
        let state = if proto.starts_with("tcp") {
            State::Listen
        } else {
            State::Close
        };
        self.out.push(Sock {
            proto,
            local: (ip.to_string(), port),
            remote: (any(proto), 0),
            state,
            owner: owner.to_string(),
            uid,
            netns: netns.to_string(),
        });
    }

    /// A TCP connection from `client` to `server` at `ip:port` (both ends on this node when
    /// the server runs here).
    fn connect(&mut self, client: &str, from: &str, server: &str, to: &str, port: u32, here: bool) {
        let eph = 32_768
            + (self
                .w
                .rand(&format!("{client}->{to}:{port}#{}", self.out.len()))
                % 28_000) as u32;
        let v6 = |ip: &str| {
            if ip.contains(':') {
                ip.to_string()
            } else {
                format!("::ffff:{ip}")
            }
        };
        let loopback = to.starts_with("127.");
        self.out.push(Sock {
            proto: "tcp",
            local: (from.to_string(), eph),
            remote: (to.to_string(), port),
            state: State::Established,
            owner: client.to_string(),
            uid: 0,
            netns: String::new(),
        });
        if here {
            let (proto, l, r) = if loopback {
                ("tcp", to.to_string(), from.to_string())
            } else {
                ("tcp6", v6(to), v6(from))
            };
            self.out.push(Sock {
                proto,
                local: (l, port),
                remote: (r, eph),
                state: State::Established,
                owner: server.to_string(),
                uid: 0,
                netns: String::new(),
            });
        }
    }
}

/// Every socket of the node.
fn sockets(w: &World, load: &Workload) -> Vec<Sock> {
    let ip = w.ip();
    let endpoint = if w.endpoint.parse::<std::net::IpAddr>().is_ok() {
        w.endpoint.clone()
    } else {
        ip.clone()
    };
    let mut t = Table { w, out: Vec::new() };
    let runs = |comm: &str| load.procs.iter().any(|p| p.comm == comm);
    if runs("apid") {
        t.listen("tcp6", "::", 50000, "apid", 50, "");
    }
    if runs("trustd") {
        t.listen("tcp6", "::", 50001, "trustd", 51, "");
    }
    if w.role != super::Role::Maintenance {
        t.listen("tcp", "127.0.0.53", 53, "init", 0, "");
        t.listen("udp", "127.0.0.53", 53, "init", 0, "");
    }
    if runs("etcd") {
        t.listen("tcp", "127.0.0.1", 2379, "etcd", 0, "");
        t.listen("tcp", &ip, 2379, "etcd", 0, "");
        t.listen("tcp", &ip, 2380, "etcd", 0, "");
        t.listen("tcp", "127.0.0.1", 2381, "etcd", 0, "");
    }
    if runs("kube-apiserver") {
        t.listen("tcp6", "::", 6443, "kube-apiserver", 0, "");
        for _ in 0..3 {
            t.connect(
                "kube-apiserver",
                "127.0.0.1",
                "etcd",
                "127.0.0.1",
                2379,
                true,
            );
        }
    }
    if runs("kubelet") {
        t.listen("tcp", "127.0.0.1", 10248, "kubelet", 0, "");
        t.listen("tcp6", "::", 10250, "kubelet", 0, "");
    }
    if runs("kube-controller") {
        t.listen("tcp", "127.0.0.1", 10257, "kube-controller", 0, "");
    }
    if runs("kube-scheduler") {
        t.listen("tcp", "127.0.0.1", 10259, "kube-scheduler", 0, "");
    }
    if runs("kube-proxy") {
        t.listen("tcp", "127.0.0.1", 10249, "kube-proxy", 0, "");
        t.listen("tcp6", "::", 10256, "kube-proxy", 0, "");
    }
    if runs("flanneld") {
        t.listen("udp", "0.0.0.0", 8472, "", 0, "");
    }
    let api_here = runs("kube-apiserver");
    if api_here || w.role == super::Role::Worker {
        for client in [
            "kubelet",
            "kube-controller",
            "kube-scheduler",
            "kube-proxy",
            "flanneld",
        ] {
            if runs(client) {
                t.connect(client, &ip, "kube-apiserver", &endpoint, 6443, api_here);
            }
        }
    }
    for pod in load.pods.iter().filter(|p| !p.netns.is_empty()) {
        let pod_ip = format!("10.244.0.{}", 2 + w.rand(&pod.name) % 200);
        for (proto, port) in [
            ("tcp6", 53),
            ("udp6", 53),
            ("tcp6", 8080),
            ("tcp6", 8181),
            ("tcp6", 9153),
        ] {
            t.listen(proto, "::", port, "coredns", 0, &pod.netns);
        }
        let eph = 40_000 + (w.rand(&pod.uid) % 20_000) as u32;
        t.out.push(Sock {
            proto: "tcp",
            local: (pod_ip, eph),
            remote: ("10.96.0.1".into(), 443),
            state: State::Established,
            owner: "coredns".into(),
            uid: 0,
            netns: pod.netns.clone(),
        });
    }
    t.out
}

fn wanted(proto: &str, p: &netstat_request::L4proto) -> bool {
    match proto {
        "tcp" => p.tcp,
        "tcp6" => p.tcp6,
        "udp" => p.udp,
        "udp6" => p.udp6,
        "udplite" => p.udplite,
        "udplite6" => p.udplite6,
        "raw" => p.raw,
        "raw6" => p.raw6,
        _ => false,
    }
}

fn unspecified(ip: &str) -> bool {
    ip.parse::<std::net::IpAddr>()
        .is_ok_and(|a| a.is_unspecified())
}

/// The Netstat reply's records for `req`.
pub fn netstat(
    w: &World,
    load: &Workload,
    req: &NetstatRequest,
) -> Result<Vec<ConnectRecord>, Status> {
    use netstat_request::Filter;
    let filter = Filter::try_from(req.filter)
        .map_err(|_| Status::invalid_argument(format!("invalid filter: {}", req.filter)))?;
    let protos = req.l4proto.unwrap_or_default();
    let ns = req.netns.clone().unwrap_or_default();
    let pid_of = |comm: &str| load.procs.iter().find(|p| p.comm == comm);
    let mut out = Vec::new();
    for s in sockets(w, load) {
        let listening = unspecified(&s.remote.0) && s.remote.1 == 0;
        let keep_state = match filter {
            Filter::All => true,
            Filter::Listening => listening,
            Filter::Connected => !unspecified(&s.remote.0) && s.remote.1 != 0,
        };
        let keep_ns = if s.netns.is_empty() {
            ns.hostnetwork
        } else {
            ns.allnetns || ns.netns.contains(&s.netns)
        };
        if !keep_state || !keep_ns || !wanted(s.proto, &protos) {
            continue;
        }
        let key = format!("{}{}{}{}", s.proto, s.local.0, s.local.1, s.remote.1);
        let established = s.state == State::Established;
        let process = match (
            req.feature.as_ref().is_some_and(|f| f.pid),
            pid_of(&s.owner),
        ) {
            (true, Some(p)) => Process {
                pid: p.pid as u32,
                name: p.comm.clone(),
            },
            _ => Process::default(),
        };
        out.push(ConnectRecord {
            l4proto: s.proto.to_string(),
            localip: s.local.0,
            localport: s.local.1,
            remoteip: s.remote.0,
            remoteport: s.remote.1,
            state: s.state as i32,
            txqueue: 0,
            rxqueue: 0,
            tr: if established {
                TimerActive::Keepalive
            } else {
                TimerActive::Off
            } as i32,
            timerwhen: if established {
                500 + w.rand(&format!("{key}{}", w.now as u64)) % 7000
            } else {
                0
            },
            retrnsmt: 0,
            uid: s.uid,
            timeout: 0,
            inode: if s.owner.is_empty() {
                0
            } else {
                20_000 + w.rand(&key) % 80_000
            },
            r#ref: if established { 2 } else { 1 },
            pointer: 0,
            process: Some(process),
            netns: s.netns,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{testing::world, Role};
    use super::*;
    use talm_wire::proto::machine::netstat_request::{Feature, Filter, L4proto, NetNs};

    fn req(filter: Filter, pid: bool, all_ns: bool) -> NetstatRequest {
        NetstatRequest {
            filter: filter as i32,
            feature: Some(Feature { pid }),
            l4proto: Some(L4proto {
                tcp: true,
                tcp6: true,
                udp: true,
                udp6: true,
                ..Default::default()
            }),
            netns: Some(NetNs {
                hostnetwork: true,
                netns: vec![],
                allnetns: all_ns,
            }),
        }
    }

    #[test]
    fn listeners_and_connections_follow_the_workload() {
        let w = world(Role::ControlPlane, true, 600.0);
        let load = Workload::of(&w);
        let listening = netstat(&w, &load, &req(Filter::Listening, true, false)).unwrap();
        let apid = listening.iter().find(|r| r.localport == 50000).unwrap();
        assert_eq!(
            (apid.l4proto.as_str(), apid.localip.as_str(), apid.uid),
            ("tcp6", "::", 50)
        );
        let p = apid.process.as_ref().unwrap();
        assert_eq!(load.proc(p.pid as i32).unwrap().comm, "apid");
        assert!(listening.iter().all(|r| r.remoteport == 0));
        assert!(
            !listening
                .iter()
                .any(|r| r.localport == 53 && r.l4proto == "tcp6"),
            "pod sockets need --pods"
        );
        let connected = netstat(&w, &load, &req(Filter::Connected, false, false)).unwrap();
        assert!(connected
            .iter()
            .any(|r| r.remoteport == 2379 && r.state == State::Established as i32));
        assert!(connected
            .iter()
            .all(|r| r.process.as_ref().unwrap().pid == 0));
        let pods = netstat(&w, &load, &req(Filter::All, false, true)).unwrap();
        assert!(pods
            .iter()
            .any(|r| r.netns.starts_with("cni-") && r.localport == 53));
        let worker = world(Role::Worker, false, 600.0);
        let wl = Workload::of(&worker);
        let all = netstat(&worker, &wl, &req(Filter::All, false, false)).unwrap();
        assert!(!all.iter().any(|r| r.localport == 6443 && r.remoteport == 0));
        assert!(all.iter().any(|r| r.remoteport == 6443));
        let bad = NetstatRequest {
            filter: 9,
            ..req(Filter::All, false, false)
        };
        assert_eq!(
            netstat(&w, &load, &bad).unwrap_err().message(),
            "invalid filter: 9"
        );
    }
}
