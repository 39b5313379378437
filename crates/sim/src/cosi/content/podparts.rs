//! The pieces of a static pod as Talos's `k8s.ControlPlaneStaticPodController` puts them
//! together: arguments merged as its argsbuilder does, requests and limits, environment,
//! volumes, probes and the `v1.Pod` itself, a Go map (keys sorted, numbers floats).

use std::collections::BTreeMap;

use serde_yaml_ng::{Mapping, Value};

use super::{s, texts};

/// A Go `map[string]any`: keys sorted, as yaml.v3 writes a map.
pub fn gomap(pairs: Vec<(&str, Value)>) -> Value {
    let sorted: BTreeMap<&str, Value> = pairs.into_iter().collect();
    Value::Mapping(
        sorted
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect::<Mapping>(),
    )
}

/// A number that went through JSON into `any` (a Go float64): yaml.v3 writes it as an
/// integer below a million, in exponent form from there (`2e+09`).
pub(super) fn float(n: u32) -> Value {
    if n < 1_000_000 {
        Value::from(u64::from(n))
    } else {
        Value::from(f64::from(n))
    }
}

/// Kubernetes's `scheduling.SystemCriticalPriority`.
const SYSTEM_CRITICAL: u32 = 2_000_000_000;

/// The minor version of a Kubernetes image's tag (`v1.36.2` gives 36).
pub(super) fn minor(image: &str) -> u32 {
    talm_wire::version::image_tag(image)
        .and_then(|t| t.trim_start_matches('v').split('.').nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// `app.kubernetes.io/version`: the image's tag without its `v`.
fn version_label(image: &str) -> String {
    talm_wire::version::image_tag(image)
        .map(|t| t.trim_start_matches('v').to_string())
        .unwrap_or_default()
}

/// A config's `extraArgs` (`{name: {values: [...]}}`).
pub(super) fn extra_args(spec: &Value) -> BTreeMap<String, Vec<String>> {
    spec.get("extraArgs")
        .and_then(Value::as_mapping)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| {
                    let values = crate::cosi::protospec::texts(v, "values");
                    Some((k.as_str()?.to_string(), values))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Talos's argsbuilder: the defaults merged with the extra arguments (additive ones joined
/// without duplicates, denied ones left as Talos sets them), printed `--key=value` by key.
pub(super) fn command(
    binary: &str,
    defaults: Vec<(&str, String)>,
    extra: &BTreeMap<String, Vec<String>>,
    additive: &[&str],
    denied: &[&str],
) -> Vec<String> {
    let mut args: BTreeMap<String, Vec<String>> = defaults
        .into_iter()
        .map(|(k, v)| (k.to_string(), vec![v]))
        .collect();
    for (k, v) in extra {
        if denied.contains(&k.as_str()) {
            continue;
        }
        if additive.contains(&k.as_str()) {
            let mut all: Vec<String> = Vec::new();
            let old = args.get(k).map(|v| v.join(",")).unwrap_or_default();
            for x in old.split(',').chain(v.join(",").split(',')) {
                let x = x.trim().to_string();
                if !x.is_empty() && !all.contains(&x) {
                    all.push(x);
                }
            }
            args.insert(k.clone(), vec![all.join(",")]);
        } else {
            args.insert(k.clone(), v.clone());
        }
    }
    let mut out = vec![binary.to_string()];
    for (k, vs) in args {
        out.extend(vs.into_iter().map(|v| format!("--{k}={v}")));
    }
    out
}

/// A config's `resources` with Talos's default requests.
fn resources(spec: &Value, cpu: &str, memory: &str) -> (Value, Option<String>) {
    let r = spec.get("resources");
    let get = |kind: &str, what: &str| {
        r.and_then(|r| r.get(kind)?.get(what)?.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let requests = gomap(vec![
        (
            "cpu",
            s(get("requests", "cpu").unwrap_or_else(|| cpu.into())),
        ),
        (
            "memory",
            s(get("requests", "memory").unwrap_or_else(|| memory.into())),
        ),
    ]);
    let mut limits = Vec::new();
    for what in ["cpu", "memory"] {
        if let Some(v) = get("limits", what) {
            limits.push((what, s(v)));
        }
    }
    let memory_limit = get("limits", "memory");
    let mut out = vec![("requests", requests)];
    if !limits.is_empty() {
        out.push(("limits", gomap(limits)));
    }
    (gomap(out), memory_limit)
}

/// Bytes of a Kubernetes memory quantity (`1Gi`, `512Mi`, `500M`, `1000`).
fn quantity_bytes(q: &str) -> Option<u64> {
    let units: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    for (suffix, mult) in units {
        if let Some(n) = q.strip_suffix(suffix) {
            return n.parse::<u64>().ok().map(|n| n * mult);
        }
    }
    q.parse().ok()
}

/// `POD_IP`, the configured variables (sorted, `$` escaped) and `GOMEMLIMIT` (95% of a memory
/// limit).
fn env(spec: &Value, memory_limit: Option<String>) -> Value {
    let mut out = vec![gomap(vec![
        ("name", s("POD_IP")),
        (
            "valueFrom",
            gomap(vec![(
                "fieldRef",
                gomap(vec![("fieldPath", s("status.podIP"))]),
            )]),
        ),
    ])];
    if let Some(m) = spec.get("environmentVariables").and_then(Value::as_mapping) {
        let vars: BTreeMap<&str, &str> = m
            .iter()
            .filter_map(|(k, v)| Some((k.as_str()?, v.as_str()?)))
            .collect();
        for (k, v) in vars {
            out.push(gomap(vec![
                ("name", s(k)),
                ("value", s(v.replace('$', "$$"))),
            ]));
        }
    }
    if let Some(limit) = memory_limit.as_deref().and_then(quantity_bytes) {
        out.push(gomap(vec![
            ("name", s("GOMEMLIMIT")),
            ("value", s((limit * 95 / 100).to_string())),
        ]));
    }
    Value::Sequence(out)
}

/// The pod's own volumes (name, host path, read-only) then the config's `extraVolumes`.
fn mounts_and_volumes(own: &[(&str, &str, bool)], spec: &Value) -> (Value, Value) {
    let mut all: Vec<(String, String, String, bool)> = own
        .iter()
        .map(|(n, p, ro)| (n.to_string(), p.to_string(), p.to_string(), *ro))
        .collect();
    for v in spec
        .get("extraVolumes")
        .and_then(Value::as_sequence)
        .into_iter()
        .flatten()
    {
        let t = |k| crate::cosi::protospec::text(v, k);
        all.push((
            t("name"),
            t("hostPath"),
            t("mountPath"),
            crate::cosi::protospec::flag(v, "readonly"),
        ));
    }
    let mounts = all
        .iter()
        .map(|(name, _, mount, ro)| {
            let mut m = vec![("name", s(name)), ("mountPath", s(mount))];
            if *ro {
                m.push(("readOnly", Value::from(true)));
            }
            gomap(m)
        })
        .collect();
    let volumes = all
        .iter()
        .map(|(name, host, _, _)| {
            gomap(vec![
                ("name", s(name)),
                ("hostPath", gomap(vec![("path", s(host))])),
            ])
        })
        .collect();
    (Value::Sequence(mounts), Value::Sequence(volumes))
}

pub(super) fn probe(path: &str, port: u32, extra: Vec<(&str, Value)>) -> Value {
    let mut p = vec![(
        "httpGet",
        gomap(vec![
            ("host", s("localhost")),
            ("path", s(path)),
            ("port", float(port)),
            ("scheme", s("HTTPS")),
        ]),
    )];
    p.extend(extra);
    gomap(p)
}

/// What differs between the three pods.
pub(super) struct Pod<'a> {
    pub(super) name: &'a str,
    pub(super) spec: &'a Value,
    pub(super) command: Vec<String>,
    pub(super) defaults: (&'a str, &'a str),
    pub(super) own_volumes: &'a [(&'a str, &'a str, bool)],
    pub(super) probes: Vec<(&'a str, Value)>,
    pub(super) add_caps: bool,
    pub(super) run_as: u32,
    pub(super) annotations: Vec<(&'a str, Value)>,
}

pub(super) fn render(p: Pod) -> Value {
    let image = crate::cosi::protospec::text(p.spec, "image");
    let (resources, memory_limit) = resources(p.spec, p.defaults.0, p.defaults.1);
    let (mounts, volumes) = mounts_and_volumes(p.own_volumes, p.spec);
    let mut caps = vec![("drop", texts(&["ALL"]))];
    if p.add_caps {
        caps.push(("add", texts(&["NET_BIND_SERVICE"])));
    }
    let mut container = vec![
        ("name", s(p.name)),
        ("image", s(&image)),
        ("command", texts(&p.command)),
        ("env", env(p.spec, memory_limit)),
        ("volumeMounts", mounts),
        ("resources", resources),
        (
            "securityContext",
            gomap(vec![
                ("allowPrivilegeEscalation", Value::from(false)),
                ("capabilities", gomap(caps)),
                ("seccompProfile", gomap(vec![("type", s("RuntimeDefault"))])),
            ]),
        ),
    ];
    container.extend(p.probes);
    gomap(vec![
        ("apiVersion", s("v1")),
        ("kind", s("Pod")),
        (
            "metadata",
            gomap(vec![
                ("name", s(p.name)),
                ("namespace", s("kube-system")),
                ("annotations", gomap(p.annotations)),
                (
                    "labels",
                    gomap(vec![
                        ("tier", s("control-plane")),
                        ("k8s-app", s(p.name)),
                        ("component", s(p.name)),
                        ("app.kubernetes.io/name", s(p.name)),
                        ("app.kubernetes.io/version", s(version_label(&image))),
                        ("app.kubernetes.io/component", s("control-plane")),
                        ("app.kubernetes.io/managed-by", s("Talos")),
                    ]),
                ),
            ]),
        ),
        (
            "spec",
            gomap(vec![
                ("priority", float(SYSTEM_CRITICAL)),
                ("priorityClassName", s("system-cluster-critical")),
                ("containers", Value::Sequence(vec![gomap(container)])),
                ("hostNetwork", Value::from(true)),
                (
                    "securityContext",
                    gomap(vec![
                        ("runAsNonRoot", Value::from(true)),
                        ("runAsUser", float(p.run_as)),
                        ("runAsGroup", float(p.run_as)),
                    ]),
                ),
                ("volumes", volumes),
            ]),
        ),
        ("status", gomap(vec![])),
    ])
}

/// The version annotations: the secrets' and (for the API server) the config files', then
/// the config resource's version.
pub(super) fn annotations(files: bool, config_version: u64) -> Vec<(&'static str, Value)> {
    let mut a = vec![
        ("talos.dev/secrets-version", s("1")),
        ("talos.dev/config-version", s(config_version.to_string())),
    ];
    if files {
        a.push(("talos.dev/config-file-version", s("1")));
    }
    a
}
