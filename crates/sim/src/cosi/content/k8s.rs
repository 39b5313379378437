//! The node's Kubernetes parts Talos's k8s controllers derive from the machine config: the
//! Nodename every configured node registers under, and on control planes the APIServerConfig,
//! ControllerManagerConfig and SchedulerConfig its static pods are rendered from.

use std::collections::BTreeMap;

use serde_yaml_ng::{Mapping, Value};

use super::lookup::{at, text_at, texts_or};
use super::{map, res, s, texts, Ctx};
use crate::cosi::facts::Res;

/// A Go `map[string]...` as YAML prints it: keys sorted, `{}` when empty.
fn sorted(entries: BTreeMap<String, Value>) -> Value {
    Value::Mapping(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect::<Mapping>(),
    )
}

/// One component's settings from `cluster.<component>`.
struct Component<'a> {
    doc: Option<&'a Value>,
    key: &'a str,
}

impl Component<'_> {
    fn image(&self, name: &str) -> String {
        match text_at(self.doc, &["cluster", self.key, "image"]) {
            i if i.is_empty() => format!(
                "registry.k8s.io/{name}:{}",
                crate::world::KUBERNETES_VERSION
            ),
            i => i,
        }
    }

    /// `extraArgs`: each argument's values (`{values: [...]}`).
    fn extra_args(&self) -> Value {
        let mut out = BTreeMap::new();
        if let Some(m) =
            at(self.doc, &["cluster", self.key, "extraArgs"]).and_then(Value::as_mapping)
        {
            for (k, v) in m {
                let values: Vec<String> = match v {
                    Value::Sequence(s) => s
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect(),
                    Value::String(x) => vec![x.clone()],
                    other => vec![serde_yaml_ng::to_string(other)
                        .unwrap_or_default()
                        .trim_end()
                        .to_string()],
                };
                if let Some(k) = k.as_str() {
                    out.insert(k.to_string(), map(vec![("values", texts(&values))]));
                }
            }
        }
        sorted(out)
    }

    fn extra_volumes(&self) -> Value {
        let vols = at(self.doc, &["cluster", self.key, "extraVolumes"])
            .and_then(Value::as_sequence)
            .cloned()
            .unwrap_or_default();
        Value::Sequence(
            vols.iter()
                .map(|v| {
                    let mount = v.get("mountPath").and_then(Value::as_str).unwrap_or("");
                    let name = mount.replace(['/', '_', '.'], "-");
                    map(vec![
                        ("name", s(name.trim_matches('-'))),
                        (
                            "hostPath",
                            s(v.get("hostPath").and_then(Value::as_str).unwrap_or("")),
                        ),
                        ("mountPath", s(mount)),
                        (
                            "readonly",
                            Value::from(
                                v.get("readonly").and_then(Value::as_bool).unwrap_or(false),
                            ),
                        ),
                    ])
                })
                .collect(),
        )
    }

    fn env(&self) -> Value {
        let mut out = BTreeMap::new();
        if let Some(m) = at(self.doc, &["cluster", self.key, "env"]).and_then(Value::as_mapping) {
            for (k, v) in m {
                if let (Some(k), Some(v)) = (k.as_str(), v.as_str()) {
                    out.insert(k.to_string(), s(v));
                }
            }
        }
        sorted(out)
    }

    /// Requests (CPU and memory, empty when unset) and the limits set.
    fn resources(&self) -> Value {
        let get = |kind: &str, what: &str| {
            at(self.doc, &["cluster", self.key, "resources", kind, what])
                .map(|v| match v {
                    Value::String(x) => x.clone(),
                    other => serde_yaml_ng::to_string(other)
                        .unwrap_or_default()
                        .trim_end()
                        .to_string(),
                })
                .unwrap_or_default()
        };
        let mut limits = BTreeMap::new();
        for what in ["cpu", "memory"] {
            let l = get("limits", what);
            if !l.is_empty() {
                limits.insert(what.to_string(), s(l));
            }
        }
        map(vec![
            (
                "requests",
                map(vec![
                    ("cpu", s(get("requests", "cpu"))),
                    ("memory", s(get("requests", "memory"))),
                ]),
            ),
            ("limits", sorted(limits)),
        ])
    }
}

fn cloud_provider(doc: Option<&Value>) -> Value {
    let external = at(doc, &["cluster", "externalCloudProvider", "enabled"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    s(if external { "external" } else { "" })
}

fn enabled(doc: Option<&Value>, key: &str) -> Value {
    let disabled = at(doc, &["machine", "controlPlane", key, "disabled"])
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Value::from(!disabled)
}

/// The control plane configs (APIServerConfig, ControllerManagerConfig, SchedulerConfig).
pub(super) fn control_plane(ctx: &Ctx) -> Vec<Res> {
    let doc = ctx.st.config.as_ref().and_then(|c| c.v1alpha1());
    let c = |key| Component { doc, key };
    let pods = texts_or(doc, &["cluster", "network", "podSubnets"], "10.244.0.0/16");
    let services = texts_or(
        doc,
        &["cluster", "network", "serviceSubnets"],
        "10.96.0.0/12",
    );
    let port = at(doc, &["cluster", "controlPlane", "localAPIServerPort"])
        .and_then(Value::as_u64)
        .unwrap_or(6443);
    let api = c("apiServer");
    let cm = c("controllerManager");
    let sched = c("scheduler");
    let scheduler_config = at(doc, &["cluster", "scheduler", "config"])
        .cloned()
        .unwrap_or_else(|| Value::Mapping(Mapping::new()));
    vec![
        res(
            "controlplane",
            "APIServerConfigs.kubernetes.talos.dev",
            "kube-apiserver",
            "k8s.ControlPlaneAPIServerController",
            map(vec![
                ("image", s(api.image("kube-apiserver"))),
                ("cloudProvider", cloud_provider(doc)),
                (
                    "controlPlaneEndpoint",
                    s(text_at(doc, &["cluster", "controlPlane", "endpoint"])),
                ),
                ("etcdServers", texts(&["https://127.0.0.1:2379"])),
                ("localPort", Value::from(port)),
                ("serviceCIDR", texts(&services)),
                ("extraArgs", api.extra_args()),
                ("extraVolumes", api.extra_volumes()),
                ("environmentVariables", api.env()),
                ("advertisedAddress", s("$(POD_IP)")),
                ("resources", api.resources()),
            ]),
            1,
        ),
        res(
            "controlplane",
            "ControllerManagerConfigs.kubernetes.talos.dev",
            "kube-controller-manager",
            "k8s.ControlPlaneControllerManagerController",
            map(vec![
                ("enabled", enabled(doc, "controllerManager")),
                ("image", s(cm.image("kube-controller-manager"))),
                ("cloudProvider", cloud_provider(doc)),
                ("podCIDRs", texts(&pods)),
                ("serviceCIDRs", texts(&services)),
                ("extraArgs", cm.extra_args()),
                ("extraVolumes", cm.extra_volumes()),
                ("environmentVariables", cm.env()),
                ("resources", cm.resources()),
            ]),
            1,
        ),
        res(
            "controlplane",
            "SchedulerConfigs.kubernetes.talos.dev",
            "kube-scheduler",
            "k8s.ControlPlaneSchedulerController",
            map(vec![
                ("enabled", enabled(doc, "scheduler")),
                ("image", s(sched.image("kube-scheduler"))),
                ("extraArgs", sched.extra_args()),
                ("extraVolumes", sched.extra_volumes()),
                ("environmentVariables", sched.env()),
                ("resources", sched.resources()),
                ("config", scheduler_config),
            ]),
            1,
        ),
    ]
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    if ctx.st.in_maintenance() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(h) = ctx.st.hostname(ctx.hw) {
        out.push(res(
            "k8s",
            "Nodenames.kubernetes.talos.dev",
            "nodename",
            "k8s.NodenameController",
            map(vec![
                ("nodename", s(h.to_lowercase())),
                // The version of the HostnameStatus it was derived from.
                ("hostnameVersion", s("1")),
                ("skipNodeRegistration", Value::from(false)),
            ]),
            1,
        ));
    }
    if ctx.is_control_plane() {
        out.extend(control_plane(ctx));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configured, hw, keys};
    use super::*;

    #[test]
    fn control_plane_configs_print_every_field_in_go_order() {
        let hw = hw();
        let st = configured("controlplane", "CA");
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "nodename",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler"
            ]
        );
        assert_eq!(
            serde_yaml_ng::to_string(&r[0].spec).unwrap(),
            "nodename: node-controlplane\nhostnameVersion: '1'\nskipNodeRegistration: false\n"
        );
        assert_eq!(
            serde_yaml_ng::to_string(&r[1].spec).unwrap(),
            "image: registry.k8s.io/kube-apiserver:v1.36.2\ncloudProvider: ''\ncontrolPlaneEndpoint: https://127.0.0.11:6443\netcdServers:\n- https://127.0.0.1:2379\nlocalPort: 6443\nserviceCIDR:\n- 10.96.0.0/12\nextraArgs: {}\nextraVolumes: []\nenvironmentVariables: {}\nadvertisedAddress: $(POD_IP)\nresources:\n  requests:\n    cpu: ''\n    memory: ''\n  limits: {}\n"
        );
        assert_eq!(
            keys(&r[3].spec),
            [
                "enabled",
                "image",
                "extraArgs",
                "extraVolumes",
                "environmentVariables",
                "resources",
                "config"
            ]
        );
        let worker = configured("worker", "CA");
        let r = resources(&Ctx {
            hw: &hw,
            st: &worker,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        assert_eq!(r.len(), 1, "a worker has no control plane configs");
    }
}
