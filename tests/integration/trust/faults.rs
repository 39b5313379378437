//! Node faults are diagnosed truly (issue 9, section 5), through the real binary: a connection
//! cut mid-call is named as a cut (never a handshake failure, never a talosconfig hint under
//! `-i`), a TLS server that is not Talos is named "not a Talos API" with the fact that shows it,
//! a talosconfig whose key does not match its certificate is refused before dialling, naming
//! the file and context, and `talm sim` refuses an address given twice before binding anything.
//! Simulated and fake servers listen on addresses from `common::net` only.

use crate::common::expect::addrs;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use base64::Engine as _;
use talm::secrets::bundle::Bundle;
use talm::secrets::pki::{KeyKind, PrivateKey};
use talm::sim::net::certs;
use talm::sim::net::faults::Faults;
use talm::sim::net::skew::Skew;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tonic::body::Body;
use tonic::codegen::http;
use tonic::server::NamedService;

use crate::common::sim::{template_node, Nodes};
use crate::common::{net, version_client, Dir};

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A project with nodes/node1.yaml rendered from the maintenance node at `ip`.
fn project_for(ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, ip));
    d
}

/// What a cut must not be reported as; under `-i` no hint may send the user to a talosconfig.
fn reported_as_cut(stderr: &str, insecure: bool) {
    assert!(stderr.contains("the connection was cut "), "{stderr}");
    for wrong in [
        "TLS handshake failed",
        "rejected the client certificate",
        "not a Talos API",
    ] {
        assert!(!stderr.contains(wrong), "{wrong:?} in:\n{stderr}");
    }
    if insecure {
        assert!(!stderr.contains("talosconfig"), "{stderr}");
    }
}

/// A server on `addr:50000` for the life of the value (its task is aborted on drop).
struct Fake(tokio::task::JoinHandle<()>);

impl Drop for Fake {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn listen(addr: &str) -> tokio::net::TcpListener {
    let l = std::net::TcpListener::bind(format!("{addr}:50000")).unwrap();
    l.set_nonblocking(true).unwrap();
    let _rt = talm::talos::runtime().enter();
    tokio::net::TcpListener::from_std(l).unwrap()
}

/// What a raw TLS fake does once the handshake is done.
#[derive(Clone, Copy)]
enum Then {
    /// Closes the connection at once.
    Close,
    /// Reads what the client sends first (the HTTP/2 preface and the call), then closes.
    CloseAfterRead,
    /// Answers like an HTTP/1.1 web server.
    Http1,
}

fn tls_fake(addr: &str, cfg: rustls::ServerConfig, then: Then) -> Fake {
    let listener = listen(addr);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    Fake(talm::talos::runtime().spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                match then {
                    Then::Close => {}
                    Then::CloseAfterRead => {
                        let mut buf = [0u8; 4096];
                        let _ = tls.read(&mut buf).await;
                    }
                    Then::Http1 => {
                        let mut buf = [0u8; 4096];
                        let _ = tls.read(&mut buf).await;
                        let _ = tls
                            .write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nno\n")
                            .await;
                        let _ = tls.shutdown().await;
                    }
                }
            });
        }
    }))
}

/// An HTTP/2 server over TLS with one tonic service.
fn grpc_fake<S>(addr: &str, cfg: rustls::ServerConfig, svc: S) -> Fake
where
    S: tonic::codegen::Service<
            http::Request<Body>,
            Response = http::Response<Body>,
            Error = Infallible,
        > + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let listener = listen(addr);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<_>>(16);
    let _rt = talm::talos::runtime().enter();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                continue;
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    let _ = tx.send(Ok(tls)).await;
                }
            });
        }
    });
    Fake(tokio::spawn(async move {
        let _ = tonic::transport::Server::builder()
            .add_service(svc)
            .serve_with_incoming(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await;
    }))
}

/// A gRPC service that is not Talos's: every Talos call meets "unknown service".
#[derive(Clone)]
struct Health;

impl NamedService for Health {
    const NAME: &'static str = "grpc.health.v1.Health";
}

/// Answers machine.MachineService calls like a web server: HTTP 404, text/html.
#[derive(Clone)]
struct WebPage;

impl NamedService for WebPage {
    const NAME: &'static str = "machine.MachineService";
}

macro_rules! answer {
    ($t:ty, $status:expr, $ct:expr) => {
        impl tonic::codegen::Service<http::Request<Body>> for $t {
            type Response = http::Response<Body>;
            type Error = Infallible;
            type Future = std::future::Ready<Result<http::Response<Body>, Infallible>>;
            fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
                Poll::Ready(Ok(()))
            }
            fn call(&mut self, _: http::Request<Body>) -> Self::Future {
                let mut r = http::Response::new(Body::empty());
                *r.status_mut() = $status;
                r.headers_mut()
                    .insert("content-type", http::HeaderValue::from_static($ct));
                std::future::ready(Ok(r))
            }
        }
    };
}
answer!(Health, http::StatusCode::OK, "application/grpc");
answer!(WebPage, http::StatusCode::NOT_FOUND, "text/html");

fn ip(addr: &str) -> IpAddr {
    addr.parse().unwrap()
}

/// TLS as a node in maintenance mode presents it (its certificate, h2, no client auth).
fn maintenance_tls(addr: &str) -> rustls::ServerConfig {
    certs::maintenance_config(
        &certs::maintenance(&[ip(addr)], None, time::OffsetDateTime::now_utc()).unwrap(),
    )
    .unwrap()
}

/// TLS as a configured node of `d`'s cluster presents it: a certificate from the project's OS
/// CA, h2, and a client certificate from that CA required.
fn cluster_tls(d: &Dir, addr: &str) -> rustls::ServerConfig {
    let bundle = Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let (ca, key) = bundle.os_ca().unwrap();
    let id = certs::issued(
        &b64(&ca),
        &b64(&key.to_talos_pem().unwrap()),
        &[ip(addr)],
        "fake",
        &[],
        time::OffsetDateTime::now_utc(),
    )
    .unwrap();
    certs::mutual_config(&id, &[b64(&ca)], Skew::default()).unwrap()
}

/// A web server's TLS: a self-signed certificate for `addr`, no ALPN, no client auth.
fn web_tls(addr: &str) -> rustls::ServerConfig {
    let mut p = rcgen::CertificateParams::new(vec!["web.example".to_string()]).unwrap();
    p.subject_alt_names
        .push(rcgen::SanType::IpAddress(ip(addr)));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.self_signed(&key).unwrap();
    rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap()
}

#[test]
fn a_cut_call_is_reported_as_a_cut_in_both_modes() {
    let addr = &net::addr();
    let nodes = Nodes::start(&[addr], |_| {});
    let d = project_for(addr);

    // Maintenance mode (-i): a unary call and a stream cut mid-way.
    let node = nodes.node(addr);
    node.set_faults(Faults {
        drop: vec!["Version".into(), "List".into()],
        ..Faults::default()
    });
    let cut = format!("node {addr}: Version: the connection was cut during the call");
    let o = d.talm(["version", "-n", addr, "-i"]).fails_with(&cut);
    reported_as_cut(&o.stderr, true);
    // (`get` lists the resource definitions first: that stream is the one cut.)
    let list = format!("node {addr}: list ");
    let o = d.talm(["get", "links", "-n", addr, "-i"]).fails_with(&list);
    reported_as_cut(&o.stderr, true);

    // Authenticated (mTLS): the first call on a fresh connection is cut, then a stream.
    node.set_faults(Faults::default());
    nodes.configure(&d, addr);
    node.set_faults(Faults {
        drop: vec!["Version".into(), "List".into()],
        ..Faults::default()
    });
    let o = d
        .talm(["version", "-f", "nodes/node1.yaml"])
        .fails_with(&cut);
    reported_as_cut(&o.stderr, false);
    let o = d
        .talm(["get", "links", "-f", "nodes/node1.yaml"])
        .fails_with(&list);
    reported_as_cut(&o.stderr, false);
}

#[test]
fn a_server_that_closes_after_the_handshake_cut_the_call() {
    // Maintenance TLS with h2, then the connection closes once the call is read.
    let [a, b] = net::addrs();
    let d = Dir::project("generic");
    let fake = tls_fake(&a, maintenance_tls(&a), Then::CloseAfterRead);
    // Whether the close reads as closed or reset is a race: checked by its needle.
    let o = d.talm(["version", "-n", &a, "-i"]).fails_with(&format!(
        "node {a}: Version: the connection was cut during the call"
    ));
    reported_as_cut(&o.stderr, true);
    drop(fake);

    // The cluster's TLS, client certificate accepted, then closed at once: a cut, not a
    // handshake failure (the handshake succeeded), nor a refused certificate (a second look
    // sees the node accept it and close without an alert). Whether the close lands while
    // connecting or during the call is a race; either is named.
    let fake = tls_fake(&b, cluster_tls(&d, &b), Then::Close);
    let o = d
        .talm(["version", "-n", &b, "-e", &b])
        .fails_with("before the node sent anything");
    assert!(o.stderr.contains(&format!("node {b}: ")), "{}", o.stderr);
    assert!(
        !o.stderr.contains("refusing the client certificate"),
        "{}",
        o.stderr
    );
    reported_as_cut(&o.stderr, false);
    drop(fake);
}

#[test]
fn a_node_refusing_the_client_certificate_is_named_so() {
    // A node of another cluster's CA for clients: TLS 1.3 refuses the certificate after the
    // handshake with an alert, which must win over the reset the client's first write meets.
    let addr = net::addr();
    let d = Dir::project("generic");
    let other = Bundle::generate(
        talm::secrets::contract::Contract::parse("v1.6").unwrap(),
        time::OffsetDateTime::now_utc(),
    )
    .unwrap();
    let (other_ca, _) = other.os_ca().unwrap();
    let bundle = Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let (ca, key) = bundle.os_ca().unwrap();
    let id = certs::issued(
        &b64(&ca),
        &b64(&key.to_talos_pem().unwrap()),
        &[ip(&addr)],
        "fake",
        &[],
        time::OffsetDateTime::now_utc(),
    )
    .unwrap();
    let cfg = certs::mutual_config(&id, &[b64(&other_ca)], Skew::default()).unwrap();
    let _fake = tls_fake(&addr, cfg, Then::CloseAfterRead);
    for _ in 0..3 {
        let o = d
            .talm(["version", "-n", &addr, "-e", &addr])
            // Which of two ways the rejection shows depends on timing: checked by parts.
            .fails_with(&format!("node {addr}: "));
        assert!(
            o.stderr
                .contains("the node rejected the client certificate"),
            "{}",
            o.stderr
        );
        assert!(o.stderr.contains("hint: ") && o.stderr.contains("talm talosconfig"));
    }
}

#[test]
fn a_tls_server_that_is_not_talos_is_named_so() {
    let [web_ip, health_ip, health_cluster_ip, page_ip] = net::addrs();
    let d = Dir::project("generic");

    // A web server: TLS without HTTP/2, answering HTTP/1.1.
    let web = tls_fake(&web_ip, web_tls(&web_ip), Then::Http1);
    d.talm(["version", "-n", &web_ip, "-i"])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1:50000 is not a Talos API: it speaks TLS but not HTTP/2, which gRPC needs: no protocol was agreed by ALPN
hint: check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node
")
        .status(1)
        .run();
    d.talm(["version", "-n", &web_ip, "-e", &web_ip])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1:50000 is not a Talos API: its certificate is not from the talosconfig's CA, and it does not ask for a client certificate as every configured Talos node does
hint: check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node
")
        .status(1)
        .run();
    drop(web);

    // HTTP/2 and gRPC, but none of Talos's services: Unimplemented for every Talos call.
    let grpc = grpc_fake(&health_ip, maintenance_tls(&health_ip), Health);
    d.talm(["version", "-n", &health_ip, "-i"])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1:50000 is not a Talos API: it answers machine.MachineService/Version with Unimplemented: it serves gRPC, but not Talos's machine.MachineService
hint: check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node
")
        .status(1)
        .run();
    drop(grpc);
    let ip = &health_cluster_ip;
    let grpc = grpc_fake(ip, cluster_tls(&d, ip), Health);
    d.talm(["version", "-n", ip, "-e", ip])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1:50000 is not a Talos API: it answers machine.MachineService/Version with Unimplemented: it serves gRPC, but not Talos's machine.MachineService
hint: check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node
")
        .status(1)
        .run();
    drop(grpc);

    // HTTP/2 that answers like a web page, not gRPC.
    let page = grpc_fake(&page_ip, maintenance_tls(&page_ip), WebPage);
    d.talm(["version", "-n", &page_ip, "-i"])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1:50000 is not a Talos API: it answered Version with HTTP status 404 and content-type text/html, not gRPC
hint: check the endpoint and node addresses and the port: the Talos API listens on port 50000 of each node
")
        .status(1)
        .run();
    drop(page);
}

#[test]
fn an_old_talos_in_maintenance_mode_is_still_talos() {
    // Talos before 1.13 answers Version with Unimplemented in maintenance mode.
    let addr = &net::addr();
    let _nodes = Nodes::start(&[addr], |s| s.version = "v1.12.4".into());
    let d = Dir::new();
    d.talm(["version", "-n", addr, "-i"])
        .expect().mask(addrs).stderr("\
Error: node $A1: Version: rpc error: code = Unimplemented desc = API is not implemented in maintenance mode
hint: the node is in maintenance mode, where this call is not available: apply a config first (`talm apply -f nodes/<node>.yaml -i`)
").status(1).run();
    let o = d.talm(["discover", "-n", addr, "-i"]).ok();
    assert!(o.stdout.contains("nvme0n1"), "{}", o.stdout);
}

#[test]
fn a_talosconfig_key_that_does_not_match_its_certificate_is_refused_before_dialling() {
    let d = Dir::project("generic");
    let mut tc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("talosconfig")).unwrap();
    let other = PrivateKey::generate(KeyKind::Ed25519).unwrap();
    tc["contexts"]["mycluster"]["key"] = b64(&other.to_talos_pem().unwrap()).into();
    d.write("talosconfig", &serde_yaml_ng::to_string(&tc).unwrap());
    // Nothing listens at an address of its own: a dial would say "connection refused".
    let nobody = net::addr();
    let before = d.snapshot();
    d.talm(["version", "-n", &nobody, "-e", &nobody])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: $DIR/talosconfig: contexts.mycluster: the client key does not match the client certificate (the key belongs to another certificate)
hint: the key must be the one issued with the certificate: regenerate the talosconfig with `talm talosconfig`, or restore it from talosconfig.encrypted with `talm init --decrypt`
")
        .status(1)
        .run();
    assert_eq!(d.snapshot(), before);
}

#[test]
fn sim_refuses_an_address_given_twice_before_binding() {
    let [held, other] = net::addrs();
    let d = Dir::new();
    // Holding the port proves the refusal comes before any bind: a bind would fail with
    // "address in use" instead.
    let _held = std::net::TcpListener::bind(format!("{held}:50000")).unwrap();
    d.write(
        "sim.yaml",
        &format!("nodes:\n  - address: {held}\n  - address: {other}\n"),
    );
    let started = Instant::now();
    d.talm(["sim", "--node", &held, "--config", "sim.yaml"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Error: $A1 is given twice: sim.yaml: nodes[0].address and --node #1
hint: each simulated node needs an address of its own: drop one, or give it another loopback address
",
        )
        .status(1)
        .run();
    d.talm(["sim", "--node", &held, "--node", &held])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Error: $A1 is given twice: --node #1 and --node #2
hint: each simulated node needs an address of its own: drop one, or give it another loopback address
",
        )
        .status(1)
        .run();
    d.talm(["sim", "--node", &format!("{held},{held}")])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Error: $A1 is given twice: --node #1 and --node #2
hint: each simulated node needs an address of its own: drop one, or give it another loopback address
",
        )
        .status(1)
        .run();
    d.write(
        "twice.yaml",
        &format!("nodes:\n  - address: {held}\n  - address: {held}\n"),
    );
    d.talm(["sim", "--config", "twice.yaml"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: $A1 is given twice: twice.yaml: nodes[0].address and twice.yaml: nodes[1].address
hint: each simulated node needs an address of its own: drop one, or give it another loopback address
",
        )
        .status(1)
        .run();
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "refused at once"
    );
}

#[test]
fn sim_names_an_address_it_cannot_use() {
    let d = Dir::new();
    d.talm(["sim", "--node", "10.9.1.1"])
        .expect()
        .stderr(
            "\
Error: 10.9.1.1 is not a loopback address
hint: simulated nodes listen on 127.0.0.0/8 (or ::1) only, e.g. --node 127.0.0.11
",
        )
        .status(1)
        .run();
    d.write("sim.yaml", "nodes:\n  - address: 10.9.1.1\n");
    d.talm(["sim", "--config", "sim.yaml"])
        .expect()
        .stderr(
            "\
Error: sim.yaml: nodes[0].address: 10.9.1.1 is not a loopback address
hint: simulated nodes listen on 127.0.0.0/8 (or ::1) only, e.g. --node 127.0.0.11
",
        )
        .status(1)
        .run();
    // Already in use (here by this test): the address, the port and the cause, promptly.
    let held = net::addr();
    let _held = std::net::TcpListener::bind(format!("{held}:50000")).unwrap();
    let started = Instant::now();
    d.talm(["sim", "--node", &held]).expect().stderr(format!("\
Error: cannot listen on {held}:50000: the address is already in use
hint: another process listens there (another `talm sim`?): stop it, or simulate the node at another loopback address
")).status(1).run();
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(4),
        "refused promptly, not after {took:?}"
    );
}
