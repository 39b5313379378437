//! The API server over HTTPS on loopback, driven by the `kube` client library: listing,
//! watching, patching, server-side apply, dry runs, evictions against budgets, errors,
//! authentication and authorization, unavailability and stopping. `kubectl_tests` drives it
//! with the real kubectl.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod};
use kube::api::{
    Api, DeleteParams, EvictParams, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

use super::{serve, server_config, ClusterCa};
use crate::kube::store::Key;
use crate::kube::Kube;
use talm_wire::pki::{self, KeyKind};

/// A client's certificate and key (PEM).
pub struct Creds {
    pub cert: String,
    pub key: String,
}

/// A running server and what a client needs to reach it.
pub struct Fixture {
    pub kube: Arc<Kube>,
    pub stop: CancellationToken,
    pub addr: SocketAddr,
    pub ca: ClusterCa,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A cluster CA as Talos makes it.
pub fn cluster_ca() -> ClusterCa {
    let ca = pki::self_signed_ca(
        KeyKind::EcdsaP256,
        Some("kubernetes"),
        time::OffsetDateTime::now_utc() - time::Duration::minutes(1),
    )
    .unwrap();
    ClusterCa {
        cert_pem: ca.cert_pem,
        key_pem: ca.key.to_talos_pem().unwrap(),
    }
}

/// A client certificate `CN=<cn>, O=<orgs>` from `ca`.
pub fn client(ca: &ClusterCa, cn: &str, orgs: &[&str]) -> Creds {
    let ca_key = KeyPair::from_pem(
        &pki::PrivateKey::from_pem(&ca.key_pem)
            .map(|k| pki::pem_encode("PRIVATE KEY", k.pkcs8_der()))
            .unwrap(),
    )
    .unwrap();
    let issuer = Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key).unwrap();
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    p.distinguished_name = dn;
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &issuer).unwrap();
    Creds {
        cert: cert.pem(),
        key: key.serialize_pem(),
    }
}

/// Starts a server on `addr` (bound before this returns).
pub async fn start(addr: &str) -> Fixture {
    let addr: SocketAddr = addr.parse().unwrap();
    let ca = cluster_ca();
    let kube = Arc::new(Kube::default());
    let stop = CancellationToken::new();
    let tls = server_config(&ca, addr.ip()).unwrap();
    let listener = TcpListener::bind(addr).await.unwrap();
    tokio::spawn(serve(
        listener,
        Arc::new(tls),
        Arc::clone(&kube),
        stop.clone(),
    ));
    Fixture {
        kube,
        stop,
        addr,
        ca,
    }
}

impl Fixture {
    /// A kubeconfig for this server with `creds` (none: no client certificate).
    pub fn kubeconfig(&self, creds: Option<&Creds>) -> String {
        let user = match creds {
            Some(c) => format!(
                "    client-certificate-data: {}\n    client-key-data: {}\n",
                b64(&c.cert),
                b64(&c.key)
            ),
            None => "    username: \"\"\n".into(),
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n    server: https://{}\n    certificate-authority-data: {}\nusers:\n- name: u\n  user:\n{user}contexts:\n- name: u@sim\n  context:\n    cluster: sim\n    namespace: default\n    user: u\ncurrent-context: u@sim\n",
            self.addr,
            b64(&self.ca.cert_pem)
        )
    }

    pub fn admin(&self) -> Creds {
        client(&self.ca, "admin", &["system:masters"])
    }

    pub async fn client(&self, creds: Option<&Creds>) -> kube::Client {
        let kc = Kubeconfig::from_yaml(&self.kubeconfig(creds)).unwrap();
        let mut cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .unwrap();
        // The answers under test (429, 503) are what the client would otherwise retry.
        cfg.default_retry = false;
        kube::Client::try_from(cfg).unwrap()
    }

    pub fn seed(&self, resource: &str, namespace: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        self.kube
            .objects
            .create(&Key::new(resource, namespace, &name), obj)
            .unwrap();
    }
}

/// A timestamp `days` ago, as the store keeps them.
pub fn days_ago(days: i64) -> String {
    let t = time::OffsetDateTime::now_utc() - time::Duration::days(days);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

pub fn node(name: &str, role: Option<&str>, ip: &str) -> Value {
    let mut labels = json!({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"});
    if let Some(r) = role {
        labels[format!("node-role.kubernetes.io/{r}")] = "".into();
    }
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": days_ago(10)},
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": "v1.36.2", "osImage": "Talos (v1.13.7)",
                "kernelVersion": "6.18.1-talos", "containerRuntimeVersion": "containerd://2.1.5",
                "operatingSystem": "linux", "architecture": "amd64"}}})
}

/// A running, ready pod on `node`, owned by `owner` (kind, name) when given.
pub fn pod(ns: &str, name: &str, node: &str, app: &str, owner: Option<(&str, &str)>) -> Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}, "creationTimestamp": days_ago(3)},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running", "podIP": "10.244.1.5",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "nginx", "imageID": "", "state": {"running": {}}}]}});
    if let Some((kind, owner)) = owner {
        let api = if kind == "Node" { "v1" } else { "apps/v1" };
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": api, "kind": kind, "name": owner,
            "uid": format!("uid-{owner}"), "controller": true, "blockOwnerDeletion": true}]);
    }
    p
}

fn pdb(ns: &str, name: &str, app: &str, min: i64) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": ns, "creationTimestamp": days_ago(3)},
        "spec": {"minAvailable": min, "selector": {"matchLabels": {"app": app}}}})
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("not an API error: {other:?}"),
    }
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn list_watch_and_cordon() {
    let f = start("127.0.0.201:16443").await;
    f.seed("nodes", "", node("cp1", Some("control-plane"), "10.5.0.2"));
    f.seed("nodes", "", node("w1", None, "10.5.0.3"));
    let c = f.client(Some(&f.admin())).await;
    let nodes: Api<Node> = Api::all(c.clone());
    let list = nodes.list(&ListParams::default()).await.unwrap();
    let names: Vec<String> = list
        .items
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(names, ["cp1", "w1"]);
    let rv = list.metadata.resource_version.clone().unwrap();
    assert_eq!(rv, f.kube.objects.version().to_string());
    let selected = nodes
        .list(&ListParams::default().labels("node-role.kubernetes.io/control-plane"))
        .await
        .unwrap();
    assert_eq!(selected.items.len(), 1);
    let watch = nodes.watch(&WatchParams::default(), &rv).await.unwrap();
    let mut watch = Box::pin(watch);
    let cordon = json!({"spec": {"unschedulable": true}});
    let patched = nodes
        .patch("w1", &PatchParams::default(), &Patch::Merge(&cordon))
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().unschedulable, Some(true));
    let event = tokio::time::timeout(WAIT, watch.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        WatchEvent::Modified(n) => {
            assert_eq!(n.metadata.name.as_deref(), Some("w1"));
            assert_eq!(n.spec.unwrap().unschedulable, Some(true));
        }
        other => panic!("{other:?}"),
    }
    let unschedulable = nodes
        .list(&ListParams::default().fields("spec.unschedulable=true"))
        .await
        .unwrap();
    assert_eq!(unschedulable.items.len(), 1);
}

#[tokio::test]
async fn a_watch_without_version_starts_with_the_objects() {
    let f = start("127.0.0.201:16444").await;
    f.seed("pods", "default", pod("default", "a", "w1", "web", None));
    let c = f.client(Some(&f.admin())).await;
    let pods: Api<Pod> = Api::namespaced(c, "default");
    let mut w = Box::pin(pods.watch(&WatchParams::default(), "0").await.unwrap());
    match tokio::time::timeout(WAIT, w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        WatchEvent::Added(p) => assert_eq!(p.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
    pods.delete("a", &DeleteParams::default()).await.unwrap();
    match tokio::time::timeout(WAIT, w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
    {
        WatchEvent::Deleted(p) => assert_eq!(p.metadata.name.as_deref(), Some("a")),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn eviction_honours_the_budget() {
    let f = start("127.0.0.201:16445").await;
    f.seed(
        "pods",
        "default",
        pod("default", "web-1", "w1", "web", Some(("ReplicaSet", "web"))),
    );
    f.seed(
        "pods",
        "default",
        pod("default", "web-2", "w1", "web", Some(("ReplicaSet", "web"))),
    );
    f.seed(
        "poddisruptionbudgets.policy",
        "default",
        pdb("default", "web", "web", 1),
    );
    let c = f.client(Some(&f.admin())).await;
    let pods: Api<Pod> = Api::namespaced(c, "default");
    let ok = pods.evict("web-1", &EvictParams::default()).await.unwrap();
    assert_eq!((ok.code, ok.is_success()), (201, true));
    assert!(f
        .kube
        .objects
        .get(&Key::new("pods", "default", "web-1"))
        .is_none());
    let refused = api_err(
        pods.evict("web-2", &EvictParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(refused.code, 429);
    assert_eq!(refused.reason, "TooManyRequests");
    assert_eq!(
        refused.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let causes = refused.details.unwrap().causes;
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "DisruptionBudget");
    assert_eq!(
        causes[0].message,
        "The disruption budget web needs 1 healthy pods and has 1 currently"
    );
    assert!(f
        .kube
        .objects
        .get(&Key::new("pods", "default", "web-2"))
        .is_some());
    let missing = api_err(
        pods.evict("nope", &EvictParams::default())
            .await
            .unwrap_err(),
    );
    assert_eq!(
        (missing.code, missing.message.as_str()),
        (404, "pods \"nope\" not found")
    );
}

fn config_map(data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}, "data": {"k": data}})
}

#[tokio::test]
async fn server_side_apply_owns_fields() {
    let f = start("127.0.0.201:16446").await;
    let c = f.client(Some(&f.admin())).await;
    let cms: Api<ConfigMap> = Api::namespaced(c, "default");
    let made = cms
        .patch(
            "cfg",
            &PatchParams::apply("alice"),
            &Patch::Apply(config_map("1")),
        )
        .await
        .unwrap();
    assert_eq!(made.data.unwrap()["k"], "1");
    let mf = made.metadata.managed_fields.unwrap();
    assert_eq!(
        (mf[0].manager.as_deref(), mf[0].operation.as_deref()),
        (Some("alice"), Some("Apply"))
    );
    let conflict = api_err(
        cms.patch(
            "cfg",
            &PatchParams::apply("bob"),
            &Patch::Apply(config_map("2")),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(conflict.code, 409);
    assert_eq!(
        conflict.message,
        "Apply failed with 1 conflict: conflict with \"alice\": .data.k"
    );
    let forced = cms
        .patch(
            "cfg",
            &PatchParams::apply("bob").force(),
            &Patch::Apply(config_map("2")),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.unwrap()["k"], "2");
    let missing = api_err(
        cms.patch(
            "cfg",
            &PatchParams::default(),
            &Patch::Apply(config_map("3")),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(missing.code, 400);
}

#[tokio::test]
async fn dry_runs_store_nothing() {
    let f = start("127.0.0.201:16447").await;
    let c = f.client(Some(&f.admin())).await;
    let cms: Api<ConfigMap> = Api::namespaced(c, "default");
    let cm: ConfigMap = serde_json::from_value(config_map("1")).unwrap();
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let shown = cms.create(&dry, &cm).await.unwrap();
    assert_eq!(shown.metadata.name.as_deref(), Some("cfg"));
    assert!(f
        .kube
        .objects
        .get(&Key::new("configmaps", "default", "cfg"))
        .is_none());
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let before = f.kube.objects.version();
    let change = json!({"data": {"k": "9"}});
    let pp = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let patched = cms.patch("cfg", &pp, &Patch::Merge(&change)).await.unwrap();
    assert_eq!(patched.data.unwrap()["k"], "9");
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    cms.delete("cfg", &dp).await.unwrap();
    assert_eq!(f.kube.objects.version(), before);
    let stored = f
        .kube
        .objects
        .get(&Key::new("configmaps", "default", "cfg"))
        .unwrap();
    assert_eq!(stored["data"]["k"], "1");
}

#[tokio::test]
async fn errors_read_as_kube_apiserver() {
    let f = start("127.0.0.201:16448").await;
    let c = f.client(Some(&f.admin())).await;
    let pods: Api<Pod> = Api::namespaced(c.clone(), "default");
    let nf = api_err(pods.get("nope").await.unwrap_err());
    assert_eq!(
        (nf.code, nf.reason.as_str(), nf.message.as_str()),
        (404, "NotFound", "pods \"nope\" not found")
    );
    let p: Pod = serde_json::from_value(pod("ghost", "x", "w1", "a", None)).unwrap();
    let ghost: Api<Pod> = Api::namespaced(c.clone(), "ghost");
    let no_ns = api_err(ghost.create(&PostParams::default(), &p).await.unwrap_err());
    assert_eq!(
        (no_ns.code, no_ns.message.as_str()),
        (404, "namespaces \"ghost\" not found")
    );
    let cms: Api<ConfigMap> = Api::namespaced(c, "default");
    let cm: ConfigMap = serde_json::from_value(config_map("1")).unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    let dup = api_err(cms.create(&PostParams::default(), &cm).await.unwrap_err());
    assert_eq!(
        (dup.code, dup.reason.as_str(), dup.message.as_str()),
        (409, "AlreadyExists", "configmaps \"cfg\" already exists")
    );
    let mut stale = cms.get("cfg").await.unwrap();
    stale.metadata.resource_version = Some("1".into());
    let conflict = api_err(
        cms.replace("cfg", &PostParams::default(), &stale)
            .await
            .unwrap_err(),
    );
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
}

#[tokio::test]
async fn users_are_authenticated_and_authorized() {
    let f = start("127.0.0.201:16449").await;
    let anonymous = f.client(None).await;
    let nodes: Api<Node> = Api::all(anonymous);
    let s = api_err(nodes.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(
        (s.code, s.reason.as_str(), s.message.as_str()),
        (401, "Unauthorized", "Unauthorized")
    );
    let bob = client(&f.ca, "bob", &["developers"]);
    let nodes: Api<Node> = Api::all(f.client(Some(&bob)).await);
    let s = api_err(nodes.list(&ListParams::default()).await.unwrap_err());
    assert_eq!(s.code, 403);
    assert_eq!(
        s.message,
        "nodes is forbidden: User \"bob\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    let other_ca = cluster_ca();
    let stranger = client(&other_ca, "admin", &["system:masters"]);
    let nodes: Api<Node> = Api::all(f.client(Some(&stranger)).await);
    assert!(!matches!(
        nodes.list(&ListParams::default()).await,
        Ok(_) | Err(kube::Error::Api(_))
    ));
}

#[tokio::test]
async fn unavailable_then_stopped() {
    let f = start("127.0.0.201:16450").await;
    let c = f.client(Some(&f.admin())).await;
    let nodes: Api<Node> = Api::all(c.clone());
    *f.kube.unavailable_until.lock().unwrap() =
        Some(std::time::Instant::now() + Duration::from_secs(600));
    let s = api_err(nodes.list(&ListParams::default()).await.unwrap_err());
    assert_eq!((s.code, s.reason.as_str()), (503, "ServiceUnavailable"));
    *f.kube.unavailable_until.lock().unwrap() = None;
    let mut w = Box::pin(nodes.watch(&WatchParams::default(), "0").await.unwrap());
    f.stop.cancel();
    // The watch ends (an error or the end of the stream) when the server stops.
    let ended = tokio::time::timeout(WAIT, async {
        loop {
            match w.next().await {
                None | Some(Err(_)) => break,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok());
    assert!(nodes.list(&ListParams::default()).await.is_err());
}

#[tokio::test]
async fn listen_reports_a_bad_ca_and_a_taken_address() {
    let kube = Arc::new(Kube::default());
    let bad = ClusterCa {
        cert_pem: "not a certificate".into(),
        key_pem: "not a key".into(),
    };
    let addr: SocketAddr = "127.0.0.201:16451".parse().unwrap();
    let stop = CancellationToken::new();
    let err = super::listen(addr, &bad, Arc::clone(&kube), stop.clone())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let _taken = TcpListener::bind(addr).await.unwrap();
    let err = super::listen(addr, &cluster_ca(), kube, stop)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::AddrInUse);
}
