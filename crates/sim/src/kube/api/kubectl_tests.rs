//! The API server driven by the real kubectl (`/usr/bin/kubectl`): tables of nodes and pods,
//! cordon, drain (a ReplicaSet's pod evicted, a DaemonSet's ignored), server-side apply and
//! delete, with exact outputs. Skipped when kubectl is not installed.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use std::time::Duration;

use super::tests::{node, pod, start, Fixture};
use crate::kube::store::Key;

const KUBECTL: &str = "/usr/bin/kubectl";

/// Runs kubectl against the fixture; (stdout, stderr, success).
async fn kubectl(dir: &Path, args: &[&str]) -> (String, String, bool) {
    let dir = dir.to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = Command::new(KUBECTL)
            .env("KUBECONFIG", dir.join("kubeconfig"))
            .env("HOME", &dir)
            .arg("--cache-dir")
            .arg(dir.join("cache"))
            .args(&args)
            .output()
            .expect("kubectl runs");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
            out.status.success(),
        )
    })
    .await
    .unwrap()
}

fn seed(f: &Fixture) {
    f.seed("nodes", "", node("cp1", Some("control-plane"), "10.5.0.2"));
    f.seed("nodes", "", node("w1", None, "10.5.0.3"));
    f.seed(
        "pods",
        "default",
        pod(
            "default",
            "web-1",
            "w1",
            "web",
            Some(("ReplicaSet", "web-5d8f")),
        ),
    );
    f.seed(
        "pods",
        "kube-system",
        pod(
            "kube-system",
            "flannel-x",
            "w1",
            "flannel",
            Some(("DaemonSet", "flannel")),
        ),
    );
    f.seed(
        "daemonsets.apps",
        "kube-system",
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "flannel", "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": {"app": "flannel"}},
                "template": {"metadata": {"labels": {"app": "flannel"}}, "spec": {"containers": [{"name": "f", "image": "flannel"}]}}}}),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_gets_cordons_drains_applies_and_deletes() {
    if !Path::new(KUBECTL).exists() {
        eprintln!("skipped: no {KUBECTL}");
        return;
    }
    let f = start("127.0.0.203:16443").await;
    seed(&f);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("kubeconfig"), f.kubeconfig(Some(&f.admin()))).unwrap();

    let (out, err, ok) = kubectl(dir, &["get", "nodes", "-o", "wide"]).await;
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "NAME   STATUS   ROLES           AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE          KERNEL-VERSION   CONTAINER-RUNTIME\n\
         cp1    Ready    control-plane   10d   v1.36.2   10.5.0.2      <none>        Talos (v1.13.7)   6.18.1-talos     containerd://2.1.5\n\
         w1     Ready    <none>          10d   v1.36.2   10.5.0.3      <none>        Talos (v1.13.7)   6.18.1-talos     containerd://2.1.5\n"
    );

    let (out, err, ok) = kubectl(dir, &["get", "pods", "-A"]).await;
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "NAMESPACE     NAME        READY   STATUS    RESTARTS   AGE\n\
         default       web-1       1/1     Running   0          3d\n\
         kube-system   flannel-x   1/1     Running   0          3d\n"
    );

    let (out, err, ok) = kubectl(dir, &["cordon", "w1"]).await;
    assert!(ok, "{err}");
    assert_eq!(out, "node/w1 cordoned\n");
    let (out, _, _) = kubectl(dir, &["get", "nodes"]).await;
    assert_eq!(
        out,
        "NAME   STATUS                     ROLES           AGE   VERSION\n\
         cp1    Ready                      control-plane   10d   v1.36.2\n\
         w1     Ready,SchedulingDisabled   <none>          10d   v1.36.2\n"
    );

    let (out, err, ok) = kubectl(dir, &["drain", "w1", "--ignore-daemonsets"]).await;
    assert!(ok, "{err}");
    assert_eq!(
        out,
        "node/w1 already cordoned\nevicting pod default/web-1\npod/web-1 evicted\nnode/w1 drained\n"
    );
    assert_eq!(
        err,
        "Warning: ignoring DaemonSet-managed Pods: kube-system/flannel-x\n"
    );
    let objects = &f.kube.objects;
    assert!(objects.get(&Key::new("pods", "default", "web-1")).is_none());
    assert!(objects
        .get(&Key::new("pods", "kube-system", "flannel-x"))
        .is_some());

    let manifest = dir.join("cm.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  namespace: default\ndata:\n  k: v\n",
    )
    .unwrap();
    let file = manifest.to_str().unwrap();
    let (out, err, ok) = kubectl(dir, &["apply", "--server-side", "-f", file]).await;
    assert!(ok, "{err}");
    assert_eq!(out, "configmap/cfg serverside-applied\n");
    let cm = objects
        .get(&Key::new("configmaps", "default", "cfg"))
        .unwrap();
    assert_eq!(cm["data"], json!({"k": "v"}));
    assert_eq!(cm["metadata"]["managedFields"][0]["manager"], "kubectl");

    let (out, err, ok) = kubectl(dir, &["delete", "configmap", "cfg"]).await;
    assert!(ok, "{err}");
    assert_eq!(out, "configmap \"cfg\" deleted\n");
    assert!(objects
        .get(&Key::new("configmaps", "default", "cfg"))
        .is_none());

    let (_, err, ok) = kubectl(dir, &["get", "pod", "nope"]).await;
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (NotFound): pods \"nope\" not found\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_is_refused_without_rights() {
    if !Path::new(KUBECTL).exists() {
        eprintln!("skipped: no {KUBECTL}");
        return;
    }
    let f = start("127.0.0.203:16444").await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let bob = super::tests::client(&f.ca, "bob", &["developers"]);
    std::fs::write(dir.join("kubeconfig"), f.kubeconfig(Some(&bob))).unwrap();
    let (_, err, ok) = kubectl(dir, &["get", "nodes"]).await;
    assert!(!ok);
    assert_eq!(
        err,
        "Error from server (Forbidden): nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope\n"
    );
}

/// kubectl's `create` subcommands send protobuf bodies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_creates_with_protobuf_bodies() {
    if !Path::new(KUBECTL).exists() {
        eprintln!("skipped: no {KUBECTL}");
        return;
    }
    let f = start("127.0.0.203:16445").await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("kubeconfig"), f.kubeconfig(Some(&f.admin()))).unwrap();
    let runs: [(&[&str], &str); 4] = [
        (&["create", "namespace", "team"], "namespace/team created\n"),
        (
            &[
                "create",
                "configmap",
                "c",
                "-n",
                "team",
                "--from-literal=a=b",
            ],
            "configmap/c created\n",
        ),
        (
            &["create", "secret", "generic", "s", "--from-literal=a=b"],
            "secret/s created\n",
        ),
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx",
                "--replicas=2",
            ],
            "deployment.apps/web created\n",
        ),
    ];
    for (args, want) in runs {
        let (out, err, ok) = kubectl(dir, args).await;
        assert!(ok, "{args:?}: {err}");
        assert_eq!(out, want);
    }
    let objects = &f.kube.objects;
    let ns = objects.get(&Key::new("namespaces", "", "team")).unwrap();
    assert_eq!(ns["status"]["phase"], "Active");
    let cm = objects.get(&Key::new("configmaps", "team", "c")).unwrap();
    assert_eq!(cm["data"], json!({"a": "b"}));
    let secret = objects.get(&Key::new("secrets", "default", "s")).unwrap();
    assert_eq!(
        (&secret["data"], &secret["type"]),
        (&json!({"a": "Yg=="}), &json!("Opaque"))
    );
    let web = objects
        .get(&Key::new("deployments.apps", "default", "web"))
        .unwrap();
    assert_eq!(web["spec"]["replicas"], 2);
    assert_eq!(
        web["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"],
        json!([{"name": "nginx", "image": "nginx", "resources": {}}])
    );
}

/// A server to try clients against by hand: `TALM_KAPI_DEV=dir` writes `dir/kubeconfig`
/// and serves for five minutes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "serves for five minutes for trying clients by hand"]
async fn dev_server() {
    let Ok(dir) = std::env::var("TALM_KAPI_DEV") else {
        return;
    };
    let f = start("127.0.0.202:16443").await;
    seed(&f);
    std::fs::write(format!("{dir}/kubeconfig"), f.kubeconfig(Some(&f.admin()))).unwrap();
    tokio::time::sleep(Duration::from_secs(300)).await;
}
