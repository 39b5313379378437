//! Who is asking and what they may do: the client certificate's subject (CN the user, O the
//! groups) as kube-apiserver's x509 authenticator reads it, and an authorizer that lets
//! `system:masters` do anything and everyone else only discovery and health (403 otherwise).

use rustls::pki_types::CertificateDer;
use x509_parser::prelude::{FromDer, X509Certificate};

use super::route::Target;
use super::status::{Failure, Reason};

/// The authenticated user of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum User {
    /// No client certificate.
    Anonymous,
    Cert {
        name: String,
        groups: Vec<String>,
    },
}

impl User {
    /// The user of a verified client certificate.
    pub fn of_cert(cert: &CertificateDer<'_>) -> User {
        let Ok((_, c)) = X509Certificate::from_der(cert) else {
            return User::Anonymous;
        };
        let name = c
            .subject()
            .iter_common_name()
            .filter_map(|n| n.as_str().ok())
            .next()
            .unwrap_or_default()
            .to_string();
        let groups = c
            .subject()
            .iter_organization()
            .filter_map(|o| o.as_str().ok())
            .map(str::to_string)
            .collect();
        User::Cert { name, groups }
    }

    fn is_master(&self) -> bool {
        matches!(self, User::Cert { groups, .. } if groups.iter().any(|g| g == "system:masters"))
    }
}

/// The RBAC verb of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
        }
    }
}

/// The 401 of a request without credentials.
pub fn unauthorized() -> Failure {
    Failure::new(Reason::Unauthorized, "Unauthorized")
}

/// Whether `user` may do `verb` on `target`; the 403 reads as kube-apiserver's RBAC denial.
pub fn authorize(user: &User, verb: Verb, target: &Target) -> Result<(), Failure> {
    let User::Cert { name, .. } = user else {
        return Err(unauthorized());
    };
    if user.is_master() {
        return Ok(());
    }
    let k = target.kind;
    let resource = match target.sub {
        Some(s) => format!("{}/{}", k.plural, s.name()),
        None => k.plural.to_string(),
    };
    // The object is named by its group resource, without the subresource.
    let qualified = k.resource();
    let subject = match &target.name {
        Some(n) => format!("{qualified} \"{n}\""),
        None => qualified,
    };
    let scope = match &target.namespace {
        Some(ns) => format!("in the namespace \"{ns}\""),
        None => "at the cluster scope".into(),
    };
    let message = format!(
        "{subject} is forbidden: User \"{name}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
        verb.as_str(),
        k.group
    );
    let mut f = Failure::about(Reason::Forbidden, message, &target.named());
    if let Some(d) = f.details.as_mut() {
        d["kind"] = k.plural.into();
    }
    Err(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::route::{route, Route};

    fn target(path: &str) -> Target {
        match route(path) {
            Route::Object(t) => t,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn masters_pass_others_are_forbidden() {
        let admin = User::Cert {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
        };
        let bob = User::Cert {
            name: "bob".into(),
            groups: vec!["dev".into()],
        };
        assert!(authorize(&admin, Verb::List, &target("/api/v1/nodes")).is_ok());
        let err = authorize(&bob, Verb::List, &target("/api/v1/nodes")).unwrap_err();
        assert_eq!(
            err.message,
            "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
        );
        assert_eq!(err.code(), 403);
        let ev = authorize(
            &bob,
            Verb::Create,
            &target("/api/v1/namespaces/d/pods/p/eviction"),
        )
        .unwrap_err();
        assert_eq!(
            ev.message,
            "pods \"p\" is forbidden: User \"bob\" cannot create resource \"pods/eviction\" in API group \"\" in the namespace \"d\""
        );
        assert_eq!(
            authorize(&User::Anonymous, Verb::Get, &target("/api/v1/nodes"))
                .unwrap_err()
                .code(),
            401
        );
    }
}
