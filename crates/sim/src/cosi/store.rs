//! A simulated node's COSI resource store, as Talos's in-memory state keeps it: the resources of
//! each (namespace, type) with their versions and timestamps, and a per-type event history ring
//! (initial capacity 8, growing to 1024, gap 4) that watches replay and follow. The store is kept
//! in step with the node's state by `sync`, which turns differences into CREATED, UPDATED and
//! DESTROYED events; a reboot empties it, as it empties Talos's memory. A sync may bring only
//! some types in step (`Only`): the Kubernetes controllers read a control plane's static pods
//! that way, and a node nobody asks for all its resources keeps only those.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::cosi::content::Outside;
use crate::cosi::facts::{self, Res};
use crate::cosi::protospec;
use crate::node::hardware::Hardware;
use crate::node::state::State;
use talm_wire::proto::cosi::resource as cosi;

/// History ring sizes Talos configures for its in-memory state.
const INITIAL_CAPACITY: usize = 8;
const MAX_CAPACITY: usize = 1024;
pub const GAP: usize = 4;

/// What happened to a resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Created,
    Updated,
    Destroyed,
}

/// One entry of a type's history.
#[derive(Debug, Clone)]
pub struct Event {
    pub change: Change,
    pub resource: cosi::Resource,
    /// The resource before an update.
    pub old: Option<cosi::Resource>,
    /// Position in the history (what the bookmark encodes).
    pub pos: i64,
}

/// A watcher fell further behind than the ring holds.
#[derive(Debug)]
pub struct Overrun(pub String);

/// The resources and history of one (namespace, type).
pub struct Kind {
    ns: String,
    ty: String,
    /// The node's change count the type's resources reflect (`None`: never brought in step).
    generation: Option<u64>,
    items: BTreeMap<String, cosi::Resource>,
    /// The history ring: `cap` slots, allocated at the first event (most types of most nodes
    /// never change after their first fill and are never watched), each event boxed so that
    /// an empty slot costs a pointer.
    ring: Vec<Option<Box<Event>>>,
    cap: usize,
    write_pos: i64,
}

impl Kind {
    fn new(ns: &str, ty: &str) -> Kind {
        Kind {
            ns: ns.into(),
            ty: ty.into(),
            generation: None,
            items: BTreeMap::new(),
            ring: Vec::new(),
            cap: INITIAL_CAPACITY,
            write_pos: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.cap
    }

    pub fn write_pos(&self) -> i64 {
        self.write_pos
    }

    /// The current resources, sorted by ID.
    pub fn items(&self) -> impl Iterator<Item = &cosi::Resource> {
        self.items.values()
    }

    pub fn item(&self, id: &str) -> Option<&cosi::Resource> {
        self.items.get(id)
    }

    /// Lowest position a bookmark may name (may be negative while the ring is young).
    pub fn lower(&self) -> i64 {
        self.write_pos - self.capacity() as i64 + GAP as i64
    }

    /// Lowest position still replayable.
    pub fn min_pos(&self) -> i64 {
        self.lower().max(0)
    }

    /// The event at a position still in the ring.
    pub fn at(&self, pos: i64) -> Option<&Event> {
        let slot = pos.rem_euclid(self.capacity() as i64) as usize;
        self.ring.get(slot).and_then(|e| e.as_deref())
    }

    /// Events from `pos` to the end, or an overrun when `pos` has been overwritten.
    pub fn since(&self, pos: i64) -> Result<Vec<Event>, Overrun> {
        if self.write_pos - pos > self.capacity() as i64 {
            return Err(Overrun(format!(
                "buffer overrun: namespace {:?} type {:?}, write pos {}, pos {}, capacity {}",
                self.ns,
                self.ty,
                self.write_pos,
                pos,
                self.capacity()
            )));
        }
        Ok((pos.max(0)..self.write_pos)
            .filter_map(|p| self.at(p).cloned())
            .collect())
    }

    fn publish(&mut self, change: Change, resource: cosi::Resource, old: Option<cosi::Resource>) {
        if self.write_pos == self.capacity() as i64 && self.capacity() < MAX_CAPACITY {
            self.cap = (self.capacity() * 2).min(MAX_CAPACITY);
        }
        if self.ring.len() < self.cap {
            self.ring.resize(self.cap, None);
        }
        let slot = self.write_pos.rem_euclid(self.capacity() as i64) as usize;
        self.ring[slot] = Some(Box::new(Event {
            change,
            resource,
            old,
            pos: self.write_pos,
        }));
        self.write_pos += 1;
    }
}

/// The random cookie that tells this process's bookmarks from another's.
fn cookie() -> &'static [u8; 8] {
    static COOKIE: OnceLock<[u8; 8]> = OnceLock::new();
    COOKIE.get_or_init(talm_wire::pki::random_bytes::<8>)
}

/// A bookmark for a history position: the cookie and the position, big-endian.
pub fn bookmark(pos: i64) -> Vec<u8> {
    let mut b = cookie().to_vec();
    b.extend_from_slice(&(pos as u64).to_be_bytes());
    b
}

/// The position a bookmark marks, if it is one of ours.
pub fn unbookmark(b: &[u8]) -> Option<i64> {
    if b.len() != 16 || &b[..8] != cookie() {
        return None;
    }
    let mut pos = [0u8; 8];
    pos.copy_from_slice(&b[8..]);
    Some(u64::from_be_bytes(pos) as i64)
}

pub fn timestamp(t: time::OffsetDateTime) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: t.unix_timestamp(),
        nanos: t.nanosecond() as i32,
    }
}

/// A resource's metadata-only stand-in: what COSI sends for a missing or bootstrap marker.
pub fn tombstone(ns: &str, ty: &str, id: &str) -> cosi::Resource {
    let now = timestamp(time::OffsetDateTime::now_utc());
    cosi::Resource {
        metadata: Some(cosi::Metadata {
            namespace: ns.into(),
            r#type: ty.into(),
            id: id.into(),
            version: "undefined".into(),
            phase: "running".into(),
            created: Some(now),
            updated: Some(now),
            ..Default::default()
        }),
        spec: Some(cosi::Spec::default()),
    }
}

/// Which types a sync brings in step.
#[derive(Clone, Copy)]
pub enum Only<'a> {
    /// Every type.
    All,
    /// These (namespace, type) pairs.
    Kinds(&'a [(&'a str, &'a str)]),
}

impl Only<'_> {
    fn has(&self, ns: &str, ty: &str) -> bool {
        match self {
            Only::All => true,
            Only::Kinds(k) => k.iter().any(|(n, t)| *n == ns && *t == ty),
        }
    }
}

struct Inner {
    /// The boot the contents belong to (0: never filled).
    boots: u64,
    /// The node's change count every type reflects (after a sync of them all).
    generation: Option<u64>,
    kinds: HashMap<(String, String), Kind>,
    /// Labels put on resources from outside (tests, rehearsals), by (namespace, type, id).
    labels: BTreeMap<(String, String, String), BTreeMap<String, String>>,
}

/// The resource store of one node.
pub struct Store {
    inner: Mutex<Inner>,
}

impl Default for Store {
    fn default() -> Self {
        Store {
            inner: Mutex::new(Inner {
                boots: 0,
                generation: None,
                kinds: HashMap::new(),
                labels: BTreeMap::new(),
            }),
        }
    }
}

/// The parts of a resource whose change makes a new version.
fn same(a: &cosi::Resource, b: &cosi::Resource) -> bool {
    let (ma, mb) = (a.metadata.as_ref(), b.metadata.as_ref());
    a.spec == b.spec
        && ma.map(|m| (&m.owner, &m.labels, &m.annotations))
            == mb.map(|m| (&m.owner, &m.labels, &m.annotations))
}

impl Store {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Brings the store in step with the node's state and what it learns from outside as of
    /// `generation` (a fingerprint of both; nothing to do when it already is); a new boot starts from scratch.
    /// `only` names the types to bring in step; the others are left as they are.
    pub fn sync(
        &self,
        hw: &Hardware,
        st: &State,
        outside: &Outside,
        generation: u64,
        only: Only<'_>,
    ) {
        let now = time::OffsetDateTime::now_utc();
        let mut inner = self.lock();
        if inner.boots == st.boots && inner.generation == Some(generation) {
            return;
        }
        if let Only::Kinds(kinds) = only {
            let current = |(ns, ty): &(&str, &str)| {
                inner
                    .kinds
                    .get(&(ns.to_string(), ty.to_string()))
                    .is_some_and(|k| k.generation == Some(generation))
            };
            if inner.boots == st.boots && kinds.iter().all(current) {
                return;
            }
        } else {
            inner.generation = Some(generation);
        }
        // A type filled for the first time this boot: its resources exist since the boot began
        // (the node's creation, on its first boot); later changes happen now.
        let since_boot =
            timestamp(time::OffsetDateTime::from_unix_timestamp(st.booted).unwrap_or(now));
        if inner.boots != st.boots {
            inner.boots = st.boots;
            inner.kinds.clear();
            if let Only::Kinds(_) = only {
                inner.generation = None;
            }
        }
        let mut desired: HashMap<(String, String), BTreeMap<String, Res>> = HashMap::new();
        for def in facts::defs() {
            if only.has(&def.namespace, &def.ty) {
                desired.insert((def.namespace.clone(), def.ty.clone()), BTreeMap::new());
            }
        }
        for r in facts::all(hw, st, outside) {
            if !only.has(r.namespace, r.ty) {
                continue;
            }
            desired
                .entry((r.namespace.into(), r.ty.into()))
                .or_default()
                .insert(r.id.clone(), r);
        }
        let Inner { kinds, labels, .. } = &mut *inner;
        for ((ns, ty), want) in desired {
            let kind = kinds
                .entry((ns.clone(), ty.clone()))
                .or_insert_with(|| Kind::new(&ns, &ty));
            if kind.generation == Some(generation) {
                continue;
            }
            let stamp = match kind.generation {
                None => since_boot,
                Some(_) => timestamp(now),
            };
            kind.generation = Some(generation);
            let gone: Vec<String> = kind
                .items
                .keys()
                .filter(|id| !want.contains_key(*id))
                .cloned()
                .collect();
            for id in gone {
                if let Some(old) = kind.items.remove(&id) {
                    kind.publish(Change::Destroyed, old, None);
                }
            }
            for (id, r) in want {
                let extra = labels.get(&(ns.clone(), ty.clone(), id.clone()));
                let mut fresh = to_proto(&r, extra, stamp);
                match kind.items.get(&id) {
                    None => {
                        kind.items.insert(id, fresh.clone());
                        kind.publish(Change::Created, fresh, None);
                    }
                    Some(cur) if same(cur, &fresh) => {}
                    Some(cur) => {
                        let old = cur.clone();
                        let prev = old.metadata.as_ref();
                        let version = prev
                            .and_then(|m| m.version.parse::<u64>().ok())
                            .unwrap_or(0)
                            + 1;
                        if let Some(m) = fresh.metadata.as_mut() {
                            m.version = version.max(r.version).to_string();
                            m.created = prev.and_then(|p| p.created);
                            m.updated = Some(timestamp(now));
                        }
                        kind.items.insert(id, fresh.clone());
                        kind.publish(Change::Updated, fresh, Some(old));
                    }
                }
            }
        }
    }

    /// Runs `f` on the kind (created empty when the node has none yet), under the store's lock.
    pub fn with_kind<R>(&self, ns: &str, ty: &str, f: impl FnOnce(&Kind) -> R) -> R {
        let mut inner = self.lock();
        let kind = inner
            .kinds
            .entry((ns.into(), ty.into()))
            .or_insert_with(|| Kind::new(ns, ty));
        f(kind)
    }

    /// Sets (`Some`) or removes (`None`) a label on a resource; takes effect at the next sync.
    pub fn set_label(&self, ns: &str, ty: &str, id: &str, key: &str, value: Option<&str>) {
        let mut inner = self.lock();
        let labels = inner
            .labels
            .entry((ns.into(), ty.into(), id.into()))
            .or_default();
        match value {
            Some(v) => labels.insert(key.into(), v.into()),
            None => labels.remove(key),
        };
    }
}

/// A spec as Talos's YAML encoder (yaml.v3) writes it: a mapping in its key order with 4-space
/// indentation and `""`/`[]`/`{}` for empty values; scalar specs as before.
fn yaml_spec(spec: &serde_yaml_ng::Value) -> String {
    match spec {
        serde_yaml_ng::Value::Mapping(m) if !m.is_empty() => talm_base::yaml::to_string(spec),
        other => serde_yaml_ng::to_string(other).unwrap_or_default(),
    }
}

/// A resource as the API carries it: metadata, YAML spec and protobuf spec.
fn to_proto(
    r: &Res,
    labels: Option<&BTreeMap<String, String>>,
    stamp: prost_types::Timestamp,
) -> cosi::Resource {
    cosi::Resource {
        metadata: Some(cosi::Metadata {
            namespace: r.namespace.into(),
            r#type: r.ty.into(),
            id: r.id.clone(),
            version: r.version.to_string(),
            owner: r.owner.into(),
            phase: "running".into(),
            created: Some(stamp),
            updated: Some(stamp),
            finalizers: vec![],
            labels: labels
                .map(|l| l.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
            annotations: r.annotations.iter().cloned().collect(),
        }),
        spec: Some(cosi::Spec {
            proto_spec: protospec::encode(r.ty, &r.spec),
            yaml_spec: yaml_spec(&r.spec),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(id: &str) -> cosi::Resource {
        tombstone("network", "T", id)
    }

    #[test]
    fn the_ring_grows_on_its_first_turns_then_wraps() {
        let mut k = Kind::new("network", "T");
        for i in 0..8 {
            k.publish(Change::Created, res(&i.to_string()), None);
        }
        assert_eq!(k.capacity(), 8);
        assert_eq!(k.min_pos(), 4, "capacity minus gap");
        k.publish(Change::Created, res("8"), None);
        assert_eq!(k.capacity(), 16);
        for i in 9..2000 {
            k.publish(Change::Created, res(&i.to_string()), None);
        }
        assert_eq!(k.capacity(), 1024);
        assert_eq!(k.since(1999).unwrap()[0].pos, 1999);
        let err = k.since(10).unwrap_err();
        assert_eq!(
            err.0,
            "buffer overrun: namespace \"network\" type \"T\", write pos 2000, pos 10, capacity 1024"
        );
    }

    #[test]
    fn a_sync_of_some_types_fills_only_those() {
        use crate::cosi::content::testing::{configured, hw};
        let (hw, st) = (hw(), configured("worker", "CA"));
        let store = Store::default();
        let outside = Outside::default();
        const HOSTNAME: (&str, &str) = ("network", "HostnameStatuses.net.talos.dev");
        store.sync(&hw, &st, &outside, 1, Only::Kinds(&[HOSTNAME]));
        let held = |s: &Store| {
            let inner = s.lock();
            let mut k: Vec<(String, String)> = inner.kinds.keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(held(&store), [(HOSTNAME.0.into(), HOSTNAME.1.into())]);
        let hostname = store.with_kind(HOSTNAME.0, HOSTNAME.1, |k| k.items().count());
        assert_eq!(hostname, 1);
        // The type read has its ring (allocated at its first event); a full sync fills all.
        store.with_kind(HOSTNAME.0, HOSTNAME.1, |k| assert_eq!(k.ring.len(), 8));
        store.sync(&hw, &st, &outside, 1, Only::All);
        assert!(held(&store).len() > 100, "{}", held(&store).len());
        store.with_kind("config", "MachineTypes.config.talos.dev", |k| {
            assert_eq!(k.items().count(), 1)
        });
    }

    #[test]
    fn bookmarks_round_trip_and_refuse_strangers() {
        assert_eq!(unbookmark(&bookmark(42)), Some(42));
        assert_eq!(unbookmark(&bookmark(-1)), Some(-1));
        assert_eq!(unbookmark(&[0; 16]), None);
        assert_eq!(unbookmark(b"short"), None);
    }
}
