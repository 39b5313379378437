//! The writes kube-apiserver takes on a resource: create (POST), update (PUT), the patches
//! and server-side apply (PATCH), delete (a namespace takes its contents with it), delete of
//! a collection, and eviction. Every write honours `?dryRun=All` (validated, answered, not
//! stored). Main-resource writes keep the stored `status` of types with a status
//! subresource; `/status` writes change only the status; `/scale` only `spec.replicas`.

use serde_json::Value;

use super::apply;
use super::evict;
use super::handle::{get, key_of, list_kind, scale_of, Answer, Filter, Reply, Req};
use super::patch::{self, PatchKind};
use super::proto;
use super::resources::{Kind, Sub};
use super::status::{self, Failure, Named, Reason};
use crate::kube::store::{self, Key, Object, Refusal};
use crate::kube::Kube;

/// How many times a patch is retried when the object changed under it.
const RETRIES: usize = 8;

/// The request body as JSON (YAML bodies are read too).
fn body(req: &Req<'_>) -> Result<Value, Failure> {
    let unsupported = || {
        Failure::new(
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml; {}",
                req.content_type
            ),
        )
    };
    if req.content_type.contains("protobuf") {
        return match proto::decode(req.body) {
            Ok(v) => Ok(v),
            Err(proto::Unreadable::Kind(_)) => Err(unsupported()),
            Err(proto::Unreadable::Malformed) => Err(Failure::bad_request(
                "the body of the request could not be decoded: malformed protobuf",
            )),
        };
    }
    if req.content_type.contains("cbor") {
        return Err(unsupported());
    }
    let yaml = req.content_type.contains("yaml");
    let parsed = if yaml {
        serde_yaml_ng::from_slice::<Value>(req.body).map_err(|e| e.to_string())
    } else {
        serde_json::from_slice::<Value>(req.body).map_err(|e| e.to_string())
    };
    match parsed {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(Failure::bad_request(
            "the body of the request is not an object",
        )),
        Err(e) => Err(Failure::bad_request(format!(
            "the body of the request could not be decoded: {e}"
        ))),
    }
}

/// Checks the body's `apiVersion` and `kind` against the URL's type and fills them in.
fn typed(kind: &Kind, obj: &mut Value) -> Result<(), Failure> {
    let want = kind.api_version();
    for (field, expected) in [("apiVersion", want.as_str()), ("kind", kind.kind)] {
        match obj[field].as_str() {
            None | Some("") => obj[field] = expected.into(),
            Some(x) if x == expected => {}
            Some(x) => {
                return Err(Failure::bad_request(format!(
                    "the {field} of the provided object ({x}) does not match the {field} of the resource ({expected})"
                )))
            }
        }
    }
    Ok(())
}

/// The namespace a write goes to: the URL's; the body's must agree.
fn namespace_of(req: &Req<'_>, obj: &mut Value) -> Result<String, Failure> {
    let kind = req.target.kind;
    if !kind.namespaced {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        return Ok(String::new());
    }
    let ns = req.target.namespace.clone().unwrap_or_default();
    match obj["metadata"]["namespace"].as_str() {
        Some(x) if !x.is_empty() && x != ns => Err(Failure::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
        _ => {
            obj["metadata"]["namespace"] = ns.clone().into();
            Ok(ns)
        }
    }
}

/// A namespaced object can only be made in a namespace that exists.
fn need_namespace(kube: &Kube, kind: &Kind, ns: &str) -> Result<(), Failure> {
    if !kind.namespaced || kube.objects.get(&Key::new("namespaces", "", ns)).is_some() {
        return Ok(());
    }
    Err(Failure::not_found(&Named {
        plural: "namespaces",
        group: "",
        name: ns,
    }))
}

/// kube-apiserver's name suffixes for `generateName`: five of these.
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn suffix() -> String {
    use std::hash::BuildHasher;
    let mut n = std::collections::hash_map::RandomState::new().hash_one(0u8);
    (0..5)
        .map(|_| {
            let c = ALPHABET[(n % ALPHABET.len() as u64) as usize] as char;
            n /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// The name of an object to create: `metadata.name`, or `generateName` and a suffix.
fn name_of(kind: &Kind, obj: &mut Value) -> Result<String, Failure> {
    if let Some(n) = obj["metadata"]["name"].as_str().filter(|n| !n.is_empty()) {
        return Ok(n.to_string());
    }
    if let Some(g) = obj["metadata"]["generateName"]
        .as_str()
        .filter(|n| !n.is_empty())
    {
        let n = format!("{g}{}", suffix());
        obj["metadata"]["name"] = n.clone().into();
        return Ok(n);
    }
    Err(Failure::invalid(
        kind.kind,
        &Named {
            plural: kind.plural,
            group: kind.group,
            name: "",
        },
        "metadata.name",
        "Required value: name or generateName is required",
    ))
}

/// What the API server fills in on create: a namespace's finalizer, phase and name label; a
/// secret's type.
fn defaults(kind: &Kind, obj: &mut Value) {
    if kind.resource() == "secrets" && obj["type"].as_str().is_none_or(str::is_empty) {
        obj["type"] = "Opaque".into();
    }
    if kind.resource() == "namespaces" {
        if obj["spec"]["finalizers"].is_null() {
            obj["spec"]["finalizers"] = serde_json::json!(["kubernetes"]);
        }
        obj["status"]["phase"] = "Active".into();
        let name = obj["metadata"]["name"].clone();
        obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    }
}

/// A namespace as the API server makes it.
pub fn namespace_object(name: &str) -> Value {
    let mut ns =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    if let Some(kind) = super::resources::by_resource("namespaces") {
        defaults(kind, &mut ns);
    }
    ns
}

fn refused(r: Refusal, target: &Named<'_>) -> Failure {
    match r {
        Refusal::Exists => Failure::exists(target),
        Refusal::Missing => Failure::not_found(target),
        Refusal::Stale => Failure::stale(target),
    }
}

fn named_of<'a>(kind: &'a Kind, name: &'a str) -> Named<'a> {
    Named {
        plural: kind.plural,
        group: kind.group,
        name,
    }
}

/// Stores a new object (or, dry, shows what would be stored).
fn make(kube: &Kube, key: &Key, mut obj: Value, dry: bool) -> Result<Value, Refusal> {
    if !dry {
        return kube.objects.create(key, obj);
    }
    if kube.objects.get(key).is_some() {
        return Err(Refusal::Exists);
    }
    obj["metadata"]["creationTimestamp"] = store::now().into();
    Ok(obj)
}

/// Replaces a stored object (or, dry, shows what would be stored).
fn replace(kube: &Kube, key: &Key, obj: Value, live: &Value, dry: bool) -> Result<Value, Refusal> {
    if !dry {
        return kube.objects.update(key, obj);
    }
    let asked = obj["metadata"]["resourceVersion"].as_str().unwrap_or("");
    if !asked.is_empty() && Some(asked) != live["metadata"]["resourceVersion"].as_str() {
        return Err(Refusal::Stale);
    }
    Ok(obj)
}

pub fn create(kube: &Kube, req: &Req<'_>) -> Answer {
    let kind = req.target.kind;
    let dry = req.dry_run()?;
    let mut obj = body(req)?;
    typed(kind, &mut obj)?;
    let ns = namespace_of(req, &mut obj)?;
    let name = name_of(kind, &mut obj)?;
    need_namespace(kube, kind, &ns)?;
    defaults(kind, &mut obj);
    let key = Key::new(&kind.resource(), &ns, &name);
    let made = make(kube, &key, obj, dry).map_err(|r| refused(r, &named_of(kind, &name)))?;
    Ok(Reply::Json(201, made))
}

/// What a write through `sub` makes of the stored object.
fn scoped(kind: &Kind, sub: Option<Sub>, live: &Value, new: Value) -> Value {
    match sub {
        None if kind.has(Sub::Status) => {
            let mut obj = new;
            match live.get("status") {
                Some(s) => obj["status"] = s.clone(),
                None => {
                    if let Some(m) = obj.as_object_mut() {
                        m.remove("status");
                    }
                }
            }
            obj
        }
        Some(Sub::Status) => {
            let mut obj = live.clone();
            obj["status"] = new.get("status").cloned().unwrap_or(Value::Null);
            if let Some(rv) = new["metadata"].get("resourceVersion") {
                obj["metadata"]["resourceVersion"] = rv.clone();
            }
            obj
        }
        Some(Sub::Scale) => {
            let mut obj = live.clone();
            obj["spec"]["replicas"] = new["spec"]["replicas"].clone();
            if let Some(rv) = new["metadata"].get("resourceVersion") {
                obj["metadata"]["resourceVersion"] = rv.clone();
            }
            obj
        }
        _ => new,
    }
}

/// The answer of a write through `sub`: the object, or its Scale view.
fn shown(sub: Option<Sub>, obj: Value) -> Value {
    if sub == Some(Sub::Scale) {
        scale_of(&obj)
    } else {
        obj
    }
}

pub fn update(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let kind = t.kind;
    let name = t.name.clone().unwrap_or_default();
    let dry = req.dry_run()?;
    let mut obj = body(req)?;
    if t.sub != Some(Sub::Scale) {
        typed(kind, &mut obj)?;
        namespace_of(req, &mut obj)?;
    }
    match obj["metadata"]["name"].as_str() {
        Some(n) if !n.is_empty() && n != name => {
            return Err(Failure::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
        _ => obj["metadata"]["name"] = name.clone().into(),
    }
    let key = key_of(t);
    let live = get(kube, req)?;
    let merged = scoped(kind, t.sub, &live, obj);
    let stored =
        replace(kube, &key, merged, &live, dry).map_err(|r| refused(r, &named_of(kind, &name)))?;
    Ok(Reply::Json(200, shown(t.sub, stored)))
}

pub fn patch(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let Some(how) = PatchKind::of_content_type(req.content_type) else {
        return Err(Failure::new(
            Reason::UnsupportedMediaType,
            patch::UNSUPPORTED,
        ));
    };
    if how == PatchKind::Apply {
        return server_side_apply(kube, req);
    }
    let dry = req.dry_run()?;
    let change: Value = serde_json::from_slice(req.body)
        .map_err(|e| Failure::bad_request(format!("error decoding patch: {e}")))?;
    let pinned = !change["metadata"]["resourceVersion"].is_null();
    let name = t.name.clone().unwrap_or_default();
    let key = key_of(t);
    for _ in 0..RETRIES {
        let live = get(kube, req)?;
        let mut view = shown(t.sub, live.clone());
        match how {
            PatchKind::Merge => patch::merge(&mut view, &change),
            PatchKind::Strategic => patch::strategic(&mut view, &change),
            PatchKind::Json => patch::json(&mut view, &change)
                .map_err(|e| Failure::about(Reason::Invalid, e, &named_of(t.kind, &name)))?,
            PatchKind::Apply => unreachable!("handled above"),
        }
        if view["metadata"]["resourceVersion"].is_null() || !pinned {
            view["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"].clone();
        }
        let merged = scoped(t.kind, t.sub, &live, view);
        match replace(kube, &key, merged, &live, dry) {
            Ok(obj) => return Ok(Reply::Json(200, shown(t.sub, obj))),
            Err(Refusal::Stale) if !pinned => continue,
            Err(r) => return Err(refused(r, &named_of(t.kind, &name))),
        }
    }
    Err(Failure::stale(&named_of(t.kind, &name)))
}

fn server_side_apply(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let kind = t.kind;
    let name = t.name.clone().unwrap_or_default();
    let dry = req.dry_run()?;
    let manager = match req.param("fieldManager") {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => {
            return Err(Failure::bad_request(
                "PATCH requests with the apply content type (application/apply-patch+yaml) require the fieldManager parameter",
            ))
        }
    };
    let force = matches!(req.param("force"), Some("true" | "1"));
    let mut applied: Value = serde_yaml_ng::from_slice(req.body)
        .map_err(|e| Failure::bad_request(format!("error decoding YAML: {e}")))?;
    if !applied.is_object() {
        return Err(Failure::bad_request("error decoding YAML: not an object"));
    }
    typed(kind, &mut applied)?;
    let ns = namespace_of(req, &mut applied)?;
    match applied["metadata"]["name"].as_str() {
        Some(n) if n == name => {}
        Some(n) if !n.is_empty() => {
            return Err(Failure::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )))
        }
        _ => applied["metadata"]["name"] = name.clone().into(),
    }
    let key = key_of(t);
    let now = store::now();
    for _ in 0..RETRIES {
        let live = kube.objects.get(&key);
        let conflict = |c: apply::Conflicts| {
            let mut f = Failure::about(Reason::Conflict, c.message(), &named_of(kind, &name));
            if let Some(d) = f.details.as_mut() {
                d["causes"] = c
                    .0
                    .iter()
                    .map(|(m, p)| {
                        serde_json::json!({"reason": "FieldManagerConflict", "message": format!("conflict with \"{m}\""), "field": p})
                    })
                    .collect();
            }
            f
        };
        let Some(live) = live else {
            need_namespace(kube, kind, &ns)?;
            let mut obj = apply::apply(None, &applied, &manager, force, &now).map_err(conflict)?;
            defaults(kind, &mut obj);
            match make(kube, &key, obj, dry) {
                Ok(made) => return Ok(Reply::Json(201, made)),
                Err(Refusal::Exists) => continue,
                Err(r) => return Err(refused(r, &named_of(kind, &name))),
            }
        };
        let mut obj =
            apply::apply(Some(&live), &applied, &manager, force, &now).map_err(conflict)?;
        obj["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"].clone();
        let merged = scoped(kind, t.sub, &live, obj);
        match replace(kube, &key, merged, &live, dry) {
            Ok(stored) => return Ok(Reply::Json(200, stored)),
            Err(Refusal::Stale | Refusal::Missing) => continue,
            Err(r) => return Err(refused(r, &named_of(kind, &name))),
        }
    }
    Err(Failure::stale(&named_of(kind, &name)))
}

/// kube-apiserver's namespaces that may not be deleted.
const UNDELETABLE: [&str; 3] = ["default", "kube-system", "kube-public"];

/// Removes every object in a namespace (what the namespace controller does on deletion).
fn empty_namespace(kube: &Kube, ns: &str) {
    for kind in super::resources::KINDS.iter().filter(|k| k.namespaced) {
        let resource = kind.resource();
        for obj in kube.objects.list(&resource, Some(ns)).0 {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            kube.objects.delete(&Key::new(&resource, ns, name));
        }
    }
}

pub fn delete(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let name = t.name.clone().unwrap_or_default();
    let dry = req.dry_run()?;
    let live = get(kube, req)?;
    let options: Value = if req.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(req.body)
            .map_err(|e| Failure::bad_request(format!("invalid DeleteOptions: {e}")))?
    };
    // DeleteOptions may carry the dry run instead of the query (client-go, kubectl do).
    let dry = dry
        || options["dryRun"]
            .as_array()
            .is_some_and(|a| a.iter().any(|v| v == "All"));
    let pre = &options["preconditions"];
    for (field, label) in [("uid", "UID"), ("resourceVersion", "ResourceVersion")] {
        if let Some(want) = pre[field].as_str() {
            let have = live["metadata"][field].as_str().unwrap_or_default();
            if want != have {
                return Err(Failure::about(
                    Reason::Conflict,
                    format!("Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}"),
                    &t.named(),
                ));
            }
        }
    }
    let is_ns = t.kind.resource() == "namespaces";
    if is_ns && UNDELETABLE.contains(&name.as_str()) {
        return Err(Failure::about(
            Reason::Forbidden,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
            &t.named(),
        ));
    }
    if dry {
        return Ok(Reply::Json(200, live));
    }
    if is_ns {
        empty_namespace(kube, &name);
    }
    let gone = kube
        .objects
        .delete(&key_of(t))
        .ok_or_else(|| Failure::not_found(&t.named()))?;
    Ok(Reply::Json(200, gone))
}

pub fn delete_collection(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let dry = req.dry_run()?;
    let filter = Filter::of(req)?;
    let resource = t.kind.resource();
    let (items, _) = kube.objects.list(&resource, t.namespace.as_deref());
    let mut gone = Vec::new();
    for obj in items.into_iter().filter(|o| filter.matches(o)) {
        if dry {
            gone.push(obj);
            continue;
        }
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = obj["metadata"]["name"].as_str().unwrap_or_default();
        if let Some(o) = kube.objects.delete(&Key::new(&resource, ns, name)) {
            gone.push(Object::new(o));
        }
    }
    Ok(Reply::Json(
        200,
        serde_json::json!({
            "kind": list_kind(t.kind),
            "apiVersion": t.kind.api_version(),
            "metadata": {"resourceVersion": kube.objects.version().to_string()},
            "items": store::shown(&gone),
        }),
    ))
}

pub fn evict(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    let name = t.name.clone().unwrap_or_default();
    let dry = req.dry_run()?;
    if !req.body.is_empty() {
        let eviction = body(req)?;
        if let Some(n) = eviction["metadata"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
        {
            if n != name {
                return Err(Failure::bad_request(
                    "name in URL does not match name in Eviction object",
                ));
            }
        }
    }
    let pod = get(kube, req)?;
    let ns = t.namespace.as_deref();
    let pdbs = kube.objects.list("poddisruptionbudgets.policy", ns).0;
    let pods = kube.objects.list("pods", ns).0;
    evict::judge(&pod, &pdbs, &pods)?;
    if !dry {
        kube.objects.delete(&key_of(t));
    }
    Ok(Reply::Json(201, status::success(201)))
}
