//! The objects of one simulated cluster's Kubernetes API as kube-apiserver keeps them: each
//! under its resource, namespace and name, with the uid, resourceVersion, generation and
//! creationTimestamp the server sets, and the history of changes a watch replays from a
//! resourceVersion (410 Gone once it is older than the history kept).

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio::sync::broadcast;

/// How many changes a watch can replay (kube-apiserver's watch cache keeps a window too).
const HISTORY: usize = 4096;

/// Where an object lives: its resource (`pods`, `deployments.apps`: the plural, then the
/// group when it has one), its namespace (empty for cluster-scoped ones) and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl Key {
    pub fn new(resource: &str, namespace: &str, name: &str) -> Key {
        Key {
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }
}

/// What happened to an object, as a watch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Added,
    Modified,
    Deleted,
}

impl Change {
    /// The watch event's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "ADDED",
            Change::Modified => "MODIFIED",
            Change::Deleted => "DELETED",
        }
    }
}

/// A stored object, shared by the store, its history, the live feed and every list: the
/// controllers list all pods and nodes on each pass, which must not copy them.
pub type Object = Arc<Value>;

/// Objects as a list body serializes them (`Arc` is not `Serialize` without serde's `rc`).
pub fn shown(objects: &[Object]) -> Vec<&Value> {
    objects.iter().map(|o| &**o).collect()
}

/// One change: the object after it (before it, for a deletion, with the deletion's version).
#[derive(Debug, Clone)]
pub struct Event {
    pub change: Change,
    pub key: Key,
    pub object: Object,
    pub version: u64,
}

/// Why a write was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Create of a name that exists (409 AlreadyExists).
    Exists,
    /// Update or delete of a name that does not exist (404 NotFound).
    Missing,
    /// An update whose `metadata.resourceVersion` is not the stored one (409 Conflict).
    Stale,
}

/// A watch's start: the changes after the version asked for, then the live feed.
pub struct Subscription {
    pub backlog: Vec<Event>,
    pub live: broadcast::Receiver<Event>,
}

#[derive(Default)]
struct Inner {
    version: u64,
    uids: u64,
    objects: BTreeMap<Key, Object>,
    history: VecDeque<Event>,
}

/// A cluster's objects.
pub struct Objects {
    inner: Mutex<Inner>,
    feed: broadcast::Sender<Event>,
}

impl Default for Objects {
    fn default() -> Objects {
        Objects {
            inner: Mutex::new(Inner::default()),
            feed: broadcast::channel(HISTORY).0,
        }
    }
}

/// kube-apiserver's timestamps: RFC 3339 in UTC, whole seconds.
pub fn now() -> String {
    let t = time::OffsetDateTime::now_utc();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn meta(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    obj["metadata"].as_object_mut().expect("metadata is a map")
}

/// Whether two versions of an object differ in more than the server's bookkeeping.
fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("resourceVersion");
            m.remove("generation");
        }
        v
    };
    strip(a) == strip(b)
}

impl Inner {
    fn record(
        &mut self,
        change: Change,
        key: &Key,
        object: Object,
        feed: &broadcast::Sender<Event>,
    ) {
        let event = Event {
            change,
            key: key.clone(),
            object,
            version: self.version,
        };
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(event.clone());
        let _ = feed.send(event);
    }

    /// Stamps a stored object with the next version; `generation` grows when `spec` changed.
    fn stamp(&mut self, obj: &mut Value, before: Option<&Value>) {
        self.version += 1;
        let generation = match before {
            None => 1,
            Some(b) => {
                let g = b["metadata"]["generation"].as_i64().unwrap_or(1);
                if b.get("spec") != obj.get("spec") {
                    g + 1
                } else {
                    g
                }
            }
        };
        let version = self.version.to_string();
        let m = meta(obj);
        m.insert("resourceVersion".into(), version.into());
        m.insert("generation".into(), generation.into());
    }

    fn born(&mut self, key: &Key, obj: &mut Value) {
        self.uids += 1;
        let uid = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            self.uids as u32,
            (self.uids >> 32) as u16,
            key.name.len() & 0xfff,
            key.resource.len() & 0xfff,
            self.uids
        );
        let m = meta(obj);
        m.insert("name".into(), key.name.clone().into());
        if !key.namespace.is_empty() {
            m.insert("namespace".into(), key.namespace.clone().into());
        }
        m.insert("uid".into(), uid.into());
        m.entry("creationTimestamp").or_insert_with(|| now().into());
    }
}

impl Objects {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The latest resourceVersion.
    pub fn version(&self) -> u64 {
        self.lock().version
    }

    /// A copy of one object, to read or to change and write back.
    pub fn get(&self, key: &Key) -> Option<Value> {
        self.lock().objects.get(key).map(|o| Value::clone(o))
    }

    /// Every object of `resource` (in `namespace` when given), in name order, and the version
    /// the list was read at.
    pub fn list(&self, resource: &str, namespace: Option<&str>) -> (Vec<Object>, u64) {
        let inner = self.lock();
        let from = Key::new(resource, namespace.unwrap_or(""), "");
        let items = inner
            .objects
            .range(from..)
            .take_while(|(k, _)| {
                k.resource == resource && namespace.is_none_or(|ns| k.namespace == ns)
            })
            .map(|(_, v)| Arc::clone(v))
            .collect();
        (items, inner.version)
    }

    /// Stores a new object; the server's fields are set here.
    pub fn create(&self, key: &Key, mut obj: Value) -> Result<Value, Refusal> {
        let mut inner = self.lock();
        if inner.objects.contains_key(key) {
            return Err(Refusal::Exists);
        }
        inner.born(key, &mut obj);
        inner.stamp(&mut obj, None);
        let stored = Arc::new(obj);
        inner.objects.insert(key.clone(), Arc::clone(&stored));
        inner.record(Change::Added, key, Arc::clone(&stored), &self.feed);
        Ok(Value::clone(&stored))
    }

    /// Replaces an object whole, keeping its identity. A `metadata.resourceVersion` in `obj`
    /// must be the stored one. Nothing changes (no new version) when only bookkeeping differs.
    pub fn update(&self, key: &Key, mut obj: Value) -> Result<Value, Refusal> {
        let mut inner = self.lock();
        let Some(before) = inner.objects.get(key).map(Arc::clone) else {
            return Err(Refusal::Missing);
        };
        let asked = obj["metadata"]["resourceVersion"].as_str().unwrap_or("");
        let stored = before["metadata"]["resourceVersion"].as_str().unwrap_or("");
        if !asked.is_empty() && asked != stored {
            return Err(Refusal::Stale);
        }
        for k in ["uid", "creationTimestamp", "name", "namespace"] {
            if let Some(v) = before["metadata"].get(k) {
                meta(&mut obj).insert(k.into(), v.clone());
            }
        }
        if let Some(g) = before["metadata"].get("generation") {
            meta(&mut obj).insert("generation".into(), g.clone());
        }
        meta(&mut obj).insert("resourceVersion".into(), stored.into());
        if same_content(&before, &obj) {
            return Ok(Value::clone(&before));
        }
        inner.stamp(&mut obj, Some(&before));
        let stored = Arc::new(obj);
        inner.objects.insert(key.clone(), Arc::clone(&stored));
        inner.record(Change::Modified, key, Arc::clone(&stored), &self.feed);
        Ok(Value::clone(&stored))
    }

    /// Changes an object in place (the controllers' read-modify-write); `None` when it is not
    /// there. A change that leaves it as it was makes no new version.
    pub fn modify(&self, key: &Key, change: impl FnOnce(&mut Value)) -> Option<Value> {
        let mut inner = self.lock();
        let before = Arc::clone(inner.objects.get(key)?);
        let mut obj = Value::clone(&before);
        change(&mut obj);
        if same_content(&before, &obj) {
            return Some(Value::clone(&before));
        }
        inner.stamp(&mut obj, Some(&before));
        let stored = Arc::new(obj);
        inner.objects.insert(key.clone(), Arc::clone(&stored));
        inner.record(Change::Modified, key, Arc::clone(&stored), &self.feed);
        Some(Value::clone(&stored))
    }

    /// Creates the object, or brings the stored one to it (keeping identity): what a controller
    /// writes when it owns the whole object.
    pub fn upsert(&self, key: &Key, obj: Value) -> Value {
        match self.create(key, obj.clone()) {
            Ok(v) => v,
            Err(_) => {
                let mut obj = obj;
                if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    m.remove("resourceVersion");
                }
                self.update(key, obj).unwrap_or_else(|_| Value::Null)
            }
        }
    }

    /// Removes an object; the removed object, stamped with the deletion's version.
    pub fn delete(&self, key: &Key) -> Option<Value> {
        let mut inner = self.lock();
        let mut obj = Arc::unwrap_or_clone(inner.objects.remove(key)?);
        inner.version += 1;
        let version = inner.version.to_string();
        meta(&mut obj).insert("resourceVersion".into(), version.into());
        let stored = Arc::new(obj);
        inner.record(Change::Deleted, key, Arc::clone(&stored), &self.feed);
        Some(Value::clone(&stored))
    }

    /// The changes after `since` and the live feed; `None` when `since` is older than the
    /// history kept (a watch answers 410 Gone).
    pub fn subscribe(&self, since: u64) -> Option<Subscription> {
        let inner = self.lock();
        let live = self.feed.subscribe();
        let oldest = inner.history.front().map(|e| e.version);
        if since < inner.version && oldest.is_some_and(|o| since + 1 < o) {
            return None;
        }
        let backlog = inner
            .history
            .iter()
            .filter(|e| e.version > since)
            .cloned()
            .collect();
        Some(Subscription { backlog, live })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"nodeName": "a"}})
    }

    #[test]
    fn versions_grow_only_on_change() {
        let s = Objects::default();
        let k = Key::new("pods", "default", "p");
        let made = s.create(&k, pod("p")).unwrap();
        assert_eq!(made["metadata"]["resourceVersion"], "1");
        assert_eq!(made["metadata"]["namespace"], "default");
        assert_eq!(s.create(&k, pod("p")), Err(Refusal::Exists));
        let same = s.modify(&k, |_| {}).unwrap();
        assert_eq!(same["metadata"]["resourceVersion"], "1");
        let moved = s
            .modify(&k, |p| p["spec"]["nodeName"] = "b".into())
            .unwrap();
        assert_eq!(moved["metadata"]["resourceVersion"], "2");
        assert_eq!(moved["metadata"]["generation"], 2);
        assert_eq!(moved["metadata"]["uid"], made["metadata"]["uid"]);
        let mut stale = made.clone();
        stale["spec"]["nodeName"] = "c".into();
        assert_eq!(s.update(&k, stale), Err(Refusal::Stale));
    }

    #[test]
    fn lists_by_resource_and_namespace() {
        let s = Objects::default();
        for (ns, n) in [("a", "x"), ("b", "y"), ("a", "z")] {
            s.create(&Key::new("pods", ns, n), pod(n)).unwrap();
        }
        s.create(&Key::new("nodes", "", "n1"), json!({})).unwrap();
        let names = |v: Vec<Object>| -> Vec<String> {
            v.iter()
                .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(s.list("pods", None).0), ["x", "z", "y"]);
        assert_eq!(names(s.list("pods", Some("a")).0), ["x", "z"]);
        assert_eq!(names(s.list("nodes", None).0), ["n1"]);
    }

    #[test]
    fn a_watch_replays_what_came_after_its_version() {
        let s = Objects::default();
        let k = Key::new("pods", "default", "p");
        s.create(&k, pod("p")).unwrap();
        s.modify(&k, |p| p["spec"]["nodeName"] = "b".into());
        s.delete(&k).unwrap();
        let sub = s.subscribe(1).unwrap();
        let seen: Vec<(&str, u64)> = sub
            .backlog
            .iter()
            .map(|e| (e.change.as_str(), e.version))
            .collect();
        assert_eq!(seen, [("MODIFIED", 2), ("DELETED", 3)]);
    }
}
