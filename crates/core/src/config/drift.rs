//! What an apply would change on a node: the drift preview (`+`, `-`, `~`, `=` by document, with
//! the changed fields of updated ones), and redaction of secret values in anything printed.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{bail, Result};
use serde_yaml_ng::Value;

/// Secret fields, by path inside a document (`[N]` list indices written `[]`).
pub const SECRET_PATHS: &[&str] = &[
    "cluster.secret",
    "cluster.token",
    "cluster.aescbcEncryptionSecret",
    "cluster.secretboxEncryptionSecret",
    "cluster.ca.key",
    "cluster.aggregatorCA.key",
    "cluster.serviceAccount.key",
    "cluster.etcd.ca.key",
    "machine.token",
    "machine.ca.key",
    "cluster.acceptedCAs",
    "machine.acceptedCAs",
    "privateKey",
    "peers",
];

fn docs(text: &str) -> Result<Vec<Value>> {
    Ok(talm_base::yaml::documents(text)?)
}

/// `MachineConfig` for the v1alpha1 document, else `Kind{name: "n"}` (or `Kind`).
fn identity(d: &Value) -> Option<String> {
    if d.get("machine").is_some() || d.get("cluster").is_some() {
        return Some("MachineConfig".into());
    }
    let kind = d.get("kind")?.as_str()?;
    Some(match d.get("name").and_then(Value::as_str) {
        Some(n) => format!("{kind}{{name: {n}}}"),
        None => kind.to_string(),
    })
}

fn by_identity(text: &str) -> Result<BTreeMap<String, Value>> {
    let mut out = BTreeMap::new();
    for d in docs(text)? {
        let Some(id) = identity(&d) else { continue };
        if out.insert(id.clone(), d).is_some() {
            bail!("duplicate document {id} in stream — a machine config holds each document once");
        }
    }
    Ok(out)
}

/// Leaves of a document as dotted paths (lists and empty maps are leaves).
fn flatten(v: &Value, prefix: &str, out: &mut BTreeMap<String, Value>) {
    match v {
        Value::Mapping(m) if !m.is_empty() => {
            for (k, v) in m {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml_ng::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                let p = if prefix.is_empty() {
                    key
                } else {
                    format!("{prefix}.{key}")
                };
                flatten(v, &p, out);
            }
        }
        other => {
            out.insert(prefix.to_string(), other.clone());
        }
    }
}

/// YAML flow text of a value (`{a: 1}`, `[a, b]`, scalars as written).
fn flow(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Sequence(s) => format!("[{}]", s.iter().map(flow).collect::<Vec<_>>().join(", ")),
        Value::Mapping(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", flow(k), flow(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tagged(t) => flow(&t.value),
    }
}

fn redacted(v: Option<&Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(Value::String(s)) => format!("***redacted (len={})***", s.len()),
        Some(other) => format!("***redacted (len={})***", flow(other).len()),
    }
}

fn contains_secret(v: &Value, secrets: &BTreeSet<String>) -> bool {
    match v {
        Value::String(s) => secrets.contains(s),
        Value::Sequence(s) => s.iter().any(|x| contains_secret(x, secrets)),
        Value::Mapping(m) => m.values().any(|x| contains_secret(x, secrets)),
        _ => false,
    }
}

fn normalized(path: &str) -> String {
    let mut out = String::new();
    let mut skip = false;
    for c in path.chars() {
        match c {
            '[' => {
                skip = true;
                out.push_str("[]");
            }
            ']' => skip = false,
            _ if skip => {}
            _ => out.push(c),
        }
    }
    out
}

/// One changed field.
fn field_line(
    path: &str,
    old: Option<&Value>,
    new: Option<&Value>,
    show: bool,
    secrets: &BTreeSet<String>,
) -> String {
    let secret_path = SECRET_PATHS.contains(&normalized(path).as_str());
    if !show && secret_path {
        return format!("{path}: {} -> {}", redacted(old), redacted(new));
    }
    if !show
        && (old.is_some_and(|v| contains_secret(v, secrets))
            || new.is_some_and(|v| contains_secret(v, secrets)))
    {
        let side = |v: Option<&Value>| match v {
            Some(x) if contains_secret(x, secrets) => redacted(Some(x)),
            Some(x) => flow(x),
            None => "(absent)".into(),
        };
        return format!("{path}: {} -> {}", side(old), side(new));
    }
    if let (Some(Value::Sequence(a)), Some(Value::Sequence(b))) = (old, new) {
        let count = |s: &[Value]| {
            let mut m: BTreeMap<String, usize> = BTreeMap::new();
            for x in s {
                *m.entry(flow(x)).or_default() += 1;
            }
            m
        };
        let (ca, cb) = (count(a), count(b));
        if ca == cb {
            return format!("{path}: reordered ({} element(s))", a.len());
        }
        let diff = |x: &BTreeMap<String, usize>, y: &BTreeMap<String, usize>| -> Vec<String> {
            x.iter()
                .flat_map(|(k, n)| {
                    std::iter::repeat_n(k.clone(), n.saturating_sub(*y.get(k).unwrap_or(&0)))
                })
                .collect()
        };
        let (removed, added) = (diff(&ca, &cb), diff(&cb, &ca));
        return match (removed.is_empty(), added.is_empty()) {
            (true, _) => format!("{path}: added [{}]", added.join(", ")),
            (_, true) => format!("{path}: removed [{}]", removed.join(", ")),
            _ => format!(
                "{path}: removed [{}], added [{}]",
                removed.join(", "),
                added.join(", ")
            ),
        };
    }
    let side = |v: Option<&Value>| v.map(flow).unwrap_or_else(|| "(absent)".into());
    format!("{path}: {} -> {}", side(old), side(new))
}

/// The drift preview of applying `desired` over `current` (empty: nothing on the node yet),
/// as printed on stderr; `node` names the node in the header when known.
pub fn preview(
    current: &str,
    desired: &str,
    node: &str,
    show_secrets: bool,
    secrets: &BTreeSet<String>,
) -> Result<String> {
    compare(
        "drift preview",
        current,
        desired,
        node,
        show_secrets,
        secrets,
    )
    .map(|(text, _)| text)
}

/// The post-apply check: what the node runs (`current`) against what was sent (`desired`), as
/// a report headed `talm: post-apply divergence`, and how many documents differ.
pub fn divergence(
    current: &str,
    desired: &str,
    node: &str,
    show_secrets: bool,
    secrets: &BTreeSet<String>,
) -> Result<(String, usize)> {
    compare(
        "post-apply divergence",
        current,
        desired,
        node,
        show_secrets,
        secrets,
    )
}

/// Documents compared by identity, field by field: the report and the number that differ.
fn compare(
    title: &str,
    current: &str,
    desired: &str,
    node: &str,
    show_secrets: bool,
    secrets: &BTreeSet<String>,
) -> Result<(String, usize)> {
    let cur = by_identity(current)?;
    let want = by_identity(desired)?;
    let ids: BTreeSet<&String> = cur.keys().chain(want.keys()).collect();
    let header = if node.is_empty() {
        String::new()
    } else {
        format!(" (node {node})")
    };
    let mut out = format!("talm: {title}{header}\n");
    let (mut add, mut del, mut upd, mut same) = (0, 0, 0, 0);
    for id in ids {
        match (cur.get(id), want.get(id)) {
            (None, Some(_)) => {
                add += 1;
                out.push_str(&format!("  + {id}\n"));
            }
            (Some(_), None) => {
                del += 1;
                out.push_str(&format!("  - {id}\n"));
            }
            (Some(a), Some(b)) if a == b => same += 1,
            (Some(a), Some(b)) => {
                upd += 1;
                out.push_str(&format!("  ~ {id}\n"));
                let (mut fa, mut fb) = (BTreeMap::new(), BTreeMap::new());
                flatten(a, "", &mut fa);
                flatten(b, "", &mut fb);
                let paths: BTreeSet<&String> = fa.keys().chain(fb.keys()).collect();
                for p in paths {
                    let (x, y) = (fa.get(p), fb.get(p));
                    if x != y {
                        out.push_str(&format!(
                            "      {}\n",
                            field_line(p, x, y, show_secrets, secrets)
                        ));
                    }
                }
            }
            (None, None) => {}
        }
    }
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    out.push_str(&format!(
        "talm: {}, {}, {}, {same} unchanged.\n",
        plural(add, "addition", "additions"),
        plural(del, "removal", "removals"),
        plural(upd, "update", "updates")
    ));
    Ok((out, add + del + upd))
}

fn collect_secret_values(v: &Value, path: &str, under_secret: bool, out: &mut BTreeSet<String>) {
    let secret = under_secret || SECRET_PATHS.contains(&normalized(path).as_str());
    match v {
        Value::String(s) if secret && !s.is_empty() => {
            out.insert(s.clone());
        }
        Value::Mapping(m) => {
            for (k, x) in m {
                let key = k.as_str().unwrap_or_default();
                let p = if path.is_empty() {
                    key.to_string()
                } else {
                    format!("{path}.{key}")
                };
                let key_secret = secret || key == "privateKey" || key == "presharedKey";
                collect_secret_values(x, &p, key_secret, out);
            }
        }
        Value::Sequence(s) => {
            for (i, x) in s.iter().enumerate() {
                collect_secret_values(x, &format!("{path}[{i}]"), secret, out);
            }
        }
        _ => {}
    }
}

/// The secret string values of a config: leaves under the secret paths and any
/// `privateKey`/`presharedKey`.
pub fn secret_values(config: &str) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    // Read in place: the config was parsed by the steps before (kept by `yaml::stream`).
    for d in talm_base::yaml::parsed(config)?.iter() {
        collect_secret_values(d, "", false, &mut out);
    }
    Ok(out)
}

/// `text` with every secret value replaced by `***`, longest first.
pub fn redact(text: &str, secrets: &BTreeSet<String>) -> String {
    let mut list: Vec<&String> = secrets.iter().filter(|s| !s.is_empty()).collect();
    list.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    let mut out = text.to_string();
    for s in list {
        out = out.replace(s.as_str(), "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_counts_and_redacts() {
        let cur = "machine:\n  token: abc\n  sysctls:\n    a: \"1\"\ncluster:\n  network:\n    dnsDomain: cozy.local\n---\nkind: LinkConfig\nname: eth0\n---\nkind: HostnameConfig\nauto: stable\n";
        let new = "machine:\n  token: abcd\n  sysctls:\n    a: \"1\"\ncluster:\n  network:\n    dnsDomain: cozy.example\n---\nkind: LinkConfig\nname: eth1\n---\nkind: HostnameConfig\nauto: stable\n";
        let p = preview(cur, new, "10.0.0.1", false, &BTreeSet::new()).unwrap();
        assert_eq!(
            p,
            "talm: drift preview (node 10.0.0.1)\n  - LinkConfig{name: eth0}\n  + LinkConfig{name: eth1}\n  ~ MachineConfig\n      cluster.network.dnsDomain: cozy.local -> cozy.example\n      machine.token: ***redacted (len=3)*** -> ***redacted (len=4)***\ntalm: 1 addition, 1 removal, 1 update, 1 unchanged.\n"
        );
        let shown = preview(cur, new, "", true, &BTreeSet::new()).unwrap();
        assert!(
            shown.starts_with("talm: drift preview\n")
                && shown.contains("machine.token: abc -> abcd")
        );
    }

    #[test]
    fn lists_diff_as_multisets() {
        let a = Value::Sequence(vec!["x".into(), "y".into()]);
        let b = Value::Sequence(vec!["y".into(), "x".into()]);
        let c = Value::Sequence(vec!["y".into(), "z".into()]);
        let none = BTreeSet::new();
        assert_eq!(
            field_line("l", Some(&a), Some(&b), false, &none),
            "l: reordered (2 element(s))"
        );
        assert_eq!(
            field_line("l", Some(&a), Some(&c), false, &none),
            "l: removed [x], added [z]"
        );
    }

    #[test]
    fn secrets_are_found_and_replaced_longest_first() {
        let s = secret_values("machine:\n  token: tok.en\n  ca:\n    key: KEYKEY\n---\nkind: WireguardConfig\nprivateKey: PK\n").unwrap();
        assert_eq!(
            s.into_iter().collect::<Vec<_>>(),
            ["KEYKEY", "PK", "tok.en"]
        );
        let set: BTreeSet<String> = ["ab".to_string(), "abc".to_string()].into();
        assert_eq!(redact("abc ab", &set), "*** ***");
    }
}
