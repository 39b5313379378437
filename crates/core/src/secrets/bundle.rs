//! The Talos secrets bundle (`secrets.yaml`): generation per version contract, loading of files
//! written by Talos or talm, validation with Talos's messages, and the Talos YAML layout.

use anyhow::{anyhow, Context as _, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::contract::Contract;
pub use super::pki::unb64;
use super::pki::{self, CertAndKey, KeyKind, PrivateKey};
use talm_base::error::hinted;
pub use talm_base::error::multierror;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Bundle {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Cluster>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Secrets>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trustdinfo: Option<TrustdInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs: Option<Certs>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Cluster {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub secret: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Secrets {
    #[serde(default)]
    pub bootstraptoken: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub aescbcencryptionsecret: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub secretboxencryptionsecret: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TrustdInfo {
    #[serde(default)]
    pub token: String,
}

/// A certificate and key, each the standard base64 of its PEM text (as Talos stores them).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct CertPair {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub crt: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Certs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<CertPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8s: Option<CertPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8saggregator: Option<CertPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k8sserviceaccount: Option<CertPair>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<CertPair>,
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

fn pair(ck: &CertAndKey) -> Result<CertPair> {
    Ok(CertPair {
        crt: b64(&ck.cert_pem),
        key: b64(&ck.key.to_talos_pem()?),
    })
}

/// A bootstrap-token-shaped random string: `[0-9a-z]{6}.[0-9a-z]{16}`.
pub fn token() -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut chars = Vec::with_capacity(22);
    while chars.len() < 22 {
        for b in pki::random_bytes::<32>() {
            // 252 = 7 * 36: dropping bytes above it keeps the draw uniform.
            if b < 252 && chars.len() < 22 {
                chars.push(ALPHABET[(b % 36) as usize]);
            }
        }
    }
    // Cannot fail: the characters come from an ASCII alphabet.
    let s = String::from_utf8(chars).expect("ASCII alphabet");
    format!("{}.{}", &s[..6], &s[6..])
}

impl Bundle {
    /// Generates a fresh bundle for a version contract, with `now` as the certificates' start.
    pub fn generate(contract: Contract, now: OffsetDateTime) -> Result<Bundle> {
        let std = &base64::engine::general_purpose::STANDARD;
        let url = &base64::engine::general_purpose::URL_SAFE;
        let mut secrets = Secrets {
            bootstraptoken: token(),
            ..Default::default()
        };
        let enc = std.encode(pki::random_bytes::<32>());
        if contract.secretbox() {
            secrets.secretboxencryptionsecret = enc;
        } else {
            secrets.aescbcencryptionsecret = enc;
        }
        let sa_kind = if contract.rsa_service_account() {
            KeyKind::Rsa
        } else {
            KeyKind::EcdsaP256
        };
        let sa = PrivateKey::generate(sa_kind)?;
        Ok(Bundle {
            cluster: Some(Cluster {
                id: url.encode(pki::random_bytes::<32>()),
                secret: std.encode(pki::random_bytes::<32>()),
            }),
            secrets: Some(secrets),
            trustdinfo: Some(TrustdInfo { token: token() }),
            certs: Some(Certs {
                etcd: Some(pair(&pki::self_signed_ca(
                    KeyKind::EcdsaP256,
                    Some("etcd"),
                    now,
                )?)?),
                k8s: Some(pair(&pki::self_signed_ca(
                    KeyKind::EcdsaP256,
                    Some("kubernetes"),
                    now,
                )?)?),
                k8saggregator: Some(pair(&pki::self_signed_ca(KeyKind::EcdsaP256, None, now)?)?),
                k8sserviceaccount: Some(CertPair {
                    crt: String::new(),
                    key: b64(&sa.to_talos_pem()?),
                }),
                os: Some(pair(&pki::self_signed_ca(
                    KeyKind::Ed25519,
                    Some("talos"),
                    now,
                )?)?),
            }),
        })
    }

    /// Reads a bundle leniently (unknown keys ignored); `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Bundle> {
        let value = talm_base::yaml::parse(text, file)?;
        if value.is_null() {
            return Ok(Bundle::default());
        }
        let shape = misshapen(&value);
        serde_yaml_ng::from_value(value).map_err(|e| {
            // serde quotes the value it choked on, and every value here is a secret: name the
            // key path and the kinds instead.
            let why = shape.unwrap_or_else(|| talm_base::mask::quoted_values(&e.to_string()));
            hinted(
                format!("{file}: not a Talos secrets bundle: {why}"),
                format!("{file} must hold cluster, secrets, trustdinfo and certs as `talm init` writes them"),
            )
        })
    }

    /// The bundle in Talos's layout (4-space indent, struct order).
    pub fn to_yaml(&self) -> Result<String> {
        Ok(talm_base::yaml::to_string(&serde_yaml_ng::to_value(self)?))
    }

    /// Talos's validation: every failure collected, in Talos's order and words.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut errs = Vec::new();
        match &self.cluster {
            None => errs.push("cluster is required".to_string()),
            Some(c) => {
                if c.id.is_empty() {
                    errs.push("cluster.id is required".into());
                }
                if c.secret.is_empty() {
                    errs.push("cluster.secret is required".into());
                }
            }
        }
        match &self.secrets {
            None => errs.push("secrets is required".to_string()),
            Some(s) => {
                if s.bootstraptoken.is_empty() {
                    errs.push("secrets.bootstraptoken is required".into());
                }
                let names = "[secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret]";
                match (
                    s.secretboxencryptionsecret.is_empty(),
                    s.aescbcencryptionsecret.is_empty(),
                ) {
                    (true, true) => errs.push(format!("one of {names} is required")),
                    (false, false) => errs.push(format!("only one of {names} is allowed")),
                    _ => {}
                }
            }
        }
        match &self.trustdinfo {
            None => errs.push("trustdinfo is required".to_string()),
            Some(t) if t.token.is_empty() => errs.push("trustdinfo.token is required".into()),
            Some(_) => {}
        }
        match &self.certs {
            None => errs.push("certs is required".to_string()),
            Some(c) => {
                for (name, p) in [
                    ("etcd", &c.etcd),
                    ("k8s", &c.k8s),
                    ("k8saggregator", &c.k8saggregator),
                    ("os", &c.os),
                ] {
                    match p {
                        None => errs.push(format!("certs.{name} is required")),
                        Some(p) => {
                            if let Err(e) = check_pair(p) {
                                errs.push(format!("certs.{name} is invalid: {e}"));
                            }
                        }
                    }
                }
                match &c.k8sserviceaccount {
                    None => errs.push("certs.k8sserviceaccount is required".into()),
                    Some(p) => {
                        if let Err(e) = check_key(&p.key) {
                            errs.push(format!("certs.k8sserviceaccount.key is invalid: {e}"));
                        }
                    }
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(errs)
        }
    }

    /// Loads and validates; the error names the file and lists every problem.
    pub fn load(text: &str, file: &str) -> Result<Bundle> {
        let bundle = Bundle::parse(text, file)?;
        bundle.validate().map_err(|errs| {
            hinted(
                format!(
                    "{file} is not a valid secrets bundle: {}",
                    multierror(&errs).trim_end()
                ),
                format!("restore {file} from a backup or secrets.encrypted.yaml (`talm init -d`)"),
            )
        })?;
        Ok(bundle)
    }

    /// The OS (Talos API) CA certificate PEM and key.
    pub fn os_ca(&self) -> Result<(String, PrivateKey)> {
        let os = self
            .certs
            .as_ref()
            .and_then(|c| c.os.as_ref())
            .ok_or_else(|| anyhow!("certs.os is required"))?;
        let crt = unb64(&os.crt).context("certs.os.crt")?;
        let key = PrivateKey::from_pem(&unb64(&os.key).context("certs.os.key")?)
            .context("certs.os.key")?;
        Ok((crt, key))
    }
}

fn check_key(field: &str) -> Result<()> {
    let pem = unb64(field).map_err(|_| anyhow!("failed to parse PEM block"))?;
    PrivateKey::from_pem(&pem)?;
    Ok(())
}

fn check_pair(p: &CertPair) -> Result<()> {
    check_key(&p.key)?;
    let pem = unb64(&p.crt).map_err(|_| anyhow!("failed to parse PEM block"))?;
    pki::check_certificate(&pem)
}

/// What kind of YAML value `v` is, in words (never its content).
fn kind(v: &serde_yaml_ng::Value) -> &'static str {
    use serde_yaml_ng::Value;
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// The first place where `v` does not have a bundle's shape: its key path and what is there
/// instead of what belongs there; `None` when the shape is right.
fn misshapen(v: &serde_yaml_ng::Value) -> Option<String> {
    use serde_yaml_ng::Value;
    const SECTIONS: [(&str, &[&str]); 3] = [
        ("cluster", &["id", "secret"]),
        (
            "secrets",
            &[
                "bootstraptoken",
                "aescbcencryptionsecret",
                "secretboxencryptionsecret",
            ],
        ),
        ("trustdinfo", &["token"]),
    ];
    const CERTS: [&str; 5] = ["etcd", "k8s", "k8saggregator", "k8sserviceaccount", "os"];
    /// A mapping (or nothing) at `path` whose `fields` hold text.
    fn texts(path: &str, v: Option<&Value>, fields: &[&str]) -> Option<String> {
        match v? {
            Value::Null => None,
            Value::Mapping(m) => fields.iter().find_map(|f| match m.get(*f) {
                None | Some(Value::String(_)) => None,
                // serde reads a tagged text as the text.
                Some(Value::Tagged(t)) if t.value.is_string() => None,
                Some(x) => Some(format!(
                    "the value at {path}.{f} is {}, expected text",
                    kind(x)
                )),
            }),
            other => Some(format!(
                "the value at {path} is {}, expected a mapping",
                kind(other)
            )),
        }
    }
    let top = match v {
        Value::Mapping(m) => m,
        other => return Some(format!("it holds {}, expected a mapping", kind(other))),
    };
    for (section, fields) in SECTIONS {
        if let Some(why) = texts(section, top.get(section), fields) {
            return Some(why);
        }
    }
    match top.get("certs") {
        None | Some(Value::Null) => None,
        Some(Value::Mapping(certs)) => CERTS
            .iter()
            .find_map(|c| texts(&format!("certs.{c}"), certs.get(*c), &["crt", "key"])),
        Some(other) => Some(format!(
            "the value at certs is {}, expected a mapping",
            kind(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misshapen_bundle_names_the_key_never_the_value() {
        for (text, want) in [
            (
                "cluster:\n  id: abc\n  secret: s3cr3t-value\ntrustdinfo: t0ken-value\n",
                "s.yaml: not a Talos secrets bundle: the value at trustdinfo is text, expected a mapping",
            ),
            (
                "secrets:\n  bootstraptoken: [b00t-value]\n",
                "s.yaml: not a Talos secrets bundle: the value at secrets.bootstraptoken is a list, expected text",
            ),
            (
                "certs:\n  os:\n    crt: 5\n    key: k3y-value\n",
                "s.yaml: not a Talos secrets bundle: the value at certs.os.crt is a number, expected text",
            ),
            (
                "- s3cr3t-value\n",
                "s.yaml: not a Talos secrets bundle: it holds a list, expected a mapping",
            ),
        ] {
            let err = Bundle::parse(text, "s.yaml").unwrap_err().to_string();
            assert_eq!(err, want, "{text:?}");
        }
        // A tagged text is text to serde too.
        assert!(Bundle::parse("cluster:\n  id: !t abc\n", "s.yaml").is_ok());
    }
}
