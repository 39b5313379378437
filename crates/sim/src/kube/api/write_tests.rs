//! Writes over HTTPS beyond the basics: JSON patch, the scale and status subresources,
//! deleting a namespace with its contents, and the protected namespaces.

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{json, Value};

use super::tests::{days_ago, pod, start};
use crate::kube::store::Key;

fn deployment(ns: &str, name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": days_ago(1)},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": replicas, "readyReplicas": replicas}})
}

#[tokio::test]
async fn json_patch_scale_and_status() {
    let f = start("127.0.0.205:16443").await;
    f.seed(
        "deployments.apps",
        "default",
        deployment("default", "web", 2),
    );
    let client = f.client(Some(&f.admin())).await;
    let req = hyper::Request::patch("/apis/apps/v1/namespaces/default/deployments/web")
        .header("content-type", "application/json-patch+json")
        .body(br#"[{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:2"}]"#.to_vec())
        .unwrap();
    let patched: Value = client.request(req).await.unwrap();
    assert_eq!(
        patched["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    let deps: Api<Deployment> = Api::namespaced(client, "default");
    let scale = deps.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(2));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=web"));
    let to5 = json!({"spec": {"replicas": 5}});
    deps.patch_scale("web", &PatchParams::default(), &Patch::Merge(&to5))
        .await
        .unwrap();
    // A main-resource write leaves the status alone; a /status write changes only the status.
    let status_by_main =
        json!({"status": {"readyReplicas": 0}, "metadata": {"labels": {"x": "y"}}});
    let d = deps
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(&status_by_main),
        )
        .await
        .unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(5));
    assert_eq!(d.status.unwrap().ready_replicas, Some(2));
    let by_status = json!({"status": {"readyReplicas": 1}, "spec": {"replicas": 9}});
    let d = deps
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&by_status))
        .await
        .unwrap();
    assert_eq!(
        (d.spec.unwrap().replicas, d.status.unwrap().ready_replicas),
        (Some(5), Some(1))
    );
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents() {
    let f = start("127.0.0.205:16444").await;
    let client = f.client(Some(&f.admin())).await;
    let nss: Api<Namespace> = Api::all(client);
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap();
    let made = nss.create(&Default::default(), &ns).await.unwrap();
    assert_eq!(made.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        made.metadata.labels.unwrap()["kubernetes.io/metadata.name"],
        "team"
    );
    f.seed("pods", "team", pod("team", "p", "w1", "a", None));
    f.seed("pods", "default", pod("default", "q", "w1", "a", None));
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    assert!(f.kube.objects.get(&Key::new("pods", "team", "p")).is_none());
    assert!(f
        .kube
        .objects
        .get(&Key::new("pods", "default", "q"))
        .is_some());
    let refused = match nss.delete("default", &DeleteParams::default()).await {
        Err(kube::Error::Api(s)) => s,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (
            403,
            "namespaces \"default\" is forbidden: this namespace may not be deleted"
        )
    );
    let pods: Api<Pod> = Api::namespaced(f.client(Some(&f.admin())).await, "team");
    assert!(pods.get_opt("p").await.unwrap().is_none());
}
