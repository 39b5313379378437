//! The simulated etcd: one cluster shared by the control planes that joined it (members with
//! random 64-bit IDs, a leader elected among the members whose nodes are up, raft index and
//! term, the keyspace with its revision, database size with the garbage a defragmentation
//! frees, alarms and downgrade), bootstrap and recovery from a snapshot, and the joining loop
//! that adds every other control plane of the same cluster once etcd runs somewhere (as
//! Talos's etcd service does; learners are promoted at once).

pub mod calls;
pub mod upgrade;

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::api::Registry;
use crate::node::Node;
use talm_wire::snapshot::{self, Db, DbMember};

/// The etcd a simulated Talos v1.13 runs.
pub const SERVER_VERSION: &str = "3.6.12";
/// The cluster version etcd reports.
pub const CLUSTER_VERSION: &str = "3.6.0";

/// Why a node's etcd service is not running although the node could run it.
#[derive(Debug, Clone, PartialEq)]
pub enum Down {
    /// `etcd leave` stopped it and removed its data.
    Left,
    /// It failed to start (a recovery snapshot that did not restore).
    Failed(String),
}

/// One member of a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub id: u64,
    pub name: String,
    /// The node's address.
    pub addr: String,
    pub learner: bool,
}

fn url(addr: &str, port: u16) -> String {
    if addr.contains(':') {
        format!("https://[{addr}]:{port}")
    } else {
        format!("https://{addr}:{port}")
    }
}

impl Member {
    pub fn peer_urls(&self) -> Vec<String> {
        vec![url(&self.addr, 2380)]
    }

    pub fn client_urls(&self) -> Vec<String> {
        vec![url(&self.addr, 2379)]
    }
}

/// A cluster's replicated state.
#[derive(Debug)]
pub struct Cluster {
    /// Which Talos cluster it belongs to (the cluster CA): only its control planes join.
    pub identity: String,
    pub members: Vec<Member>,
    /// The leader's member ID; 0 without quorum.
    pub leader: u64,
    pub term: u64,
    pub raft_index: u64,
    pub revision: i64,
    pub kvs: BTreeMap<String, String>,
    /// Bytes freed by deletes that a defragmentation gives back.
    pub garbage: u64,
    pub alarms: Vec<(u64, i32)>,
    /// The target of a downgrade in progress.
    pub downgrade: Option<String>,
    /// The Kubernetes API whose objects this etcd keeps (made with the cluster: a bootstrap,
    /// or a recovery, which starts the API's objects anew).
    pub kube: Arc<crate::kube::Kube>,
    /// Passes the Kubernetes controllers made over this cluster (health waits for them to
    /// catch up with the nodes before its first Kubernetes check).
    pub kube_passes: u64,
}

/// A node's place in a cluster: its data directory holds the cluster as member `id`.
#[derive(Clone)]
pub struct Membership {
    pub cluster: Arc<Mutex<Cluster>>,
    pub id: u64,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Membership({:016x})", self.id)
    }
}

impl Membership {
    pub fn lock(&self) -> MutexGuard<'_, Cluster> {
        self.cluster.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn random_id(taken: &[Member]) -> u64 {
    loop {
        let id = u64::from_le_bytes(talm_wire::pki::random_bytes::<8>());
        if id != 0 && !taken.iter().any(|m| m.id == id) {
            return id;
        }
    }
}

fn lease_key(name: &str) -> String {
    format!("/registry/leases/kube-node-lease/{name}")
}

impl Cluster {
    fn new(identity: &str, revision: i64, kvs: BTreeMap<String, String>) -> Cluster {
        Cluster {
            identity: identity.to_string(),
            members: Vec::new(),
            leader: 0,
            term: 1,
            raft_index: 0,
            revision,
            kvs,
            garbage: 0,
            alarms: Vec::new(),
            downgrade: None,
            kube: Arc::default(),
            kube_passes: 0,
        }
    }

    /// A new one-member cluster (`bootstrap`), with what Kubernetes writes first.
    pub fn bootstrap(identity: &str, name: &str, addr: &str) -> (Cluster, u64) {
        let mut c = Cluster::new(identity, 1, BTreeMap::new());
        let id = c.first_member(name, addr);
        let token: String = talm_wire::pki::random_bytes::<8>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        for (k, v) in [
            ("/registry/namespaces/default", "default"),
            ("/registry/namespaces/kube-system", "kube-system"),
            ("/registry/namespaces/kube-public", "kube-public"),
            ("/registry/namespaces/kube-node-lease", "kube-node-lease"),
            ("/registry/ranges/serviceips", "10.96.0.0/12"),
            ("/registry/ranges/servicenodeports", "30000-32767"),
            ("/registry/services/specs/default/kubernetes", "10.96.0.1"),
            (
                "/registry/configmaps/kube-system/cluster-uid",
                token.as_str(),
            ),
        ] {
            c.put(k, v);
        }
        c.put(&lease_key(name), addr);
        (c, id)
    }

    /// A one-member cluster restored from a snapshot's keyspace (fresh member metadata).
    pub fn restore(identity: &str, name: &str, addr: &str, db: Db) -> (Cluster, u64) {
        let mut c = Cluster::new(identity, db.revision, db.kvs.into_iter().collect());
        let id = c.first_member(name, addr);
        (c, id)
    }

    fn first_member(&mut self, name: &str, addr: &str) -> u64 {
        let id = random_id(&[]);
        self.members.push(Member {
            id,
            name: name.to_string(),
            addr: addr.to_string(),
            learner: false,
        });
        self.leader = id;
        self.term = 2;
        self.raft_index = 4;
        id
    }

    fn put(&mut self, k: &str, v: &str) {
        if let Some(old) = self.kvs.insert(k.to_string(), v.to_string()) {
            self.garbage += (k.len() + old.len()) as u64;
        }
        self.revision += 1;
        self.raft_index += 1;
    }

    fn delete(&mut self, k: &str) {
        if let Some(old) = self.kvs.remove(k) {
            self.garbage += (k.len() + old.len()) as u64 + 64;
            self.revision += 1;
            self.raft_index += 1;
        }
    }

    /// Adds a member as a learner and promotes it once it caught up (at once here).
    pub fn join(&mut self, name: &str, addr: &str) -> u64 {
        let id = random_id(&self.members);
        self.members.push(Member {
            id,
            name: name.to_string(),
            addr: addr.to_string(),
            learner: true,
        });
        self.raft_index += 1;
        if let Some(m) = self.members.iter_mut().find(|m| m.id == id) {
            m.learner = false;
        }
        self.raft_index += 1;
        self.put(&lease_key(name), addr);
        id
    }

    /// Removes member `id`; `false` when there is none.
    pub fn remove(&mut self, id: u64) -> bool {
        let Some(i) = self.members.iter().position(|m| m.id == id) else {
            return false;
        };
        let m = self.members.remove(i);
        self.raft_index += 1;
        self.delete(&lease_key(&m.name));
        self.alarms.retain(|(a, _)| *a != id);
        if self.leader == id {
            self.leader = 0;
        }
        true
    }

    /// Whether the voting members whose nodes run etcd (`alive`) are a majority.
    pub fn quorum(&self, alive: &HashSet<u64>) -> bool {
        let voters: Vec<&Member> = self.members.iter().filter(|m| !m.learner).collect();
        let up = voters.iter().filter(|m| alive.contains(&m.id)).count();
        !voters.is_empty() && up * 2 > voters.len()
    }

    /// Keeps a leader among the live members while there is quorum (an election bumps the
    /// term), and none without.
    pub fn elect(&mut self, alive: &HashSet<u64>) {
        if !self.quorum(alive) {
            self.leader = 0;
            return;
        }
        if self.leader != 0 && alive.contains(&self.leader) {
            return;
        }
        if let Some(m) = self
            .members
            .iter()
            .find(|m| !m.learner && alive.contains(&m.id))
        {
            self.leader = m.id;
            self.term += 1;
            self.raft_index += 1;
        }
    }

    /// Moves leadership to the first other member; its name, or `None` when `from` does not lead.
    pub fn hand_over(&mut self, from: u64, alive: &HashSet<u64>) -> Option<String> {
        if self.leader != from {
            return None;
        }
        let to = self
            .members
            .iter()
            .find(|m| m.id != from && !m.learner && alive.contains(&m.id))?
            .clone();
        self.leader = to.id;
        self.term += 1;
        self.raft_index += 1;
        Some(to.name)
    }

    /// The keyspace as a snapshot holds it.
    pub fn db(&self) -> Db {
        Db {
            revision: self.revision,
            kvs: self
                .kvs
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            members: self
                .members
                .iter()
                .map(|m| DbMember {
                    id: m.id,
                    peer_urls: m.peer_urls(),
                    name: m.name.clone(),
                    client_urls: m.client_urls(),
                })
                .collect(),
            consistent_index: self.raft_index,
            term: self.term,
        }
    }

    /// A snapshot file: a bbolt database in etcd's schema and the SHA-256 trailer.
    pub fn snapshot(&self) -> Vec<u8> {
        snapshot::seal(&snapshot::encode(&self.db()))
    }

    /// Bytes of the database in use.
    pub fn in_use(&self) -> u64 {
        snapshot::encode(&self.db()).len() as u64
    }

    /// Bytes of the database file: in use plus the pages of deleted data.
    pub fn size(&self) -> u64 {
        self.in_use() + self.garbage.div_ceil(4096) * 4096
    }

    pub fn defragment(&mut self) {
        self.garbage = 0;
    }
}

/// The member IDs whose nodes are up and run etcd as members of `cluster`.
pub fn alive(registry: &Registry, cluster: &Arc<Mutex<Cluster>>) -> HashSet<u64> {
    let nodes: Vec<Arc<Node>> = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    nodes
        .iter()
        .filter(|n| *n.up.borrow() > 0)
        .filter_map(|n| {
            let st = n.state();
            match (&st.etcd, &st.etcd_down) {
                (Some(m), None) if Arc::ptr_eq(&m.cluster, cluster) => Some(m.id),
                _ => None,
            }
        })
        .collect()
}

/// The Talos cluster a node belongs to (its cluster CA) when it is a control plane that could
/// run etcd.
fn identity(n: &Node) -> Option<String> {
    let st = n.state();
    let cfg = st.config.as_ref()?;
    cfg.is_control_plane().then(|| cfg.cluster_ca().0)
}

/// One pass of what the control planes' etcd services do: every control plane that is up,
/// runs no etcd and has not left joins a cluster of its own Talos cluster running on another
/// node; every cluster keeps or elects its leader.
pub fn reconcile(registry: &Registry) {
    let nodes: Vec<Arc<Node>> = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    let up = |n: &Node| *n.up.borrow() > 0;
    for n in &nodes {
        let gone = {
            let st = n.state();
            match (&st.etcd, &st.etcd_down) {
                (Some(m), None) => !m.lock().members.iter().any(|x| x.id == m.id),
                _ => false,
            }
        };
        if gone {
            let why = "the member has been permanently removed from the cluster";
            {
                let mut st = n.state();
                st.etcd_down = Some(Down::Failed(why.into()));
                st.etcd_bootstrapped = false;
            }
            n.journal.service("etcd", &format!("etcd: {why}"));
            n.events.service(n.machine_id(), "etcd", "Failed", why, "");
        }
    }
    for n in nodes.iter().filter(|n| up(n)) {
        let waiting = {
            let st = n.state();
            st.etcd.is_none() && st.etcd_down.is_none() && !st.rebooting
        };
        let Some(id) = waiting.then(|| identity(n)).flatten() else {
            continue;
        };
        let found = nodes
            .iter()
            .filter(|p| p.name() != n.name() && up(p))
            .find_map(|p| {
                let st = p.state();
                match (&st.etcd, &st.etcd_down) {
                    (Some(m), None) if m.lock().identity == id => Some(Arc::clone(&m.cluster)),
                    _ => None,
                }
            });
        let Some(cluster) = found else { continue };
        let live = alive(registry, &cluster);
        let name = n.hostname().hostname;
        let name = if name.is_empty() { n.name() } else { name };
        let member = {
            let mut c = cluster.lock().unwrap_or_else(|e| e.into_inner());
            if !c.quorum(&live) {
                continue;
            }
            c.join(&name, &n.name())
        };
        {
            let mut st = n.state();
            st.etcd = Some(Membership {
                cluster,
                id: member,
            });
            st.etcd_bootstrapped = true;
        }
        n.etcd_started("etcd: joined the cluster as a learner, promoted (simulated)");
    }
    let mut seen: Vec<Arc<Mutex<Cluster>>> = Vec::new();
    for n in &nodes {
        let m = n.state().etcd.clone();
        if let Some(m) = m {
            if !seen.iter().any(|c| Arc::ptr_eq(c, &m.cluster)) {
                seen.push(m.cluster);
            }
        }
    }
    for c in seen {
        let live = alive(registry, &c);
        c.lock().unwrap_or_else(|e| e.into_inner()).elect(&live);
    }
}

/// Runs [`reconcile`] every 200 ms until the simulator stops.
pub async fn keep_joining(registry: Arc<Registry>, stop: CancellationToken) {
    loop {
        reconcile(&registry);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(200)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_leadership_and_keyspace_move_together() {
        let (mut c, a) = Cluster::bootstrap("ca", "cp-1", "10.0.0.1");
        assert_eq!(c.leader, a);
        let keys = c.kvs.len();
        let rev = c.revision;
        let b = c.join("cp-2", "10.0.0.2");
        let d = c.join("cp-3", "fd00::3");
        assert_eq!(c.members.len(), 3);
        assert_eq!(c.kvs.len(), keys + 2);
        assert_eq!(c.revision, rev + 2);
        assert_eq!(c.members[2].peer_urls(), ["https://[fd00::3]:2380"]);
        let all: HashSet<u64> = [a, b, d].into();
        assert_eq!(c.hand_over(b, &all), None, "b does not lead");
        assert_eq!(c.hand_over(a, &all).as_deref(), Some("cp-2"));
        assert_eq!(c.leader, b);
        // Two of three down: no quorum, no leader.
        c.elect(&[a].into());
        assert_eq!(c.leader, 0);
        c.elect(&[a, d].into());
        assert_eq!(c.leader, a);
        let size = c.size();
        assert!(c.remove(b));
        assert!(!c.remove(b));
        assert!(c.size() > c.in_use() && c.size() >= size);
        c.defragment();
        assert_eq!(c.size(), c.in_use());
        let file = c.snapshot();
        let db = snapshot::decode(snapshot::verified(&file, false).unwrap()).unwrap();
        let (r, _) = Cluster::restore("ca", "cp-9", "10.0.0.9", db);
        assert_eq!((r.revision, r.kvs.clone()), (c.revision, c.kvs.clone()));
        assert_eq!(r.members.len(), 1);
    }
}
