//! The HTTPS server: accepts TLS connections (HTTP/1.1 or HTTP/2), learns the user from the
//! client certificate, answers each request (503 while the API is made unavailable, health
//! and `/version` to anyone, the rest to authenticated users), and closes the listener and
//! cuts every connection and watch when its stop token is cancelled (the node went down).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{ACCEPT, CONTENT_TYPE};
use hyper::{Method, Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{json, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_stream::StreamExt;
use tokio_util::sync::CancellationToken;

use super::auth::{self, User};
use super::discovery;
use super::handle::{self, Reply, Req};
use super::route::{self, Route};
use super::status::{Failure, Reason, PAGE_NOT_FOUND};
use super::tls::{server_config, ClusterCa};
use super::watch;
use crate::kube::Kube;

type Body = BoxBody<Bytes, Infallible>;

/// Serves the API on `addr` with a certificate from `ca` until `stop` is cancelled. A bad CA
/// is an `InvalidInput` error and an address in use the bind's error, both before serving.
pub async fn listen(
    addr: SocketAddr,
    ca: &ClusterCa,
    kube: Arc<Kube>,
    stop: CancellationToken,
) -> io::Result<()> {
    let tls = server_config(ca, addr.ip()).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the Kubernetes API's certificate for {addr}: {e:#}"),
        )
    })?;
    let listener = TcpListener::bind(addr).await?;
    serve(listener, Arc::new(tls), kube, stop).await;
    Ok(())
}

/// Serves on a bound listener until `stop` is cancelled; the listener closes on return.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    kube: Arc<Kube>,
    stop: CancellationToken,
) {
    let acceptor = TlsAcceptor::from(tls);
    let local = listener.local_addr().ok();
    loop {
        let tcp = tokio::select! {
            _ = stop.cancelled() => return,
            r = listener.accept() => match r {
                Ok((tcp, _)) => tcp,
                Err(_) => continue,
            },
        };
        let conn = Conn {
            kube: Arc::clone(&kube),
            stop: stop.clone(),
            address: local.map_or_else(String::new, |a| a.to_string()),
        };
        tokio::spawn(conn.run(tcp, acceptor.clone()));
    }
}

/// One connection's context.
#[derive(Clone)]
struct Conn {
    kube: Arc<Kube>,
    stop: CancellationToken,
    address: String,
}

impl Conn {
    async fn run(self, tcp: TcpStream, acceptor: TlsAcceptor) {
        let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
        else {
            return;
        };
        let user = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .map_or(User::Anonymous, User::of_cert);
        let stop = self.stop.clone();
        let user = Arc::new(user);
        let svc = hyper::service::service_fn(move |req| {
            let (this, user) = (self.clone(), Arc::clone(&user));
            async move { Ok::<_, Infallible>(this.respond(&user, req).await) }
        });
        let builder = auto::Builder::new(TokioExecutor::new());
        let served = builder.serve_connection(TokioIo::new(tls), svc);
        tokio::select! {
            _ = served => {}
            _ = stop.cancelled() => {}
        }
    }

    async fn respond(&self, user: &User, req: Request<Incoming>) -> Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = match body.collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => Bytes::new(),
        };
        if self.kube.unavailable() {
            return failure(&Failure::new(
                Reason::ServiceUnavailable,
                "the server is currently unable to handle the request",
            ));
        }
        let header = |name| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
        };
        let route = route::route(parts.uri.path());
        match route {
            Route::Health => return text(200, "ok"),
            Route::Version => {
                return json_reply(200, &discovery::version(&self.kube.git_version()))
            }
            Route::NotFound => return text(404, PAGE_NOT_FOUND),
            _ => {}
        }
        if *user == User::Anonymous {
            return failure(&auth::unauthorized());
        }
        let doc = match route {
            Route::CoreVersions => discovery::core_versions(&self.address),
            Route::Groups => discovery::groups(),
            Route::Group(g) => discovery::group(g),
            Route::Resources { group, version } => discovery::resource_list(group, version),
            Route::OpenApiRoot => discovery::openapi_root(),
            Route::OpenApi { group, version } => {
                discovery::openapi(group, version, &self.kube.git_version())
            }
            Route::NoResource => {
                let mut f = Failure::new(
                    Reason::NotFound,
                    "the server could not find the requested resource",
                );
                f.details = Some(json!({}));
                return failure(&f);
            }
            Route::Object(target) => {
                let request = Req {
                    method: &parts.method,
                    target,
                    query: route::query(parts.uri.query()),
                    accept: header(ACCEPT),
                    content_type: header(CONTENT_TYPE),
                    body: &bytes,
                };
                return self.resource(user, &request);
            }
            Route::Health | Route::Version | Route::NotFound => unreachable!("answered above"),
        };
        if parts.method != Method::GET && parts.method != Method::HEAD {
            return failure(&Failure::new(
                Reason::MethodNotAllowed,
                format!(
                    "the server does not allow this method on the requested resource ({})",
                    parts.method
                ),
            ));
        }
        json_reply(200, &doc)
    }

    fn resource(&self, user: &User, req: &Req<'_>) -> Response<Body> {
        let Some(verb) = handle::verb_of(req.method, &req.target, req.watching()) else {
            return failure(&Failure::new(
                Reason::MethodNotAllowed,
                format!(
                    "the server does not allow this method on the requested resource ({})",
                    req.method
                ),
            ));
        };
        if let Err(f) = auth::authorize(user, verb, &req.target) {
            return failure(&f);
        }
        match handle::handle(&self.kube, req) {
            Ok(Reply::Json(code, v)) => json_reply(code, &v),
            Ok(Reply::Watch(spec)) => {
                let rx = watch::start(Arc::clone(&self.kube), spec, self.stop.clone());
                let frames = tokio_stream::wrappers::ReceiverStream::new(rx)
                    .map(|b| Ok::<_, Infallible>(Frame::data(b)));
                respond_with(200, "application/json", StreamBody::new(frames).boxed())
            }
            Err(f) => failure(&f),
        }
    }
}

fn respond_with(code: u16, content_type: &str, body: Body) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::OK);
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(CONTENT_TYPE, v);
    }
    r
}

fn text(code: u16, body: &str) -> Response<Body> {
    respond_with(
        code,
        "text/plain; charset=utf-8",
        Full::new(Bytes::from(body.to_string())).boxed(),
    )
}

fn json_reply(code: u16, v: &Value) -> Response<Body> {
    respond_with(
        code,
        "application/json",
        Full::new(Bytes::from(v.to_string())).boxed(),
    )
}

fn failure(f: &Failure) -> Response<Body> {
    json_reply(f.code(), &f.body())
}
