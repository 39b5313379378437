//! The kubelet's KubeletSpec as Talos's `k8s.KubeletSpecController` derives it from the
//! machine config (`machine.kubelet`, the cluster network) and the node (name, address): the
//! image, the command line, extra mounts, the expected node name and the
//! KubeletConfiguration (a Go map: keys sorted), with Talos's defaults.

use std::collections::BTreeMap;

use serde_yaml_ng::Value;

use super::lookup::{at, flag_at, texts_at};
use super::podparts::gomap;
use super::{map, res, s, texts, Ctx};
use crate::cosi::facts::Res;

/// The kubelet image: `machine.kubelet.image`, else Talos's for the default Kubernetes.
pub fn image(doc: Option<&Value>) -> String {
    at(doc, &["machine", "kubelet", "image"])
        .and_then(Value::as_str)
        .filter(|i| !i.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| {
            format!(
                "ghcr.io/siderolabs/kubelet:{}",
                crate::world::KUBERNETES_VERSION
            )
        })
}

/// The tenth address of the first service subnet (CoreDNS's service IP).
pub fn dns_ip(doc: Option<&Value>) -> String {
    let cidr = at(doc, &["cluster", "network", "serviceSubnets"])
        .and_then(|v| v.get(0))
        .and_then(Value::as_str)
        .unwrap_or("10.96.0.0/12");
    let net = talm_base::netip::cidr_network(cidr).unwrap_or_default();
    match net
        .split('/')
        .next()
        .unwrap_or("")
        .parse::<std::net::IpAddr>()
    {
        Ok(std::net::IpAddr::V4(a)) => std::net::Ipv4Addr::from(u32::from(a) + 10).to_string(),
        Ok(std::net::IpAddr::V6(a)) => std::net::Ipv6Addr::from(u128::from(a) + 10).to_string(),
        Err(_) => "10.96.0.10".into(),
    }
}

/// `cluster.network.dnsDomain`, `cluster.local` by default.
pub fn dns_domain(doc: Option<&Value>) -> String {
    at(doc, &["cluster", "network", "dnsDomain"])
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .unwrap_or("cluster.local")
        .to_string()
}

/// The KubeletConfiguration Talos writes, `extraConfig` laid over it.
fn configuration(doc: Option<&Value>, control_plane: bool) -> Value {
    let zero = || s("0s");
    let mut dns = texts_at(doc, &["machine", "kubelet", "clusterDNS"]);
    if dns.is_empty() {
        dns.push(dns_ip(doc));
    }
    let memory = if control_plane { "512Mi" } else { "384Mi" };
    let mut c: BTreeMap<String, Value> = [
        ("address", s("0.0.0.0")),
        ("apiVersion", s("kubelet.config.k8s.io/v1beta1")),
        (
            "authentication",
            gomap(vec![
                ("anonymous", gomap(vec![("enabled", Value::from(false))])),
                (
                    "webhook",
                    gomap(vec![("cacheTTL", zero()), ("enabled", Value::from(true))]),
                ),
                (
                    "x509",
                    gomap(vec![("clientCAFile", s("/etc/kubernetes/pki/ca.crt"))]),
                ),
            ]),
        ),
        (
            "authorization",
            gomap(vec![
                ("mode", s("Webhook")),
                (
                    "webhook",
                    gomap(vec![
                        ("cacheAuthorizedTTL", zero()),
                        ("cacheUnauthorizedTTL", zero()),
                    ]),
                ),
            ]),
        ),
        ("cgroupRoot", s("/")),
        ("clusterDNS", texts(&dns)),
        ("clusterDomain", s(dns_domain(doc))),
        (
            "containerRuntimeEndpoint",
            s("unix:///run/containerd/containerd.sock"),
        ),
        ("cpuManagerReconcilePeriod", zero()),
        ("crashLoopBackOff", gomap(vec![])),
        ("evictionPressureTransitionPeriod", zero()),
        ("failSwapOn", Value::from(false)),
        ("fileCheckFrequency", zero()),
        ("httpCheckFrequency", zero()),
        ("imageMaximumGCAge", zero()),
        ("imageMinimumGCAge", zero()),
        ("kind", s("KubeletConfiguration")),
        ("kubeletCgroups", s("/podruntime/kubelet")),
        (
            "logging",
            gomap(vec![
                ("flushFrequency", Value::from(0u64)),
                ("format", s("json")),
                (
                    "options",
                    gomap(vec![
                        ("json", gomap(vec![("infoBufferSize", s("0"))])),
                        ("text", gomap(vec![("infoBufferSize", s("0"))])),
                    ]),
                ),
                ("verbosity", Value::from(0u64)),
            ]),
        ),
        ("memorySwap", gomap(vec![])),
        ("nodeStatusReportFrequency", zero()),
        ("nodeStatusUpdateFrequency", zero()),
        ("oomScoreAdj", Value::from(-450i64)),
        ("port", Value::from(10250u64)),
        ("protectKernelDefaults", Value::from(true)),
        ("resolvConf", s("/system/resolved/resolv.conf")),
        ("rotateCertificates", Value::from(true)),
        ("runtimeRequestTimeout", zero()),
        ("serializeImagePulls", Value::from(false)),
        ("shutdownGracePeriod", s("30s")),
        ("shutdownGracePeriodCriticalPods", s("10s")),
        ("staticPodPath", s("/etc/kubernetes/manifests")),
        ("streamingConnectionIdleTimeout", s("5m0s")),
        ("syncFrequency", zero()),
        ("systemCgroups", s("/system")),
        (
            "systemReserved",
            gomap(vec![
                ("cpu", s("50m")),
                ("ephemeral-storage", s("256Mi")),
                ("memory", s(memory)),
                ("pid", s("100")),
            ]),
        ),
        ("tlsMinVersion", s("VersionTLS13")),
        ("volumeStatsAggPeriod", zero()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if flag_at(
        doc,
        &["machine", "kubelet", "defaultRuntimeSeccompProfileEnabled"],
    ) {
        c.insert("seccompDefault".into(), Value::from(true));
    }
    if flag_at(doc, &["machine", "features", "diskQuotaSupport"]) {
        c.insert(
            "featureGates".into(),
            gomap(vec![(
                "LocalStorageCapacityIsolationFSQuotaMonitoring",
                Value::from(true),
            )]),
        );
    }
    if control_plane && !flag_at(doc, &["cluster", "allowSchedulingOnControlPlanes"]) {
        c.insert(
            "registerWithTaints".into(),
            Value::Sequence(vec![gomap(vec![
                ("effect", s("NoSchedule")),
                ("key", s("node-role.kubernetes.io/control-plane")),
            ])]),
        );
    }
    if let Some(extra) = at(doc, &["machine", "kubelet", "extraConfig"]).and_then(Value::as_mapping)
    {
        for (k, v) in extra {
            if let Some(k) = k.as_str() {
                c.insert(k.to_string(), v.clone());
            }
        }
    }
    Value::Mapping(c.into_iter().map(|(k, v)| (Value::from(k), v)).collect())
}

/// `machine.kubelet.extraMounts` as the OCI mounts Talos keeps (field names lowercased).
fn extra_mounts(doc: Option<&Value>) -> Option<Value> {
    let mounts = at(doc, &["machine", "kubelet", "extraMounts"])?.as_sequence()?;
    if mounts.is_empty() {
        return None;
    }
    let text = |m: &Value, k: &str| s(crate::cosi::protospec::text(m, k));
    Some(Value::Sequence(
        mounts
            .iter()
            .map(|m| {
                map(vec![
                    ("destination", text(m, "destination")),
                    ("type", text(m, "type")),
                    ("source", text(m, "source")),
                    (
                        "options",
                        texts(&crate::cosi::protospec::texts(m, "options")),
                    ),
                    ("uidmappings", Value::Sequence(vec![])),
                    ("gidmappings", Value::Sequence(vec![])),
                ])
            })
            .collect(),
    ))
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    let Some(cfg) = &ctx.st.config else {
        return Vec::new();
    };
    let Some(nodename) = ctx.st.hostname(ctx.hw).map(|h| h.to_lowercase()) else {
        return Vec::new();
    };
    let doc = cfg.v1alpha1();
    let mut args: BTreeMap<String, String> = [
        (
            "bootstrap-kubeconfig",
            "/etc/kubernetes/bootstrap-kubeconfig",
        ),
        ("cert-dir", "/var/lib/kubelet/pki"),
        ("config", "/etc/kubernetes/kubelet.yaml"),
        ("hostname-override", nodename.as_str()),
        ("kubeconfig", "/etc/kubernetes/kubeconfig-kubelet"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if let Some(ip) = super::ips(ctx.hw).into_iter().next() {
        args.insert("node-ip".into(), ip);
    }
    if at(doc, &["cluster", "externalCloudProvider", "enabled"]).and_then(Value::as_bool)
        == Some(true)
    {
        args.insert("cloud-provider".into(), "external".into());
    }
    let mut expected = nodename.clone();
    if let Some(extra) = at(doc, &["machine", "kubelet", "extraArgs"]).and_then(Value::as_mapping) {
        for (k, v) in extra {
            let (Some(k), Some(v)) = (k.as_str(), v.as_str()) else {
                continue;
            };
            if ["bootstrap-kubeconfig", "kubeconfig", "config", "cert-dir"].contains(&k) {
                continue;
            }
            if k == "hostname-override" {
                expected.clear();
            }
            args.insert(k.to_string(), v.to_string());
        }
    }
    let args: Vec<String> = args
        .into_iter()
        .map(|(k, v)| format!("--{k}={v}"))
        .collect();
    let mut spec = vec![("image", s(image(doc))), ("args", texts(&args))];
    if let Some(m) = extra_mounts(doc) {
        spec.push(("extraMounts", m));
    }
    if !expected.is_empty() {
        spec.push(("expectedNodename", s(expected)));
    }
    spec.push(("config", configuration(doc, cfg.is_control_plane())));
    vec![res(
        "k8s",
        "KubeletSpecs.kubernetes.talos.dev",
        "kubelet",
        "k8s.KubeletSpecController",
        map(spec),
        1,
    )]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{alone, configured, hw};
    use super::*;

    #[test]
    fn a_worker_kubelet_spec_holds_talos_defaults() {
        let hw = hw();
        let st = configured("worker", "CA");
        let r = resources(&alone(&hw, &st));
        assert_eq!(
            talm_base::yaml::to_string(&r[0].spec),
            "\
image: ghcr.io/siderolabs/kubelet:v1.36.2
args:
    - --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubeconfig
    - --cert-dir=/var/lib/kubelet/pki
    - --config=/etc/kubernetes/kubelet.yaml
    - --hostname-override=node-worker
    - --kubeconfig=/etc/kubernetes/kubeconfig-kubelet
    - --node-ip=127.0.0.11
expectedNodename: node-worker
config:
    address: 0.0.0.0
    apiVersion: kubelet.config.k8s.io/v1beta1
    authentication:
        anonymous:
            enabled: false
        webhook:
            cacheTTL: 0s
            enabled: true
        x509:
            clientCAFile: /etc/kubernetes/pki/ca.crt
    authorization:
        mode: Webhook
        webhook:
            cacheAuthorizedTTL: 0s
            cacheUnauthorizedTTL: 0s
    cgroupRoot: /
    clusterDNS:
        - 10.96.0.10
    clusterDomain: cluster.local
    containerRuntimeEndpoint: unix:///run/containerd/containerd.sock
    cpuManagerReconcilePeriod: 0s
    crashLoopBackOff: {}
    evictionPressureTransitionPeriod: 0s
    failSwapOn: false
    fileCheckFrequency: 0s
    httpCheckFrequency: 0s
    imageMaximumGCAge: 0s
    imageMinimumGCAge: 0s
    kind: KubeletConfiguration
    kubeletCgroups: /podruntime/kubelet
    logging:
        flushFrequency: 0
        format: json
        options:
            json:
                infoBufferSize: \"0\"
            text:
                infoBufferSize: \"0\"
        verbosity: 0
    memorySwap: {}
    nodeStatusReportFrequency: 0s
    nodeStatusUpdateFrequency: 0s
    oomScoreAdj: -450
    port: 10250
    protectKernelDefaults: true
    resolvConf: /system/resolved/resolv.conf
    rotateCertificates: true
    runtimeRequestTimeout: 0s
    serializeImagePulls: false
    shutdownGracePeriod: 30s
    shutdownGracePeriodCriticalPods: 10s
    staticPodPath: /etc/kubernetes/manifests
    streamingConnectionIdleTimeout: 5m0s
    syncFrequency: 0s
    systemCgroups: /system
    systemReserved:
        cpu: 50m
        ephemeral-storage: 256Mi
        memory: 384Mi
        pid: \"100\"
    tlsMinVersion: VersionTLS13
    volumeStatsAggPeriod: 0s
"
        );
        let cp = configured("controlplane", "CA");
        let r = resources(&alone(&hw, &cp));
        assert_eq!(
            talm_base::yaml::to_string(&r[0].spec["config"]["registerWithTaints"]),
            "- effect: NoSchedule\n  key: node-role.kubernetes.io/control-plane\n"
        );
        let maintenance = crate::node::state::State::new("v1.13.7", "n1");
        assert!(resources(&alone(&hw, &maintenance)).is_empty());
    }
}
