use super::super::testing::{alone, configured, hw};
use super::*;
use std::collections::BTreeMap;

fn yaml(v: &Value) -> String {
    talm_base::yaml::to_string(v)
}

#[test]
fn pods_wait_for_etcd_and_are_rendered_as_talos_renders_them() {
    let hw = hw();
    let mut st = configured("controlplane", "CA");
    assert!(resources(&alone(&hw, &st)).is_empty(), "etcd is not up");
    st.etcd_bootstrapped = true;
    let r = resources(&alone(&hw, &st));
    let ids: Vec<(&str, &str)> = r.iter().map(|r| (r.ty, r.id.as_str())).collect();
    assert_eq!(
        ids,
        [
            ("StaticPods.kubernetes.talos.dev", "kube-apiserver"),
            ("StaticPods.kubernetes.talos.dev", "kube-controller-manager"),
            ("StaticPods.kubernetes.talos.dev", "kube-scheduler"),
            (
                "StaticPodStatuses.kubernetes.talos.dev",
                "kube-system/kube-apiserver-node-controlplane"
            ),
            (
                "StaticPodStatuses.kubernetes.talos.dev",
                "kube-system/kube-controller-manager-node-controlplane"
            ),
            (
                "StaticPodStatuses.kubernetes.talos.dev",
                "kube-system/kube-scheduler-node-controlplane"
            ),
        ]
    );
    assert_eq!(
        yaml(&r[2].spec),
        "\
apiVersion: v1
kind: Pod
metadata:
    annotations:
        talos.dev/config-version: \"1\"
        talos.dev/secrets-version: \"1\"
    labels:
        app.kubernetes.io/component: control-plane
        app.kubernetes.io/managed-by: Talos
        app.kubernetes.io/name: kube-scheduler
        app.kubernetes.io/version: 1.36.2
        component: kube-scheduler
        k8s-app: kube-scheduler
        tier: control-plane
    name: kube-scheduler
    namespace: kube-system
spec:
    containers:
        - command:
            - /usr/local/bin/kube-scheduler
            - --authentication-kubeconfig=/system/secrets/kubernetes/kube-scheduler/kubeconfig
            - --authentication-tolerate-lookup-failure=false
            - --authorization-kubeconfig=/system/secrets/kubernetes/kube-scheduler/kubeconfig
            - --bind-address=127.0.0.1
            - --config=/system/config/kubernetes/kube-scheduler/scheduler-config.yaml
            - --leader-elect=true
            - --profiling=false
            - --tls-min-version=VersionTLS13
          env:
            - name: POD_IP
              valueFrom:
                fieldRef:
                    fieldPath: status.podIP
          image: registry.k8s.io/kube-scheduler:v1.36.2
          livenessProbe:
            httpGet:
                host: localhost
                path: /livez
                port: 10259
                scheme: HTTPS
          name: kube-scheduler
          readinessProbe:
            httpGet:
                host: localhost
                path: /readyz
                port: 10259
                scheme: HTTPS
          resources:
            requests:
                cpu: 10m
                memory: 64Mi
          securityContext:
            allowPrivilegeEscalation: false
            capabilities:
                drop:
                    - ALL
            seccompProfile:
                type: RuntimeDefault
          startupProbe:
            httpGet:
                host: localhost
                path: /livez
                port: 10259
                scheme: HTTPS
          volumeMounts:
            - mountPath: /system/secrets/kubernetes/kube-scheduler
              name: secrets
              readOnly: true
            - mountPath: /system/config/kubernetes/kube-scheduler
              name: config
              readOnly: true
    hostNetwork: true
    priority: 2e+09
    priorityClassName: system-cluster-critical
    securityContext:
        runAsGroup: 65536
        runAsNonRoot: true
        runAsUser: 65536
    volumes:
        - hostPath:
            path: /system/secrets/kubernetes/kube-scheduler
          name: secrets
        - hostPath:
            path: /system/config/kubernetes/kube-scheduler
          name: config
status: {}
"
    );
    let api = &r[0].spec;
    assert_eq!(
        api["metadata"]["annotations"]["talos.dev/config-file-version"],
        Value::from("1")
    );
    let command: Vec<&str> = api["spec"]["containers"][0]["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(command[0], "/usr/local/bin/kube-apiserver");
    assert!(command.contains(&"--authorization-config=/system/config/kubernetes/kube-apiserver/authorization-config.yaml"));
    assert!(command.contains(&"--etcd-servers=https://127.0.0.1:2379"));
    assert!(command.contains(&"--advertise-address=$(POD_IP)"));
    // The controller manager's flag without a value comes right after the binary.
    assert_eq!(
        r[1].spec["spec"]["containers"][0]["command"][1],
        Value::from("--use-service-account-credentials")
    );
    let status = &r[3].spec;
    assert_eq!(
        super::super::testing::keys(status),
        [
            "conditions",
            "containerStatuses",
            "hostIP",
            "hostIPs",
            "phase",
            "podIP",
            "podIPs",
            "qosClass",
            "startTime"
        ]
    );
    assert_eq!(status["phase"], Value::from("Running"));
    assert_eq!(status["podIP"], Value::from("127.0.0.11"));
}

#[test]
fn extra_args_merge_as_talos_merges_them() {
    let mut extra = BTreeMap::new();
    extra.insert(
        "enable-admission-plugins".to_string(),
        vec!["PodNodeSelector,NodeRestriction".to_string()],
    );
    extra.insert("v".to_string(), vec!["2".to_string()]);
    extra.insert("tls-cert-file".to_string(), vec!["/x".to_string()]);
    let c = command(
        "/bin/x",
        vec![
            ("enable-admission-plugins", "NodeRestriction".into()),
            ("tls-cert-file", "/a".into()),
        ],
        &extra,
        &["enable-admission-plugins"],
        &["tls-cert-file"],
    );
    assert_eq!(
        c,
        [
            "/bin/x",
            "--enable-admission-plugins=NodeRestriction,PodNodeSelector",
            "--tls-cert-file=/a",
            "--v=2"
        ]
    );
}

#[test]
fn a_worker_and_a_failing_etcd_have_no_static_pods() {
    let hw = hw();
    let mut st = configured("worker", "CA");
    st.etcd_bootstrapped = true;
    assert!(resources(&alone(&hw, &st)).is_empty());
    let mut cp = configured("controlplane", "CA");
    cp.etcd_bootstrapped = true;
    let unhealthy = ["etcd".to_string()];
    let ctx = Ctx {
        unhealthy: &unhealthy,
        ..alone(&hw, &cp)
    };
    assert!(resources(&ctx).is_empty());
}
