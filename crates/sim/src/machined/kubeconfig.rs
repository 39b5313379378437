//! The admin kubeconfig a control-plane node issues: a fresh `CN=admin, O=system:masters`
//! ECDSA client certificate signed by the cluster CA, the cluster endpoint and CA bundle, packed
//! as Talos streams it.

use anyhow::{Context, Result};
use base64::Engine as _;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer,
    KeyUsagePurpose,
};
use serde_yaml_ng::Value;

use crate::cosi::facts::map;
use time::{Duration, OffsetDateTime};

use crate::node::state::Config;
use talm_wire::pki::unb64;
use talm_wire::pki::{pem_encode, KeyKind, PrivateKey};

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// The kubeconfig YAML for `cfg`'s cluster.
pub fn admin(cfg: &Config) -> Result<String> {
    let (crt, key) = cfg.cluster_ca();
    let ca_pem = unb64(&crt).context("cluster.ca.crt")?;
    let ca_key =
        PrivateKey::from_pem(&unb64(&key).context("cluster.ca.key")?).context("cluster.ca.key")?;
    let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key.key_pair()?).context("cluster.ca.crt")?;
    let now = OffsetDateTime::now_utc();
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "admin");
    dn.push(DnType::OrganizationName, "system:masters");
    p.distinguished_name = dn;
    p.not_before = now - Duration::seconds(10);
    p.not_after = now + Duration::hours(8760);
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_key = PrivateKey::generate(KeyKind::EcdsaP256)?;
    let cert = p.signed_by(&client_key.key_pair()?, &issuer)?;
    let cluster = cfg.cluster_name();
    let user = format!("admin@{cluster}");
    let doc = map(vec![
        ("apiVersion", "v1".into()),
        ("kind", "Config".into()),
        (
            "clusters",
            Value::Sequence(vec![map(vec![
                ("name", cluster.clone().into()),
                (
                    "cluster",
                    map(vec![
                        ("server", cfg.cluster_endpoint().into()),
                        ("certificate-authority-data", b64(&ca_pem).into()),
                    ]),
                ),
            ])]),
        ),
        (
            "users",
            Value::Sequence(vec![map(vec![
                ("name", user.clone().into()),
                (
                    "user",
                    map(vec![
                        (
                            "client-certificate-data",
                            b64(&pem_encode("CERTIFICATE", cert.der())).into(),
                        ),
                        ("client-key-data", b64(&client_key.to_talos_pem()?).into()),
                    ]),
                ),
            ])]),
        ),
        (
            "contexts",
            Value::Sequence(vec![map(vec![
                (
                    "context",
                    map(vec![
                        ("cluster", cluster.into()),
                        ("namespace", "default".into()),
                        ("user", user.clone().into()),
                    ]),
                ),
                ("name", user.clone().into()),
            ])]),
        ),
        ("current-context", user.into()),
    ]);
    Ok(serde_yaml_ng::to_string(&doc)?)
}

/// The archive bytes Talos streams for `cfg`; with `exec`, the user also names a credential
/// plugin (the `exec_kubeconfig` fault).
pub fn archive(cfg: &Config, exec: bool) -> Result<Vec<u8>> {
    let mut text = admin(cfg)?;
    if exec {
        text = text.replace(
            "    client-certificate-data:",
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, 'echo hostile']\n    client-certificate-data:",
        );
    }
    let mtime = OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
    talm_wire::archive::pack("kubeconfig", 0o600, mtime, text.as_bytes())
}
