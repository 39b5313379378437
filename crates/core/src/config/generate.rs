//! Base machine-config generation, as Talos's `generate` package does it: the v1alpha1 document
//! and its companions for a machine type, from the secrets bundle, per version contract.

use anyhow::{anyhow, Result};
use serde_yaml_ng::{Mapping, Value};

use crate::secrets::bundle::{Bundle, CertPair};
use crate::secrets::contract::Contract;

/// The machine type a config is generated for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MachineType {
    ControlPlane,
    Worker,
}

impl MachineType {
    pub fn as_str(self) -> &'static str {
        match self {
            MachineType::ControlPlane => "controlplane",
            MachineType::Worker => "worker",
        }
    }

    pub fn parse(s: &str) -> Result<MachineType> {
        match s {
            "controlplane" => Ok(MachineType::ControlPlane),
            "worker" => Ok(MachineType::Worker),
            other => Err(anyhow!(
                "unknown machine type {other:?} (controlplane or worker)"
            )),
        }
    }
}

/// The Kubernetes version talm generates for when none is pinned (Talos v1.13's default).
pub const DEFAULT_KUBERNETES_VERSION: &str = "1.36.2";

/// Generation options beyond the positional inputs (talosctl's `gen config` flags).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub additional_sans: Vec<String>,
    pub allow_scheduling_on_control_planes: bool,
    pub dns_domain: Option<String>,
    pub install_disk: Option<String>,
    pub install_image: Option<String>,
    pub install_extra_kernel_args: Vec<String>,
    pub local_api_server_port: Option<u16>,
    /// Sysctls, kept sorted.
    pub sysctls: std::collections::BTreeMap<String, String>,
    /// A custom CNI: name and manifest URLs.
    pub cni: Option<(String, Vec<String>)>,
    /// Registry mirrors: host → endpoints, in the order given.
    pub registry_mirrors: Vec<(String, Vec<String>)>,
    pub kubespan: bool,
}

/// Everything generation needs.
#[derive(Debug, Clone)]
pub struct Input {
    pub cluster_name: String,
    pub endpoint: String,
    /// Without a leading `v`; empty leaves component images to Talos's defaults.
    pub kubernetes_version: String,
    pub contract: Contract,
    pub bundle: Bundle,
    pub options: Options,
}

fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut m = Mapping::new();
    for (k, v) in pairs {
        m.insert(Value::from(k), v);
    }
    Value::Mapping(m)
}

/// Adds `key: value` to a mapping value.
fn put(m: &mut Value, key: &str, value: Value) {
    if let Value::Mapping(map) = m {
        map.insert(Value::from(key), value);
    }
}

fn strings(items: &[String]) -> Value {
    Value::Sequence(items.iter().map(|s| Value::from(s.as_str())).collect())
}

fn pair(p: &Option<CertPair>, name: &str, with_key: bool) -> Result<Value> {
    let p = p
        .as_ref()
        .ok_or_else(|| anyhow!("the secrets bundle has no certs.{name}"))?;
    Ok(map([
        ("crt", Value::from(p.crt.as_str())),
        (
            "key",
            Value::from(if with_key { p.key.as_str() } else { "" }),
        ),
    ]))
}

/// The host part of the control-plane endpoint URL (brackets of IPv6 removed).
fn endpoint_host(endpoint: &str) -> String {
    let rest = endpoint
        .split_once("://")
        .map(|(_, r)| r)
        .unwrap_or(endpoint);
    let hostport = rest.split('/').next().unwrap_or(rest);
    if let Some(inner) = hostport.strip_prefix('[') {
        return inner.split(']').next().unwrap_or(inner).to_string();
    }
    hostport
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(hostport)
        .to_string()
}

fn image(repo: &str, version: &str) -> Option<Value> {
    (!version.is_empty()).then(|| Value::from(format!("{repo}:v{version}")))
}

/// The documents of a machine config, in Talos's order: v1alpha1, registry mirrors (contracts
/// above 1.11), HostnameConfig (above 1.11), KubeSpanConfig (above 1.12, when enabled).
pub fn generate(input: &Input, kind: MachineType) -> Result<Vec<Value>> {
    let c = input.contract;
    let cp = kind == MachineType::ControlPlane;
    let b = &input.bundle;
    let certs = b
        .certs
        .as_ref()
        .ok_or_else(|| anyhow!("the secrets bundle has no certs"))?;
    let o = &input.options;
    let k8s = input.kubernetes_version.trim_start_matches('v');

    // machine
    let mut machine = map([
        ("type", Value::from(kind.as_str())),
        (
            "token",
            Value::from(
                b.trustdinfo
                    .as_ref()
                    .map(|t| t.token.as_str())
                    .unwrap_or(""),
            ),
        ),
        ("ca", pair(&certs.os, "os", cp)?),
        ("certSANs", strings(&o.additional_sans)),
    ]);
    let mut kubelet = Value::Mapping(Mapping::new());
    if let Some(img) = image("ghcr.io/siderolabs/kubelet", k8s) {
        put(&mut kubelet, "image", img);
    }
    if c.newer_than(1, 1) {
        put(
            &mut kubelet,
            "defaultRuntimeSeccompProfileEnabled",
            true.into(),
        );
    }
    if c.newer_than(1, 2) {
        put(&mut kubelet, "disableManifestsDirectory", true.into());
    }
    put(&mut machine, "kubelet", kubelet);
    if !c.newer_than(1, 12) {
        let mut network = Value::Mapping(Mapping::new());
        if o.kubespan {
            put(&mut network, "kubespan", map([("enabled", true.into())]));
        }
        put(&mut machine, "network", network);
    }
    let mut install = Value::Mapping(Mapping::new());
    if let Some(d) = &o.install_disk {
        put(&mut install, "disk", d.as_str().into());
    }
    if !o.install_extra_kernel_args.is_empty() {
        put(
            &mut install,
            "extraKernelArgs",
            strings(&o.install_extra_kernel_args),
        );
    }
    if let Some(i) = &o.install_image {
        put(&mut install, "image", i.as_str().into());
    }
    put(&mut install, "wipe", false.into());
    if c.newer_than(1, 11) {
        put(&mut install, "grubUseUKICmdline", true.into());
    }
    put(&mut machine, "install", install);
    if !o.sysctls.is_empty() {
        let mut s = Mapping::new();
        for (k, v) in &o.sysctls {
            s.insert(k.as_str().into(), v.as_str().into());
        }
        put(&mut machine, "sysctls", Value::Mapping(s));
    }
    if !c.newer_than(1, 11) && !o.registry_mirrors.is_empty() {
        let mut mirrors = Mapping::new();
        for (host, eps) in &o.registry_mirrors {
            mirrors.insert(host.as_str().into(), map([("endpoints", strings(eps))]));
        }
        put(
            &mut machine,
            "registries",
            map([("mirrors", Value::Mapping(mirrors))]),
        );
    }
    let mut features = Value::Mapping(Mapping::new());
    if !c.newer_than(1, 11) {
        put(&mut features, "rbac", true.into());
        if c.newer_than(1, 1) {
            put(&mut features, "stableHostname", true.into());
        }
        if c.newer_than(1, 2) {
            put(&mut features, "apidCheckExtKeyUsage", true.into());
        }
    }
    if c.newer_than(1, 4) {
        put(&mut features, "diskQuotaSupport", true.into());
    }
    if c.newer_than(1, 5) {
        put(
            &mut features,
            "kubePrism",
            map([("enabled", true.into()), ("port", 7445.into())]),
        );
    }
    if c.newer_than(1, 6) {
        let mut host_dns = map([("enabled", true.into())]);
        if c.newer_than(1, 7) {
            put(&mut host_dns, "forwardKubeDNSToHost", true.into());
        }
        put(&mut features, "hostDNS", host_dns);
    }
    put(&mut machine, "features", features);
    if cp && c.newer_than(1, 7) {
        put(
            &mut machine,
            "nodeLabels",
            map([(
                "node.kubernetes.io/exclude-from-external-load-balancers",
                "".into(),
            )]),
        );
    }

    // cluster
    let cluster_ids = b
        .cluster
        .as_ref()
        .ok_or_else(|| anyhow!("the secrets bundle has no cluster"))?;
    let mut cluster = map([
        ("id", cluster_ids.id.as_str().into()),
        ("secret", cluster_ids.secret.as_str().into()),
    ]);
    let mut control_plane = map([("endpoint", input.endpoint.as_str().into())]);
    if cp {
        if let Some(port) = o.local_api_server_port {
            put(&mut control_plane, "localAPIServerPort", port.into());
        }
    }
    put(&mut cluster, "controlPlane", control_plane);
    if cp || c.newer_than(1, 7) {
        put(
            &mut cluster,
            "clusterName",
            input.cluster_name.as_str().into(),
        );
    }
    let ipv6 = input.endpoint.parse::<std::net::Ipv6Addr>().is_ok();
    let (pods, services) = if ipv6 {
        ("fc00:db8:10::/56", "fc00:db8:20::/112")
    } else {
        ("10.244.0.0/16", "10.96.0.0/12")
    };
    let mut network = Value::Mapping(Mapping::new());
    if let Some((name, urls)) = &o.cni {
        put(
            &mut network,
            "cni",
            map([("name", name.as_str().into()), ("urls", strings(urls))]),
        );
    }
    put(
        &mut network,
        "dnsDomain",
        o.dns_domain.as_deref().unwrap_or("cluster.local").into(),
    );
    put(&mut network, "podSubnets", strings(&[pods.to_string()]));
    put(
        &mut network,
        "serviceSubnets",
        strings(&[services.to_string()]),
    );
    put(&mut cluster, "network", network);
    let secrets = b
        .secrets
        .as_ref()
        .ok_or_else(|| anyhow!("the secrets bundle has no secrets"))?;
    put(
        &mut cluster,
        "token",
        secrets.bootstraptoken.as_str().into(),
    );
    if cp {
        if !secrets.aescbcencryptionsecret.is_empty() {
            put(
                &mut cluster,
                "aescbcEncryptionSecret",
                secrets.aescbcencryptionsecret.as_str().into(),
            );
        }
        if !secrets.secretboxencryptionsecret.is_empty() {
            put(
                &mut cluster,
                "secretboxEncryptionSecret",
                secrets.secretboxencryptionsecret.as_str().into(),
            );
        }
    }
    put(&mut cluster, "ca", pair(&certs.k8s, "k8s", cp)?);
    if cp {
        put(
            &mut cluster,
            "aggregatorCA",
            pair(&certs.k8saggregator, "k8saggregator", true)?,
        );
        let sa = certs
            .k8sserviceaccount
            .as_ref()
            .ok_or_else(|| anyhow!("the secrets bundle has no certs.k8sserviceaccount"))?;
        put(
            &mut cluster,
            "serviceAccount",
            map([("key", sa.key.as_str().into())]),
        );
        put(&mut cluster, "apiServer", api_server(input, k8s));
        for (field, repo) in [
            (
                "controllerManager",
                "registry.k8s.io/kube-controller-manager",
            ),
            ("proxy", "registry.k8s.io/kube-proxy"),
            ("scheduler", "registry.k8s.io/kube-scheduler"),
        ] {
            if let Some(img) = image(repo, k8s) {
                put(&mut cluster, field, map([("image", img)]));
            }
        }
    }
    let mut registries = Value::Mapping(Mapping::new());
    if c.newer_than(1, 1) {
        put(
            &mut registries,
            "kubernetes",
            map([("disabled", true.into())]),
        );
    }
    put(&mut registries, "service", Value::Mapping(Mapping::new()));
    put(
        &mut cluster,
        "discovery",
        map([("enabled", true.into()), ("registries", registries)]),
    );
    if cp {
        put(
            &mut cluster,
            "etcd",
            map([("ca", pair(&certs.etcd, "etcd", true)?)]),
        );
        if o.allow_scheduling_on_control_planes {
            let key = if c.newer_than(1, 1) {
                "allowSchedulingOnControlPlanes"
            } else {
                "allowSchedulingOnMasters"
            };
            put(&mut cluster, key, true.into());
        }
    }

    let mut docs = vec![map([
        ("version", "v1alpha1".into()),
        ("debug", false.into()),
        ("persist", true.into()),
        ("machine", machine),
        ("cluster", cluster),
    ])];
    if c.newer_than(1, 11) {
        let mut mirrors = o.registry_mirrors.clone();
        mirrors.sort_by(|a, b| a.0.cmp(&b.0));
        for (host, eps) in mirrors {
            let endpoints = eps
                .iter()
                .map(|e| map([("url", e.as_str().into())]))
                .collect();
            docs.push(map([
                ("apiVersion", "v1alpha1".into()),
                ("kind", "RegistryMirrorConfig".into()),
                ("name", host.as_str().into()),
                ("endpoints", Value::Sequence(endpoints)),
            ]));
        }
        docs.push(map([
            ("apiVersion", "v1alpha1".into()),
            ("kind", "HostnameConfig".into()),
            ("auto", "stable".into()),
        ]));
    }
    if c.newer_than(1, 12) && o.kubespan {
        docs.push(map([
            ("apiVersion", "v1alpha1".into()),
            ("kind", "KubeSpanConfig".into()),
            ("enabled", true.into()),
        ]));
    }
    Ok(docs)
}

fn api_server(input: &Input, k8s: &str) -> Value {
    let c = input.contract;
    let mut api = Value::Mapping(Mapping::new());
    if let Some(img) = image("registry.k8s.io/kube-apiserver", k8s) {
        put(&mut api, "image", img);
    }
    let mut sans = Vec::new();
    if !c.newer_than(1, 11) {
        sans.push(endpoint_host(&input.endpoint));
    }
    sans.extend(input.options.additional_sans.iter().cloned());
    if !sans.is_empty() {
        put(&mut api, "certSANs", strings(&sans));
    }
    if !c.newer_than(1, 11) {
        put(&mut api, "disablePodSecurityPolicy", true.into());
    }
    if c.newer_than(1, 0) {
        let defaults = map([
            ("audit", "restricted".into()),
            ("audit-version", "latest".into()),
            ("enforce", "baseline".into()),
            ("enforce-version", "latest".into()),
            ("warn", "restricted".into()),
            ("warn-version", "latest".into()),
        ]);
        let exemptions = map([
            ("namespaces", strings(&["kube-system".to_string()])),
            ("runtimeClasses", Value::Sequence(Vec::new())),
            ("usernames", Value::Sequence(Vec::new())),
        ]);
        let configuration = map([
            (
                "apiVersion",
                "pod-security.admission.config.k8s.io/v1alpha1".into(),
            ),
            ("defaults", defaults),
            ("exemptions", exemptions),
            ("kind", "PodSecurityConfiguration".into()),
        ]);
        put(
            &mut api,
            "admissionControl",
            Value::Sequence(vec![map([
                ("name", "PodSecurity".into()),
                ("configuration", configuration),
            ])]),
        );
    }
    if c.newer_than(1, 2) {
        put(
            &mut api,
            "auditPolicy",
            map([
                ("apiVersion", "audit.k8s.io/v1".into()),
                ("kind", "Policy".into()),
                (
                    "rules",
                    Value::Sequence(vec![map([("level", "Metadata".into())])]),
                ),
            ]),
        );
    }
    api
}

/// Documents as Talos writes them: each in the Talos layout, joined by `---`.
pub fn to_text(docs: &[Value]) -> String {
    docs.iter()
        .map(talm_base::yaml::to_string)
        .collect::<Vec<_>>()
        .join("---\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_hosts() {
        assert_eq!(endpoint_host("https://base:6443"), "base");
        assert_eq!(endpoint_host("https://[fd00::1]:6443"), "fd00::1");
        assert_eq!(endpoint_host("https://10.0.0.1"), "10.0.0.1");
    }
}
