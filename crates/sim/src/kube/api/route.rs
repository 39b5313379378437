//! Where a request goes: kube-apiserver's URL layout (`/api/v1/namespaces/<ns>/<resource>/
//! <name>/<subresource>`, `/apis/<group>/<version>/...`, discovery, health, OpenAPI) read into
//! a typed route, and the query string.

use std::collections::HashMap;

use super::resources::{self, Kind, Sub};

/// One object or collection of a served type.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub kind: &'static Kind,
    /// The namespace in the path (`None` for cluster-scoped types, or across namespaces).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<Sub>,
}

impl Target {
    /// The `Named` for messages.
    pub fn named(&self) -> super::status::Named<'_> {
        super::status::Named {
            plural: self.kind.plural,
            group: self.kind.group,
            name: self.name.as_deref().unwrap_or(""),
        }
    }
}

/// What a path asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Route {
    /// `/healthz`, `/livez`, `/readyz` (and their sub-checks).
    Health,
    Version,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every group.
    Groups,
    /// `/apis/<group>`.
    Group(&'static str),
    /// `/api/v1`, `/apis/<group>/<version>`: an APIResourceList.
    Resources {
        group: &'static str,
        version: &'static str,
    },
    /// `/openapi/v3`: the index of group versions.
    OpenApiRoot,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/<group>/<version>`.
    OpenApi {
        group: &'static str,
        version: &'static str,
    },
    Object(Target),
    /// A served group version without such a resource: a NotFound Status.
    NoResource,
    /// A path no handler serves: Go's plain-text 404.
    NotFound,
}

/// Finds the served group version.
fn group_version(group: &str, version: &str) -> Option<(&'static str, &'static str)> {
    resources::KINDS
        .iter()
        .find(|k| k.group == group && k.version == version)
        .map(|k| (k.group, k.version))
}

/// Reads a path (without the query).
pub fn route(path: &str) -> Route {
    let path = path.trim_end_matches('/');
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["version"] => Route::Version,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", g] => match resources::groups().into_iter().find(|x| x == g) {
            Some(g) if !g.is_empty() => Route::Group(g),
            _ => Route::NotFound,
        },
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", "api", v] => match group_version("", v) {
            Some((group, version)) => Route::OpenApi { group, version },
            None => Route::NotFound,
        },
        ["openapi", "v3", "apis", g, v] => match group_version(g, v) {
            Some((group, version)) => Route::OpenApi { group, version },
            None => Route::NotFound,
        },
        ["api", v, rest @ ..] => in_group("", v, rest),
        ["apis", g, v, rest @ ..] => in_group(g, v, rest),
        _ => Route::NotFound,
    }
}

fn in_group(group: &str, version: &str, rest: &[&str]) -> Route {
    let Some((group, version)) = group_version(group, version) else {
        return Route::NotFound;
    };
    if rest.is_empty() {
        return Route::Resources { group, version };
    }
    // `namespaces/<ns>/<resource>...`, unless what follows the namespace is one of the
    // namespace's own subresources (kube-apiserver's RequestInfo rule).
    let (namespace, rest) = match rest {
        ["namespaces", ns, next, more @ ..] if *next != "status" && *next != "finalize" => {
            let mut r = vec![*next];
            r.extend_from_slice(more);
            (Some(ns.to_string()), r)
        }
        _ => (None, rest.to_vec()),
    };
    let Some(kind) = resources::find(group, version, rest[0]) else {
        return Route::NoResource;
    };
    if namespace.is_some() && !kind.namespaced {
        return Route::NoResource;
    }
    let (name, sub) = match rest[1..] {
        [] => (None, None),
        [name] => (Some(name.to_string()), None),
        [name, sub] => match Sub::parse(sub).filter(|s| kind.has(*s)) {
            Some(s) => (Some(name.to_string()), Some(s)),
            None => return Route::NoResource,
        },
        _ => return Route::NoResource,
    };
    // A namespaced object is named only within its namespace.
    if kind.namespaced && namespace.is_none() && name.is_some() {
        return Route::NoResource;
    }
    Route::Object(Target {
        kind,
        namespace,
        name,
        sub,
    })
}

fn unhex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes a query component (`+` is a space).
pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match (unhex(b[i + 1]), unhex(b[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The query parameters (the last of a repeated name wins).
pub fn query(q: Option<&str>) -> HashMap<String, String> {
    q.unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty())
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(kv), String::new()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(path: &str) -> Target {
        match route(path) {
            Route::Object(t) => t,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn object_paths() {
        let t = target("/api/v1/namespaces/default/pods/p/eviction");
        assert_eq!(
            (
                t.kind.plural,
                t.namespace.as_deref(),
                t.name.as_deref(),
                t.sub
            ),
            ("pods", Some("default"), Some("p"), Some(Sub::Eviction))
        );
        let ns = target("/api/v1/namespaces/kube-system");
        assert_eq!(
            (ns.kind.plural, ns.namespace, ns.name.as_deref()),
            ("namespaces", None, Some("kube-system"))
        );
        let st = target("/api/v1/namespaces/x/status");
        assert_eq!(
            (st.kind.plural, st.name.as_deref(), st.sub),
            ("namespaces", Some("x"), Some(Sub::Status))
        );
        let all = target("/api/v1/pods");
        assert_eq!(
            (all.kind.plural, all.namespace, all.name),
            ("pods", None, None)
        );
        let d = target("/apis/apps/v1/namespaces/a/deployments/d/scale");
        assert_eq!((d.kind.kind, d.sub), ("Deployment", Some(Sub::Scale)));
        assert_eq!(route("/api/v1/namespaces/a/nodes"), Route::NoResource);
        assert_eq!(route("/api/v1/widgets"), Route::NoResource);
        assert_eq!(route("/api/v1/pods/p"), Route::NoResource);
        assert_eq!(route("/api/v1/nodes/n/eviction"), Route::NoResource);
        assert_eq!(route("/apis/widgets.io/v1/things"), Route::NotFound);
        assert_eq!(route("/metrics"), Route::NotFound);
    }

    #[test]
    fn discovery_paths() {
        assert_eq!(route("/api"), Route::CoreVersions);
        assert_eq!(route("/apis/"), Route::Groups);
        assert_eq!(route("/apis/policy"), Route::Group("policy"));
        assert_eq!(
            route("/apis/apps/v1"),
            Route::Resources {
                group: "apps",
                version: "v1"
            }
        );
        assert_eq!(
            route("/openapi/v3/api/v1"),
            Route::OpenApi {
                group: "",
                version: "v1"
            }
        );
        assert_eq!(route("/readyz/etcd"), Route::Health);
    }

    #[test]
    fn query_strings() {
        let q = query(Some("labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch=1&x"));
        assert_eq!(q["labelSelector"], "app=web,tier in (a)");
        assert_eq!(q["watch"], "1");
        assert_eq!(q["x"], "");
        assert_eq!(decode("100%"), "100%");
    }
}
