//! Server certificate pins for maintenance mode (`--cert-fingerprint`), in talosctl's form.
//!
//! The fact (github.com/siderolabs/crypto, `x509.SPKIFingerprint` / `ParseFingerprint` /
//! `MatchSPKIFingerprints`): a fingerprint is SHA-256 over the certificate's DER
//! `SubjectPublicKeyInfo` (the public key, not the whole certificate), written as standard
//! base64 with padding (44 characters); only the leaf certificate the server presents is
//! compared, and it must equal one of the given fingerprints.

use anyhow::Result;
use base64::Engine;
use sha2::{Digest, Sha256};
use x509_parser::prelude::{FromDer, X509Certificate};

use talm_base::error::hinted;

/// SHA-256 of a certificate's SubjectPublicKeyInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fingerprint([u8; 32]);

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

impl Fingerprint {
    /// Parses talosctl's text form (standard base64 of the 32-byte hash).
    pub fn parse(text: &str) -> Result<Fingerprint> {
        let bad = |why: String| {
            hinted(
                format!("--cert-fingerprint {text:?}: {why}"),
                "give the SHA-256 of the server certificate's public key (SubjectPublicKeyInfo) in base64, as talosctl prints and takes it, e.g. `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`",
            )
        };
        let bytes = B64
            .decode(text.trim())
            .map_err(|e| bad(format!("not base64: {e}")))?;
        let hash: [u8; 32] = bytes
            .try_into()
            .map_err(|b: Vec<u8>| bad(format!("{} bytes, a SHA-256 hash has 32", b.len())))?;
        Ok(Fingerprint(hash))
    }

    /// The fingerprint of a DER certificate; `None` when it does not parse.
    pub fn of_cert(der: &[u8]) -> Option<Fingerprint> {
        let (_, cert) = X509Certificate::from_der(der).ok()?;
        Some(Fingerprint::of_spki(cert.tbs_certificate.subject_pki.raw))
    }

    /// The fingerprint of a DER `SubjectPublicKeyInfo`.
    pub fn of_spki(spki_der: &[u8]) -> Fingerprint {
        Fingerprint(Sha256::digest(spki_der).into())
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&B64.encode(self.0))
    }
}

/// Parses every `--cert-fingerprint` value.
pub fn parse_all(texts: &[String]) -> Result<Vec<Fingerprint>> {
    texts.iter().map(|t| Fingerprint::parse(t)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pki::{KeyKind, PrivateKey};

    #[test]
    fn hashes_the_public_key_info_not_the_certificate() {
        let key = PrivateKey::generate(KeyKind::Ed25519).unwrap();
        let kp = key.key_pair().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["n".into()])
            .unwrap()
            .self_signed(&kp)
            .unwrap();
        let fp = Fingerprint::of_cert(cert.der()).unwrap();
        let expected = B64.encode(Sha256::digest(
            rcgen::PublicKeyData::subject_public_key_info(&kp),
        ));
        assert_eq!(fp.to_string(), expected);
        assert_eq!(fp.to_string().len(), 44);
        assert_eq!(Fingerprint::parse(&expected).unwrap(), fp);
        // Another certificate for the same key has the same fingerprint.
        let again = rcgen::CertificateParams::new(vec!["other".into()])
            .unwrap()
            .self_signed(&kp)
            .unwrap();
        assert_eq!(Fingerprint::of_cert(again.der()), Some(fp));
    }

    #[test]
    fn refuses_text_that_is_not_a_sha256_in_base64() {
        let err = Fingerprint::parse("abc!").unwrap_err();
        assert!(err.to_string().contains("not base64"), "{err}");
        let err = Fingerprint::parse(&B64.encode([1u8; 20])).unwrap_err();
        assert!(
            err.to_string().contains("20 bytes, a SHA-256 hash has 32"),
            "{err}"
        );
    }
}
