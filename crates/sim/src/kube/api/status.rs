//! kube-apiserver's answers that are not objects: `Status` for failures (with its reasons,
//! messages and codes) and successes, and the plain-text 404 of a path no handler serves.

use serde_json::{json, Value};

/// Why a request failed, as `Status.reason` names it, with its HTTP code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    AlreadyExists,
    Conflict,
    Expired,
    Invalid,
    UnsupportedMediaType,
    TooManyRequests,
    InternalError,
    ServiceUnavailable,
}

impl Reason {
    pub fn code(self) -> u16 {
        match self {
            Reason::BadRequest => 400,
            Reason::Unauthorized => 401,
            Reason::Forbidden => 403,
            Reason::NotFound => 404,
            Reason::MethodNotAllowed => 405,
            Reason::AlreadyExists | Reason::Conflict => 409,
            Reason::Expired => 410,
            Reason::UnsupportedMediaType => 415,
            Reason::Invalid => 422,
            Reason::TooManyRequests => 429,
            Reason::InternalError => 500,
            Reason::ServiceUnavailable => 503,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Expired => "Expired",
            Reason::Invalid => "Invalid",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::ServiceUnavailable => "ServiceUnavailable",
        }
    }
}

/// A failed request: what the client gets as a `Status` body with `code`.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub reason: Reason,
    pub message: String,
    /// `details`: the object's name, its kind (the resource name, as kube-apiserver puts it),
    /// its group, and causes.
    pub details: Option<Value>,
}

impl Failure {
    pub fn new(reason: Reason, message: impl Into<String>) -> Failure {
        Failure {
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// A failure about one object: `details{name, group?, kind}`.
    pub fn about(reason: Reason, message: impl Into<String>, target: &Named<'_>) -> Failure {
        let mut details = json!({});
        if !target.name.is_empty() {
            details["name"] = target.name.into();
        }
        if !target.group.is_empty() {
            details["group"] = target.group.into();
        }
        details["kind"] = target.plural.into();
        Failure {
            reason,
            message: message.into(),
            details: Some(details),
        }
    }

    /// `<plural> "<name>" not found`.
    pub fn not_found(target: &Named<'_>) -> Failure {
        Failure::about(
            Reason::NotFound,
            format!("{} not found", target.quoted()),
            target,
        )
    }

    /// `<plural> "<name>" already exists`.
    pub fn exists(target: &Named<'_>) -> Failure {
        Failure::about(
            Reason::AlreadyExists,
            format!("{} already exists", target.quoted()),
            target,
        )
    }

    /// The optimistic-concurrency conflict of a stale `resourceVersion`.
    pub fn stale(target: &Named<'_>) -> Failure {
        Failure::about(
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {}: the object has been modified; please apply your changes to the latest version and try again",
                target.quoted()
            ),
            target,
        )
    }

    /// `<Kind> "<name>" is invalid: <causes>`, as validation failures read.
    pub fn invalid(kind: &str, target: &Named<'_>, field: &str, why: &str) -> Failure {
        let mut f = Failure::about(
            Reason::Invalid,
            format!("{kind} \"{}\" is invalid: {field}: {why}", target.name),
            target,
        );
        if let Some(d) = f.details.as_mut() {
            d["kind"] = kind.into();
            d["causes"] = json!([{"reason": "FieldValueInvalid", "message": why, "field": field}]);
        }
        f
    }

    pub fn bad_request(message: impl Into<String>) -> Failure {
        Failure::new(Reason::BadRequest, message)
    }

    pub fn code(&self) -> u16 {
        self.reason.code()
    }

    /// The `Status` body.
    pub fn body(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s["code"] = self.code().into();
        s
    }
}

/// An object a message names: resource plural, group and name.
#[derive(Debug, Clone, Copy)]
pub struct Named<'a> {
    pub plural: &'a str,
    pub group: &'a str,
    pub name: &'a str,
}

impl Named<'_> {
    /// `pods "x"`, or `deployments.apps "x"` for a grouped type.
    pub fn quoted(&self) -> String {
        if self.group.is_empty() {
            format!("{} \"{}\"", self.plural, self.name)
        } else {
            format!("{}.{} \"{}\"", self.plural, self.group, self.name)
        }
    }
}

/// A `Status` of success with `code` (what an eviction or a collection delete answers).
pub fn success(code: u16) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code})
}

/// Go's `http.NotFound` body, for paths outside every API handler.
pub const PAGE_NOT_FOUND: &str = "404 page not found\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_reads_as_kube_apiserver() {
        let target = Named {
            plural: "pods",
            group: "",
            name: "x",
        };
        assert_eq!(
            Failure::not_found(&target).body(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"x\" not found", "reason": "NotFound",
                "details": {"name": "x", "kind": "pods"}, "code": 404})
        );
        let dep = Named {
            plural: "deployments",
            group: "apps",
            name: "d",
        };
        assert_eq!(
            Failure::exists(&dep).message,
            "deployments.apps \"d\" already exists"
        );
        assert_eq!(
            Failure::exists(&dep).details,
            Some(json!({"name": "d", "group": "apps", "kind": "deployments"}))
        );
    }
}
