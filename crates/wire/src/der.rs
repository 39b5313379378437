//! Private keys moved between PKCS#8 and the forms Talos writes (SEC1 `EC PRIVATE KEY`, PKCS#1
//! `RSA PRIVATE KEY`, PKCS#8 v1 Ed25519) with RustCrypto's `pkcs8`/`sec1`/`der`; PKCS#1 needs no
//! crate: it is the PKCS#8 inner key, passed through unchanged.

use anyhow::{Context, Result};
use der::asn1::OctetStringRef;
use der::{AnyRef, Decode, Encode};
use pkcs8::{AlgorithmIdentifierRef, ObjectIdentifier, PrivateKeyInfo};
use sec1::{EcParameters, EcPrivateKey};

/// `id-ecPublicKey` (RFC 5480).
pub const OID_EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
/// `secp256r1` / P-256 (RFC 5480).
pub const OID_P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
/// `rsaEncryption` (RFC 8017).
pub const OID_RSA: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
/// `id-Ed25519` (RFC 8410).
pub const OID_ED25519: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.101.112");

/// A PKCS#8 key taken apart: its algorithm and the inner private key bytes.
pub struct Pkcs8Parts {
    pub algorithm: ObjectIdentifier,
    pub inner: Vec<u8>,
}

/// Splits a PKCS#8 `PrivateKeyInfo` into its algorithm and inner private key bytes.
pub fn pkcs8_parts(der: &[u8]) -> Result<Pkcs8Parts> {
    let info = PrivateKeyInfo::from_der(der)
        .map_err(|e| anyhow::anyhow!("not a PKCS#8 structure: {e}"))?;
    Ok(Pkcs8Parts {
        algorithm: info.algorithm.oid,
        inner: info.private_key.to_vec(),
    })
}

/// Wraps a key of the given algorithm into PKCS#8 v1. RSA carries NULL parameters and EC the
/// named curve, as Go's `x509.MarshalPKCS8PrivateKey` writes them.
pub fn wrap_pkcs8(
    algorithm: ObjectIdentifier,
    curve: Option<ObjectIdentifier>,
    inner: &[u8],
) -> Result<Vec<u8>> {
    let parameters = match &curve {
        Some(c) => Some(AnyRef::from(c)),
        None if algorithm == OID_RSA => Some(AnyRef::NULL),
        None => None,
    };
    let info = PrivateKeyInfo::new(
        AlgorithmIdentifierRef {
            oid: algorithm,
            parameters,
        },
        inner,
    );
    info.to_der().context("encoding a PKCS#8 private key")
}

/// PKCS#8 v1 for an Ed25519 seed, exactly as Go's x509 writes it.
pub fn ed25519_pkcs8(seed: &[u8; 32]) -> Result<Vec<u8>> {
    let inner = OctetStringRef::new(seed)
        .and_then(|o| o.to_der())
        .context("encoding an Ed25519 seed")?;
    wrap_pkcs8(OID_ED25519, None, &inner)
}

/// The seed inside an Ed25519 PKCS#8 inner key (`CurvePrivateKey`, an OCTET STRING).
pub fn ed25519_seed(inner: &[u8]) -> Result<[u8; 32]> {
    let seed = OctetStringRef::from_der(inner)
        .map_err(|e| anyhow::anyhow!("not an Ed25519 private key: {e}"))?;
    seed.as_bytes()
        .try_into()
        .context("Ed25519 seed is not 32 bytes")
}

/// SEC1 `ECPrivateKey` with the named curve and the public point, as Go writes it.
pub fn sec1_p256(private: &[u8], public_point: &[u8]) -> Result<Vec<u8>> {
    EcPrivateKey {
        private_key: private,
        parameters: Some(EcParameters::NamedCurve(OID_P256)),
        public_key: Some(public_point),
    }
    .to_der()
    .context("encoding an EC private key")
}

/// The private scalar inside a SEC1 `ECPrivateKey`.
pub fn sec1_private(sec1: &[u8]) -> Result<Vec<u8>> {
    let key =
        EcPrivateKey::from_der(sec1).map_err(|e| anyhow::anyhow!("not an EC private key: {e}"))?;
    Ok(key.private_key.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ed25519_pkcs8_matches_go_layout() {
        let der = ed25519_pkcs8(&[1u8; 32]).unwrap();
        assert_eq!(
            &der[..16],
            &[
                0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20
            ]
        );
        let parts = pkcs8_parts(&der).unwrap();
        assert_eq!(parts.algorithm, OID_ED25519);
        assert_eq!(parts.inner.len(), 34);
        assert_eq!(ed25519_seed(&parts.inner).unwrap(), [1u8; 32]);
    }

    #[test]
    fn wrapped_keys_carry_go_parameters() {
        // RSA: AlgorithmIdentifier { rsaEncryption, NULL }.
        assert_eq!(
            wrap_pkcs8(OID_RSA, None, &[0x30, 0x00]).unwrap(),
            [
                0x30, 0x16, 0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7,
                0x0d, 0x01, 0x01, 0x01, 0x05, 0x00, 0x04, 0x02, 0x30, 0x00
            ]
        );
        // EC: AlgorithmIdentifier { id-ecPublicKey, prime256v1 }.
        assert_eq!(
            wrap_pkcs8(OID_EC_PUBLIC_KEY, Some(OID_P256), &[0x30, 0x00]).unwrap(),
            [
                0x30, 0x1c, 0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d,
                0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x04, 0x02,
                0x30, 0x00
            ]
        );
    }

    #[test]
    fn sec1_round_trip() {
        let der = sec1_p256(&[7u8; 32], &[4u8; 65]).unwrap();
        // SEQUENCE { INTEGER 1, OCTET STRING (32), [0] { OID P-256 }, [1] { BIT STRING } }
        assert_eq!(&der[..7], &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20]);
        assert_eq!(&der[39..41], &[0xa0, 0x0a]);
        assert_eq!(&der[51..55], &[0xa1, 0x44, 0x03, 0x42]);
        assert_eq!(sec1_private(&der).unwrap(), vec![7u8; 32]);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert!(pkcs8_parts(&[0x30, 0x05, 0x01]).is_err());
        assert!(pkcs8_parts(&[0x02, 0x01, 0x00]).is_err());
        assert!(sec1_private(&[0x30, 0x03, 0x02, 0x01]).is_err());
        assert!(ed25519_seed(&[0x04, 0x01, 0x00]).is_err());
    }
}
