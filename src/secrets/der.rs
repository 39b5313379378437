//! The little DER needed to move private keys between PKCS#8 and the forms Talos writes
//! (SEC1 `EC PRIVATE KEY`, PKCS#1 `RSA PRIVATE KEY`, PKCS#8 v1 Ed25519).

use anyhow::{bail, Result};

pub const OID_EC_PUBLIC_KEY: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
pub const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
pub const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
pub const OID_ED25519: &[u8] = &[0x2b, 0x65, 0x70];

/// One element: its tag, its content, and what follows it.
pub fn read(input: &[u8]) -> Result<(u8, &[u8], &[u8])> {
    if input.len() < 2 {
        bail!("truncated DER");
    }
    let tag = input[0];
    let (len, header) = match input[1] {
        l if l < 0x80 => (l as usize, 2),
        0x81..=0x84 => {
            let n = (input[1] & 0x7f) as usize;
            if input.len() < 2 + n {
                bail!("truncated DER length");
            }
            let len = input[2..2 + n]
                .iter()
                .fold(0usize, |acc, b| (acc << 8) | *b as usize);
            (len, 2 + n)
        }
        _ => bail!("unsupported DER length"),
    };
    if input.len() < header + len {
        bail!("truncated DER content");
    }
    Ok((tag, &input[header..header + len], &input[header + len..]))
}

/// Every element of a constructed value, in order.
pub fn children(mut content: &[u8]) -> Result<Vec<(u8, &[u8])>> {
    let mut out = Vec::new();
    while !content.is_empty() {
        let (tag, body, rest) = read(content)?;
        out.push((tag, body));
        content = rest;
    }
    Ok(out)
}

pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .iter()
            .copied()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

pub fn seq(parts: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

pub fn int_small(v: u8) -> Vec<u8> {
    tlv(0x02, &[v])
}

pub fn octets(b: &[u8]) -> Vec<u8> {
    tlv(0x04, b)
}

pub fn oid(b: &[u8]) -> Vec<u8> {
    tlv(0x06, b)
}

/// A PKCS#8 key taken apart: algorithm OID, algorithm parameters (if any), inner key bytes.
pub type Pkcs8Parts = (Vec<u8>, Option<Vec<u8>>, Vec<u8>);

/// Splits a PKCS#8 `PrivateKeyInfo` into its algorithm OID, the algorithm parameters (if any)
/// and the inner private key bytes.
pub fn pkcs8_parts(der: &[u8]) -> Result<Pkcs8Parts> {
    let (tag, body, _) = read(der)?;
    if tag != 0x30 {
        bail!("not a PKCS#8 structure");
    }
    let parts = children(body)?;
    if parts.len() < 3 || parts[1].0 != 0x30 || parts[2].0 != 0x04 {
        bail!("not a PKCS#8 structure");
    }
    let alg = children(parts[1].1)?;
    let alg_oid = alg
        .first()
        .filter(|(t, _)| *t == 0x06)
        .map(|(_, b)| b.to_vec());
    let Some(alg_oid) = alg_oid else {
        bail!("PKCS#8 without an algorithm")
    };
    let params = alg
        .get(1)
        .filter(|(t, _)| *t == 0x06)
        .map(|(_, b)| b.to_vec());
    Ok((alg_oid, params, parts[2].1.to_vec()))
}

/// PKCS#8 v1 for an Ed25519 seed, exactly as Go's x509 writes it.
pub fn ed25519_pkcs8(seed: &[u8; 32]) -> Vec<u8> {
    seq(&[
        int_small(0),
        seq(&[oid(OID_ED25519)]),
        octets(&octets(seed)),
    ])
}

/// SEC1 `ECPrivateKey` with the named curve and the public point, as Go writes it.
pub fn sec1_p256(private: &[u8], public_point: &[u8]) -> Vec<u8> {
    let mut bits = vec![0u8];
    bits.extend_from_slice(public_point);
    seq(&[
        int_small(1),
        octets(private),
        tlv(0xa0, &oid(OID_P256)),
        tlv(0xa1, &tlv(0x03, &bits)),
    ])
}

/// The private scalar inside a SEC1 `ECPrivateKey`.
pub fn sec1_private(sec1: &[u8]) -> Result<Vec<u8>> {
    let (tag, body, _) = read(sec1)?;
    if tag != 0x30 {
        bail!("not an EC private key");
    }
    let parts = children(body)?;
    match parts.get(1) {
        Some((0x04, b)) => Ok(b.to_vec()),
        _ => bail!("not an EC private key"),
    }
}

/// Wraps a key of the given algorithm into PKCS#8 (v1).
pub fn wrap_pkcs8(alg_oid: &[u8], params: Option<&[u8]>, inner: &[u8]) -> Vec<u8> {
    let alg = match params {
        Some(p) => seq(&[oid(alg_oid), oid(p)]),
        None if alg_oid == OID_RSA => seq(&[oid(alg_oid), vec![0x05, 0x00]]),
        None => seq(&[oid(alg_oid)]),
    };
    seq(&[int_small(0), alg, octets(inner)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lengths_roundtrip() {
        let body = vec![7u8; 300];
        let enc = tlv(0x04, &body);
        assert_eq!(&enc[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let (tag, content, rest) = read(&enc).unwrap();
        assert_eq!((tag, content.len(), rest.len()), (0x04, 300, 0));
    }

    #[test]
    fn ed25519_pkcs8_matches_go_layout() {
        let der = ed25519_pkcs8(&[1u8; 32]);
        assert_eq!(
            &der[..16],
            &[
                0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20
            ]
        );
        let (oid, params, inner) = pkcs8_parts(&der).unwrap();
        assert_eq!((oid.as_slice(), params), (OID_ED25519, None));
        assert_eq!(inner.len(), 34);
    }

    #[test]
    fn truncated_input_is_an_error() {
        assert!(read(&[0x30, 0x05, 0x01]).is_err());
        assert!(pkcs8_parts(&[0x02, 0x01, 0x00]).is_err());
    }
}
