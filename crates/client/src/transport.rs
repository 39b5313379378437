//! The transport under the Talos client, and a record of what each connection showed: how the
//! dial or TLS handshake failed, what certificate the server presented and whether it asked for
//! one, the protocol it chose, whether it sent anything after the handshake, how the connection
//! ended, and whether a reply was gRPC at all. Errors are named from these facts (`errors`),
//! not from message text.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::client::ResolvesClientCert;
use rustls::pki_types::ServerName;
use rustls::sign::CertifiedKey;
use rustls::{AlertDescription, ClientConfig, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tonic::body::Body;
use tonic::codegen::{http, Service};
use tonic::transport::Channel;

use super::verify::NodeVerifier;
use talm_wire::fingerprint::Fingerprint;

/// The ALPN protocol of HTTP/2, which gRPC requires.
pub const H2: &[u8] = b"h2";

/// What the server presented as its certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Presented {
    /// A node in maintenance mode's certificate.
    Maintenance,
    /// A certificate of the talosconfig's CA, valid for the address.
    Cluster,
    /// A certificate the talosconfig's CA did not sign.
    ForeignIssuer,
    /// A certificate of the CA that does not list the address.
    WrongName,
    /// A certificate of the CA outside its validity window by this machine's clock.
    OutOfTime(super::clock::Window),
    /// A certificate of the CA with another problem (wrong usage...).
    Invalid(String),
    /// In maintenance mode: a certificate that is not a maintenance node's (judged once the
    /// handshake has shown the rest).
    Other,
    /// In maintenance mode with pins: a certificate whose fingerprint (given) matches none.
    Unpinned(Fingerprint),
}

/// How a dial or TLS handshake failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dial {
    Refused,
    Unreachable,
    /// Another TCP failure.
    Tcp(String),
    /// What came back is not TLS.
    NotTls,
    /// The server sent a TLS alert.
    Alert(AlertDescription),
    /// The server closed the connection mid-handshake.
    Closed,
    /// Another handshake failure.
    Tls(String),
}

/// How an established connection ended, as the client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum End {
    /// The server closed it (with or without TLS close_notify).
    Closed,
    /// It was reset or broke.
    Reset,
    /// The server sent a TLS alert.
    Alert(AlertDescription),
    /// Another I/O failure.
    Io(String),
}

/// What a second connection showed when the first ended before the server said anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecondLook {
    /// The server refused the client certificate with this alert.
    Alert(AlertDescription),
    /// The server accepted the handshake and spoke.
    Spoke,
    /// The server accepted the handshake and closed the connection without a word.
    Closed,
    /// Nothing in time, or no second connection.
    Nothing,
}

/// An HTTP reply that is not gRPC.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
}

/// What one connection showed.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// The server asked for a client certificate during the handshake.
    pub asked_for_client_cert: bool,
    pub presented: Option<Presented>,
    /// The dial or handshake failed.
    pub failed: Option<Dial>,
    /// The TLS handshake completed.
    pub handshake: bool,
    /// The protocol agreed by ALPN.
    pub alpn: Option<Vec<u8>>,
    /// The server sent application data after the handshake.
    pub received: bool,
    pub ended: Option<End>,
    /// The first reply that was not gRPC.
    pub reply: Option<Reply>,
    /// What a second connection showed, when one was made (see `Dialer::second_look`).
    pub second_look: Option<SecondLook>,
}

impl Facts {
    /// Whether the connection may carry calls: HTTP/2, and the certificate the mode expects.
    fn usable(&self, trust: Trust) -> bool {
        let cert = match (trust, &self.presented) {
            (Trust::Maintenance, p) => p == &Some(Presented::Maintenance),
            (Trust::Ca, p) => p == &Some(Presented::Cluster),
            // `--skip-verify`: any certificate but a maintenance node's.
            (Trust::Any, p) => matches!(p, Some(Presented::Cluster | Presented::Other)),
        };
        self.alpn.as_deref() == Some(H2) && cert
    }

    /// The connection ended after the handshake before the server said anything: a node that
    /// refuses the client certificate does that (TLS 1.3 refuses after the handshake), and its
    /// alert is lost when the client's first write meets the reset its close causes.
    pub fn silent_end(&self) -> bool {
        self.handshake && !self.received && !matches!(self.ended, None | Some(End::Alert(_)))
    }
}

/// The facts of one connection, shared by its verifier, client-certificate resolver and stream.
pub type Record = Arc<Mutex<Facts>>;

fn note(record: &Record, f: impl FnOnce(&mut Facts)) {
    f(&mut record.lock().unwrap_or_else(|e| e.into_inner()));
}

/// A client's connections: the record of the latest.
#[derive(Clone, Debug, Default)]
pub struct Wire(Arc<Mutex<Record>>);

impl Wire {
    fn begin(&self) -> Record {
        let r = Record::default();
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&r);
        r
    }

    fn current(&self) -> Record {
        Arc::clone(&self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// What the latest connection showed so far.
    pub fn facts(&self) -> Facts {
        self.current()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Hands the node the client certificate when it asks, and notes that it asked.
#[derive(Debug)]
struct ClientCert {
    key: Option<Arc<CertifiedKey>>,
    record: Record,
}

impl ResolvesClientCert for ClientCert {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        note(&self.record, |f| f.asked_for_client_cert = true);
        self.key.clone()
    }

    fn has_certs(&self) -> bool {
        self.key.is_some()
    }
}

/// Dials one endpoint: TCP, then TLS with the node verifier, recording every step.
#[derive(Clone)]
pub struct Dialer {
    pub host: String,
    pub port: u16,
    /// The talosconfig's CA; `None` in maintenance mode and with `--skip-verify`.
    pub ca: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    /// The client certificate; `None` in maintenance mode.
    pub identity: Option<Arc<CertifiedKey>>,
    /// Maintenance mode: the fingerprints the server certificate must match (empty: any).
    pub pins: Arc<[Fingerprint]>,
    pub wire: Wire,
}

fn tcp_failure(e: &io::Error) -> Dial {
    match e.kind() {
        io::ErrorKind::ConnectionRefused => Dial::Refused,
        io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => Dial::Unreachable,
        _ => Dial::Tcp(e.to_string()),
    }
}

/// The TLS error inside an I/O error, if it is one.
fn tls_error(e: &io::Error) -> Option<&rustls::Error> {
    e.get_ref()?.downcast_ref::<rustls::Error>()
}

fn handshake_failure(e: &io::Error) -> Dial {
    match tls_error(e) {
        Some(rustls::Error::AlertReceived(a)) => Dial::Alert(*a),
        Some(rustls::Error::InvalidMessage(_)) => Dial::NotTls,
        Some(other) => Dial::Tls(other.to_string()),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe => Dial::Closed,
            _ => Dial::Tls(e.to_string()),
        },
    }
}

fn end_of(e: &io::Error) -> End {
    match tls_error(e) {
        Some(rustls::Error::AlertReceived(a)) => End::Alert(*a),
        Some(other) => End::Io(other.to_string()),
        None => match e.kind() {
            io::ErrorKind::UnexpectedEof => End::Closed,
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe => End::Reset,
            _ => End::Io(e.to_string()),
        },
    }
}

/// Which server certificate a connection accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Trust {
    /// Maintenance mode (no client certificate): a maintenance node's.
    Maintenance,
    /// One from the talosconfig's CA.
    Ca,
    /// `--skip-verify`: any but a maintenance node's.
    Any,
}

impl Dialer {
    fn trust(&self) -> Trust {
        match (&self.ca, &self.identity) {
            (Some(_), _) => Trust::Ca,
            (None, Some(_)) => Trust::Any,
            (None, None) => Trust::Maintenance,
        }
    }

    fn config(&self, record: &Record) -> io::Result<ClientConfig> {
        let verifier =
            NodeVerifier::new(self.ca.clone(), Arc::clone(record)).pinned(Arc::clone(&self.pins));
        let resolver = ClientCert {
            key: self.identity.clone(),
            record: Arc::clone(record),
        };
        let mut cfg = ClientConfig::builder_with_provider(super::verify::provider())
            .with_safe_default_protocol_versions()
            .map_err(io::Error::other)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_client_cert_resolver(Arc::new(resolver));
        cfg.alpn_protocols = vec![H2.to_vec()];
        Ok(cfg)
    }

    /// TCP, then the TLS handshake under `record`; a failure says which step and how.
    async fn handshake(&self, record: &Record) -> Result<TlsStream<TcpStream>, (Dial, io::Error)> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| (tcp_failure(&e), e))?;
        tcp.set_nodelay(true)
            .map_err(|e| (Dial::Tcp(e.to_string()), e))?;
        let tls_step = |e: io::Error| (Dial::Tls(e.to_string()), e);
        let name = ServerName::try_from(self.host.clone())
            .map_err(|e| tls_step(io::Error::new(io::ErrorKind::InvalidInput, e)))?;
        let cfg = self.config(record).map_err(tls_step)?;
        tokio_rustls::TlsConnector::from(Arc::new(cfg))
            .connect(name, tcp)
            .await
            .map_err(|e| (handshake_failure(&e), e))
    }

    async fn dial(self) -> io::Result<TokioIo<Watched>> {
        let record = self.wire.begin();
        let tls = self.handshake(&record).await.map_err(|(d, e)| {
            note(&record, |f| f.failed = Some(d));
            e
        })?;
        let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
        let usable = {
            let mut f = record.lock().unwrap_or_else(|e| e.into_inner());
            f.handshake = true;
            f.alpn = alpn;
            f.usable(self.trust())
        };
        if !usable {
            // Nothing is sent: what is wrong is told from the record.
            return Err(io::Error::other("the server is not the Talos API expected"));
        }
        Ok(TokioIo::new(Watched { io: tls, record }))
    }

    /// After an authenticated connection ended silently: connects again, writes nothing, and
    /// listens up to `wait` for the node to refuse the client certificate (an alert), speak, or
    /// close. Notes the result in the current record and returns it.
    pub async fn second_look(&self, wait: Duration) -> SecondLook {
        let look = async {
            let mut tls = match self.handshake(&Record::default()).await {
                Ok(tls) => tls,
                Err((Dial::Alert(a), _)) => return SecondLook::Alert(a),
                Err(_) => return SecondLook::Nothing,
            };
            let mut byte = [0u8; 1];
            match tokio::io::AsyncReadExt::read(&mut tls, &mut byte).await {
                Ok(0) => SecondLook::Closed,
                Ok(_) => SecondLook::Spoke,
                Err(e) => match end_of(&e) {
                    End::Alert(a) => SecondLook::Alert(a),
                    _ => SecondLook::Closed,
                },
            }
        };
        let seen = tokio::time::timeout(wait, look)
            .await
            .unwrap_or(SecondLook::Nothing);
        note(&self.wire.current(), |f| f.second_look = Some(seen));
        seen
    }
}

impl Service<http::Uri> for Dialer {
    type Response = TokioIo<Watched>;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<TokioIo<Watched>>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: http::Uri) -> Self::Future {
        Box::pin(self.clone().dial())
    }
}

/// A TLS connection that records what arrives and how it ends.
pub struct Watched {
    io: TlsStream<TcpStream>,
    record: Record,
}

impl Watched {
    fn ended(&self, e: &io::Error) {
        let end = end_of(e);
        note(&self.record, |f| {
            // An alert says why; keep it over a reset seen first on the other half.
            if f.ended.is_none() || matches!(end, End::Alert(_)) {
                f.ended = Some(end);
            }
        });
    }

    fn watch<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &r {
            self.ended(e);
        }
        r
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = r {
            let got = buf.filled().len() > before;
            note(&self.record, |f| {
                if got {
                    f.received = true;
                } else if f.ended.is_none() {
                    f.ended = Some(End::Closed);
                }
            });
        }
        self.watch(r)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch(r)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let r = Pin::new(&mut self.io).poll_flush(cx);
        self.watch(r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The channel, noting any reply that is not gRPC (HTTP status other than 200, or a content type
/// other than `application/grpc`) before tonic turns it into a status.
#[derive(Clone)]
pub struct Checked {
    pub channel: Channel,
    /// How the channel dials (its `wire` holds the record).
    pub dialer: Dialer,
}

/// The non-gRPC facts of a reply's head, if any.
pub fn not_grpc(
    status: http::StatusCode,
    content_type: Option<&http::HeaderValue>,
) -> Option<Reply> {
    let ct = content_type
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let grpc = ct == "application/grpc" || ct.starts_with("application/grpc+");
    (status != http::StatusCode::OK || !grpc).then(|| Reply {
        status: status.as_u16(),
        content_type: ct,
    })
}

impl Service<http::Request<Body>> for Checked {
    type Response = http::Response<Body>;
    type Error = tonic::transport::Error;
    type Future =
        Pin<Box<dyn Future<Output = Result<http::Response<Body>, tonic::transport::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.channel.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let fut = self.channel.call(req);
        let wire = self.dialer.wire.clone();
        Box::pin(async move {
            let r = fut.await?;
            if let Some(reply) = not_grpc(r.status(), r.headers().get(http::header::CONTENT_TYPE)) {
                note(&wire.current(), |f| {
                    f.reply.get_or_insert(reply);
                });
            }
            Ok(r)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_replies_are_told_from_others() {
        let grpc = http::HeaderValue::from_static("application/grpc");
        let proto = http::HeaderValue::from_static("application/grpc+proto");
        let html = http::HeaderValue::from_static("text/html");
        assert_eq!(not_grpc(http::StatusCode::OK, Some(&grpc)), None);
        assert_eq!(not_grpc(http::StatusCode::OK, Some(&proto)), None);
        assert_eq!(
            not_grpc(http::StatusCode::NOT_FOUND, Some(&html)),
            Some(Reply {
                status: 404,
                content_type: "text/html".into()
            })
        );
        assert!(not_grpc(http::StatusCode::OK, None).is_some());
        assert!(not_grpc(http::StatusCode::BAD_GATEWAY, Some(&grpc)).is_some());
    }

    #[test]
    fn io_failures_become_facts() {
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(tcp_failure(&refused), Dial::Refused);
        let alert = io::Error::new(
            io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(AlertDescription::BadCertificate),
        );
        assert_eq!(
            handshake_failure(&alert),
            Dial::Alert(AlertDescription::BadCertificate)
        );
        assert_eq!(end_of(&alert), End::Alert(AlertDescription::BadCertificate));
        let eof = io::Error::from(io::ErrorKind::UnexpectedEof);
        assert_eq!(handshake_failure(&eof), Dial::Closed);
        assert_eq!(end_of(&eof), End::Closed);
        let reset = io::Error::from(io::ErrorKind::ConnectionReset);
        assert_eq!(end_of(&reset), End::Reset);
    }
}
