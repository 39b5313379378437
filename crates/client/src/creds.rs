//! Credentials for the Talos API: a talosconfig context (CA, client certificate and key) or
//! none at all (maintenance mode), checked before any connection is made.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::sign::CertifiedKey;
use serde_yaml_ng::Value;
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

use talm_base::caches::memo::Memo;
use talm_base::error::hinted;
use talm_wire::fingerprint::Fingerprint;
use talm_wire::pki::{self, unb64};
use talm_wire::talosconfig;

/// A client certificate with its key as PKCS#8 PEM (`PRIVATE KEY`), the form TLS stacks load;
/// Talos writes Ed25519 keys under `ED25519 PRIVATE KEY`, which is relabelled here.
#[derive(Clone)]
pub struct Identity {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Identity(<redacted>)")
    }
}

/// The client certificates of the identities in use, each made once, kept by a digest of
/// certificate and key: a fleet's connections share their context's instead of parsing its key
/// again per connection.
///
/// Listed in [`talm_base::caches::KEPT`].
static CERTIFIED: Memo<[u8; 32], Arc<CertifiedKey>> = Memo::new(4);

impl Identity {
    /// The certificate and key as rustls signs with them.
    pub fn certified(&self) -> Result<Arc<CertifiedKey>> {
        self.certified_in(&CERTIFIED)
    }

    fn certified_in(&self, kept: &Memo<[u8; 32], Arc<CertifiedKey>>) -> Result<Arc<CertifiedKey>> {
        use sha2::{Digest, Sha256};
        let digest = Sha256::new()
            .chain_update(&self.cert_pem)
            .chain_update([0])
            .chain_update(&self.key_pem)
            .finalize()
            .into();
        kept.get_or_try(digest, |_| self.make_certified())
    }

    fn make_certified(&self) -> Result<Arc<CertifiedKey>> {
        let unusable = |e: String| {
            hinted(
                format!("the talosconfig's client certificate is unusable: {e}"),
                "regenerate the talosconfig with `talm talosconfig`",
            )
        };
        let (_, cert) =
            pki::pem_decode(&self.cert_pem).ok_or_else(|| unusable("not PEM".into()))?;
        let (_, key) =
            pki::pem_decode(&self.key_pem).ok_or_else(|| unusable("key not PEM".into()))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key));
        CertifiedKey::from_der(
            vec![CertificateDer::from(cert)],
            key,
            &rustls::crypto::aws_lc_rs::default_provider(),
        )
        .map(Arc::new)
        .map_err(|e| unusable(e.to_string()))
    }
}

/// How a connection authenticates.
#[derive(Clone, Debug)]
pub enum Auth {
    /// Maintenance mode: the server is not verified and no client certificate is sent.
    Insecure,
    /// Maintenance mode with the server's certificate pinned: its fingerprint must be one of
    /// these (`--cert-fingerprint`); no client certificate is sent.
    Pinned(Vec<Fingerprint>),
    /// mTLS: the server is verified against `ca_pem`, the client presents `identity`.
    Mutual { ca_pem: String, identity: Identity },
    /// `--skip-verify`: the client presents `identity`, the server's certificate is taken
    /// without checking it against a CA (a maintenance-mode certificate is still refused).
    Unverified { identity: Identity },
}

impl Auth {
    pub fn is_insecure(&self) -> bool {
        matches!(self, Auth::Insecure | Auth::Pinned(_))
    }

    /// The same client certificate with the server left unverified (`--skip-verify`).
    pub fn unverified(self) -> Auth {
        match self {
            Auth::Mutual { identity, .. } => Auth::Unverified { identity },
            other => other,
        }
    }
}

/// One talosconfig context, ready to connect with.
#[derive(Clone, Debug)]
pub struct Context {
    pub name: String,
    pub endpoints: Vec<String>,
    pub nodes: Vec<String>,
    pub auth: Auth,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Reads `path` and picks `context` (empty: the current one).
pub fn load_context(path: &Path, context: &str) -> Result<Context> {
    let file = path.display().to_string();
    let text = talm_base::input::try_read_text(path, talm_base::input::Kind::Secret).map_err(|e| {
        hinted(
            format!("failed to read talosconfig {file}: {}", e.problem),
            "run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode",
        )
    })?;
    parse_context(&text, &file, context, OffsetDateTime::now_utc())
}

/// The endpoints of talosconfig text's `context` (empty: the current one), read without its
/// credentials (a render only records them); `file` names it in errors.
pub fn context_endpoints(text: &str, file: &str, context: &str) -> Result<Vec<String>> {
    let cfg = talosconfig::load(text, file)?;
    let name = match context {
        "" => cfg.get("context").and_then(Value::as_str).unwrap_or(""),
        c => c,
    };
    if name.is_empty() {
        return Ok(Vec::new());
    }
    let ctx = cfg
        .get("contexts")
        .and_then(|c| c.get(name))
        .ok_or_else(|| {
            hinted(
                format!("context not found in talosconfig: {name:?} ({file})"),
                "pick one of its contexts with --context, or fix `context:` in the file",
            )
        })?;
    Ok(strings(ctx.get("endpoints")))
}

/// When a client certificate is valid: its not-before and not-after times.
#[derive(Clone, Copy, Debug)]
struct Validity {
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
}

impl Validity {
    fn of(cert_pem: &str) -> Result<Validity, String> {
        let (_, der) = pki::pem_decode(cert_pem).ok_or("not a PEM certificate")?;
        let (_, cert) = X509Certificate::from_der(&der)
            .map_err(|e| format!("not an X.509 certificate: {e}"))?;
        let v = cert.validity();
        Ok(Validity {
            not_before: v.not_before.to_datetime(),
            not_after: v.not_after.to_datetime(),
        })
    }

    /// Nothing when the certificate is valid at `now`; otherwise what is wrong with it.
    fn check(&self, now: OffsetDateTime) -> Result<(), String> {
        if now < self.not_before {
            return Err(format!(
                "the client certificate is not valid before {}",
                self.not_before.date()
            ));
        }
        if now > self.not_after {
            return Err(format!(
                "the client certificate expired on {}",
                self.not_after.date()
            ));
        }
        Ok(())
    }
}

/// Talosconfig contexts already parsed and checked, by the file's text, its name and the
/// context asked for, with their certificate's validity (checked again at every use): a fleet's
/// node handles read the same talosconfig once a node, and checking its key pair alone took
/// 0.2 ms each time.
///
/// Listed in [`talm_base::caches::KEPT`].
static CONTEXTS: Memo<(String, String, String), (Context, Validity)> = Memo::new(4);

/// Parses talosconfig text (`file` names it in errors) and checks the chosen context's
/// credentials, including the client certificate's validity at `now`.
pub fn parse_context(
    text: &str,
    file: &str,
    context: &str,
    now: OffsetDateTime,
) -> Result<Context> {
    let key = (text.to_string(), file.to_string(), context.to_string());
    let (ctx, validity) = CONTEXTS.get_or_try(key, |_| parse_checked(text, file, context, now))?;
    validity
        .check(now)
        .map_err(|what| crt_error(file, &ctx.name, &what))?;
    Ok(ctx)
}

const REGEN: &str = "run `talm talosconfig` to issue a fresh client certificate from secrets.yaml";

fn crt_error(file: &str, name: &str, what: &str) -> anyhow::Error {
    hinted(format!("{file}: contexts.{name}.crt: {what}"), REGEN)
}

/// `parse_context`'s work: the context's fields, its key, the certificate's validity at `now`
/// and that the key is the certificate's.
fn parse_checked(
    text: &str,
    file: &str,
    context: &str,
    now: OffsetDateTime,
) -> Result<(Context, Validity)> {
    let cfg = talosconfig::load(text, file)?;
    let name = if context.is_empty() {
        cfg.get("context")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    } else {
        context.to_string()
    };
    let ctx = cfg
        .get("contexts")
        .and_then(|c| c.get(name.as_str()))
        .ok_or_else(|| {
            hinted(
                format!("context not found in talosconfig: {name:?} ({file})"),
                "pick one of its contexts with --context, or fix `context:` in the file",
            )
        })?;
    let field = |key: &str| -> Result<String> {
        let v = ctx.get(key).and_then(Value::as_str).unwrap_or("");
        if v.is_empty() {
            return Err(hinted(
                format!(
                    "{file}: contexts.{name}.{key} is empty: the context has no client credentials"
                ),
                REGEN,
            ));
        }
        unb64(v).map_err(|e| hinted(format!("{file}: contexts.{name}.{key}: {e}"), REGEN))
    };
    let ca_pem = field("ca")?;
    let cert_pem = field("crt")?;
    let key = pki::PrivateKey::from_pem(&field("key")?)
        .map_err(|e| hinted(format!("{file}: contexts.{name}.key: {e}"), REGEN))?;
    let validity = Validity::of(&cert_pem).map_err(|what| crt_error(file, &name, &what))?;
    validity
        .check(now)
        .map_err(|what| crt_error(file, &name, &what))?;
    check_pair(&cert_pem, &key).map_err(|what| {
        hinted(
            format!("{file}: contexts.{name}: {what}"),
            "the key must be the one issued with the certificate: regenerate the talosconfig with `talm talosconfig`, or restore it from talosconfig.encrypted with `talm init --decrypt`",
        )
    })?;
    let ctx = Context {
        endpoints: strings(ctx.get("endpoints")),
        nodes: strings(ctx.get("nodes")),
        name,
        auth: Auth::Mutual {
            ca_pem,
            identity: Identity {
                cert_pem,
                key_pem: pki::pem_encode("PRIVATE KEY", key.pkcs8_der()),
            },
        },
    };
    Ok((ctx, validity))
}

/// The key is the certificate's (its public half is the one the certificate carries).
fn check_pair(cert_pem: &str, key: &pki::PrivateKey) -> Result<(), String> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    let (_, der) = pki::pem_decode(cert_pem).ok_or("contexts.crt is not a PEM certificate")?;
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.pkcs8_der().to_vec()));
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    match rustls::sign::CertifiedKey::from_der(vec![CertificateDer::from(der)], key, &provider) {
        Ok(_) => Ok(()),
        Err(rustls::Error::InconsistentKeys(_)) => Err(
            "the client key does not match the client certificate (the key belongs to another certificate)"
                .into(),
        ),
        Err(e) => Err(format!("the client key cannot be used with the certificate: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use talm_core::secrets::bundle::Bundle;
    use talm_wire::contract::Contract;

    /// An identity's client certificate is made once and shared by its connections; another
    /// identity gets its own, and a bad key is reported every time, never kept.
    #[test]
    fn client_certificates_are_made_once_per_identity() {
        let now = OffsetDateTime::now_utc();
        let ca = pki::self_signed_ca(pki::KeyKind::Ed25519, Some("talos"), now).unwrap();
        let identity = |roles: &[&str]| {
            let c = pki::client_cert(&ca.cert_pem, &ca.key, roles, now).unwrap();
            Identity {
                cert_pem: c.cert_pem,
                key_pem: pki::pem_encode("PRIVATE KEY", c.key.pkcs8_der()),
            }
        };
        let kept = Memo::new(4);
        let (admin, reader) = (identity(&["os:admin"]), identity(&["os:reader"]));
        let first = admin.certified_in(&kept).unwrap();
        assert!(Arc::ptr_eq(
            &first,
            &admin.clone().certified_in(&kept).unwrap()
        ));
        assert!(!Arc::ptr_eq(&first, &reader.certified_in(&kept).unwrap()));
        let bad = Identity {
            cert_pem: admin.cert_pem.clone(),
            key_pem: "not pem".into(),
        };
        for _ in 0..2 {
            let err = bad.certified_in(&kept).unwrap_err().to_string();
            assert!(err.contains("client certificate is unusable"), "{err}");
        }
        assert!(admin.certified().is_ok());
    }

    fn talosconfig_text(now: OffsetDateTime) -> String {
        let bundle = Bundle::generate(Contract::parse("v1.6").unwrap(), now).unwrap();
        let v =
            talm_core::secrets::talosconfig::generate(&bundle, "demo", &["10.0.0.1".into()], now)
                .unwrap();
        talm_base::yaml::to_string(&v)
    }

    #[test]
    fn loads_current_context_and_relabels_the_ed25519_key() {
        let now = OffsetDateTime::now_utc();
        let ctx = parse_context(&talosconfig_text(now), "tc", "", now).unwrap();
        assert_eq!(ctx.name, "demo");
        assert_eq!(ctx.endpoints, ["10.0.0.1"]);
        let Auth::Mutual { identity, .. } = ctx.auth else {
            panic!("mutual")
        };
        assert!(identity.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    }

    #[test]
    fn refuses_unknown_context_and_expired_certificate_even_when_kept() {
        let now = OffsetDateTime::now_utc();
        let text = talosconfig_text(now);
        let err = parse_context(&text, "tc", "other", now).unwrap_err();
        assert!(err
            .to_string()
            .contains("context not found in talosconfig: \"other\""));
        let other = pki::PrivateKey::generate(pki::KeyKind::Ed25519).unwrap();
        let mut v: Value = serde_yaml_ng::from_str(&text).unwrap();
        v["contexts"]["demo"]["key"] =
            talm_core::sandbox::text::base64_encode(&other.to_talos_pem().unwrap()).into();
        let err = parse_context(&talm_base::yaml::to_string(&v), "tc", "", now).unwrap_err();
        assert!(
            talm_base::error::render(&err).contains(
                "tc: contexts.demo: the client key does not match the client certificate"
            ),
            "{err}"
        );
        // A context is parsed once and kept, and its certificate's validity checked at every
        // use: a kept one that has expired since is refused all the same.
        parse_context(&text, "tc", "", now).unwrap();
        assert!(CONTEXTS.holds(&(text.clone(), "tc".to_string(), String::new())));
        let later = now + time::Duration::days(400);
        let err = parse_context(&text, "tc", "", later).unwrap_err();
        assert!(
            err.to_string()
                .contains("the client certificate expired on"),
            "{err}"
        );
    }
}
