//! Keys and certificates in the forms Talos writes them: Ed25519/ECDSA/RSA private keys with
//! Talos's PEM labels, self-signed CAs (Organization-only subject, 10 years) and the admin
//! client certificate (Ed25519, `O=os:admin`, client-auth only, 1 year).

use anyhow::{anyhow, bail, Context, Result};
use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyIdMethod, KeyPair, KeyUsagePurpose, SerialNumber, SignatureAlgorithm,
};
use time::{Duration, OffsetDateTime};

use super::der;

/// Validity of generated CAs: 87600 h (10 years), as Talos.
pub const CA_VALIDITY: Duration = Duration::hours(87_600);
/// Validity of the admin client certificate: 8760 h (1 year), as Talos.
pub const CLIENT_VALIDITY: Duration = Duration::hours(8_760);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    Ed25519,
    EcdsaP256,
    Rsa,
}

/// A private key, held as PKCS#8 DER whatever form it was read from.
#[derive(Clone)]
pub struct PrivateKey {
    pub kind: KeyKind,
    pkcs8: Vec<u8>,
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey({:?}, <redacted>)", self.kind)
    }
}

pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    // Cannot fail: aws-lc's random source fails only when the OS has none, and then no key can be made at all.
    aws_lc_rs::rand::fill(&mut b).expect("system random source");
    b
}

impl PrivateKey {
    pub fn generate(kind: KeyKind) -> Result<Self> {
        let pkcs8 = match kind {
            KeyKind::Ed25519 => der::ed25519_pkcs8(&random_bytes::<32>())?,
            KeyKind::EcdsaP256 => {
                KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?.serialize_der()
            }
            KeyKind::Rsa => {
                KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_4096)?
                    .serialize_der()
            }
        };
        let key = PrivateKey { kind, pkcs8 };
        key.key_pair()?; // proves the key loads before anyone stores it
        Ok(key)
    }

    fn algorithm(&self) -> &'static SignatureAlgorithm {
        match self.kind {
            KeyKind::Ed25519 => &rcgen::PKCS_ED25519,
            KeyKind::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
            KeyKind::Rsa => &rcgen::PKCS_RSA_SHA256,
        }
    }

    /// The rcgen key pair for signing.
    pub fn key_pair(&self) -> Result<KeyPair> {
        KeyPair::from_pkcs8_der_and_sign_algo(&self.pkcs8.as_slice().into(), self.algorithm())
            .map_err(|e| anyhow!("unusable {:?} private key: {e}", self.kind))
    }

    /// The PKCS#8 DER of the key (what TLS libraries load under the `PRIVATE KEY` label).
    pub fn pkcs8_der(&self) -> &[u8] {
        &self.pkcs8
    }

    /// PEM text with the label and inner form Talos uses for this key type.
    pub fn to_talos_pem(&self) -> Result<String> {
        let inner = der::pkcs8_parts(&self.pkcs8)?.inner;
        Ok(match self.kind {
            KeyKind::Ed25519 => {
                let seed = der::ed25519_seed(&inner)?;
                pem_encode("ED25519 PRIVATE KEY", &der::ed25519_pkcs8(&seed)?)
            }
            KeyKind::EcdsaP256 => {
                let private = der::sec1_private(&inner)?;
                let kp = self.key_pair()?;
                pem_encode(
                    "EC PRIVATE KEY",
                    &der::sec1_p256(&private, kp.public_key_raw())?,
                )
            }
            KeyKind::Rsa => pem_encode("RSA PRIVATE KEY", &inner),
        })
    }

    /// Reads a key under any label Talos accepts: `ED25519 PRIVATE KEY`, `EC PRIVATE KEY`,
    /// `RSA PRIVATE KEY` or `PRIVATE KEY` (PKCS#8).
    pub fn from_pem(text: &str) -> Result<Self> {
        let (label, body) = pem_decode(text).ok_or_else(|| anyhow!("failed to parse PEM block"))?;
        let pkcs8 = match label.as_str() {
            "EC PRIVATE KEY" => {
                der::wrap_pkcs8(der::OID_EC_PUBLIC_KEY, Some(der::OID_P256), &body)?
            }
            "RSA PRIVATE KEY" => der::wrap_pkcs8(der::OID_RSA, None, &body)?,
            "ED25519 PRIVATE KEY" | "PRIVATE KEY" => body,
            other => bail!("unsupported key type: {other:?}"),
        };
        let oid = der::pkcs8_parts(&pkcs8)
            .context("failed to parse private key")?
            .algorithm;
        let kind = if oid == der::OID_ED25519 {
            KeyKind::Ed25519
        } else if oid == der::OID_EC_PUBLIC_KEY {
            KeyKind::EcdsaP256
        } else if oid == der::OID_RSA {
            KeyKind::Rsa
        } else {
            bail!("unsupported private key algorithm");
        };
        let key = PrivateKey { kind, pkcs8 };
        key.key_pair().context("failed to parse private key")?;
        Ok(key)
    }
}

/// PEM with LF line endings and 64-column base64, as Go writes it.
pub fn pem_encode(label: &str, der: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // Cannot fail: base64 output is ASCII, so every chunk is UTF-8.
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The first PEM block in `text`: its label and decoded bytes.
pub fn pem_decode(text: &str) -> Option<(String, Vec<u8>)> {
    pem_block(text).map(|(label, der, _)| (label, der))
}

/// Every PEM block of `text` in order (a CA bundle holds several), each as its label and
/// decoded bytes; `None` when there is none or one of them is damaged.
pub fn pem_decode_all(text: &str) -> Option<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.contains("-----BEGIN ") {
        let (label, der, used) = pem_block(rest)?;
        out.push((label, der));
        rest = &rest[used..];
    }
    (!out.is_empty()).then_some(out)
}

/// The first PEM block of `text`: label, decoded bytes, and how many bytes of `text` it ends at.
fn pem_block(text: &str) -> Option<(String, Vec<u8>, usize)> {
    let start = text.find("-----BEGIN ")?;
    let rest = &text[start + 11..];
    let label_end = rest.find("-----")?;
    let label = rest[..label_end].to_string();
    let body_start = &rest[label_end + 5..];
    let end_marker = format!("-----END {label}-----");
    let body_end = body_start.find(&end_marker)?;
    let b64: String = body_start[..body_end]
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let der = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    let used = start + 11 + label_end + 5 + body_end + end_marker.len();
    Some((label, der, used))
}

/// A certificate and its key, as PEM text.
#[derive(Debug, Clone)]
pub struct CertAndKey {
    pub cert_pem: String,
    pub key: PrivateKey,
}

fn serial() -> SerialNumber {
    let mut b = random_bytes::<16>();
    b[0] &= 0x7f;
    SerialNumber::from_slice(&b)
}

fn org_name(org: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    if let Some(o) = org {
        dn.push(DnType::OrganizationName, o);
    }
    dn
}

/// A self-signed CA as Talos makes them: the subject holds only the Organization (or nothing),
/// CA:true, key usage CertSign|DigitalSignature, EKU server+client auth, random serial and
/// 20-byte subject key id, valid from `now` for ten years.
pub fn self_signed_ca(kind: KeyKind, org: Option<&str>, now: OffsetDateTime) -> Result<CertAndKey> {
    let key = PrivateKey::generate(kind)?;
    let mut params = CertificateParams::default();
    params.distinguished_name = org_name(org);
    params.serial_number = Some(serial());
    params.not_before = now;
    params.not_after = now + CA_VALIDITY;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyCertSign,
    ];
    params.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    params.key_identifier_method = KeyIdMethod::PreSpecified(random_bytes::<20>().to_vec());
    let cert = params.self_signed(&key.key_pair()?)?;
    Ok(CertAndKey {
        cert_pem: pem_encode("CERTIFICATE", cert.der()),
        key,
    })
}

/// A client certificate for the Talos API: Ed25519 key, subject `O=<roles sorted>` only,
/// client-auth EKU, digital-signature usage, signed by the OS CA, valid from `now` for a year.
pub fn client_cert(
    ca_cert_pem: &str,
    ca_key: &PrivateKey,
    roles: &[&str],
    now: OffsetDateTime,
) -> Result<CertAndKey> {
    client_cert_for(ca_cert_pem, ca_key, roles, now, CLIENT_VALIDITY)
}

/// The same client certificate, valid for `ttl` (what a node's GenerateClientConfiguration
/// issues for the requested `crt_ttl`).
pub fn client_cert_for(
    ca_cert_pem: &str,
    ca_key: &PrivateKey,
    roles: &[&str],
    now: OffsetDateTime,
    ttl: Duration,
) -> Result<CertAndKey> {
    let key = PrivateKey::generate(KeyKind::Ed25519)?;
    let mut roles: Vec<&str> = roles.to_vec();
    roles.sort_unstable();
    let mut dn = DistinguishedName::new();
    for r in roles {
        dn.push(DnType::OrganizationName, r);
    }
    let mut params = CertificateParams::default();
    params.distinguished_name = dn;
    params.serial_number = Some(serial());
    params.not_before = now;
    params.not_after = now + ttl;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    let issuer = Issuer::from_ca_cert_pem(ca_cert_pem, ca_key.key_pair()?)
        .context("the OS CA certificate in the secrets bundle cannot be parsed")?;
    let cert = params.signed_by(&key.key_pair()?, &issuer)?;
    Ok(CertAndKey {
        cert_pem: pem_encode("CERTIFICATE", cert.der()),
        key,
    })
}

/// Checks that PEM text holds a parseable X.509 certificate.
pub fn check_certificate(pem: &str) -> Result<()> {
    let (label, der) = pem_decode(pem).ok_or_else(|| anyhow!("failed to parse PEM block"))?;
    if label != "CERTIFICATE" {
        bail!("unsupported certificate type: {label:?}");
    }
    x509_parser::parse_x509_certificate(&der)
        .map_err(|e| anyhow!("failed to parse certificate: {e}"))?;
    Ok(())
}

/// Decodes a base64-of-PEM field back to PEM text.
pub fn unb64(field: &str) -> Result<String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(field.trim())
        .map_err(|e| anyhow!("not base64: {e}"))?;
    String::from_utf8(bytes).map_err(|_| anyhow!("not PEM text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn talos_pem_forms_roundtrip() {
        for (kind, label) in [
            (KeyKind::Ed25519, "ED25519 PRIVATE KEY"),
            (KeyKind::EcdsaP256, "EC PRIVATE KEY"),
        ] {
            let key = PrivateKey::generate(kind).unwrap();
            let pem = key.to_talos_pem().unwrap();
            assert!(
                pem.starts_with(&format!("-----BEGIN {label}-----\n")),
                "{pem}"
            );
            let back = PrivateKey::from_pem(&pem).unwrap();
            assert_eq!(back.kind, kind);
            assert_eq!(back.to_talos_pem().unwrap(), pem);
            // The generic PKCS#8 label loads too.
            let generic = pem_encode("PRIVATE KEY", back.pkcs8_der());
            assert_eq!(PrivateKey::from_pem(&generic).unwrap().kind, kind);
        }
    }

    #[test]
    fn every_block_of_a_bundle_is_decoded() {
        let bundle = format!(
            "{}{}",
            pem_encode("CERTIFICATE", &[1, 2]),
            pem_encode("CERTIFICATE", &[3])
        );
        assert_eq!(
            pem_decode_all(&bundle),
            Some(vec![
                ("CERTIFICATE".to_string(), vec![1, 2]),
                ("CERTIFICATE".to_string(), vec![3])
            ])
        );
        assert_eq!(
            pem_decode(&bundle),
            Some(("CERTIFICATE".into(), vec![1, 2]))
        );
        assert_eq!(pem_decode_all("no pem"), None);
        let damaged = format!("{bundle}-----BEGIN CERTIFICATE-----\n!!\n");
        assert_eq!(pem_decode_all(&damaged), None);
    }

    #[test]
    fn unsupported_labels_are_named() {
        let pem = pem_encode("CERTIFICATE", &[0x30, 0x00]);
        let err = PrivateKey::from_pem(&pem).unwrap_err().to_string();
        assert_eq!(err, "unsupported key type: \"CERTIFICATE\"");
        let err = PrivateKey::from_pem("nope").unwrap_err().to_string();
        assert_eq!(err, "failed to parse PEM block");
    }
}
