//! Kubeconfig files as talosctl writes them: merging a fetched admin kubeconfig into an existing
//! file with go-kubeconfig's rules (a clashing cluster or user is overwritten with `force`, else
//! renamed `-1`, `-2`...; renames carry over to user and context names by substring; the context
//! clash is looked up among clusters, as go-kubeconfig does), and pointing clusters at the
//! project's Kubernetes endpoint.

use anyhow::Result;
use serde_yaml_ng::{Mapping, Value};

use talm_base::error::hinted;

/// The sections of a kubeconfig: list key and the key of each entry's body.
const CLUSTERS: (&str, &str) = ("clusters", "cluster");
const USERS: (&str, &str) = ("users", "user");
const CONTEXTS: (&str, &str) = ("contexts", "context");

/// A merge's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    pub text: String,
    /// `renamed cluster "a" -> "b"` lines, in go-kubeconfig's order.
    pub messages: Vec<String>,
    /// The merged clusters' final names.
    pub clusters: Vec<String>,
    /// The context made current.
    pub context: String,
}

fn parse(text: &str, what: &str) -> Result<Mapping> {
    match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(m)) => Ok(m),
        Ok(Value::Null) => Ok(Mapping::new()),
        Ok(_) => Err(hinted(
            format!("{what}: not a kubeconfig (expected a mapping)"),
            format!("check {what}, or move it away to write a fresh one"),
        )),
        Err(e) => Err(talm_base::yaml::syntax_error(&e, what)),
    }
}

fn entries(m: &Mapping, key: &str) -> Vec<Value> {
    m.get(key)
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default()
}

fn name_of(e: &Value) -> String {
    e.get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn find<'a>(list: &'a [Value], name: &str) -> Option<&'a Value> {
    list.iter().find(|e| name_of(e) == name)
}

/// `name`, `name-1`, `name-2`... the first not in `list`.
fn unique(list: &[Value], name: &str) -> String {
    let mut out = name.to_string();
    let mut i = 0;
    while find(list, &out).is_some() {
        i += 1;
        out = format!("{name}-{i}");
    }
    out
}

/// Puts `entry` under `name` in `list`: in place of one with that name, else at the end.
fn put(list: &mut Vec<Value>, name: &str, mut entry: Value) {
    if let Value::Mapping(m) = &mut entry {
        m.insert("name".into(), name.into());
    }
    match list.iter_mut().find(|e| name_of(e) == name) {
        Some(slot) => *slot = entry,
        None => list.push(entry),
    }
}

fn replace_all(name: &str, renames: &[(String, String)]) -> String {
    renames.iter().fold(name.to_string(), |n, (old, new)| {
        n.replace(old.as_str(), new)
    })
}

/// Merges the `fresh` kubeconfig into `existing` (text of the file, `what` names it).
pub fn merge(
    existing: &str,
    fresh: &str,
    force: bool,
    context_name: &str,
    what: &str,
) -> Result<Merged> {
    let mut out = parse(existing, what)?;
    let new = parse(fresh, "the node's kubeconfig")?;
    let (mut clusters, mut users, mut contexts) = (
        entries(&out, CLUSTERS.0),
        entries(&out, USERS.0),
        entries(&out, CONTEXTS.0),
    );
    let body = |e: &Value, key: &str| e.get(key).cloned().unwrap_or(Value::Null);
    let (new_clusters, new_users, new_contexts) = (
        entries(&new, CLUSTERS.0),
        entries(&new, USERS.0),
        entries(&new, CONTEXTS.0),
    );
    let mut cluster_map: Vec<(String, String)> = Vec::new();
    for c in &new_clusters {
        let name = name_of(c);
        let merged = match find(&clusters, &name) {
            Some(old) if body(old, CLUSTERS.1) != body(c, CLUSTERS.1) && !force => {
                unique(&clusters, &name)
            }
            _ => name.clone(),
        };
        cluster_map.push((name, merged));
    }
    let mut user_map: Vec<(String, String)> = Vec::new();
    for u in &new_users {
        let name = name_of(u);
        let mut merged = replace_all(&name, &cluster_map);
        if let Some(old) = find(&users, &merged) {
            if body(old, USERS.1) != body(u, USERS.1) && !force {
                merged = unique(&users, &merged);
            }
        }
        user_map.push((name, merged));
    }
    let mut context_map: Vec<(String, String)> = Vec::new();
    for c in &new_contexts {
        let name = name_of(c);
        let mut merged = replace_all(&name, &user_map);
        if !context_name.is_empty() {
            merged = context_name.to_string();
        }
        // go-kubeconfig looks the context's name up among the clusters.
        if find(&clusters, &merged).is_some() && !force {
            merged = unique(&clusters, &merged);
        }
        context_map.push((name, merged));
    }
    let mut messages = Vec::new();
    let mapped = |map: &[(String, String)], name: &str| {
        map.iter()
            .find(|(o, _)| o == name)
            .map(|(_, n)| n.clone())
            .unwrap_or_else(|| name.to_string())
    };
    for c in &new_clusters {
        let (name, merged) = (name_of(c), mapped(&cluster_map, &name_of(c)));
        if merged != name {
            messages.push(format!("renamed cluster {name:?} -> {merged:?}"));
        }
        put(&mut clusters, &merged, c.clone());
    }
    for u in &new_users {
        let (name, merged) = (name_of(u), mapped(&user_map, &name_of(u)));
        if merged != name {
            messages.push(format!("renamed auth info {name:?} -> {merged:?}"));
        }
        put(&mut users, &merged, u.clone());
    }
    let mut current = String::new();
    for c in &new_contexts {
        let (name, merged) = (name_of(c), mapped(&context_map, &name_of(c)));
        if merged != name {
            messages.push(format!("renamed context {name:?} -> {merged:?}"));
        }
        let mut entry = c.clone();
        if let Some(Value::Mapping(ctx)) = entry.get_mut(CONTEXTS.1) {
            for (key, map) in [("cluster", &cluster_map), ("user", &user_map)] {
                if let Some(v) = ctx.get(key).and_then(Value::as_str).map(str::to_string) {
                    ctx.insert(key.into(), mapped(map, &v).into());
                }
            }
        }
        put(&mut contexts, &merged, entry);
        current = merged;
    }
    if out.is_empty() {
        out.insert("apiVersion".into(), "v1".into());
        out.insert("kind".into(), "Config".into());
    }
    out.insert(CLUSTERS.0.into(), Value::Sequence(clusters));
    out.insert(USERS.0.into(), Value::Sequence(users));
    out.insert(CONTEXTS.0.into(), Value::Sequence(contexts));
    if !current.is_empty() {
        out.insert("current-context".into(), current.clone().into());
    }
    Ok(Merged {
        text: serde_yaml_ng::to_string(&Value::Mapping(out))?,
        messages,
        clusters: cluster_map.into_iter().map(|(_, n)| n).collect(),
        context: current,
    })
}

/// `https://<host>:6443` of an endpoint given as a host, `host:port` or URL (IPv6 bracketed);
/// a full `https://` URL with a port (the project's cluster endpoint) is kept as it is.
pub fn server_url(endpoint: &str) -> String {
    let e = endpoint.trim();
    if let Some(rest) = e.strip_prefix("https://") {
        let hostport = rest.split('/').next().unwrap_or(rest);
        let has_port = hostport.rsplit_once(':').is_some_and(|(h, p)| {
            p.parse::<u16>().is_ok() && (h.ends_with(']') || !h.contains(':'))
        });
        if has_port {
            return format!("https://{hostport}");
        }
    }
    let bare = e.split("://").last().unwrap_or(e);
    let bare = bare.split('/').next().unwrap_or(bare);
    let host = talm_wire::api::host(bare);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.contains(':') {
        format!("https://[{host}]:6443")
    } else {
        format!("https://{host}:6443")
    }
}

/// The user fields that make a kubeconfig's reader run something or call out: client-go runs
/// an `exec` plugin's command, and an `auth-provider` loads a plugin.
const PLUGIN_FIELDS: [&str; 2] = ["exec", "auth-provider"];

/// A kubeconfig from a node without credential plugins: a node is not trusted to name a
/// program for the user's kubectl to run. Returns the text (unchanged when there were none) and
/// one line per field dropped (`user "u": exec (command "c")`).
pub fn without_plugins(text: &str) -> Result<(String, Vec<String>)> {
    let mut m = parse(text, "the node's kubeconfig")?;
    let mut dropped = Vec::new();
    if let Some(Value::Sequence(list)) = m.get_mut(USERS.0) {
        for u in list.iter_mut() {
            let name = name_of(u);
            let Some(Value::Mapping(body)) = u.get_mut(USERS.1) else {
                continue;
            };
            for field in PLUGIN_FIELDS {
                if let Some(v) = body.remove(field) {
                    let named = v
                        .get("command")
                        .or_else(|| v.get("name"))
                        .and_then(Value::as_str)
                        .map(|c| format!(" ({:?})", c))
                        .unwrap_or_default();
                    dropped.push(format!("user {name:?}: {field}{named}"));
                }
            }
        }
    }
    if dropped.is_empty() {
        return Ok((text.to_string(), dropped));
    }
    Ok((serde_yaml_ng::to_string(&Value::Mapping(m))?, dropped))
}

/// Points the clusters named in `names` at `url`; returns the text and the clusters changed.
pub fn set_server(text: &str, names: &[String], url: &str) -> Result<(String, Vec<String>)> {
    let mut m = parse(text, "kubeconfig")?;
    let mut changed = Vec::new();
    if let Some(Value::Sequence(list)) = m.get_mut(CLUSTERS.0) {
        for c in list.iter_mut() {
            let name = name_of(c);
            if !names.contains(&name) {
                continue;
            }
            if let Some(Value::Mapping(body)) = c.get_mut(CLUSTERS.1) {
                if body.get("server").and_then(Value::as_str) != Some(url) {
                    body.insert("server".into(), url.into());
                    changed.push(name);
                }
            }
        }
    }
    if changed.is_empty() {
        return Ok((text.to_string(), changed));
    }
    Ok((serde_yaml_ng::to_string(&Value::Mapping(m))?, changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cluster: &str, server: &str, cert: &str) -> String {
        format!("apiVersion: v1\nkind: Config\nclusters:\n- name: {cluster}\n  cluster:\n    server: {server}\nusers:\n- name: admin@{cluster}\n  user:\n    client-certificate-data: {cert}\ncontexts:\n- name: admin@{cluster}\n  context:\n    cluster: {cluster}\n    namespace: default\n    user: admin@{cluster}\ncurrent-context: admin@{cluster}\n")
    }

    #[test]
    fn clashes_rename_without_force_and_overwrite_with_it() {
        let old = config("c", "https://1.1.1.1:6443", "A");
        let new = config("c", "https://2.2.2.2:6443", "B");
        let r = merge(&old, &new, false, "", "k").unwrap();
        assert_eq!(
            r.messages,
            [
                "renamed cluster \"c\" -> \"c-1\"",
                "renamed auth info \"admin@c\" -> \"admin@c-1\"",
                "renamed context \"admin@c\" -> \"admin@c-1\""
            ]
        );
        assert_eq!(
            (r.clusters, r.context.as_str()),
            (vec!["c-1".to_string()], "admin@c-1")
        );
        let v: Value = serde_yaml_ng::from_str(&r.text).unwrap();
        assert_eq!(v["clusters"].as_sequence().unwrap().len(), 2);
        assert_eq!(v["contexts"][1]["context"]["cluster"], "c-1");
        assert_eq!(v["contexts"][1]["context"]["user"], "admin@c-1");
        let f = merge(&old, &new, true, "", "k").unwrap();
        assert!(f.messages.is_empty());
        let v: Value = serde_yaml_ng::from_str(&f.text).unwrap();
        assert_eq!(
            v["clusters"][0]["cluster"]["server"],
            "https://2.2.2.2:6443"
        );
        // Only the user differs (a new certificate): the user and its context are renamed.
        let u = merge(
            &old,
            &config("c", "https://1.1.1.1:6443", "B"),
            false,
            "",
            "k",
        )
        .unwrap();
        assert_eq!(
            u.messages,
            [
                "renamed auth info \"admin@c\" -> \"admin@c-1\"",
                "renamed context \"admin@c\" -> \"admin@c-1\""
            ]
        );
        let named = merge("", &new, false, "prod", "k").unwrap();
        assert_eq!(named.messages, ["renamed context \"admin@c\" -> \"prod\""]);
    }

    #[test]
    fn servers_point_at_the_endpoint() {
        assert_eq!(server_url("10.0.0.1"), "https://10.0.0.1:6443");
        assert_eq!(server_url("10.0.0.1:50000"), "https://10.0.0.1:6443");
        assert_eq!(
            server_url("https://vip.example:6443"),
            "https://vip.example:6443"
        );
        assert_eq!(server_url("fd00::1"), "https://[fd00::1]:6443");
        assert_eq!(server_url("[fd00::1]:50000"), "https://[fd00::1]:6443");
        let text = config("c", "https://1.1.1.1:6443", "A");
        let (out, changed) = set_server(&text, &["c".into()], "https://9.9.9.9:6443").unwrap();
        assert_eq!(changed, ["c"]);
        assert!(out.contains("server: https://9.9.9.9:6443"));
        let (same, none) = set_server(&out, &["c".into()], "https://9.9.9.9:6443").unwrap();
        assert!(none.is_empty());
        assert_eq!(same, out);
    }
}
