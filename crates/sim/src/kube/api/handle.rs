//! One API request on a resource: the verb its method and query make, the reads (get, list,
//! the scale view, Table answers) and the dispatch to writes (`write`) and watches (`watch`).

use std::collections::HashMap;

use hyper::Method;
use serde_json::{json, Value};

use super::auth::Verb;
use super::resources::{Kind, Sub};
use super::route::Target;
use super::select::{known_fields, Selector};
use super::status::{Failure, Reason};
use super::table::{self, Include};
use super::{watch, write};
use crate::kube::store::{self, Key, Object};
use crate::kube::Kube;

/// A request on a resource, as the handler needs it.
pub struct Req<'a> {
    pub method: &'a Method,
    pub target: Target,
    pub query: HashMap<String, String>,
    pub accept: &'a str,
    pub content_type: &'a str,
    pub body: &'a [u8],
}

impl Req<'_> {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("1" | "true" | "True"))
    }

    /// `?dryRun=All`: validate, answer, store nothing.
    pub fn dry_run(&self) -> Result<bool, Failure> {
        match self.param("dryRun") {
            None | Some("") => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(Failure::bad_request(format!(
                "Invalid dryRun value: {other}; supported values: All"
            ))),
        }
    }

    pub fn watching(&self) -> bool {
        self.flag("watch")
    }
}

/// What the handler answers.
pub enum Reply {
    /// A JSON body with its status code.
    Json(u16, Value),
    /// A watch stream.
    Watch(watch::Spec),
}

pub type Answer = Result<Reply, Failure>;

/// The RBAC verb of a request; `None` for a method the resource does not take.
pub fn verb_of(method: &Method, target: &Target, watching: bool) -> Option<Verb> {
    let named = target.name.is_some();
    Some(match *method {
        Method::GET if watching => Verb::Watch,
        Method::GET if named => Verb::Get,
        Method::GET => Verb::List,
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::PATCH => Verb::Patch,
        Method::DELETE if named => Verb::Delete,
        Method::DELETE => Verb::DeleteCollection,
        _ => return None,
    })
}

/// The objects a list or watch selects: label and field selectors.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub labels: Selector,
    pub fields: Selector,
}

impl Filter {
    pub fn of(req: &Req<'_>) -> Result<Filter, Failure> {
        let labels = Selector::labels(req.param("labelSelector").unwrap_or(""))
            .map_err(Failure::bad_request)?;
        let known = known_fields(&req.target.kind.resource());
        let fields = Selector::fields(req.param("fieldSelector").unwrap_or(""), known)
            .map_err(Failure::bad_request)?;
        Ok(Filter { labels, fields })
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.labels.matches_labels(obj) && self.fields.matches_fields(obj)
    }
}

/// The store key of a named target.
pub fn key_of(target: &Target) -> Key {
    Key::new(
        &target.kind.resource(),
        target.namespace.as_deref().unwrap_or(""),
        target.name.as_deref().unwrap_or(""),
    )
}

fn now_unix() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// An object, or a Table of it when asked.
fn one(req: &Req<'_>, obj: Value) -> Reply {
    if table::wants_table(req.accept) {
        let include = Include::parse(req.param("includeObject"));
        return Reply::Json(
            200,
            table::table(
                req.target.kind,
                &[Object::new(obj)],
                None,
                include,
                now_unix(),
            ),
        );
    }
    Reply::Json(200, obj)
}

/// Answers a request on a resource.
pub fn handle(kube: &Kube, req: &Req<'_>) -> Answer {
    let t = &req.target;
    match (req.method.clone(), t.name.is_some(), t.sub) {
        (Method::GET, true, None | Some(Sub::Status)) => get(kube, req).map(|o| one(req, o)),
        (Method::GET, true, Some(Sub::Scale)) => Ok(Reply::Json(200, scale_of(&get(kube, req)?))),
        (Method::GET, false, _) if req.watching() => {
            Ok(Reply::Watch(watch::Spec::of(req, Filter::of(req)?)?))
        }
        (Method::GET, false, _) => list(kube, req),
        (Method::POST, false, None) => write::create(kube, req),
        (Method::POST, true, Some(Sub::Eviction)) => write::evict(kube, req),
        (Method::PUT, true, Some(Sub::Eviction)) | (Method::PATCH, true, Some(Sub::Eviction)) => {
            Err(not_allowed(req))
        }
        (Method::PUT, true, _) => write::update(kube, req),
        (Method::PATCH, true, _) => write::patch(kube, req),
        (Method::DELETE, true, None) => write::delete(kube, req),
        (Method::DELETE, false, None) => write::delete_collection(kube, req),
        _ => Err(not_allowed(req)),
    }
}

fn not_allowed(req: &Req<'_>) -> Failure {
    Failure::new(
        Reason::MethodNotAllowed,
        format!(
            "the server does not allow this method on the requested resource ({})",
            req.method
        ),
    )
}

/// The stored object of a named target.
pub fn get(kube: &Kube, req: &Req<'_>) -> Result<Value, Failure> {
    kube.objects
        .get(&key_of(&req.target))
        .ok_or_else(|| Failure::not_found(&req.target.named()))
}

/// The `<Kind>List` kind of a type.
pub fn list_kind(kind: &Kind) -> String {
    format!("{}List", kind.kind)
}

/// A list (or Table) of the objects a request selects, with the version it was read at.
/// `limit` is ignored: the whole list comes at once, without `continue`.
fn list(kube: &Kube, req: &Req<'_>) -> Answer {
    let filter = Filter::of(req)?;
    let t = &req.target;
    let (items, version) = kube
        .objects
        .list(&t.kind.resource(), t.namespace.as_deref());
    let items: Vec<Object> = items.into_iter().filter(|o| filter.matches(o)).collect();
    if table::wants_table(req.accept) {
        let include = Include::parse(req.param("includeObject"));
        return Ok(Reply::Json(
            200,
            table::table(t.kind, &items, Some(version), include, now_unix()),
        ));
    }
    Ok(Reply::Json(
        200,
        json!({
            "kind": list_kind(t.kind),
            "apiVersion": t.kind.api_version(),
            "metadata": {"resourceVersion": version.to_string()},
            "items": store::shown(&items),
        }),
    ))
}

/// The `autoscaling/v1 Scale` view of a workload.
pub fn scale_of(obj: &Value) -> Value {
    let m = &obj["metadata"];
    let selector = Selector::of_object(&obj["spec"]["selector"]).map_or(String::new(), |s| {
        if s.0.is_empty() {
            String::new()
        } else {
            s.render()
        }
    });
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": m["name"],
            "namespace": m["namespace"],
            "uid": m["uid"],
            "resourceVersion": m["resourceVersion"],
            "creationTimestamp": m["creationTimestamp"],
        },
        "spec": {"replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": {"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}
