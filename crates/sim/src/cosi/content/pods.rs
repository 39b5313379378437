//! The control plane's static pods as Talos's `k8s.ControlPlaneStaticPodController` renders them
//! from the APIServerConfig, ControllerManagerConfig and SchedulerConfig (`k8s::control_plane`)
//! once etcd is healthy, and the StaticPodStatus the kubelet reports for each: both Go maps
//! (a `v1.Pod` through JSON), so every level's keys are sorted and numbers are floats.

use serde_yaml_ng::Value;

use super::podparts::{annotations, command, extra_args, float, minor, probe, render, Pod};
use super::{res, Ctx};
use crate::cosi::facts::Res;

const API_SECRETS: &str = "/system/secrets/kubernetes/kube-apiserver";
const API_CONFIG: &str = "/system/config/kubernetes/kube-apiserver";
const AUDIT_LOG: &str = "/var/log/audit/kube";
const CM_SECRETS: &str = "/system/secrets/kubernetes/kube-controller-manager";
const SCHED_SECRETS: &str = "/system/secrets/kubernetes/kube-scheduler";
const SCHED_CONFIG: &str = "/system/config/kubernetes/kube-scheduler";

fn api_server(cfg: &Res) -> Value {
    let spec = &cfg.spec;
    let t = |k| crate::cosi::protospec::text(spec, k);
    let endpoint = t("controlPlaneEndpoint");
    let extra = extra_args(spec);
    let secret = |f: &str| format!("{API_SECRETS}/{f}");
    let mut defaults = vec![
        (
            "admission-control-config-file",
            format!("{API_CONFIG}/admission-control-config.yaml"),
        ),
        ("allow-privileged", "true".into()),
        ("anonymous-auth", "false".into()),
        ("api-audiences", endpoint.clone()),
        ("bind-address", "0.0.0.0".into()),
        ("client-ca-file", secret("ca.crt")),
        ("enable-admission-plugins", "NodeRestriction".into()),
        ("requestheader-client-ca-file", secret("aggregator-ca.crt")),
        ("requestheader-allowed-names", "front-proxy-client".into()),
        ("requestheader-extra-headers-prefix", "X-Remote-Extra-".into()),
        ("requestheader-group-headers", "X-Remote-Group".into()),
        ("requestheader-username-headers", "X-Remote-User".into()),
        ("proxy-client-cert-file", secret("front-proxy-client.crt")),
        ("proxy-client-key-file", secret("front-proxy-client.key")),
        ("enable-bootstrap-token-auth", "true".into()),
        ("tls-min-version", "VersionTLS12".into()),
        ("tls-cipher-suites", "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256".into()),
        ("encryption-provider-config", secret("encryptionconfig.yaml")),
        ("audit-policy-file", format!("{API_CONFIG}/auditpolicy.yaml")),
        ("audit-log-path", format!("{AUDIT_LOG}/kube-apiserver.log")),
        ("audit-log-maxage", "30".into()),
        ("audit-log-maxbackup", "10".into()),
        ("audit-log-maxsize", "100".into()),
        ("profiling", "false".into()),
        ("etcd-cafile", secret("etcd-client-ca.crt")),
        ("etcd-certfile", secret("etcd-client.crt")),
        ("etcd-keyfile", secret("etcd-client.key")),
        ("etcd-servers", crate::cosi::protospec::texts(spec, "etcdServers").join(",")),
        ("kubelet-client-certificate", secret("apiserver-kubelet-client.crt")),
        ("kubelet-client-key", secret("apiserver-kubelet-client.key")),
        ("secure-port", crate::cosi::protospec::num(spec, "localPort").to_string()),
        ("service-account-issuer", endpoint),
        ("service-account-key-file", secret("service-account.pub")),
        ("service-account-signing-key-file", secret("service-account.key")),
        ("service-cluster-ip-range", crate::cosi::protospec::texts(spec, "serviceCIDR").join(",")),
        ("tls-cert-file", secret("apiserver.crt")),
        ("tls-private-key-file", secret("apiserver.key")),
        ("kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname".into()),
    ];
    let advertised = t("advertisedAddress");
    if !advertised.is_empty() {
        defaults.push(("advertise-address", advertised));
    }
    let image = t("image");
    let old = minor(&image) < 33;
    if !t("cloudProvider").is_empty() && old {
        defaults.push(("cloud-provider", t("cloudProvider")));
    }
    // Explicit authorization flags keep the modes; otherwise the authorization config file.
    let explicit = extra.contains_key("authorization-mode")
        || extra
            .keys()
            .any(|k| k.starts_with("authorization-webhook-"));
    if explicit || minor(&image) < 30 {
        defaults.push(("authorization-mode", "Node,RBAC".into()));
    } else {
        defaults.push((
            "authorization-config",
            format!("{API_CONFIG}/authorization-config.yaml"),
        ));
    }
    let command = command(
        "/usr/local/bin/kube-apiserver",
        defaults,
        &extra,
        &[
            "enable-admission-plugins",
            "feature-gates",
            "authorization-mode",
            "tls-cipher-suites",
        ],
        &[
            "etcd-servers",
            "client-ca-file",
            "requestheader-client-ca-file",
            "proxy-client-cert-file",
            "proxy-client-key-file",
            "encryption-provider-config",
            "etcd-cafile",
            "etcd-certfile",
            "etcd-keyfile",
            "kubelet-client-certificate",
            "kubelet-client-key",
            "service-account-key-file",
            "service-account-signing-key-file",
            "tls-cert-file",
            "tls-private-key-file",
            "authorization-config",
        ],
    );
    render(Pod {
        name: "kube-apiserver",
        spec,
        command,
        defaults: ("200m", "512Mi"),
        own_volumes: &[
            ("secrets", API_SECRETS, true),
            ("config", API_CONFIG, true),
            ("audit", AUDIT_LOG, false),
        ],
        probes: vec![],
        add_caps: true,
        run_as: 65534,
        annotations: annotations(true, cfg.version),
    })
}

fn controller_manager(cfg: &Res) -> Option<Value> {
    let spec = &cfg.spec;
    if !crate::cosi::protospec::flag(spec, "enabled") {
        return None;
    }
    let t = |k| crate::cosi::protospec::text(spec, k);
    let secret = |f: &str| format!("{CM_SECRETS}/{f}");
    let mut defaults = vec![
        ("allocate-node-cidrs", "true".into()),
        ("bind-address", "127.0.0.1".into()),
        (
            "cluster-cidr",
            crate::cosi::protospec::texts(spec, "podCIDRs").join(","),
        ),
        (
            "service-cluster-ip-range",
            crate::cosi::protospec::texts(spec, "serviceCIDRs").join(","),
        ),
        ("cluster-signing-cert-file", secret("ca.crt")),
        ("cluster-signing-key-file", secret("ca.key")),
        ("controllers", "*,tokencleaner".into()),
        ("configure-cloud-routes", "false".into()),
        ("kubeconfig", secret("kubeconfig")),
        ("authentication-kubeconfig", secret("kubeconfig")),
        ("authorization-kubeconfig", secret("kubeconfig")),
        ("leader-elect", "true".into()),
        ("root-ca-file", secret("ca.crt")),
        (
            "service-account-private-key-file",
            secret("service-account.key"),
        ),
        ("profiling", "false".into()),
        ("tls-min-version", "VersionTLS13".into()),
    ];
    if !t("cloudProvider").is_empty() && minor(&t("image")) < 33 {
        defaults.push(("cloud-provider", t("cloudProvider")));
    }
    let mut command = command(
        "/usr/local/bin/kube-controller-manager",
        defaults,
        &extra_args(spec),
        &["service-cluster-ip-range", "controllers"],
        &[
            "cluster-signing-cert-file",
            "cluster-signing-key-file",
            "authentication-kubeconfig",
            "authorization-kubeconfig",
            "root-ca-file",
            "service-account-private-key-file",
        ],
    );
    command.insert(1, "--use-service-account-credentials".into());
    Some(render(Pod {
        name: "kube-controller-manager",
        spec,
        command,
        defaults: ("50m", "256Mi"),
        own_volumes: &[("secrets", CM_SECRETS, true)],
        probes: vec![
            (
                "startupProbe",
                probe(
                    "/healthz",
                    10257,
                    vec![("periodSeconds", float(5)), ("failureThreshold", float(12))],
                ),
            ),
            (
                "livenessProbe",
                probe("/healthz", 10257, vec![("timeoutSeconds", float(15))]),
            ),
        ],
        add_caps: false,
        run_as: 65535,
        annotations: annotations(false, cfg.version),
    }))
}

fn scheduler(cfg: &Res) -> Option<Value> {
    let spec = &cfg.spec;
    if !crate::cosi::protospec::flag(spec, "enabled") {
        return None;
    }
    let secret = |f: &str| format!("{SCHED_SECRETS}/{f}");
    let defaults = vec![
        ("config", format!("{SCHED_CONFIG}/scheduler-config.yaml")),
        ("authentication-tolerate-lookup-failure", "false".into()),
        ("authentication-kubeconfig", secret("kubeconfig")),
        ("authorization-kubeconfig", secret("kubeconfig")),
        ("bind-address", "127.0.0.1".into()),
        ("leader-elect", "true".into()),
        ("profiling", "false".into()),
        ("tls-min-version", "VersionTLS13".into()),
    ];
    let command = command(
        "/usr/local/bin/kube-scheduler",
        defaults,
        &extra_args(spec),
        &[],
        &[
            "kubeconfig",
            "authentication-kubeconfig",
            "authorization-kubeconfig",
            "config",
        ],
    );
    // Kubernetes 1.23 and later serve /livez and /readyz.
    let (live, ready) = if minor(&crate::cosi::protospec::text(spec, "image")) >= 23 {
        ("/livez", "/readyz")
    } else {
        ("/healthz", "/healthz")
    };
    Some(render(Pod {
        name: "kube-scheduler",
        spec,
        command,
        defaults: ("10m", "64Mi"),
        own_volumes: &[
            ("secrets", SCHED_SECRETS, true),
            ("config", SCHED_CONFIG, true),
        ],
        probes: vec![
            ("startupProbe", probe(live, 10259, vec![])),
            ("livenessProbe", probe(live, 10259, vec![])),
            ("readinessProbe", probe(ready, 10259, vec![])),
        ],
        add_caps: false,
        run_as: 65536,
        annotations: annotations(false, cfg.version),
    }))
}

/// Whether the control plane's pods run: a control plane whose etcd runs and is healthy.
fn pods_run(ctx: &Ctx) -> bool {
    ctx.is_control_plane() && super::etcd_runs(ctx.st) && !ctx.unhealthy.iter().any(|s| s == "etcd")
}

/// The static pods and, while the kubelet runs them, their statuses.
pub fn resources(ctx: &Ctx) -> Vec<Res> {
    if !pods_run(ctx) {
        return Vec::new();
    }
    let configs = super::k8s::control_plane(ctx);
    let find = |id: &str| configs.iter().find(|r| r.id == id);
    let pods: Vec<(&str, Value)> = [
        find("kube-apiserver").map(|c| ("kube-apiserver", api_server(c))),
        find("kube-controller-manager")
            .and_then(|c| Some(("kube-controller-manager", controller_manager(c)?))),
        find("kube-scheduler").and_then(|c| Some(("kube-scheduler", scheduler(c)?))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let mut out: Vec<Res> = pods
        .iter()
        .map(|(id, pod)| {
            res(
                "k8s",
                "StaticPods.kubernetes.talos.dev",
                *id,
                "k8s.ControlPlaneStaticPodController",
                pod.clone(),
                1,
            )
        })
        .collect();
    let kubelet_runs = crate::cosi::content::runtime::service_states(ctx)
        .iter()
        .any(|(id, st)| id == "kubelet" && *st == "Running");
    if let (true, Some(node)) = (kubelet_runs, ctx.st.hostname(ctx.hw)) {
        let node = node.to_lowercase();
        for (id, pod) in &pods {
            out.push(super::podstatus::status(ctx, &node, id, pod));
        }
    }
    out
}

#[cfg(test)]
mod tests;
