//! The bootstrap manifests a control plane's `k8s.ManifestController` renders from the machine
//! config (each Manifest a list of Kubernetes objects, Go maps: keys sorted): the bootstrap
//! token, the CSR bindings, the in-cluster kubeconfig, the Talos nodes' RBAC, and unless
//! disabled flannel, kube-proxy and CoreDNS (their workloads summarised: metadata, selector,
//! containers with image and command), plus the Talos API service account CRD when the
//! config grants pods Talos API access.

use serde_yaml_ng::Value;

use super::lookup::at;
use super::{res, Ctx};
use crate::cosi::facts::Res;

fn text_or(doc: Option<&Value>, path: &[&str], default: &str) -> String {
    at(doc, path)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
        .unwrap_or(default)
        .to_string()
}

fn flag(doc: Option<&Value>, path: &[&str]) -> bool {
    at(doc, path).and_then(Value::as_bool).unwrap_or(false)
}

/// Objects written as YAML (keys already sorted), one document each.
fn objects(docs: &[String]) -> Value {
    Value::Sequence(
        docs.iter()
            .filter_map(|d| serde_yaml_ng::from_str(d).ok())
            .collect(),
    )
}

fn binding(name: &str, role: &str, groups: &[&str]) -> String {
    let subjects: String = groups
        .iter()
        .map(|g| format!("- apiGroup: rbac.authorization.k8s.io\n  kind: Group\n  name: {g}\n"))
        .collect();
    format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {name}\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: {role}\nsubjects:\n{subjects}")
}

fn service_account(name: &str, labels: &str) -> String {
    format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n{labels}  name: {name}\n  namespace: kube-system\n")
}

/// A workload summarised: its selector and one container with image and command.
fn workload(
    kind: &str,
    name: &str,
    app: &str,
    image: &str,
    command: &[String],
    account: &str,
) -> String {
    let cmd: String = command.iter().map(|c| format!("        - {c}\n")).collect();
    // The node agents share the host's network and run on every node, whatever its taints;
    // CoreDNS runs two replicas that may land on control planes.
    let (replicas, host, select, tolerations) = if kind == "DaemonSet" {
        (
            "",
            "      hostNetwork: true\n",
            "",
            "      - effect: NoSchedule\n        operator: Exists\n      - effect: NoExecute\n        operator: Exists\n",
        )
    } else {
        (
            "  replicas: 2\n",
            "",
            "      nodeSelector:\n        kubernetes.io/os: linux\n",
            "      - effect: NoSchedule\n        key: node-role.kubernetes.io/control-plane\n        operator: Exists\n      - effect: NoSchedule\n        key: node.cloudprovider.kubernetes.io/uninitialized\n        operator: Exists\n",
        )
    };
    format!("apiVersion: apps/v1\nkind: {kind}\nmetadata:\n  labels:\n    k8s-app: {app}\n  name: {name}\n  namespace: kube-system\nspec:\n{replicas}  selector:\n    matchLabels:\n      k8s-app: {app}\n  template:\n    metadata:\n      labels:\n        k8s-app: {app}\n    spec:\n      containers:\n      - command:\n{cmd}        image: {image}\n        name: {name}\n{host}{select}      priorityClassName: system-node-critical\n      serviceAccountName: {account}\n      tolerations:\n{tolerations}")
}

/// The manifests of a control plane's config, by ID.
fn render(ctx: &Ctx) -> Vec<(&'static str, Vec<String>)> {
    let doc = ctx.st.config.as_ref().and_then(|c| c.v1alpha1());
    let token = text_or(doc, &["cluster", "token"], "");
    let (token_id, token_secret) = token.split_once('.').unwrap_or(("", ""));
    let port = at(doc, &["cluster", "controlPlane", "localAPIServerPort"])
        .and_then(Value::as_u64)
        .unwrap_or(6443);
    let pods = at(doc, &["cluster", "network", "podSubnets"])
        .and_then(|v| v.get(0))
        .and_then(Value::as_str)
        .unwrap_or("10.244.0.0/16")
        .to_string();
    let nodes_group = ["system:nodes"];
    let mut out = vec![
        ("00-kubelet-bootstrapping-token", vec![format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-{token_id}\n  namespace: kube-system\nstringData:\n  auth-extra-groups: system:bootstrappers:nodes\n  token-id: {token_id:?}\n  token-secret: {token_secret:?}\n  usage-bootstrap-authentication: \"true\"\ntype: bootstrap.kubernetes.io/token\n")]),
        ("01-csr-node-bootstrap", vec![binding("system-bootstrap-node-bootstrapper", "system:node-bootstrapper", &["system:bootstrappers:nodes", "system:nodes"])]),
        ("01-csr-approver-role-binding", vec![binding("system-bootstrap-approve-node-client-csr", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", &["system:bootstrappers:nodes"])]),
        ("01-csr-renewal-role-binding", vec![binding("system-bootstrap-node-renewal", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", &nodes_group)]),
        ("11-kube-config-in-cluster", vec![format!("apiVersion: v1\ndata:\n  kubeconfig: |\n    apiVersion: v1\n    clusters:\n    - cluster:\n        certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt\n        server: https://localhost:{port}\n      name: local\n    contexts:\n    - context:\n        cluster: local\n        user: service-account\n      name: local\n    current-context: local\n    kind: Config\n    users:\n    - name: service-account\n      user:\n        tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token\nkind: ConfigMap\nmetadata:\n  name: kubeconfig-in-cluster\n  namespace: kube-system\n")]),
        ("11-talos-node-rbac-template", vec![
            binding("system:talos-nodes", "system:talos-nodes", &nodes_group).replace("metadata:\n", "metadata:\n  annotations:\n    rbac.authorization.kubernetes.io/autoupdate: \"true\"\n  labels:\n    kubernetes.io/bootstrapping: rbac-defaults\n"),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  labels:\n    kubernetes.io/bootstrapping: rbac-defaults\n  name: system:talos-nodes\nrules:\n- apiGroups:\n  - discovery.k8s.io\n  resources:\n  - endpointslices\n  verbs:\n  - get\n  - list\n  - watch\n".to_string(),
        ]),
    ];
    if !flag(doc, &["cluster", "coreDNS", "disabled"]) {
        let image = text_or(
            doc,
            &["cluster", "coreDNS", "image"],
            crate::world::catalogue::COREDNS_IMAGE,
        );
        let domain = super::kubelet::dns_domain(doc);
        let dns = super::kubelet::dns_ip(doc);
        out.push(("11-core-dns", vec![
            service_account("coredns", ""),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: system:coredns\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - endpoints\n  - services\n  - pods\n  - namespaces\n  verbs:\n  - list\n  - watch\n- apiGroups:\n  - discovery.k8s.io\n  resources:\n  - endpointslices\n  verbs:\n  - list\n  - watch\n".to_string(),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: system:coredns\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: system:coredns\nsubjects:\n- kind: ServiceAccount\n  name: coredns\n  namespace: kube-system\n".to_string(),
            format!("apiVersion: v1\ndata:\n  Corefile: |\n    .:53 {{\n        errors\n        health {{\n            lameduck 5s\n        }}\n        ready\n        log . {{\n            class error\n        }}\n        prometheus :9153\n\n        kubernetes {domain} in-addr.arpa ip6.arpa {{\n            pods insecure\n            fallthrough in-addr.arpa ip6.arpa\n            ttl 30\n        }}\n        forward . /etc/resolv.conf {{\n           max_concurrent 1000\n        }}\n        cache 30 {{\n            disable success {domain}\n            disable denial {domain}\n        }}\n        loop\n        reload\n        loadbalance\n    }}\nkind: ConfigMap\nmetadata:\n  name: coredns\n  namespace: kube-system\n"),
            workload("Deployment", "coredns", "kube-dns", &image, &["/coredns".into(), "-conf".into(), "/etc/coredns/Corefile".into()], "coredns"),
        ]));
        out.push(("11-core-dns-svc", vec![format!("apiVersion: v1\nkind: Service\nmetadata:\n  annotations:\n    prometheus.io/port: \"9153\"\n    prometheus.io/scrape: \"true\"\n  labels:\n    k8s-app: kube-dns\n    kubernetes.io/cluster-service: \"true\"\n    kubernetes.io/name: CoreDNS\n  name: kube-dns\n  namespace: kube-system\nspec:\n  clusterIP: {dns}\n  clusterIPs:\n  - {dns}\n  ipFamilies:\n  - IPv4\n  ipFamilyPolicy: SingleStack\n  ports:\n  - name: dns\n    port: 53\n    protocol: UDP\n    targetPort: 53\n  - name: dns-tcp\n    port: 53\n    protocol: TCP\n    targetPort: 53\n  - name: metrics\n    port: 9153\n    protocol: TCP\n    targetPort: 9153\n  selector:\n    k8s-app: kube-dns\nstatus:\n  loadBalancer: {{}}\n")]));
    }
    if text_or(doc, &["cluster", "network", "cni", "name"], "flannel") == "flannel" {
        out.push(("05-flannel", vec![
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: flannel\nrules:\n- apiGroups:\n  - \"\"\n  resources:\n  - pods\n  verbs:\n  - get\n- apiGroups:\n  - \"\"\n  resources:\n  - nodes\n  verbs:\n  - get\n  - list\n  - watch\n- apiGroups:\n  - \"\"\n  resources:\n  - nodes/status\n  verbs:\n  - patch\n".to_string(),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: flannel\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: flannel\nsubjects:\n- kind: ServiceAccount\n  name: flannel\n  namespace: kube-system\n".to_string(),
            service_account("flannel", "  labels:\n    k8s-app: flannel\n"),
            format!("apiVersion: v1\ndata:\n  cni-conf.json: |-\n    {{\n      \"name\": \"cbr0\",\n      \"cniVersion\": \"1.0.0\",\n      \"plugins\": [\n        {{\n          \"type\": \"flannel\",\n          \"delegate\": {{\n            \"hairpinMode\": true,\n            \"isDefaultGateway\": true\n          }}\n        }},\n        {{\n          \"type\": \"portmap\",\n          \"capabilities\": {{\n            \"portMappings\": true\n          }}\n        }}\n      ]\n    }}\n  net-conf.json: '{{\"Network\":\"{pods}\",\"Backend\":{{\"Type\":\"vxlan\",\"Port\":4789}}}}'\nkind: ConfigMap\nmetadata:\n  labels:\n    app: flannel\n    k8s-app: flannel\n    tier: node\n  name: kube-flannel-cfg\n  namespace: kube-system\n"),
            workload("DaemonSet", "kube-flannel", "flannel", crate::world::catalogue::FLANNEL_IMAGE, &["/opt/bin/flanneld".into(), "--ip-masq".into(), "--kube-subnet-mgr".into()], "flannel"),
        ]));
    }
    if !flag(doc, &["cluster", "proxy", "disabled"]) {
        let image = text_or(
            doc,
            &["cluster", "proxy", "image"],
            &format!(
                "registry.k8s.io/kube-proxy:{}",
                crate::world::KUBERNETES_VERSION
            ),
        );
        let command = vec![
            "/usr/local/bin/kube-proxy".to_string(),
            format!("--cluster-cidr={pods}"),
            "--hostname-override=$(NODE_NAME)".into(),
            "--kubeconfig=/etc/kubernetes/kubeconfig".into(),
            "--proxy-mode=iptables".into(),
            "--conntrack-max-per-core=0".into(),
        ];
        out.push(("10-kube-proxy", vec![
            workload("DaemonSet", "kube-proxy", "kube-proxy", &image, &command, "kube-proxy"),
            service_account("kube-proxy", ""),
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: kube-proxy\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: system:node-proxier\nsubjects:\n- kind: ServiceAccount\n  name: kube-proxy\n  namespace: kube-system\n".to_string(),
        ]));
    }
    if flag(
        doc,
        &["machine", "features", "kubernetesTalosAPIAccess", "enabled"],
    ) {
        out.push(("13-talos-service-account-crd", vec!["apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: serviceaccounts.talos.dev\nspec:\n  group: talos.dev\n  names:\n    kind: ServiceAccount\n    listKind: ServiceAccountList\n    plural: serviceaccounts\n    shortNames:\n    - tsa\n    singular: serviceaccount\n  scope: Namespaced\n  versions:\n  - name: v1alpha1\n    served: true\n    storage: true\n".to_string()]));
    }
    out
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    if !ctx.is_control_plane() {
        return Vec::new();
    }
    render(ctx)
        .into_iter()
        .map(|(id, docs)| {
            res(
                "controlplane",
                "Manifests.kubernetes.talos.dev",
                id,
                "k8s.ManifestController",
                objects(&docs),
                1,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{alone, configured, hw};
    use super::*;

    #[test]
    fn a_control_plane_renders_talos_manifests() {
        let hw = hw();
        let st = configured("controlplane", "CA");
        let r = resources(&alone(&hw, &st));
        let ids: Vec<&str> = r.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "00-kubelet-bootstrapping-token",
                "01-csr-node-bootstrap",
                "01-csr-approver-role-binding",
                "01-csr-renewal-role-binding",
                "11-kube-config-in-cluster",
                "11-talos-node-rbac-template",
                "11-core-dns",
                "11-core-dns-svc",
                "05-flannel",
                "10-kube-proxy"
            ]
        );
        assert_eq!(
            talm_base::yaml::to_string(&r[1].spec),
            "\
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRoleBinding
  metadata:
    name: system-bootstrap-node-bootstrapper
  roleRef:
    apiGroup: rbac.authorization.k8s.io
    kind: ClusterRole
    name: system:node-bootstrapper
  subjects:
    - apiGroup: rbac.authorization.k8s.io
      kind: Group
      name: system:bootstrappers:nodes
    - apiGroup: rbac.authorization.k8s.io
      kind: Group
      name: system:nodes
"
        );
        let every: Vec<usize> = r
            .iter()
            .map(|m| m.spec.as_sequence().unwrap().len())
            .collect();
        assert_eq!(
            every,
            [1, 1, 1, 1, 1, 2, 5, 1, 5, 3],
            "objects per manifest"
        );
        assert!(resources(&alone(&hw, &configured("worker", "CA"))).is_empty());
    }
}
