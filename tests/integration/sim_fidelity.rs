//! The simulated node against a COSI/gRPC client's expectations of real Talos: the Watch
//! protocol (ready marker, bootstrap, tail events, single-resource watches, bookmarks, label
//! queries), List queries, proto_spec on every resource, grpc-go's size limit and ALPN rule,
//! GenerateClientConfiguration, refused COSI writes, and followed logs.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use talm::config::generate::MachineType;
use talm::proto::cosi::resource as cosi;
use talm::proto::machine;
use talm::talos::client::Client;
use talm::talos::creds::Auth;
use talm::talos::streams::{DataStream, Watch};
use talm::talos::verify::NodeVerifier;
use tonic::Code;

use crate::common::net;
use crate::common::sim::*;

const LINKS: &str = "LinkStatuses.net.talos.dev";
const RDS: &str = "ResourceDefinitions.meta.cosi.dev";

fn on<T>(f: impl Future<Output = T>) -> T {
    talm::talos::block_on(f)
}

fn id(e: &cosi::Event) -> &str {
    e.resource
        .as_ref()
        .and_then(|r| r.metadata.as_ref())
        .map(|m| m.id.as_str())
        .unwrap_or("")
}

fn kind(e: &cosi::Event) -> cosi::EventType {
    cosi::EventType::try_from(e.event_type).unwrap()
}

fn version(r: Option<&cosi::Resource>) -> &str {
    r.and_then(|r| r.metadata.as_ref())
        .map(|m| m.version.as_str())
        .unwrap_or("")
}

async fn next(w: &mut Watch) -> cosi::Event {
    tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .expect("an event within 5s")
        .unwrap()
        .expect("the watch is still open")
}

/// Nothing arrives for a moment (and the stream does not end).
async fn quiet(w: &mut Watch) {
    let r = tokio::time::timeout(Duration::from_millis(300), w.next()).await;
    assert!(r.is_err(), "expected silence, got {r:?}");
}

fn watch(c: &Client, ty: &str, id: Option<&str>, o: cosi::WatchOptions) -> Watch {
    let ns = if ty == RDS { "meta" } else { "network" };
    on(c.watch(ns, ty, id, o)).unwrap()
}

fn bootstrap() -> cosi::WatchOptions {
    cosi::WatchOptions {
        bootstrap_contents: true,
        ..Default::default()
    }
}

fn raw_watch_error(c: &Client, id: Option<&str>, o: cosi::WatchOptions) -> tonic::Status {
    let req = cosi::WatchRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        id: id.map(str::to_string),
        options: Some(o),
        api_version: 1,
    };
    on(c.state().watch(req)).map(|_| ()).unwrap_err()
}

#[test]
fn watch_sends_the_ready_marker_then_one_event_per_response() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let req = |aggregated| cosi::WatchRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        id: None,
        options: Some(cosi::WatchOptions {
            aggregated,
            ..bootstrap()
        }),
        api_version: 1,
    };
    on(async {
        let mut s = c.state().watch(req(false)).await.unwrap().into_inner();
        let ready = s.message().await.unwrap().unwrap();
        assert!(
            ready.event.is_empty(),
            "the first response is the empty ready marker"
        );
        let mut ids = Vec::new();
        loop {
            let r = s.message().await.unwrap().unwrap();
            assert_eq!(r.event.len(), 1, "one event per response: {r:?}");
            let e = &r.event[0];
            if kind(e) == cosi::EventType::Bootstrapped {
                let md = e.resource.as_ref().unwrap().metadata.as_ref().unwrap();
                assert_eq!((md.id.as_str(), md.version.as_str()), ("", "undefined"));
                assert_eq!(
                    (md.namespace.as_str(), md.r#type.as_str()),
                    ("network", LINKS)
                );
                assert_eq!(e.resource.as_ref().unwrap().spec, Some(Default::default()));
                assert_eq!(e.bookmark.as_ref().map(Vec::len), Some(16));
                break;
            }
            assert_eq!(kind(e), cosi::EventType::Created);
            ids.push(id(e).to_string());
        }
        assert_eq!(ids, ["eth0", "lo"], "bootstrap contents sorted by ID");

        let mut s = c.state().watch(req(true)).await.unwrap().into_inner();
        assert!(s.message().await.unwrap().unwrap().event.is_empty());
        let batch = s.message().await.unwrap().unwrap();
        let kinds: Vec<_> = batch.event.iter().map(kind).collect();
        use cosi::EventType::*;
        assert_eq!(
            kinds,
            [Created, Created, Bootstrapped],
            "aggregated: one batch"
        );
    });
}

#[test]
fn kind_watch_follows_changes_tails_and_resumes_from_bookmarks() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let node = Arc::clone(h.node(&h.addr));
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let mut w = watch(&c, LINKS, None, bootstrap());
    let (a, b, marker) = on(async { (next(&mut w).await, next(&mut w).await, next(&mut w).await) });
    assert_eq!((id(&a), id(&b)), ("eth0", "lo"));
    assert_eq!(kind(&marker), cosi::EventType::Bootstrapped);

    node.set_label("network", LINKS, "eth0", "role", Some("db"));
    let up = on(next(&mut w));
    assert_eq!((kind(&up), id(&up)), (cosi::EventType::Updated, "eth0"));
    assert_eq!(version(up.resource.as_ref()), "2");
    assert_eq!(
        version(up.old.as_ref()),
        "1",
        "an update carries the old resource"
    );
    let labels = &up
        .resource
        .as_ref()
        .unwrap()
        .metadata
        .as_ref()
        .unwrap()
        .labels;
    assert_eq!(labels.get("role").map(String::as_str), Some("db"));

    // The history so far: created eth0, created lo, updated eth0; the last two replayed.
    let mut tail = watch(
        &c,
        LINKS,
        None,
        cosi::WatchOptions {
            tail_events: 2,
            ..Default::default()
        },
    );
    let (x, y) = on(async { (next(&mut tail).await, next(&mut tail).await) });
    assert_eq!((kind(&x), id(&x)), (cosi::EventType::Created, "lo"));
    assert_eq!((kind(&y), id(&y)), (cosi::EventType::Updated, "eth0"));
    on(quiet(&mut tail));

    // Resuming after the bootstrap marker replays what happened since.
    let mut resumed = watch(
        &c,
        LINKS,
        None,
        cosi::WatchOptions {
            start_from_bookmark: marker.bookmark.clone(),
            ..Default::default()
        },
    );
    let again = on(next(&mut resumed));
    assert_eq!(
        (kind(&again), id(&again)),
        (cosi::EventType::Updated, "eth0")
    );

    let st = raw_watch_error(
        &c,
        None,
        cosi::WatchOptions {
            tail_events: 1,
            ..bootstrap()
        },
    );
    assert_eq!(
        (st.code(), st.message()),
        (
            Code::Unknown,
            "cannot use BootstrapContents with TailEvents and StartFromBookmark options"
        )
    );
    let st = raw_watch_error(
        &c,
        None,
        cosi::WatchOptions {
            start_from_bookmark: Some(b"not a bookmark".to_vec()),
            ..Default::default()
        },
    );
    assert_eq!(
        (st.code(), st.message()),
        (Code::FailedPrecondition, "invalid watch bookmark")
    );
}

#[test]
fn single_resource_watches_start_from_the_current_state() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let node = Arc::clone(h.node(&h.addr));
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let mut w = watch(&c, LINKS, Some("eth0"), Default::default());
    let first = on(next(&mut w));
    assert_eq!(
        (kind(&first), id(&first)),
        (cosi::EventType::Created, "eth0")
    );
    assert_eq!(version(first.resource.as_ref()), "1");

    let mut missing = watch(&c, LINKS, Some("eth9"), Default::default());
    let gone = on(next(&mut missing));
    assert_eq!(
        (kind(&gone), id(&gone)),
        (cosi::EventType::Destroyed, "eth9")
    );
    assert_eq!(version(gone.resource.as_ref()), "undefined", "a tombstone");

    // Only the watched resource's changes come through.
    node.set_label("network", LINKS, "lo", "k", Some("v"));
    node.set_label("network", LINKS, "eth0", "k", Some("v"));
    let up = on(next(&mut w));
    assert_eq!((kind(&up), id(&up)), (cosi::EventType::Updated, "eth0"));
    on(quiet(&mut missing));

    let st = raw_watch_error(&c, Some("eth0"), bootstrap());
    assert_eq!(
        (st.code(), st.message()),
        (
            Code::Unimplemented,
            "bootstrap contents is not implemented for resource watch"
        )
    );
    let labelled = cosi::WatchOptions {
        label_query: vec![cosi::LabelQuery::default()],
        ..Default::default()
    };
    let st = raw_watch_error(&c, Some("eth0"), labelled);
    assert_eq!(
        (st.code(), st.message()),
        (
            Code::Unimplemented,
            "label query is not implemented for resource watch"
        )
    );
}

fn term(key: &str, op: cosi::label_term::Operation, values: &[&str]) -> cosi::LabelTerm {
    cosi::LabelTerm {
        key: key.into(),
        op: op as i32,
        value: values.iter().map(|v| v.to_string()).collect(),
        invert: false,
    }
}

fn query(terms: Vec<cosi::LabelTerm>) -> cosi::LabelQuery {
    cosi::LabelQuery { terms }
}

#[test]
fn list_honours_id_and_label_queries() {
    use cosi::label_term::Operation::*;
    let h = Nodes::start(&[net::addr()], |_| {});
    let node = h.node(&h.addr);
    for (id, tier) in [
        ("linkstatuses", "1"),
        ("addressstatuses", "2"),
        ("routestatuses", "10"),
    ] {
        node.set_label(
            "meta",
            RDS,
            &format!("{id}.net.talos.dev"),
            "tier",
            Some(tier),
        );
    }
    node.set_label(
        "meta",
        RDS,
        "routestatuses.net.talos.dev",
        "owner",
        Some("net"),
    );
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let list = |labels: Vec<cosi::LabelQuery>, re: &str| -> Vec<String> {
        let o = cosi::ListOptions {
            label_query: labels,
            id_query: (!re.is_empty()).then(|| cosi::IdQuery { regexp: re.into() }),
        };
        on(c.list_with("meta", RDS, o))
            .unwrap()
            .into_iter()
            .map(|r| {
                r.metadata
                    .unwrap()
                    .id
                    .split('.')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(list(vec![], "").len(), 14);
    assert_eq!(
        list(vec![], "^(link|route)"),
        ["linkstatuses", "routestatuses"]
    );
    assert_eq!(
        list(vec![query(vec![term("tier", Equal, &["2"])])], ""),
        ["addressstatuses"]
    );
    assert_eq!(
        list(vec![query(vec![term("tier", Exists, &[])])], "").len(),
        3
    );
    let mut not = term("tier", Exists, &[]);
    not.invert = true;
    assert_eq!(list(vec![query(vec![not])], "").len(), 11);
    assert_eq!(
        list(vec![query(vec![term("tier", NotExists, &[])])], "").len(),
        11
    );
    assert_eq!(
        list(vec![query(vec![term("tier", In, &["1", "10"])])], ""),
        ["linkstatuses", "routestatuses"]
    );
    assert_eq!(
        list(vec![query(vec![term("tier", Lt, &["2"])])], ""),
        ["linkstatuses", "routestatuses"],
        "string order: \"10\" < \"2\""
    );
    assert_eq!(
        list(vec![query(vec![term("tier", LteNumeric, &["2"])])], ""),
        ["addressstatuses", "linkstatuses"]
    );
    assert_eq!(
        list(
            vec![
                query(vec![term("tier", Equal, &["1"])]),
                query(vec![term("tier", Equal, &["10"])])
            ],
            ""
        ),
        ["linkstatuses", "routestatuses"],
        "queries are ORed"
    );
    assert_eq!(
        list(
            vec![query(vec![
                term("tier", Exists, &[]),
                term("owner", Equal, &["net"])
            ])],
            ""
        ),
        ["routestatuses"],
        "terms are ANDed"
    );
    assert_eq!(
        list(vec![query(vec![term("tier", Exists, &[])])], "^address"),
        ["addressstatuses"]
    );

    let bad = |o: cosi::ListOptions| {
        let req = cosi::ListRequest {
            namespace: "meta".into(),
            r#type: RDS.into(),
            options: Some(o),
        };
        on(c.state().list(req)).map(|_| ()).unwrap_err()
    };
    let st = bad(cosi::ListOptions {
        id_query: Some(cosi::IdQuery {
            regexp: "(link".into(),
        }),
        ..Default::default()
    });
    assert_eq!(
        (st.code(), st.message()),
        (
            Code::InvalidArgument,
            "failed to compile regexp: error parsing regexp: missing closing ): `(link`"
        )
    );
    let st = bad(cosi::ListOptions {
        label_query: vec![query(vec![term("tier", Equal, &[])])],
        ..Default::default()
    });
    assert_eq!(st.code(), Code::Internal, "Go panics on the missing value");
}

#[test]
fn label_queried_watches_see_resources_enter_and_leave() {
    use cosi::label_term::Operation::*;
    let h = Nodes::start(&[net::addr()], |_| {});
    let node = Arc::clone(h.node(&h.addr));
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let o = cosi::WatchOptions {
        label_query: vec![query(vec![term("role", Equal, &["db"])])],
        ..Default::default()
    };
    let mut w = watch(&c, LINKS, None, o);
    node.set_label("network", LINKS, "lo", "role", Some("web"));
    node.set_label("network", LINKS, "eth0", "role", Some("db"));
    let enter = on(next(&mut w));
    assert_eq!(
        (kind(&enter), id(&enter)),
        (cosi::EventType::Created, "eth0")
    );
    assert!(enter.old.is_none());
    node.set_label("network", LINKS, "eth0", "role", Some("web"));
    let leave = on(next(&mut w));
    assert_eq!(
        (kind(&leave), id(&leave)),
        (cosi::EventType::Destroyed, "eth0")
    );
    on(quiet(&mut w));
}

#[test]
fn every_resource_carries_its_proto_spec() {
    use talm::proto::talos::resource::definitions::network;
    let lan = net::subnet(24);
    let h = Nodes::start(&[lan.host(6)], |_| {});
    let ip: std::net::Ipv4Addr = h.addr.parse().unwrap();
    let gw: std::net::Ipv4Addr = lan.host(1).parse().unwrap();
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    // A META tag, so MetaKeys has a resource to carry a spec.
    on(c.meta_write(0x0c, b"tag".to_vec())).unwrap();
    let defs = on(c.list("meta", RDS)).unwrap();
    assert_eq!(defs.len(), 14);
    for d in &defs {
        let spec = d.spec.as_ref().unwrap();
        let rd = cosi::meta::ResourceDefinitionSpec::decode(spec.proto_spec.as_slice()).unwrap();
        let items = on(c.list(&rd.default_namespace, &rd.resource_type)).unwrap();
        assert!(!items.is_empty(), "{} has resources", rd.resource_type);
        for r in items {
            let s = r.spec.unwrap();
            assert!(
                !s.proto_spec.is_empty(),
                "{} {} has a proto_spec",
                rd.resource_type,
                r.metadata.unwrap().id
            );
        }
        let sensitive = rd.resource_type == "MachineConfigs.config.talos.dev";
        assert_eq!(rd.sensitivity == 1, sensitive, "{}", rd.resource_type);
    }
    let eth0 = on(c.get("network", LINKS, "eth0")).unwrap().unwrap();
    let link = network::LinkStatusSpec::decode(eth0.spec.unwrap().proto_spec.as_slice()).unwrap();
    assert_eq!(
        (link.r#type, link.mtu, link.operational_state),
        (1, 1500, 6)
    );
    let o = ip.octets();
    assert_eq!(link.hardware_addr, [0x52, 0x54, 0x00, o[1], o[2], o[3]]);
    assert_eq!(link.flags & 0x1, 1, "UP");
    let route = on(c.get(
        "network",
        "RouteStatuses.net.talos.dev",
        &format!("inet4/{gw}//1024"),
    ))
    .unwrap()
    .unwrap();
    let route =
        network::RouteStatusSpec::decode(route.spec.unwrap().proto_spec.as_slice()).unwrap();
    assert_eq!(route.gateway.unwrap().ip, gw.octets());
    assert_eq!(
        (route.table, route.protocol, route.priority),
        (254, 16, 1024)
    );
    let mc = on(c.get("config", "MachineConfigs.config.talos.dev", "v1alpha1"))
        .unwrap()
        .unwrap();
    let spec = talm::proto::resource::config::MachineConfigSpec::decode(
        mc.spec.unwrap().proto_spec.as_slice(),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(spec.yaml_marshalled).unwrap(),
        config(MachineType::ControlPlane, Some("/dev/nvme0n1"))
    );
}

#[test]
fn oversized_requests_are_resource_exhausted() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let req = machine::ApplyConfigurationRequest {
        data: vec![b'#'; (32 << 20) + 1],
        ..Default::default()
    };
    let len = req.encoded_len();
    let st = on(c
        .machine()
        .max_encoding_message_size(usize::MAX)
        .apply_configuration(req))
    .unwrap_err();
    assert_eq!(st.code(), Code::ResourceExhausted, "{st:?}");
    assert_eq!(
        st.message(),
        format!("grpc: received message larger than max ({len} vs. 33554432)")
    );
    // The COSI service takes Talos's 32 MiB too, not tonic's default 4 MiB.
    let list = cosi::ListRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        options: Some(cosi::ListOptions {
            label_query: vec![query(vec![term(
                &"k".repeat(5 << 20),
                cosi::label_term::Operation::Exists,
                &[],
            )])],
            id_query: None,
        }),
    };
    let found = on(async {
        let mut s = c
            .state()
            .max_encoding_message_size(usize::MAX)
            .list(list)
            .await
            .unwrap()
            .into_inner();
        let mut n = 0;
        while s.message().await.unwrap().is_some() {
            n += 1;
        }
        n
    });
    assert_eq!(found, 0, "no link has that label");
}

/// A TLS connection to `addr`, offering `alpn`; what the server says after an HTTP/2 preface
/// (`None` when it closed the connection instead).
fn after_preface(addr: &str, alpn: Option<&[u8]>) -> Option<usize> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = addr.to_string();
    let alpn = alpn.map(<[u8]>::to_vec);
    on(async move {
        let mut cfg = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::aws_lc_rs::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NodeVerifier::new(None, Default::default())))
        .with_no_client_auth();
        cfg.alpn_protocols = alpn.into_iter().collect();
        let tcp = tokio::net::TcpStream::connect(format!("{addr}:50000"))
            .await
            .unwrap();
        let name = rustls::pki_types::ServerName::try_from(addr).unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(name, tcp)
            .await
            .ok()?;
        // The client preface and an empty SETTINGS frame.
        let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        tls.write_all(&hello).await.ok()?;
        let mut buf = [0u8; 64];
        match tokio::time::timeout(Duration::from_secs(5), tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => Some(n),
            _ => None,
        }
    })
}

#[test]
fn clients_without_alpn_are_dropped() {
    let h = Nodes::start(&[net::addr()], |_| {});
    assert!(
        after_preface(&h.addr, Some(b"h2")).is_some(),
        "h2 is served"
    );
    assert_eq!(after_preface(&h.addr, None), None, "no ALPN: dropped");
}

#[test]
fn generate_client_configuration_issues_certificates_for_admins() {
    let h = Nodes::start(&[net::addr()], |_| {});
    let c = h.connect(&h.addr, Auth::Insecure).unwrap();
    let err =
        on(c.generate_client_configuration(&["os:reader"], Duration::from_secs(3600))).unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err:#}");
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    let g = on(c.generate_client_configuration(&["os:reader"], Duration::from_secs(3600))).unwrap();
    let (ca, _) = bundle().os_ca().unwrap();
    assert_eq!(String::from_utf8(g.ca.clone()).unwrap(), ca);
    let crt = String::from_utf8(g.crt.clone()).unwrap();
    let (_, der) = talm::secrets::pki::pem_decode(&crt).unwrap();
    let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
    let orgs: Vec<_> = cert
        .subject()
        .iter_organization()
        .map(|o| o.as_str().unwrap().to_string())
        .collect();
    assert_eq!(orgs, ["os:reader"]);
    let v = cert.validity();
    let life = v.not_after.timestamp() - v.not_before.timestamp();
    assert_eq!(life, 3600, "crt_ttl");
    let tc: serde_yaml_ng::Value = serde_yaml_ng::from_slice(&g.talosconfig).unwrap();
    assert_eq!(tc["context"].as_str(), Some("reader@sim"));
    let ctx = &tc["contexts"]["reader@sim"];
    assert_eq!(ctx["endpoints"], serde_yaml_ng::Value::Sequence(vec![]));

    // The issued identity works, with the reader's rights.
    let key =
        talm::secrets::pki::PrivateKey::from_pem(std::str::from_utf8(&g.key).unwrap()).unwrap();
    let reader = h.connect(&h.addr, identity_auth(&ca, crt, &key)).unwrap();
    assert!(on(reader.list("network", LINKS)).is_ok());
    let err = on(reader.generate_client_configuration(&["os:admin"], Duration::from_secs(60)))
        .unwrap_err();
    assert!(err.to_string().contains("not authorized"), "{err:#}");

    let req = machine::GenerateClientConfigurationRequest {
        roles: vec!["os:admin".into()],
        crt_ttl: None,
    };
    let st = on(c.machine().generate_client_configuration(req)).unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::InvalidArgument, "crt_ttl should be positive")
    );
}

#[test]
fn cosi_writes_are_refused_as_talos_refuses_them() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let admin = h.connect(&h.addr, admin()).unwrap();
    let reader = h.connect(&h.addr, mutual(&["os:reader"])).unwrap();
    let eth0 = on(admin.get("network", LINKS, "eth0")).unwrap();
    let create = |c: &Client, resource: Option<cosi::Resource>| {
        let req = cosi::CreateRequest {
            resource,
            options: None,
        };
        on(c.state().create(req)).unwrap_err()
    };
    let st = create(&admin, eth0.clone());
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
    let st = create(&reader, eth0.clone());
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "not authorized")
    );
    let st = create(&admin, None);
    assert_eq!(
        (st.code(), st.message()),
        (Code::Unknown, "metadata is missing")
    );
    let st = on(admin.state().update(cosi::UpdateRequest {
        new_resource: eth0,
        options: None,
    }))
    .unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
    let st = on(admin.state().destroy(cosi::DestroyRequest {
        namespace: "network".into(),
        r#type: LINKS.into(),
        id: "eth0".into(),
        options: None,
    }))
    .unwrap_err();
    assert_eq!(
        (st.code(), st.message()),
        (Code::PermissionDenied, "write access is not allowed")
    );
}

async fn until(s: &mut DataStream, needle: &str) -> String {
    let mut got = String::new();
    while !got.contains(needle) {
        let chunk = tokio::time::timeout(Duration::from_secs(5), s.next())
            .await
            .unwrap_or_else(|_| panic!("{needle:?} within 5s; got {got:?}"))
            .unwrap()
            .expect("the stream is still open");
        got.push_str(&String::from_utf8(chunk).unwrap());
    }
    got
}

#[test]
fn followed_logs_and_dmesg_carry_new_lines_until_cancelled() {
    let h = Nodes::start(&[net::addr()], |_| {});
    h.install_control_plane(&h.addr);
    let c = h.connect(&h.addr, admin()).unwrap();
    let reader = h.connect(&h.addr, mutual(&["os:reader"])).unwrap();
    let logs = |tail_lines, follow| machine::LogsRequest {
        namespace: "system".into(),
        id: "machined".into(),
        follow,
        tail_lines,
        ..Default::default()
    };
    let none = on(c.logs(logs(0, false))).unwrap();
    assert!(none.is_empty(), "tail 0: no history");
    on(async {
        let mut log = reader.logs_stream(logs(2, true)).await.unwrap();
        let first = until(&mut log, "line 20\n").await;
        assert_eq!(
            first,
            "machined: simulated log line 19\nmachined: simulated log line 20\n"
        );
        let mut kmsg = reader
            .dmesg_stream(machine::DmesgRequest {
                follow: true,
                tail: true,
            })
            .await
            .unwrap();
        let silent = tokio::time::timeout(Duration::from_millis(300), kmsg.next()).await;
        assert!(
            silent.is_err(),
            "tail: no history, and the stream stays open"
        );
        c.bootstrap(machine::BootstrapRequest::default())
            .await
            .unwrap();
        let line = until(&mut log, "\n").await;
        assert!(
            line.ends_with(" [talos] bootstrap request received\n") && line.len() > 60,
            "{line:?}"
        );
        let record = until(&mut kmsg, "\n").await;
        assert!(
            record.starts_with("user: warning: [20")
                && record.ends_with("Z]: [talos] bootstrap request received\n"),
            "{record:?}"
        );
        let open = tokio::time::timeout(Duration::from_millis(300), log.next()).await;
        assert!(open.is_err(), "follow keeps the stream open");
    });
    let st = on(c.machine().logs(machine::LogsRequest {
        namespace: "system".into(),
        id: "nosuch".into(),
        ..Default::default()
    }))
    .map(|_| ());
    let st = match st {
        Err(st) => st,
        Ok(()) => panic!("an unknown log is refused"),
    };
    assert_eq!(
        (st.code(), st.message()),
        (Code::Unknown, "log \"nosuch\" was not registered")
    );
}
