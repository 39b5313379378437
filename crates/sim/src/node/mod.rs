//! One simulated Talos node: its hardware, lifecycle state and faults, and the behaviour of
//! each call as Talos 1.13 answers it (maintenance vs configured, roles, apply modes,
//! bootstrap once, kubeconfig, upgrade, reboot, reset). Transport lives in `server.rs`.

pub mod events;
pub mod hardware;
pub mod intern;
pub mod io;
pub mod journal;
pub mod load;
mod restarts;
mod seeds;
pub mod state;

use std::net::IpAddr;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tonic::Status;

use crate::cosi::content::{ApiCerts, Outside, Peer};
use crate::cosi::store::Store;
use crate::net::certs;
use crate::net::faults::Faults;
use crate::node::hardware::Hardware;
use crate::node::journal::Journal;
pub use crate::node::state::services;
use crate::node::state::{Config, State};
use talm_wire::proto::machine;

/// Running Talos version of a fresh simulated node.
pub const DEFAULT_VERSION: &str = talm_wire::version::TALOS_MACHINERY;

/// How a node is set up.
#[derive(Debug, Clone)]
pub struct NodeSpec {
    pub addr: IpAddr,
    pub port: u16,
    pub hardware: Hardware,
    pub version: String,
    pub reboot_delay: Duration,
    pub faults: Faults,
}

impl NodeSpec {
    /// The default machine at `addr:port`.
    pub fn new(addr: IpAddr, port: u16) -> NodeSpec {
        NodeSpec {
            addr,
            port,
            hardware: Hardware::default_for(addr),
            version: DEFAULT_VERSION.into(),
            reboot_delay: Duration::from_millis(500),
            faults: Faults::default(),
        }
    }
}

/// A node's roles on one connection.
pub fn is_admin(roles: &[String]) -> bool {
    roles.iter().any(|r| r == "os:admin")
}

pub(crate) fn denied() -> Status {
    Status::permission_denied("not authorized")
}

/// The machine-id part of a node's event IDs, from its address and port.
fn machine_id(spec: &NodeSpec) -> [u8; 3] {
    use sha2::Digest;
    let h = sha2::Sha256::digest(format!("{}:{}", spec.addr, spec.port));
    [h[0], h[1], h[2]]
}

/// A random UUID v4 (actor IDs).
pub(super) fn uuid() -> String {
    let mut b = talm_wire::pki::random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// The node's state, locked; a change made through it wakes the node's watchers when the lock
/// is released.
pub struct StateGuard<'a> {
    guard: MutexGuard<'a, State>,
    changed: &'a tokio::sync::watch::Sender<u64>,
    dirty: bool,
}

impl Deref for StateGuard<'_> {
    type Target = State;
    fn deref(&self) -> &State {
        &self.guard
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut State {
        self.dirty = true;
        &mut self.guard
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        if self.dirty {
            self.changed.send_modify(|n| *n += 1);
        }
    }
}

pub struct Node {
    pub spec: NodeSpec,
    state: Mutex<State>,
    /// Bumped after every change of the state (and of resource labels): watches follow it.
    pub changed: tokio::sync::watch::Sender<u64>,
    /// The COSI resources as served, with their history.
    store: Store,
    /// Service logs and the kernel ring.
    pub journal: Journal,
    /// The event stream (MachineService.Events).
    pub events: crate::node::events::Events,
    faults: Mutex<Faults>,
    /// Cancelled to "power off" the current boot (listener closed, connections cut).
    boot: Mutex<CancellationToken>,
    /// Cancelled when the simulator stops.
    pub stop: CancellationToken,
    /// Boot count at which the API last came up (0 = down).
    pub up: tokio::sync::watch::Sender<u64>,
    /// Why the node could not listen, when it could not.
    listen_failure: Mutex<Option<std::io::Error>>,
    /// Powered off (`power_off`): the node stays down until `power_on`.
    pub halted: tokio::sync::watch::Sender<bool>,
    /// An installation or upgrade runs (LifecycleService takes one at a time).
    pub(crate) installing: std::sync::atomic::AtomicBool,
    /// The nodes of the simulator it runs in (the other nodes discovery and etcd show it).
    world: std::sync::OnceLock<std::sync::Weak<crate::api::Registry>>,
    /// The certificates the current boot's API serves with (APICertificates shows them).
    api_certs: Mutex<Option<ApiCerts>>,
    /// This node as its peers see it, and the change count it was read at: every configured
    /// node reads every other one on each sync, which must not derive them anew.
    as_peer: Mutex<Option<(u64, Option<Peer>)>>,
}

impl Node {
    pub fn new(spec: NodeSpec, stop: CancellationToken) -> Node {
        let state = State::new(&spec.version, &format!("sim-{}-{}", spec.addr, spec.port));
        let journal = Journal::default();
        journal.boot(&state.version, state.boots);
        let events = crate::node::events::Events::default();
        events.boot(machine_id(&spec), &services(&state), state.in_maintenance());
        Node {
            faults: Mutex::new(spec.faults.clone()),
            state: Mutex::new(state),
            changed: tokio::sync::watch::channel(0).0,
            store: Store::default(),
            journal,
            events,
            boot: Mutex::new(stop.child_token()),
            up: tokio::sync::watch::channel(0).0,
            listen_failure: Mutex::new(None),
            halted: tokio::sync::watch::channel(false).0,
            installing: std::sync::atomic::AtomicBool::new(false),
            world: std::sync::OnceLock::new(),
            api_certs: Mutex::new(None),
            as_peer: Mutex::new(None),
            stop,
            spec,
        }
    }

    pub(super) fn set_listen_failure(&self, e: std::io::Error) {
        *self
            .listen_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(e);
    }

    /// Why the node could not listen on its address, as a user-facing error.
    pub fn listen_failure(&self) -> Option<anyhow::Error> {
        let guard = self
            .listen_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let e = guard.as_ref()?;
        let at = format!("{}:{}", self.spec.addr, self.spec.port);
        let (what, hint) = match e.kind() {
            std::io::ErrorKind::AddrInUse => (
                "the address is already in use".to_string(),
                "another process listens there (another `talm sim`?): stop it, or simulate the node at another loopback address",
            ),
            std::io::ErrorKind::AddrNotAvailable => (
                "the address is not available on this machine".to_string(),
                "use a loopback address in 127.0.0.0/8 (or ::1)",
            ),
            std::io::ErrorKind::PermissionDenied => (
                "permission denied".to_string(),
                "ports below 1024 need privileges: pick another with --port",
            ),
            _ => (e.to_string(), "pick another address or port"),
        };
        Some(talm_base::error::hinted(
            format!("cannot listen on {at}: {what}"),
            hint,
        ))
    }

    pub fn state(&self) -> StateGuard<'_> {
        StateGuard {
            guard: self.state.lock().unwrap_or_else(|e| e.into_inner()),
            changed: &self.changed,
            dirty: false,
        }
    }

    /// Joins the node to the simulator's nodes: it then sees the others as its peers.
    pub fn set_world(&self, registry: std::sync::Weak<crate::api::Registry>) {
        // Set once, when the simulator starts; a second call changes nothing.
        let _ = self.world.set(registry);
    }

    /// The other configured nodes of the world, by address, as discovery shows them; each
    /// node's state is locked in turn, never with this one's.
    fn peers(&self) -> Vec<Peer> {
        // A node in maintenance has no cluster: no need to look at thousands of others.
        if self.state().in_maintenance() {
            return Vec::new();
        }
        let Some(registry) = self.world.get().and_then(std::sync::Weak::upgrade) else {
            return Vec::new();
        };
        let mut others: Vec<Arc<Node>> = registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|n| !std::ptr::eq(Arc::as_ptr(n), self))
            .cloned()
            .collect();
        others.sort_by_key(|n| (n.spec.addr, n.spec.port));
        others.iter().filter_map(|n| n.as_peer()).collect()
    }

    /// This node as the others see it (kept until its state changes).
    fn as_peer(&self) -> Option<Peer> {
        let mark = *self.changed.borrow();
        let mut kept = self.as_peer.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, peer)) = kept.as_ref().filter(|(at, _)| *at == mark) {
            return peer.clone();
        }
        let peer = Peer::of(&self.spec.hardware, &self.state());
        *kept = Some((mark, peer.clone()));
        peer
    }

    /// The resource store, brought in step with the node's state, its peers' and its faults.
    pub fn synced(&self) -> &Store {
        self.synced_only(crate::cosi::store::Only::All)
    }

    /// The resource store with the types of `only` brought in step (the others as they were).
    pub fn synced_only(&self, only: crate::cosi::store::Only<'_>) -> &Store {
        use std::hash::{Hash, Hasher};
        let peers = self.peers();
        let st = self.state();
        let outside = Outside {
            peers,
            unhealthy: self
                .faults()
                .unhealthy
                .map(|u| u.now(&st.version))
                .unwrap_or_default(),
            api: self
                .api_certs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        };
        // Read under the state lock: every change made before it was taken is counted.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (*self.changed.borrow(), &outside).hash(&mut h);
        self.store
            .sync(&self.spec.hardware, &st, &outside, h.finish(), only);
        &self.store
    }

    /// Sets (`Some`) or removes (`None`) a label on a resource, as a controller would: the
    /// resource gets a new version and watchers see the change.
    pub fn set_label(&self, namespace: &str, ty: &str, id: &str, key: &str, value: Option<&str>) {
        self.store.set_label(namespace, ty, id, key, value);
        self.changed.send_modify(|n| *n += 1);
    }

    /// What a boot does to the node's memory: the logs start over.
    pub(super) fn booted(&self) {
        let (version, boots, services, maintenance) = {
            let st = self.state();
            let svcs: Vec<(&'static str, &'static str)> = services(&st);
            (st.version.clone(), st.boots, svcs, st.in_maintenance())
        };
        self.journal.boot(&version, boots);
        self.events.boot(self.machine_id(), &services, maintenance);
    }

    /// The 3 bytes this node puts into its event IDs.
    pub fn machine_id(&self) -> [u8; 3] {
        machine_id(&self.spec)
    }

    pub fn faults(&self) -> Faults {
        self.faults
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replaces the node's faults (tests change them while it runs); what follows the node
    /// (its resources, its cluster's Kubernetes objects) takes the change as any other.
    pub fn set_faults(&self, f: Faults) {
        *self.faults.lock().unwrap_or_else(|e| e.into_inner()) = f;
        self.changed.send_modify(|n| *n += 1);
    }

    /// The address as nodes are named in metadata.
    pub fn name(&self) -> String {
        self.spec.addr.to_string()
    }

    pub(super) fn new_boot(&self) -> CancellationToken {
        let t = self.stop.child_token();
        *self.boot.lock().unwrap_or_else(|e| e.into_inner()) = t.clone();
        t
    }

    /// Powers the current boot off shortly (after the reply has gone out).
    pub fn reboot_soon(&self) {
        let boot = self.boot.lock().unwrap_or_else(|e| e.into_inner()).clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            boot.cancel();
        });
    }

    /// Pulls the plug: the node goes down now and stays down until [`Node::power_on`].
    pub fn power_off(&self) {
        self.halted.send_replace(true);
        self.boot.lock().unwrap_or_else(|e| e.into_inner()).cancel();
    }

    /// Powers a node that was switched off (by [`Node::power_off`], a shutdown or a reset
    /// without reboot) back on: it boots again.
    pub fn power_on(&self) {
        self.state().changes.powered_off = false;
        self.halted.send_replace(false);
    }

    /// Whether the node is switched off (or going off), waiting for [`Node::power_on`].
    pub fn is_off(&self) -> bool {
        *self.halted.borrow() || self.state().changes.powered_off
    }

    /// TLS for the current boot: maintenance, or a server certificate issued by the applied
    /// machine CA. A worker's config carries no CA key, so like Talos (trustd) it gets its
    /// certificate signed by a control plane of the same cluster among `peers`.
    pub fn tls(&self, peers: &[Arc<Node>]) -> anyhow::Result<rustls::ServerConfig> {
        let (config, host) = {
            let st = self.state();
            (st.config.clone(), st.hostname(&self.spec.hardware))
        };
        let ips = [self.spec.addr];
        let skew = self.faults().skew();
        let Some(cfg) = config else {
            let id = certs::maintenance(&ips, host.as_deref(), skew.now())?;
            self.set_api_certs(certs::api_certs(&id, None, Vec::new())?);
            return certs::maintenance_config(&id);
        };
        let (crt, mut key) = cfg.machine_ca();
        if key.is_empty() {
            key = peers
                .iter()
                .filter(|p| p.name() != self.name())
                .filter_map(|p| p.state().config.as_ref().map(|c| c.machine_ca()))
                .find(|(c, k)| *c == crt && !k.is_empty())
                .map(|(_, k)| k)
                .ok_or_else(|| anyhow::anyhow!("no control plane of this cluster is up to sign the server certificate (trustd)"))?;
        }
        let host = host.unwrap_or_else(|| self.name());
        let id = certs::issued(&crt, &key, &ips, &host, &cfg.cert_sans(), skew.now())?;
        // A control plane's apid also gets a client certificate (to proxy to the others);
        // a worker accepts the issuing CA only.
        let (client, accepted) = if cfg.is_control_plane() {
            let client = certs::impersonator(&crt, &key, skew.now())?;
            let mut accepted = cfg.accepted_cas();
            accepted.push(crt.clone());
            (Some(client), accepted)
        } else {
            (None, vec![crt.clone()])
        };
        self.set_api_certs(certs::api_certs(&id, client, accepted)?);
        let mut cas = vec![crt];
        cas.extend(cfg.accepted_cas());
        certs::mutual_config(&id, &cas, skew)
    }

    fn set_api_certs(&self, certs: ApiCerts) {
        *self.api_certs.lock().unwrap_or_else(|e| e.into_inner()) = Some(certs);
    }

    /// Version as the API answers it: Talos before 1.13 does not implement it in maintenance
    /// mode (its separate maintenance server had no Version).
    pub fn version_reply(&self) -> Result<machine::Version, Status> {
        let old = {
            let st = self.state();
            st.in_maintenance()
                && talm_wire::contract::Contract::parse(&st.version)
                    .is_ok_and(|c| !c.newer_than(1, 12))
        };
        if old {
            return Err(Status::unimplemented(
                "API is not implemented in maintenance mode",
            ));
        }
        Ok(self.version())
    }

    pub fn version(&self) -> machine::Version {
        let st = self.state();
        let platform = &self.spec.hardware.platform;
        machine::Version {
            metadata: None,
            version: Some(machine::VersionInfo {
                tag: st.version.clone(),
                sha: "simulated".into(),
                built: String::new(),
                go_version: "go1.26.5".into(),
                os: "linux".into(),
                arch: "amd64".into(),
            }),
            platform: Some(machine::PlatformInfo {
                name: platform.clone(),
                mode: platform.clone(),
            }),
            features: (!st.in_maintenance()).then_some(machine::FeaturesInfo { rbac: true }),
        }
    }

    pub fn hostname(&self) -> machine::Hostname {
        let st = self.state();
        machine::Hostname {
            metadata: None,
            hostname: st.hostname(&self.spec.hardware).unwrap_or_default(),
        }
    }

    /// Whether the node runs a control plane (configured as one).
    fn control_plane(st: &State) -> Result<&Config, Status> {
        match &st.config {
            None => Err(Status::unimplemented(
                "machine type is not set, cannot use bootstrap API",
            )),
            Some(c) => Ok(c),
        }
    }

    pub fn bootstrap(
        &self,
        req: &machine::BootstrapRequest,
        roles: &[String],
    ) -> Result<machine::Bootstrap, Status> {
        if !is_admin(roles) {
            return Err(denied());
        }
        let st = self.state();
        let cfg = Self::control_plane(&st)?;
        if !cfg.is_control_plane() {
            return Err(Status::unimplemented(
                "bootstrap is only available on control plane nodes",
            ));
        }
        if st.etcd.is_some() {
            return Err(Status::already_exists("etcd data directory is not empty"));
        }
        drop(st);
        self.journal.talos("bootstrap request received");
        crate::etcd::calls::start(self, req.recover_etcd, req.recover_skip_hash_check);
        Ok(machine::Bootstrap { metadata: None })
    }

    /// etcd runs on the node (bootstrapped, restored or joined): its service event and log.
    pub fn etcd_started(&self, line: &str) {
        self.events.service(
            self.machine_id(),
            "etcd",
            "Running",
            "Health check successful",
            "",
        );
        self.journal.service("etcd", line);
    }

    pub fn kubeconfig(&self, roles: &[String]) -> Result<Vec<u8>, Status> {
        if !is_admin(roles) {
            return Err(denied());
        }
        let st = self.state();
        let Some(cfg) = &st.config else {
            return Err(Status::unimplemented(
                "machine type is not set, cannot use kubeconfig API",
            ));
        };
        if !cfg.is_control_plane() {
            return Err(Status::unimplemented(
                "kubeconfig is only available on control plane nodes",
            ));
        }
        crate::machined::kubeconfig::archive(cfg, self.faults().exec_kubeconfig)
            .map_err(|e| Status::internal(format!("{e:#}")))
    }
}
