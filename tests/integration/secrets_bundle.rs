//! The secrets bundle against Talos's own vectors, and the certificates talm generates:
//! algorithm, subject, validity, key usage, EKU and chain.

use crate::common::verify_signed_by;
use talm::secrets::bundle::{multierror, unb64, Bundle};
use talm::secrets::contract::Contract;
use talm::secrets::pki::{self, KeyKind, PrivateKey};
use talm::secrets::talosconfig;
use x509_parser::prelude::*;

const VALID: &str = include_str!("../fixtures/talos/secrets/secrets.yaml");
const INVALID: &str = include_str!("../fixtures/talos/secrets/invalid-secrets.yaml");
const STABILITY: &str = include_str!("../fixtures/talos/stability/secrets.yaml");

fn pem_der(pem: &str) -> Vec<u8> {
    pki::pem_decode(pem).expect("PEM").1
}

fn orgs(name: &X509Name<'_>) -> Vec<String> {
    name.iter_organization()
        .map(|o| o.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn talos_valid_bundle_loads_with_every_field() {
    let b = Bundle::load(VALID, "secrets.yaml").unwrap();
    let c = b.certs.as_ref().unwrap();
    for p in [&c.etcd, &c.k8s, &c.k8saggregator, &c.os] {
        let p = p.as_ref().unwrap();
        assert!(!p.crt.is_empty() && !p.key.is_empty());
    }
    assert!(!c.k8sserviceaccount.as_ref().unwrap().key.is_empty());
    assert!(!b.trustdinfo.as_ref().unwrap().token.is_empty());
    assert!(!b.cluster.as_ref().unwrap().secret.is_empty());
}

#[test]
fn talos_invalid_bundle_gives_talos_errors() {
    let b = Bundle::parse(INVALID, "invalid-secrets.yaml").unwrap();
    let errs = b.validate().unwrap_err();
    assert_eq!(
        multierror(&errs),
        "6 errors occurred:\n\t* cluster.secret is required\n\t* one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is required\n\t* trustdinfo is required\n\t* certs.etcd is invalid: failed to parse PEM block\n\t* certs.k8saggregator is required\n\t* certs.os is invalid: unsupported key type: \"CERTIFICATE\"\n\n"
    );
}

#[test]
fn talos_written_bundle_is_reproduced_byte_for_byte() {
    // The stability bundle is Talos's own encoding: a comment line, then the YAML.
    let body = STABILITY.split_once('\n').unwrap().1;
    let b = Bundle::load(STABILITY, "secrets.yaml").unwrap();
    assert_eq!(b.to_yaml().unwrap(), body);
    assert_eq!(Bundle::load(body, "x").unwrap(), b);
}

#[test]
fn generated_bundles_follow_the_contract() {
    let now = ::time::OffsetDateTime::now_utc();
    for (v, secretbox, rsa) in [
        ("v1.0", false, false),
        ("v1.3", true, false),
        ("v1.7", true, true),
        ("", true, true),
    ] {
        let b = Bundle::generate(Contract::parse(v).unwrap(), now).unwrap();
        b.validate().unwrap();
        let s = b.secrets.as_ref().unwrap();
        assert_eq!(!s.secretboxencryptionsecret.is_empty(), secretbox, "{v}");
        assert_eq!(!s.aescbcencryptionsecret.is_empty(), !secretbox, "{v}");
        let sa = unb64(
            &b.certs
                .as_ref()
                .unwrap()
                .k8sserviceaccount
                .as_ref()
                .unwrap()
                .key,
        )
        .unwrap();
        let label = if rsa {
            "RSA PRIVATE KEY"
        } else {
            "EC PRIVATE KEY"
        };
        assert!(
            sa.starts_with(&format!("-----BEGIN {label}-----\n")),
            "{v}: {sa}"
        );
        if rsa {
            assert_eq!(PrivateKey::from_pem(&sa).unwrap().kind, KeyKind::Rsa);
        }
        // Round trip through YAML is lossless.
        assert_eq!(Bundle::load(&b.to_yaml().unwrap(), "x").unwrap(), b);
        // Tokens are kubeadm bootstrap tokens.
        for t in [&s.bootstraptoken, &b.trustdinfo.as_ref().unwrap().token] {
            let (a, z) = t.split_once('.').unwrap();
            assert_eq!((a.len(), z.len()), (6, 16));
            assert!(t
                .chars()
                .all(|c| c == '.' || c.is_ascii_digit() || c.is_ascii_lowercase()));
        }
        let id = b.cluster.as_ref().unwrap();
        use base64::Engine as _;
        assert_eq!(
            base64::engine::general_purpose::URL_SAFE
                .decode(&id.id)
                .unwrap()
                .len(),
            32
        );
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(&id.secret)
                .unwrap()
                .len(),
            32
        );
    }
}

#[test]
fn generated_cas_match_talos() {
    let now = ::time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap();
    let b = Bundle::generate(Contract::CURRENT, now).unwrap();
    let c = b.certs.unwrap();
    let cases = [
        (
            c.etcd.unwrap(),
            Some("etcd"),
            "1.2.840.10045.2.1",
            "EC PRIVATE KEY",
        ),
        (
            c.k8s.unwrap(),
            Some("kubernetes"),
            "1.2.840.10045.2.1",
            "EC PRIVATE KEY",
        ),
        (
            c.k8saggregator.unwrap(),
            None,
            "1.2.840.10045.2.1",
            "EC PRIVATE KEY",
        ),
        (
            c.os.unwrap(),
            Some("talos"),
            "1.3.101.112",
            "ED25519 PRIVATE KEY",
        ),
    ];
    for (pair, org, alg, key_label) in cases {
        let crt = unb64(&pair.crt).unwrap();
        let key = unb64(&pair.key).unwrap();
        assert!(
            key.starts_with(&format!("-----BEGIN {key_label}-----\n")),
            "{key}"
        );
        let der = pem_der(&crt);
        let (_, cert) = parse_x509_certificate(&der).unwrap();
        assert_eq!(cert.public_key().algorithm.algorithm.to_id_string(), alg);
        // Subject: only the Organization (or nothing), and self-issued.
        assert_eq!(
            orgs(cert.subject()),
            org.map(|o| vec![o.to_string()]).unwrap_or_default()
        );
        assert_eq!(cert.subject().iter().count(), usize::from(org.is_some()));
        assert_eq!(cert.subject(), cert.issuer());
        verify_signed_by(&cert, &cert);
        // Ten years from now.
        let nb = cert.validity().not_before.timestamp();
        let na = cert.validity().not_after.timestamp();
        assert_eq!(nb, now.unix_timestamp());
        assert_eq!(na - nb, 87_600 * 3600);
        let bc = cert.basic_constraints().unwrap().unwrap().value;
        assert!(bc.ca);
        let ku = cert.key_usage().unwrap().unwrap().value;
        assert!(ku.key_cert_sign() && ku.digital_signature());
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth && eku.client_auth);
        let ski = cert
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.len()),
                _ => None,
            });
        assert_eq!(ski, Some(20));
        assert!(cert.raw_serial().len() <= 17);
    }
}

#[test]
fn admin_certificate_is_an_os_admin_client_cert_chained_to_the_os_ca() {
    let b = Bundle::load(STABILITY, "secrets.yaml").unwrap();
    let now = ::time::OffsetDateTime::now_utc()
        .replace_nanosecond(0)
        .unwrap();
    let tc = talosconfig::generate(&b, "mycluster", &["127.0.0.11".into()], now).unwrap();
    let ctx = &tc["contexts"]["mycluster"];
    assert_eq!(tc["context"].as_str(), Some("mycluster"));
    assert_eq!(ctx["endpoints"][0].as_str(), Some("127.0.0.11"));
    let ca_pem = unb64(ctx["ca"].as_str().unwrap()).unwrap();
    assert_eq!(ca_pem, b.os_ca().unwrap().0);
    let crt = unb64(ctx["crt"].as_str().unwrap()).unwrap();
    let key = unb64(ctx["key"].as_str().unwrap()).unwrap();
    assert!(key.starts_with("-----BEGIN ED25519 PRIVATE KEY-----\n"));
    let ca_der = pem_der(&ca_pem);
    let (_, ca) = parse_x509_certificate(&ca_der).unwrap();
    let der = pem_der(&crt);
    let (_, cert) = parse_x509_certificate(&der).unwrap();
    assert_eq!(
        cert.public_key().algorithm.algorithm.to_id_string(),
        "1.3.101.112"
    );
    assert_eq!(orgs(cert.subject()), vec!["os:admin"]);
    assert_eq!(cert.subject().iter().count(), 1);
    assert_eq!(cert.issuer(), ca.subject());
    verify_signed_by(&cert, &ca);
    let nb = cert.validity().not_before.timestamp();
    assert_eq!(nb, now.unix_timestamp());
    assert_eq!(cert.validity().not_after.timestamp() - nb, 8_760 * 3600);
    let eku = cert.extended_key_usage().unwrap().unwrap().value;
    assert!(eku.client_auth && !eku.server_auth);
    let ku = cert.key_usage().unwrap().unwrap().value;
    assert!(ku.digital_signature() && !ku.key_cert_sign());
    assert!(!cert.is_ca());
    // The key in the talosconfig belongs to the certificate.
    let k = PrivateKey::from_pem(&key).unwrap().key_pair().unwrap();
    use rcgen::PublicKeyData;
    assert_eq!(
        k.der_bytes(),
        cert.public_key().subject_public_key.data.as_ref()
    );
}
