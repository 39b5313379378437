//! Watches over HTTPS: 410 Expired for a version older than the history, streaming lists
//! ending with the initial-events bookmark, and label selectors on events.

use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, Patch, PatchParams, WatchEvent, WatchParams};
use serde_json::json;
use tokio_stream::StreamExt;

use super::tests::{pod, start};
use crate::kube::store::Key;

const WAIT: Duration = Duration::from_secs(10);

async fn next<S, K>(s: &mut S) -> WatchEvent<K>
where
    S: tokio_stream::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin,
{
    tokio::time::timeout(WAIT, s.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("a decodable event")
}

#[tokio::test]
async fn a_watch_from_a_forgotten_version_is_expired() {
    let f = start("127.0.0.204:16443").await;
    let key = Key::new("configmaps", "default", "c");
    f.kube
        .objects
        .create(
            &key,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        )
        .unwrap();
    // More changes than the store's history keeps.
    for i in 0..4200 {
        f.kube
            .objects
            .modify(&key, |o| o["data"] = json!({"i": i.to_string()}));
    }
    let now = f.kube.objects.version();
    let cms: Api<ConfigMap> = Api::namespaced(f.client(Some(&f.admin())).await, "default");
    let mut w = Box::pin(cms.watch(&WatchParams::default(), "2").await.unwrap());
    match next(&mut w).await {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
            assert_eq!(s.message, format!("too old resource version: 2 ({now})"));
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_streaming_list_ends_its_initial_events_with_a_bookmark() {
    let f = start("127.0.0.204:16444").await;
    f.seed("pods", "default", pod("default", "a", "w1", "web", None));
    f.seed("pods", "default", pod("default", "b", "w1", "db", None));
    let pods: Api<Pod> = Api::namespaced(f.client(Some(&f.admin())).await, "default");
    let wp = WatchParams::streaming_lists().labels("app=web");
    let mut w = Box::pin(pods.watch(&wp, "").await.unwrap());
    match next(&mut w).await {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    match next(&mut w).await {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata.resource_version,
                f.kube.objects.version().to_string()
            );
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => panic!("{other:?}"),
    }
    // A change to a pod the selector leaves out is not sent; one it selects is.
    let label = |app: &str| json!({"metadata": {"annotations": {"seen": app}}});
    pods.patch("b", &PatchParams::default(), &Patch::Merge(label("db")))
        .await
        .unwrap();
    pods.patch("a", &PatchParams::default(), &Patch::Merge(label("web")))
        .await
        .unwrap();
    match next(&mut w).await {
        WatchEvent::Modified(p) => assert_eq!(p.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    // Leaving the selector reads as a deletion, coming back as an addition.
    let app = |app: &str| json!({"metadata": {"labels": {"app": app}}});
    pods.patch("a", &PatchParams::default(), &Patch::Merge(app("db")))
        .await
        .unwrap();
    match next(&mut w).await {
        WatchEvent::Deleted(p) => assert_eq!(p.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    pods.patch("b", &PatchParams::default(), &Patch::Merge(app("web")))
        .await
        .unwrap();
    match next(&mut w).await {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("b")),
        other => panic!("{other:?}"),
    }
}
