//! age encryption of project files: the `talm.key` identity (age-keygen format) and the per-leaf
//! `ENC[AGE,data:<base64>]` envelope, with incremental re-encryption that keeps the ciphertext
//! of unchanged values.

use std::str::FromStr;

use age::secrecy::ExposeSecret;
use age::x25519::{Identity, Recipient};
use anyhow::{anyhow, Result};
use base64::Engine as _;
use serde_yaml_ng::{Mapping, Value};

use crate::error::{hinted, Hinted};

const PREFIX: &str = "ENC[AGE,data:";
const SUFFIX: &str = "]";

/// The key file text for a new identity, as age-keygen writes it.
pub fn new_key_file() -> String {
    let id = Identity::generate();
    let now = time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    let created = now
        .replace_nanosecond(0)
        .unwrap_or(now)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    format!(
        "# created: {created}\n# public key: {}\nAGE-SECRET-KEY{}\n",
        id.to_public(),
        &id.to_string().expose_secret()["AGE-SECRET-KEY".len()..]
    )
}

/// The identity in a key file: the first line starting `AGE-SECRET-KEY-`, or the whole file
/// when it is nothing but the key (older plain format).
pub fn parse_key(text: &str, file: &str) -> Result<Identity> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("AGE-SECRET-KEY-"))
        .or_else(|| Some(text.trim()).filter(|t| t.starts_with("AGE-SECRET-KEY-")))
        .ok_or_else(|| {
            hinted(
                format!("{file}: no AGE-SECRET-KEY found in key file"),
                "talm.key must hold an age identity line starting with AGE-SECRET-KEY-",
            )
        })?;
    Identity::from_str(line).map_err(|e| {
        hinted(
            format!("{file}: invalid age identity: {e}"),
            "restore talm.key from your backup",
        )
    })
}

/// The hint for a missing or unusable key: restore it, or start over with new secrets.
pub fn key_recovery_hint(encrypted: &str) -> String {
    format!(
        "talm.key is required to decrypt {encrypted}. Restore your backed-up key, or re-run `talm init` to regenerate (this writes new secrets — the old {encrypted} will not be decryptable without the original key)."
    )
}

/// One value in its envelope.
pub fn seal(recipient: &Recipient, plain: &str) -> Result<String> {
    let ct = age::encrypt(recipient, plain.as_bytes()).map_err(|e| anyhow!("age encrypt: {e}"))?;
    Ok(format!(
        "{PREFIX}{}{SUFFIX}",
        base64::engine::general_purpose::STANDARD.encode(ct)
    ))
}

/// Whether a string is an envelope.
pub fn is_sealed(s: &str) -> bool {
    s.starts_with(PREFIX) && s.ends_with(SUFFIX)
}

/// Opens an envelope; the error says what was wrong with it.
pub fn open(identity: &Identity, sealed: &str) -> Result<String> {
    let b64 = &sealed[PREFIX.len()..sealed.len() - SUFFIX.len()];
    let ct = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| anyhow!("decode base64: {e}"))?;
    let plain = age::decrypt(identity, &ct).map_err(|e| match e {
        age::DecryptError::NoMatchingKeys => {
            anyhow!("no matching key: it was encrypted to another talm.key")
        }
        other => anyhow!("create decrypt reader: {other}"),
    })?;
    String::from_utf8(plain).map_err(|_| anyhow!("decrypted value is not UTF-8 text"))
}

fn path_join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn key_name(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        other => serde_yaml_ng::to_string(other)
            .unwrap_or_default()
            .trim()
            .to_string(),
    }
}

/// Encrypts every string leaf of a YAML mapping. Where `previous` (the existing encrypted file)
/// holds an envelope that opens to the same text, that envelope is kept byte for byte.
pub fn encrypt_yaml(
    identity: &Identity,
    plain_text: &str,
    plain_file: &str,
    previous: Option<&str>,
) -> Result<String> {
    let plain = Value::Mapping(crate::yaml::parse_map(plain_text, plain_file)?);
    let prev = previous
        .and_then(|p| serde_yaml_ng::from_str::<Value>(p).ok())
        .filter(Value::is_mapping);
    let recipient = identity.to_public();
    let sealed = seal_walk(&recipient, identity, &plain, prev.as_ref())?;
    Ok(crate::yaml::to_string(&sealed))
}

fn seal_walk(r: &Recipient, id: &Identity, plain: &Value, prev: Option<&Value>) -> Result<Value> {
    Ok(match plain {
        Value::Mapping(m) => {
            let prev_map = prev.and_then(Value::as_mapping);
            let mut out = Mapping::new();
            for (k, v) in m {
                let p = prev_map.and_then(|pm| pm.get(k));
                out.insert(k.clone(), seal_walk(r, id, v, p)?);
            }
            Value::Mapping(out)
        }
        Value::Sequence(items) => {
            let prev_items = prev
                .and_then(Value::as_sequence)
                .filter(|p| p.len() == items.len());
            let mut out = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                out.push(seal_walk(r, id, v, prev_items.map(|p| &p[i]))?);
            }
            Value::Sequence(out)
        }
        Value::String(s) => {
            let kept = prev
                .and_then(Value::as_str)
                .filter(|p| is_sealed(p))
                .filter(|p| open(id, p).ok().as_deref() == Some(s.as_str()));
            match kept {
                Some(p) => Value::String(p.to_string()),
                None => Value::String(seal(r, s)?),
            }
        }
        Value::Tagged(t) => seal_walk(r, id, &t.value, prev)?,
        other => other.clone(),
    })
}

/// Decrypts every envelope of an encrypted YAML file; an error names the file and the key path
/// of the value that failed.
pub fn decrypt_yaml(identity: &Identity, text: &str, file: &str) -> Result<String> {
    let value = Value::Mapping(crate::yaml::parse_map(text, file)?);
    let out = open_walk(identity, &value, "", file)?;
    Ok(crate::yaml::to_string(&out))
}

/// Decrypts an encrypted YAML file into a value, for reading in memory only.
pub fn decrypt_value(identity: &Identity, text: &str, file: &str) -> Result<Value> {
    let value = Value::Mapping(crate::yaml::parse_map(text, file)?);
    open_walk(identity, &value, "", file)
}

/// Counts the envelopes in a value.
pub fn count_sealed(v: &Value) -> usize {
    match v {
        Value::Mapping(m) => m.values().map(count_sealed).sum(),
        Value::Sequence(s) => s.iter().map(count_sealed).sum(),
        Value::String(s) => usize::from(is_sealed(s)),
        _ => 0,
    }
}

fn open_walk(id: &Identity, v: &Value, path: &str, file: &str) -> Result<Value> {
    Ok(match v {
        Value::Mapping(m) => {
            let mut out = Mapping::new();
            for (k, val) in m {
                out.insert(k.clone(), open_walk(id, val, &path_join(path, &key_name(k)), file)?);
            }
            Value::Mapping(out)
        }
        Value::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, val) in items.iter().enumerate() {
                out.push(open_walk(id, val, &format!("{path}[{i}]"), file)?);
            }
            Value::Sequence(out)
        }
        Value::String(s) if is_sealed(s) => {
            Value::String(open(id, s).map_err(|e| {
                anyhow::Error::from(Hinted {
                    message: format!("{file}: cannot decrypt the value at {path}: {e}"),
                    hints: vec![
                        format!("the value at {path} in {file} is damaged or was sealed with another key; restore {file} from git, or make sure talm.key is the key it was encrypted with"),
                        key_recovery_hint(file),
                    ],
                })
            })?)
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> Identity {
        parse_key(&new_key_file(), "talm.key").unwrap()
    }

    #[test]
    fn key_file_layout_and_legacy_form() {
        let text = new_key_file();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# created: "));
        assert!(lines[1].starts_with("# public key: age1"));
        assert!(lines[2].starts_with("AGE-SECRET-KEY-1"));
        let id = parse_key(&text, "k").unwrap();
        assert_eq!(
            lines[1].trim_start_matches("# public key: "),
            id.to_public().to_string()
        );
        let legacy = format!("  {}  \n", lines[2]);
        assert!(parse_key(&legacy, "k").is_ok());
        assert!(parse_key("# nothing\n", "k").is_err());
    }

    #[test]
    fn only_strings_are_sealed_and_roundtrip() {
        let id = key();
        let plain = "a: hello\nn: 5\nb: true\nz: null\nl:\n    - x\n    - 2\nm:\n    k: \"multi\\nline\\n\"\n";
        let enc = encrypt_yaml(&id, plain, "p.yaml", None).unwrap();
        let v: Value = serde_yaml_ng::from_str(&enc).unwrap();
        assert!(is_sealed(v["a"].as_str().unwrap()));
        assert_eq!(v["n"], Value::from(5));
        assert_eq!(v["b"], Value::from(true));
        assert!(is_sealed(v["l"][0].as_str().unwrap()));
        assert_eq!(v["l"][1], Value::from(2));
        assert_eq!(count_sealed(&v), 3);
        let dec = decrypt_yaml(&id, &enc, "p.encrypted.yaml").unwrap();
        let original: Value = serde_yaml_ng::from_str(plain).unwrap();
        let back: Value = serde_yaml_ng::from_str(&dec).unwrap();
        assert_eq!(original, back);
    }

    #[test]
    fn unchanged_values_keep_ciphertext() {
        let id = key();
        let first = encrypt_yaml(&id, "a: one\nb: two\nl: [x, y]\n", "p", None).unwrap();
        let second =
            encrypt_yaml(&id, "a: one\nb: changed\nl: [x, y]\n", "p", Some(&first)).unwrap();
        let f: Value = serde_yaml_ng::from_str(&first).unwrap();
        let s: Value = serde_yaml_ng::from_str(&second).unwrap();
        assert_eq!(f["a"], s["a"]);
        assert_ne!(f["b"], s["b"]);
        assert_eq!(f["l"], s["l"]);
        // A list that changes length is sealed afresh.
        let third = encrypt_yaml(
            &id,
            "a: one\nb: changed\nl: [x, y, z]\n",
            "p",
            Some(&second),
        )
        .unwrap();
        let t: Value = serde_yaml_ng::from_str(&third).unwrap();
        assert_ne!(s["l"][0], t["l"][0]);
    }

    #[test]
    fn wrong_key_and_damage_name_the_path() {
        let enc = encrypt_yaml(&key(), "a:\n  b: secret\n", "p", None).unwrap();
        let err = decrypt_yaml(&key(), &enc, "x.encrypted.yaml").unwrap_err();
        assert!(
            err.to_string()
                .contains("x.encrypted.yaml: cannot decrypt the value at a.b"),
            "{err}"
        );
        let damaged = enc.replace("ENC[AGE,data:", "ENC[AGE,data:!!");
        assert!(decrypt_yaml(&key(), &damaged, "x")
            .unwrap_err()
            .to_string()
            .contains("decode base64"));
    }
}
