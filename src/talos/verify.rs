//! How the client checks a node's certificate: against the talosconfig's CA, or in maintenance
//! mode not at all (the node's self-signed certificate is fresh on every boot). Either way a
//! node in the other mode is recognised by its certificate, so the error can say which it is.

use std::sync::Arc;

use anyhow::Result;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// The common name of the certificate a node in maintenance mode presents.
pub const MAINTENANCE_CN: &str = "maintenance-service.talos.dev";

/// Handshake error when an insecure connection meets a configured node.
pub const NOT_MAINTENANCE: &str =
    "the node presents its cluster certificate: it is not in maintenance mode";

/// Handshake error when an authenticated connection meets a maintenance node.
pub const IN_MAINTENANCE: &str =
    "the node presents its maintenance certificate: it is in maintenance mode";

fn is_maintenance_cert(end_entity: &CertificateDer<'_>) -> bool {
    use x509_parser::prelude::{FromDer, X509Certificate};
    X509Certificate::from_der(end_entity).is_ok_and(|(_, c)| {
        c.subject()
            .iter_common_name()
            .any(|cn| cn.as_str() == Ok(MAINTENANCE_CN))
    })
}

/// Verifies a node's certificate; handshake signatures are always checked.
#[derive(Debug)]
pub struct NodeVerifier {
    /// `None`: maintenance mode (any certificate of a maintenance node).
    ca: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl NodeVerifier {
    /// Maintenance mode: no verification, but a configured node is refused with a clear error.
    pub fn maintenance() -> NodeVerifier {
        NodeVerifier {
            ca: None,
            provider: provider(),
        }
    }

    /// Trusts only `ca_pem` (the talosconfig's CA).
    pub fn with_ca(ca_pem: &str) -> Result<NodeVerifier> {
        let unusable =
            |e: String| crate::error::plain(format!("the talosconfig CA is unusable: {e}"));
        let (_, der) =
            crate::secrets::pki::pem_decode(ca_pem).ok_or_else(|| unusable("not PEM".into()))?;
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(der))
            .map_err(|e| unusable(e.to_string()))?;
        let ca = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()
            .map_err(|e| unusable(e.to_string()))?;
        Ok(NodeVerifier {
            ca: Some(ca),
            provider: provider(),
        })
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
            None if maintenance => Ok(ServerCertVerified::assertion()),
            None => Err(rustls::Error::General(NOT_MAINTENANCE.into())),
            Some(_) if maintenance => Err(rustls::Error::General(IN_MAINTENANCE.into())),
            Some(ca) => ca.verify_server_cert(end_entity, intermediates, server_name, ocsp, now),
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
