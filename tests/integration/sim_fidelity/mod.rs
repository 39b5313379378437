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

mod specs_and_limits;

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
    let registered = talm::registry::registry().types.len();
    assert_eq!(list(vec![], "").len(), registered);
    assert_eq!(
        list(vec![], "^(link|route)"),
        [
            "linkaliasspecs",
            "linkrefreshes",
            "linkspecs",
            "linkstatuses",
            "routespecs",
            "routestatuses"
        ]
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
    assert_eq!(list(vec![query(vec![not])], "").len(), registered - 3);
    assert_eq!(
        list(vec![query(vec![term("tier", NotExists, &[])])], "").len(),
        registered - 3
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
