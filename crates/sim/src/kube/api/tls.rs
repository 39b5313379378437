//! The API server's TLS: a serving certificate issued by the cluster's Kubernetes CA for the
//! listen address and kube-apiserver's usual names, ALPN h2 and http/1.1, and client
//! certificates that are optional but, when given, must chain to that CA.

use std::net::IpAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyUsagePurpose, SanType,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use time::{Duration, OffsetDateTime};

use talm_wire::pki::{self, KeyKind, PrivateKey};

/// The cluster's Kubernetes CA (`cluster.ca.crt` / `cluster.ca.key`, base64-decoded PEM).
#[derive(Debug, Clone)]
pub struct ClusterCa {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The names every kube-apiserver certificate carries besides the node's address.
pub const DNS_NAMES: [&str; 5] = [
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
    "localhost",
];

/// The service IP of `kubernetes.default` (the first of the default service CIDR).
pub const SERVICE_IP: [u8; 4] = [10, 96, 0, 1];

/// The crypto provider, made per server (once per boot of a control plane; no static to
/// keep, see `caches`).
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A serving certificate for `ip` issued by the CA now, valid a year; chain and key.
pub fn serving_cert(
    ca: &ClusterCa,
    ip: IpAddr,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let ca_key = PrivateKey::from_pem(&ca.key_pem).context("cluster.ca.key")?;
    let issuer =
        Issuer::from_ca_cert_pem(&ca.cert_pem, ca_key.key_pair()?).context("cluster.ca.crt")?;
    let now = OffsetDateTime::now_utc();
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kube-apiserver");
    p.distinguished_name = dn;
    let mut ips = vec![ip, IpAddr::from(SERVICE_IP), IpAddr::from([127, 0, 0, 1])];
    ips.dedup();
    p.subject_alt_names = ips.into_iter().map(SanType::IpAddress).collect();
    for name in DNS_NAMES {
        p.subject_alt_names
            .push(SanType::DnsName(name.try_into().context("a DNS name")?));
    }
    p.not_before = now - Duration::seconds(10);
    p.not_after = now + Duration::days(365);
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = PrivateKey::generate(KeyKind::EcdsaP256)?;
    let cert = p.signed_by(&key.key_pair()?, &issuer)?;
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.pkcs8_der().to_vec()));
    Ok((vec![CertificateDer::from(cert.der().to_vec())], der))
}

/// The server's TLS configuration for the listen address `ip`.
pub fn server_config(ca: &ClusterCa, ip: IpAddr) -> Result<ServerConfig> {
    let (chain, key) = serving_cert(ca, ip)?;
    let (_, ca_der) =
        pki::pem_decode(&ca.cert_pem).context("cluster.ca.crt is not a PEM certificate")?;
    let mut roots = RootCertStore::empty();
    roots
        .add(CertificateDer::from(ca_der))
        .context("cluster.ca.crt")?;
    let provider = provider();
    let verifier =
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider))
            .allow_unauthenticated()
            .build()
            .context("client verifier")?;
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(cfg)
}
