//! A simulated node's TLS: the maintenance certificate (fresh self-signed Ed25519 chain, no
//! client auth), the normal-mode server certificate issued by the applied `machine.ca`, and the
//! client verifier that requires a certificate from that CA with client-auth-only usage. Both
//! certificates and client certificates are dated by the node's clock (`crate::net::skew`).

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyUsagePurpose, SanType,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    DigitallySignedStruct, DistinguishedName as RDn, RootCertStore, ServerConfig, SignatureScheme,
};
use time::{Duration, OffsetDateTime};
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::net::skew::Skew;
use talm_wire::pki::unb64;
use talm_wire::pki::{self, KeyKind, PrivateKey};

pub use talm_wire::api::MAINTENANCE_CN;
/// Server certificates live 24 h.
const SERVER_VALIDITY: Duration = Duration::hours(24);

/// One crypto provider for every node's TLS.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    static PROVIDER: std::sync::OnceLock<Arc<rustls::crypto::CryptoProvider>> =
        std::sync::OnceLock::new();
    Arc::clone(PROVIDER.get_or_init(|| Arc::new(rustls::crypto::aws_lc_rs::default_provider())))
}

/// Session resumption as a Go TLS server (apid) offers it: one stateless ticket after a TLS 1.3
/// handshake, sealed with a key of this server's own, and no server-side session cache (rustls's
/// default cache reserved 256 entries, ~30 KiB, for every node).
fn resumption(cfg: &mut ServerConfig) -> Result<()> {
    cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    cfg.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new().context("TLS session tickets")?;
    cfg.send_tls13_tickets = 1;
    Ok(())
}

fn server_params(
    cn: &str,
    ips: &[IpAddr],
    dns: &[String],
    now: OffsetDateTime,
) -> CertificateParams {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    p.distinguished_name = dn;
    p.subject_alt_names = ips.iter().map(|ip| SanType::IpAddress(*ip)).collect();
    for d in dns {
        if let Ok(name) = d.clone().try_into() {
            p.subject_alt_names.push(SanType::DnsName(name));
        }
    }
    p.not_before = now - Duration::seconds(10);
    p.not_after = now + SERVER_VALIDITY;
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    p.is_ca = IsCa::ExplicitNoCa;
    p
}

/// A server certificate chain and key for rustls.
pub struct ServerIdentity {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKey,
}

fn der_of(pem: &str) -> Result<CertificateDer<'static>> {
    let (_, der) = pki::pem_decode(pem).context("not a PEM certificate")?;
    Ok(CertificateDer::from(der))
}

/// Maintenance mode: a fresh self-signed Ed25519 root (empty subject) and a leaf
/// `CN=maintenance-service.talos.dev` for the node IPs, 127.0.0.1 and ::1, issued at `now`
/// (the node's clock).
pub fn maintenance(
    ips: &[IpAddr],
    hostname: Option<&str>,
    now: OffsetDateTime,
) -> Result<ServerIdentity> {
    let ca_key = PrivateKey::generate(KeyKind::Ed25519)?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name = DistinguishedName::new();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca.not_before = now - Duration::seconds(10);
    ca.not_after = now + SERVER_VALIDITY;
    let ca_kp = ca_key.key_pair()?;
    let ca_cert = ca.self_signed(&ca_kp)?;
    let mut all: Vec<IpAddr> = ips.to_vec();
    // Cannot fail: a literal loopback address.
    all.push("127.0.0.1".parse().expect("ip"));
    // Cannot fail: a literal loopback address.
    all.push("::1".parse().expect("ip"));
    let dns: Vec<String> = hostname.into_iter().map(str::to_string).collect();
    let leaf_key = PrivateKey::generate(KeyKind::Ed25519)?;
    let issuer = Issuer::from_params(&ca, &ca_kp);
    let leaf =
        server_params(MAINTENANCE_CN, &all, &dns, now).signed_by(&leaf_key.key_pair()?, &issuer)?;
    Ok(ServerIdentity {
        chain: vec![
            CertificateDer::from(leaf.der().to_vec()),
            CertificateDer::from(ca_cert.der().to_vec()),
        ],
        key: leaf_key,
    })
}

/// Normal mode: a leaf issued by the config's OS CA, CN = hostname, SANs = node IPs,
/// certSANs and 127.0.0.1, server-auth only, issued at `now` (the node's clock).
pub fn issued(
    ca_crt_b64: &str,
    ca_key_b64: &str,
    ips: &[IpAddr],
    hostname: &str,
    cert_sans: &[String],
    now: OffsetDateTime,
) -> Result<ServerIdentity> {
    let ca_pem = unb64(ca_crt_b64).context("machine.ca.crt")?;
    let ca_key = PrivateKey::from_pem(&unb64(ca_key_b64).context("machine.ca.key")?)
        .context("machine.ca.key")?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key.key_pair()?).context("machine.ca.crt")?;
    let mut all: Vec<IpAddr> = ips.to_vec();
    let mut dns = vec![hostname.to_string()];
    for san in cert_sans {
        match san.parse::<IpAddr>() {
            Ok(ip) => all.push(ip),
            Err(_) => dns.push(san.clone()),
        }
    }
    // Cannot fail: a literal loopback address.
    all.push("127.0.0.1".parse().expect("ip"));
    all.dedup();
    let leaf_key = PrivateKey::generate(KeyKind::Ed25519)?;
    let leaf =
        server_params(hostname, &all, &dns, now).signed_by(&leaf_key.key_pair()?, &issuer)?;
    Ok(ServerIdentity {
        chain: vec![CertificateDer::from(leaf.der().to_vec())],
        key: leaf_key,
    })
}

fn b64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// apid's client certificate on a control plane: role `os:impersonator`, issued by the OS CA
/// at `now`; base64 of the certificate's and the key's PEM.
pub fn impersonator(
    ca_crt_b64: &str,
    ca_key_b64: &str,
    now: OffsetDateTime,
) -> Result<(String, String)> {
    let ca_key = PrivateKey::from_pem(&unb64(ca_key_b64)?).context("machine.ca.key")?;
    let c = pki::client_cert(&unb64(ca_crt_b64)?, &ca_key, &["os:impersonator"], now)?;
    Ok((b64(&c.cert_pem), b64(&c.key.to_talos_pem()?)))
}

/// What APICertificates shows of a boot's TLS: the served certificate and key, apid's client
/// certificate and the accepted CAs (none: maintenance, which checks no client).
pub fn api_certs(
    id: &ServerIdentity,
    client: Option<(String, String)>,
    accepted: Vec<String>,
) -> Result<crate::cosi::content::ApiCerts> {
    let leaf = id.chain.first().context("an empty certificate chain")?;
    Ok(crate::cosi::content::ApiCerts {
        server: (
            b64(&pki::pem_encode("CERTIFICATE", leaf)),
            b64(&id.key.to_talos_pem()?),
        ),
        maintenance: accepted.is_empty(),
        client,
        accepted,
    })
}

fn key_der(key: &PrivateKey) -> PrivateKeyDer<'static> {
    PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.pkcs8_der().to_vec()))
}

/// TLS for maintenance mode: no client certificate requested.
pub fn maintenance_config(id: &ServerIdentity) -> Result<ServerConfig> {
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(id.chain.clone(), key_der(&id.key))?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    resumption(&mut cfg)?;
    Ok(cfg)
}

/// TLS for normal mode: a client certificate from one of `client_cas_b64` is required, valid
/// at the node's time (`skew` off this machine's), and its extended key usage must be exactly
/// client auth (as apid checks).
pub fn mutual_config(
    id: &ServerIdentity,
    client_cas_b64: &[String],
    skew: Skew,
) -> Result<ServerConfig> {
    let mut roots = RootCertStore::empty();
    for ca in client_cas_b64 {
        roots.add(der_of(&unb64(ca)?)?).context("accepted CA")?;
    }
    let inner = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .context("client verifier")?;
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(ClientAuthOnly { inner, skew }))
        .with_single_cert(id.chain.clone(), key_der(&id.key))?;
    cfg.alpn_protocols = vec![b"h2".to_vec()];
    resumption(&mut cfg)?;
    Ok(cfg)
}

/// Wraps the WebPKI verifier with apid's check that leaf EKU is exactly `[ClientAuth]`, and
/// judges validity by the node's clock. A certificate outside its window is refused with the
/// alert `certificate_expired`, as Go's TLS server does.
#[derive(Debug)]
struct ClientAuthOnly {
    inner: Arc<dyn ClientCertVerifier>,
    skew: Skew,
}

impl ClientCertVerifier for ClientAuthOnly {
    fn root_hint_subjects(&self) -> &[RDn] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let ok = self
            .inner
            .verify_client_cert(end_entity, intermediates, self.skew.shift(now))?;
        let (_, cert) = X509Certificate::from_der(end_entity)
            .map_err(|_| rustls::Error::General("unparseable client certificate".into()))?;
        let client_only = matches!(cert.extended_key_usage(), Ok(Some(eku)) if eku.value.client_auth && !eku.value.server_auth && !eku.value.any && eku.value.other.is_empty() && !eku.value.code_signing && !eku.value.email_protection && !eku.value.time_stamping && !eku.value.ocsp_signing);
        if !client_only {
            return Err(rustls::Error::General(format!(
                "certificate \"{}\" is missing the client auth extended key usage",
                cert.subject()
            )));
        }
        Ok(ok)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The roles of a verified client certificate: its subject's Organization values.
pub fn roles_of(cert: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, c)) = X509Certificate::from_der(cert) else {
        return Vec::new();
    };
    c.subject()
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .filter(|o| !o.is_empty())
        .map(str::to_string)
        .collect()
}
