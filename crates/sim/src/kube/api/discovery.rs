//! Discovery as kube-apiserver answers it (legacy, non-aggregated: clients asking for the
//! aggregated form fall back on the content type): `/version`, `/api`, `/apis`,
//! `/apis/<group>`, the APIResourceLists, and the OpenAPI v3 stub kubectl reads to learn that
//! the server validates fields itself (`fieldValidation`).

use serde_json::{json, Value};

use super::resources::{self, Kind, Sub};

/// The Kubernetes version the API reports unless told otherwise.
pub const DEFAULT_VERSION: &str = "v1.36.2";

/// The `/version` body for a `gitVersion` (`v1.36.2`).
pub fn version(git_version: &str) -> Value {
    let bare = git_version.trim_start_matches('v');
    let mut parts = bare.split(['.', '-', '+']);
    let major = parts.next().unwrap_or("1").to_string();
    let minor = parts.next().unwrap_or("0").to_string();
    json!({
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": minor.parse::<u32>().map_or(minor.clone(), |m| m.saturating_sub(1).to_string()),
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.5",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// `/api`: the core versions and the address clients reach this server at.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn gv(group: &str, version: &str) -> Value {
    json!({"groupVersion": format!("{group}/{version}"), "version": version})
}

fn group_entry(group: &str) -> Value {
    let version = resources::KINDS
        .iter()
        .find(|k| k.group == group)
        .map_or("v1", |k| k.version);
    json!({"name": group, "versions": [gv(group, version)], "preferredVersion": gv(group, version)})
}

/// `/apis/<group>`.
pub fn group(group: &str) -> Value {
    let mut g = group_entry(group);
    g["kind"] = "APIGroup".into();
    g["apiVersion"] = "v1".into();
    g
}

/// `/apis`: every named group.
pub fn groups() -> Value {
    let groups: Vec<Value> = resources::groups()
        .into_iter()
        .filter(|g| !g.is_empty())
        .map(group_entry)
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

const VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn resource_entry(k: &Kind) -> Value {
    let mut r = json!({
        "name": k.plural,
        "singularName": k.singular,
        "namespaced": k.namespaced,
        "kind": k.kind,
        "verbs": VERBS,
    });
    if !k.short.is_empty() {
        r["shortNames"] = json!(k.short);
    }
    if k.all {
        r["categories"] = json!(["all"]);
    }
    r
}

fn sub_entry(k: &Kind, sub: Sub) -> Value {
    let name = format!("{}/{}", k.plural, sub.name());
    match sub {
        Sub::Status => json!({"name": name, "singularName": "", "namespaced": k.namespaced,
            "kind": k.kind, "verbs": ["get", "patch", "update"]}),
        Sub::Scale => json!({"name": name, "singularName": "", "namespaced": k.namespaced,
            "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}),
        Sub::Eviction => json!({"name": name, "singularName": "", "namespaced": k.namespaced,
            "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]}),
    }
}

/// The APIResourceList of a group version, subresources after their resource.
pub fn resource_list(group: &str, version: &str) -> Value {
    let mut list = Vec::new();
    for k in resources::of(group, version) {
        list.push(resource_entry(k));
        for sub in k.subs {
            list.push(sub_entry(k, *sub));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list})
}

fn openapi_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `/openapi/v3`: where each group version's document is.
pub fn openapi_root() -> Value {
    let mut paths = serde_json::Map::new();
    for k in resources::KINDS {
        let p = openapi_path(k.group, k.version);
        let url = format!("/openapi/v3/{p}?hash=0");
        paths.insert(p, json!({"serverRelativeURL": url}));
    }
    json!({"paths": paths})
}

/// A group version's OpenAPI v3 document: no schemas, only each object path's PATCH with its
/// kind and the `fieldValidation` parameter (kubectl then leaves validation to the server).
pub fn openapi(group: &str, version: &str, git_version: &str) -> Value {
    let mut paths = serde_json::Map::new();
    let prefix = format!("/{}", openapi_path(group, version));
    for k in resources::of(group, version) {
        let path = if k.namespaced {
            format!("{prefix}/namespaces/{{namespace}}/{}/{{name}}", k.plural)
        } else {
            format!("{prefix}/{}/{{name}}", k.plural)
        };
        let params = json!([
            {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
            {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}},
        ]);
        // kubectl looks for the parameter on the operation; path items carry them too.
        let op = json!({
            "operationId": format!("patch{}", k.kind),
            "parameters": params,
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": "patch",
            "x-kubernetes-group-version-kind": {"group": k.group, "kind": k.kind, "version": k.version},
        });
        paths.insert(path, json!({"parameters": params, "patch": op}));
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": git_version},
        "paths": paths,
        "components": {"schemas": {}},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_numbers() {
        let v = version("v1.36.2");
        assert_eq!(
            (v["major"].as_str(), v["minor"].as_str()),
            (Some("1"), Some("36"))
        );
        assert_eq!(v["platform"], "linux/amd64");
    }

    #[test]
    fn pods_and_their_eviction() {
        let list = resource_list("", "v1");
        let res = list["resources"].as_array().unwrap();
        let pods = res.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["shortNames"], json!(["po"]));
        let ev = res.iter().find(|r| r["name"] == "pods/eviction").unwrap();
        assert_eq!(
            *ev,
            json!({"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
                "version": "v1", "kind": "Eviction", "verbs": ["create"]})
        );
        let apps = resource_list("apps", "v1");
        assert_eq!(apps["groupVersion"], "apps/v1");
        assert!(apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale" && r["group"] == "autoscaling"));
    }

    #[test]
    fn groups_list_named_groups() {
        let g = groups();
        let names: Vec<&str> = g["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "apps",
                "policy",
                "rbac.authorization.k8s.io",
                "coordination.k8s.io",
                "apiextensions.k8s.io"
            ]
        );
        assert_eq!(
            g["groups"][0]["preferredVersion"],
            json!({"groupVersion": "apps/v1", "version": "v1"})
        );
    }
}
