//! How the client checks a node's certificate: against the talosconfig's CA, or in maintenance
//! mode not at all (the node's self-signed certificate is fresh on every boot). Either way what
//! the server presented is written to the connection's record, so an error can say whether it
//! met a node in the other mode, a node of another cluster, or something that is not Talos.
//! Maintenance mode may pin the server's certificate by fingerprint (`--cert-fingerprint`).

use std::sync::Arc;

use anyhow::Result;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};

use super::transport::{Presented, Record};
use talm_wire::fingerprint::Fingerprint;

pub use talm_wire::api::MAINTENANCE_CN;

fn is_maintenance_cert(end_entity: &CertificateDer<'_>) -> bool {
    use x509_parser::prelude::{FromDer, X509Certificate};
    X509Certificate::from_der(end_entity).is_ok_and(|(_, c)| {
        c.subject()
            .iter_common_name()
            .any(|cn| cn.as_str() == Ok(MAINTENANCE_CN))
    })
}

/// aws-lc-rs with its cipher suites in the order Go's crypto/tls offers them on AES hardware
/// (talosctl's ClientHello): AES-128-GCM first. Talos and the simulator take the client's
/// first choice, and its SHA-256 key schedule costs a handshake less than AES-256's SHA-384.
pub(super) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: std::sync::OnceLock<Arc<CryptoProvider>> = std::sync::OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            use rustls::CipherSuite as S;
            let mut p = rustls::crypto::aws_lc_rs::default_provider();
            p.cipher_suites.sort_by_key(|s| {
                !matches!(
                    s.suite(),
                    S::TLS13_AES_128_GCM_SHA256
                        | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                        | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
                )
            });
            Arc::new(p)
        })
        .clone()
}

/// The verifiers of the talosconfig CAs in use, each built once and shared by every
/// connection of its context.
///
/// Listed in [`talm_base::caches::KEPT`].
static CA_VERIFIERS: talm_base::caches::memo::Memo<String, Arc<WebPkiServerVerifier>> =
    talm_base::caches::memo::Memo::new(4);

/// The verifier of servers signed by `ca_pem` (the talosconfig's CA).
pub fn ca_verifier(ca_pem: &str) -> Result<Arc<WebPkiServerVerifier>> {
    ca_verifier_in(&CA_VERIFIERS, ca_pem)
}

fn ca_verifier_in(
    kept: &talm_base::caches::memo::Memo<String, Arc<WebPkiServerVerifier>>,
    ca_pem: &str,
) -> Result<Arc<WebPkiServerVerifier>> {
    kept.get_or_try(ca_pem.to_string(), |ca_pem| build_ca_verifier(ca_pem))
}

/// Every certificate of the talosconfig's CA is trusted: it may be a bundle of several (a CA
/// rotation trusts the old and the new CA while nodes move from one to the other).
fn build_ca_verifier(ca_pem: &str) -> Result<Arc<WebPkiServerVerifier>> {
    let unusable =
        |e: String| talm_base::error::plain(format!("the talosconfig CA is unusable: {e}"));
    let blocks =
        talm_wire::pki::pem_decode_all(ca_pem).ok_or_else(|| unusable("not PEM".into()))?;
    let mut roots = rustls::RootCertStore::empty();
    for (label, der) in blocks {
        if label != "CERTIFICATE" {
            return Err(unusable(format!("it holds a {label:?} PEM block")));
        }
        roots
            .add(CertificateDer::from(der))
            .map_err(|e| unusable(e.to_string()))?;
    }
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .map_err(|e| unusable(e.to_string()))
}

/// What a failed CA check of `cert` at `now` says about the certificate.
fn presented(err: &rustls::Error, cert: &CertificateDer<'_>, now: UnixTime) -> Presented {
    match err {
        rustls::Error::InvalidCertificate(
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. },
        ) => match super::clock::Window::outside(cert, now) {
            Some(w) => Presented::OutOfTime(w),
            None => Presented::Invalid(err.to_string()),
        },
        rustls::Error::InvalidCertificate(
            CertificateError::UnknownIssuer | CertificateError::BadSignature,
        ) => Presented::ForeignIssuer,
        rustls::Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
        ) => Presented::WrongName,
        other => Presented::Invalid(other.to_string()),
    }
}

/// Verifies one connection's server certificate and records what it was; handshake signatures
/// are always checked.
#[derive(Debug)]
pub struct NodeVerifier {
    /// `None`: maintenance mode (accepted here, judged once the handshake is done).
    ca: Option<Arc<WebPkiServerVerifier>>,
    /// Maintenance mode: the leaf's fingerprint must be one of these (empty: not checked).
    pins: Arc<[Fingerprint]>,
    provider: Arc<CryptoProvider>,
    record: Record,
}

impl NodeVerifier {
    pub fn new(ca: Option<Arc<WebPkiServerVerifier>>, record: Record) -> NodeVerifier {
        NodeVerifier {
            ca,
            pins: Arc::from([]),
            provider: provider(),
            record,
        }
    }

    /// In maintenance mode, accepts only a leaf certificate with one of these fingerprints.
    pub fn pinned(self, pins: Arc<[Fingerprint]>) -> NodeVerifier {
        NodeVerifier { pins, ..self }
    }

    fn note(&self, p: Presented) {
        self.record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .presented = Some(p);
    }
}

impl ServerCertVerifier for NodeVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let maintenance = is_maintenance_cert(end_entity);
        match &self.ca {
            // Pinned (talosctl's `MatchSPKIFingerprints`): only the leaf is compared.
            None if !self.pins.is_empty() => {
                let seen = Fingerprint::of_cert(end_entity).ok_or_else(|| {
                    self.note(Presented::Invalid("the certificate does not parse".into()));
                    rustls::Error::InvalidCertificate(CertificateError::BadEncoding)
                })?;
                if !self.pins.contains(&seen) {
                    self.note(Presented::Unpinned(seen));
                    return Err(rustls::Error::General(format!(
                        "leaf peer certificate doesn't match the provided fingerprints (it has {seen})"
                    )));
                }
                self.note(if maintenance {
                    Presented::Maintenance
                } else {
                    Presented::Other
                });
                Ok(ServerCertVerified::assertion())
            }
            // Maintenance mode sends no secret: the handshake may finish, so the protocol and
            // whether the server asks for a client certificate can be seen before judging.
            None => {
                self.note(if maintenance {
                    Presented::Maintenance
                } else {
                    Presented::Other
                });
                Ok(ServerCertVerified::assertion())
            }
            Some(_) if maintenance => {
                self.note(Presented::Maintenance);
                Err(rustls::Error::General(
                    "the node presents its maintenance certificate".into(),
                ))
            }
            Some(ca) => {
                match ca.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
                    Ok(v) => {
                        self.note(Presented::Cluster);
                        Ok(v)
                    }
                    Err(e) => {
                        self.note(presented(&e, end_entity, now));
                        Err(e)
                    }
                }
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn offers_aes_128_gcm_first_as_go_does() {
        let p = super::provider();
        let tls13: Vec<_> = p
            .cipher_suites
            .iter()
            .filter(|s| s.version() == &rustls::version::TLS13)
            .map(|s| s.suite())
            .collect();
        use rustls::CipherSuite as S;
        assert_eq!(
            tls13,
            [
                S::TLS13_AES_128_GCM_SHA256,
                S::TLS13_AES_256_GCM_SHA384,
                S::TLS13_CHACHA20_POLY1305_SHA256
            ]
        );
    }

    use super::*;

    /// A CA's verifier is built once and shared by the connections that trust it.
    #[test]
    fn ca_verifiers_are_built_once_per_ca() {
        let now = time::OffsetDateTime::now_utc();
        let ca = |org| {
            talm_wire::pki::self_signed_ca(talm_wire::pki::KeyKind::Ed25519, Some(org), now)
                .unwrap()
        };
        let (a, b) = (ca("a"), ca("b"));
        let kept = talm_base::caches::memo::Memo::new(4);
        let first = ca_verifier_in(&kept, &a.cert_pem).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &ca_verifier_in(&kept, &a.cert_pem).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &first,
            &ca_verifier_in(&kept, &b.cert_pem).unwrap()
        ));
        assert!(ca_verifier_in(&kept, "not pem").is_err());
        assert!(ca_verifier(&a.cert_pem).is_ok());
    }

    /// A talosconfig CA that is a bundle trusts a server of each of its CAs, and no other.
    #[test]
    fn every_ca_of_a_bundle_is_trusted() {
        use base64::Engine;
        let now = time::OffsetDateTime::now_utc();
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let ca = |org| {
            talm_wire::pki::self_signed_ca(talm_wire::pki::KeyKind::Ed25519, Some(org), now)
                .unwrap()
        };
        let ip: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let leaf_of = |c: &talm_wire::pki::CertAndKey| {
            let id = talm_sim::net::certs::issued(
                &b64(&c.cert_pem),
                &b64(&c.key.to_talos_pem().unwrap()),
                &[ip],
                "node",
                &[],
                now,
            )
            .unwrap();
            id.chain[0].clone()
        };
        let (old, new, other) = (ca("old"), ca("new"), ca("other"));
        let bundle = format!("{}{}", old.cert_pem, new.cert_pem);
        let kept = talm_base::caches::memo::Memo::new(4);
        let v = ca_verifier_in(&kept, &bundle).unwrap();
        let name = ServerName::IpAddress(ip.into());
        let at = UnixTime::now();
        let verify = |c| v.verify_server_cert(&leaf_of(c), &[], &name, &[], at);
        assert!(verify(&old).is_ok(), "the first CA of the bundle");
        assert!(verify(&new).is_ok(), "the second CA of the bundle");
        assert_eq!(
            verify(&other).unwrap_err(),
            rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
        );
        let key_in = format!("{}{}", old.cert_pem, old.key.to_talos_pem().unwrap());
        assert_eq!(
            ca_verifier_in(&kept, &key_in).unwrap_err().to_string(),
            "the talosconfig CA is unusable: it holds a \"ED25519 PRIVATE KEY\" PEM block"
        );
    }
}
