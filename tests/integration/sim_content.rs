//! The Kubernetes parts, volumes, extensions and roots of trust a simulated node serves, through
//! the real binary: StaticPods and their statuses once etcd runs on a control plane, the
//! KubeletSpec, the bootstrap Manifests, VolumeStatuses before and after the install,
//! ExtensionStatuses, KubernetesRoot and the API's certificates (what the node serves with);
//! each following the node through apply, bootstrap and upgrade.

use std::time::Duration;

use crate::common::expect::addrs;
use crate::common::sim::{mutual, server_cert, Nodes};
use crate::common::{net, Dir};

/// `talm get <args> <target>` (`-f <file>`, or `-n <node> -i` in maintenance), RFC 3339
/// stamps as `$STAMP`.
fn get(d: &Dir, target: &[&str], args: &[&str]) -> String {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(target);
    let re = regex::Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ").unwrap();
    re.replace_all(&d.talm(all).ok().stdout, "$$STAMP")
        .into_owned()
}

/// A table written for node `$A1` as printed for node `ip`: the NODE column as wide as it.
fn table(text: &str, ip: &str) -> String {
    let width = ip.len().max(4) + 3;
    text.lines()
        .map(|l| {
            if let Some(rest) = l.strip_prefix("NODE   ") {
                format!("{:<width$}{rest}\n", "NODE")
            } else if let Some(rest) = l.strip_prefix("$A1    ") {
                format!("{ip:<width$}{rest}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect()
}

/// The IDs of a type's resources, one a line.
fn ids(d: &Dir, target: &[&str], kind: &str) -> String {
    get(d, target, &[kind, "-o", "jsonpath={.metadata.id}"])
}

const MAINTENANCE_VOLUMES: &str = "\
NODE   NAMESPACE   TYPE           ID      VERSION   TYPE        PHASE     LOCATION   SIZE
$A1    runtime     VolumeStatus   META    1         partition   missing              
$A1    runtime     VolumeStatus   STATE   1         partition   missing              
";

fn extensions(version: &str) -> String {
    format!(
        "\
NODE   NAMESPACE   TYPE              ID   VERSION   NAME    VERSION
$A1    runtime     ExtensionStatus   0    1         hello   {version}
"
    )
}

fn kubelet_spec(name: &str) -> String {
    format!(
        "\
node: $A1
metadata:
    namespace: k8s
    type: KubeletSpecs.kubernetes.talos.dev
    id: kubelet
    version: 1
    owner: k8s.KubeletSpecController
    phase: running
    created: $STAMP
    updated: $STAMP
spec:
    image: ghcr.io/siderolabs/kubelet:v1.36.2
    args:
        - --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubeconfig
        - --cert-dir=/var/lib/kubelet/pki
        - --config=/etc/kubernetes/kubelet.yaml
        - --hostname-override={name}
        - --kubeconfig=/etc/kubernetes/kubeconfig-kubelet
        - --node-ip=$A1
    expectedNodename: {name}
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
        crashLoopBackOff: {{}}
        evictionPressureTransitionPeriod: 0s
        failSwapOn: false
        featureGates:
            LocalStorageCapacityIsolationFSQuotaMonitoring: true
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
        memorySwap: {{}}
        nodeStatusReportFrequency: 0s
        nodeStatusUpdateFrequency: 0s
        oomScoreAdj: -450
        port: 10250
        protectKernelDefaults: true
        resolvConf: /system/resolved/resolv.conf
        rotateCertificates: true
        runtimeRequestTimeout: 0s
        seccompDefault: true
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
    )
}

#[test]
fn kubernetes_parts_and_volumes_follow_the_node() {
    let [cp, worker] = net::addrs();
    let hello = cp.clone();
    let nodes = Nodes::start(&[&cp, &worker], move |s| {
        if s.addr.to_string() == hello {
            s.hardware.extensions = vec!["hello".into()];
        }
    });

    // In maintenance: no system disk yet, no Kubernetes parts; the image's extensions.
    let d = Dir::new();
    let (cp_insecure, w_insecure) = (["-n", cp.as_str(), "-i"], ["-n", worker.as_str(), "-i"]);
    assert_eq!(
        get(&d, &cp_insecure, &["volumestatus"]),
        table(MAINTENANCE_VOLUMES, &cp)
    );
    assert_eq!(
        get(&d, &cp_insecure, &["extensions"]),
        table(&extensions("v1.13.7"), &cp)
    );
    assert_eq!(
        get(&d, &w_insecure, &["extensions"]),
        // No rows: only the header, its columns as wide as their names.
        "NODE   NAMESPACE   TYPE   ID   VERSION   NAME   VERSION\n"
    );
    for kind in ["staticpods", "manifests"] {
        assert_eq!(ids(&d, &cp_insecure, kind), "", "{kind}");
    }
    // KubeletSpec is sensitive: refused to the maintenance API's readers.
    let mut args = vec!["get", "kubeletspec"];
    args.extend_from_slice(&w_insecure);
    d.talm(args)
        .fails_with("list KubeletSpecs.kubernetes.talos.dev: not authorized");

    let d = nodes.cluster(&cp, &worker);
    let (cpf, wf) = (["-f", "nodes/cp.yaml"], ["-f", "nodes/worker.yaml"]);
    // Configured: the bootstrap manifests on the control plane only, by Talos's IDs.
    assert_eq!(
        ids(&d, &cpf, "manifests"),
        "\
00-kubelet-bootstrapping-token
01-csr-approver-role-binding
01-csr-node-bootstrap
01-csr-renewal-role-binding
05-flannel
10-kube-proxy
11-core-dns
11-core-dns-svc
11-kube-config-in-cluster
11-talos-node-rbac-template
"
    );
    assert_eq!(ids(&d, &wf, "manifests"), "");
    let w_name = get(&d, &wf, &["nodename", "-o", "jsonpath={.spec.nodename}"]);
    let w_name = w_name.trim();
    assert_eq!(
        addrs(&get(&d, &wf, &["kubeletspec", "-o", "yaml"])),
        kubelet_spec(w_name)
    );
    // The installed system disk's partitions, EPHEMERAL and what Talos mounts on it.
    let volumes = get(&d, &wf, &["volumestatus"]);
    let partitions: String = volumes
        .lines()
        .filter(|l| l.contains("partition"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(
        partitions,
        table(
            "\
$A1    runtime     VolumeStatus   EPHEMERAL                           3         partition   ready   /dev/nvme0n1p4   33 GB
$A1    runtime     VolumeStatus   META                                3         partition   ready   /dev/nvme0n1p2   1.0 MB
$A1    runtime     VolumeStatus   STATE                               3         partition   ready   /dev/nvme0n1p3   105 MB
",
            &worker
        )
    );
    assert_eq!(volumes.lines().count(), 1 + 22);

    // The static pods wait for etcd; then the kubelet runs them.
    assert_eq!(ids(&d, &cpf, "staticpods"), "");
    d.talm(["bootstrap", "-f", "nodes/cp.yaml"]).ok();
    let start = std::time::Instant::now();
    while nodes.node(&cp).state().etcd.is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "etcd runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        get(&d, &cpf, &["staticpods"]),
        table(
            "\
NODE   NAMESPACE   TYPE        ID                        VERSION
$A1    k8s         StaticPod   kube-apiserver            1
$A1    k8s         StaticPod   kube-controller-manager   1
$A1    k8s         StaticPod   kube-scheduler            1
",
            &cp
        )
    );
    let cp_name = get(&d, &cpf, &["nodename", "-o", "jsonpath={.spec.nodename}"]);
    let cp_name = cp_name.trim();
    // Columns as wide as the longest ID (the node's name is in them).
    let pods = [
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
    ];
    let width = format!("kube-system/kube-controller-manager-{cp_name}").len() + 3;
    let mut statuses = format!(
        "NODE   NAMESPACE   TYPE              {:<width$}VERSION   READY\n",
        "ID"
    );
    for pod in pods {
        let id = format!("kube-system/{pod}-{cp_name}");
        statuses.push_str(&format!(
            "$A1    k8s         StaticPodStatus   {id:<width$}3         True\n"
        ));
    }
    assert_eq!(get(&d, &cpf, &["staticpodstatus"]), table(&statuses, &cp));
    assert_eq!(
        get(
            &d,
            &cpf,
            &[
                "staticpods",
                "kube-apiserver",
                "-o",
                "jsonpath={.spec.spec.containers[0].image}"
            ]
        ),
        "registry.k8s.io/kube-apiserver:v1.36.2\n"
    );
    assert_eq!(ids(&d, &wf, "staticpods"), "");

    // The roots of trust: the cluster's (control planes only) and the API's certificates,
    // which are the ones the node serves with; neither for a reader.
    assert_eq!(
        get(
            &d,
            &cpf,
            &["kubernetesrootsecrets", "-o", "jsonpath={.spec.name}"]
        ),
        "mycluster\n"
    );
    assert_eq!(ids(&d, &wf, "kubernetesrootsecrets"), "");
    for (file, ip) in [(&cpf, &cp), (&wf, &worker)] {
        let crt = get(
            &d,
            file,
            &["apicertificates", "-o", "jsonpath={.spec.server.crt}"],
        );
        let pem = talm::secrets::pki::unb64(crt.trim()).unwrap();
        let der = talm::secrets::pki::pem_decode(&pem).unwrap().1;
        assert_eq!(der, server_cert(ip), "{ip}");
    }
    // A control plane's apid has a client certificate (to reach the others), a worker's none.
    let client = |file| {
        get(
            &d,
            file,
            &["apicertificates", "-o", "jsonpath={.spec.client}"],
        )
    };
    assert_eq!(client(&wf), "\n");
    let crt = get(
        &d,
        &cpf,
        &["apicertificates", "-o", "jsonpath={.spec.client.crt}"],
    );
    let pem = talm::secrets::pki::unb64(crt.trim()).unwrap();
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    let reader = nodes.connect(&cp, mutual(&["os:reader"])).unwrap();
    for (ty, id) in [
        ("KubernetesRootSecrets.secrets.talos.dev", "k8s"),
        ("ApiCertificates.secrets.talos.dev", "api"),
    ] {
        let refused = talm::talos::block_on(reader.get("secrets", ty, id)).unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("node {cp}: get {ty}: not authorized")
        );
    }

    // An upgrade: the extensions are the new image's.
    d.talm([
        "upgrade",
        "--drain=false",
        "-f",
        "nodes/cp.yaml",
        "--image",
        "ghcr.io/siderolabs/installer:v1.13.9",
    ])
    .ok();
    assert_eq!(
        get(&d, &cpf, &["extensions"]),
        table(&extensions("v1.13.9"), &cp)
    );
}
