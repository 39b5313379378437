//! One encrypted value: `ENC[AGE,data:<base64 of binary age ciphertext>]` for text (the Go
//! talm's format), `ENC[AGE,data:<base64>,type:int|float|bool]` for numbers and booleans, which
//! decrypt back to the same type. Anything else that starts with `ENC[` is damage, never text.

use age::x25519::{Identity, Recipient};
use anyhow::{anyhow, Result};
use base64::Engine as _;
use serde_yaml_ng::Value;

const PREFIX: &str = "ENC[AGE,data:";
const MARK: &str = "ENC[";

/// The type an envelope restores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typed {
    Text,
    Int,
    Float,
    Bool,
}

impl Typed {
    fn suffix(self) -> &'static str {
        match self {
            Typed::Text => "",
            Typed::Int => ",type:int",
            Typed::Float => ",type:float",
            Typed::Bool => ",type:bool",
        }
    }
}

/// What is wrong with a value that claims to be an envelope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("it does not end with `]`: the envelope was cut short")]
    Unterminated,
    #[error("it is not ENC[AGE,data:...]")]
    NotAge,
    #[error("its type {0:?} is not one of int, float, bool")]
    UnknownType(String),
    #[error("its data is not base64: {0}")]
    Base64(String),
    #[error("it holds no ciphertext")]
    Empty,
}

/// A parsed envelope: the age ciphertext and the type it restores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    pub ciphertext: Vec<u8>,
    pub typed: Typed,
}

/// Whether a string claims to be an envelope (it starts with `ENC[`).
pub fn claims(s: &str) -> bool {
    s.starts_with(MARK)
}

/// Parses a string that claims to be an envelope, strictly.
pub fn parse(s: &str) -> Result<Envelope, Damage> {
    let body = s.strip_prefix(PREFIX).ok_or(Damage::NotAge)?;
    let body = body.strip_suffix(']').ok_or(Damage::Unterminated)?;
    let (data, typed) = match body.split_once(',') {
        None => (body, Typed::Text),
        Some((data, ty)) => {
            let typed = match ty {
                "type:int" => Typed::Int,
                "type:float" => Typed::Float,
                "type:bool" => Typed::Bool,
                other => return Err(Damage::UnknownType(other.to_string())),
            };
            (data, typed)
        }
    };
    if data.is_empty() {
        return Err(Damage::Empty);
    }
    let ciphertext = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| Damage::Base64(e.to_string()))?;
    Ok(Envelope { ciphertext, typed })
}

/// The envelope of a scalar value; `None` for values that are not sealed (null, collections).
pub fn seal(recipient: &Recipient, v: &Value) -> Result<Option<String>> {
    let (text, typed) = match v {
        Value::String(s) => (s.clone(), Typed::Text),
        Value::Bool(b) => (b.to_string(), Typed::Bool),
        Value::Number(n) if n.is_f64() => (n.to_string(), Typed::Float),
        Value::Number(n) => (n.to_string(), Typed::Int),
        Value::Tagged(t) => return seal(recipient, &t.value),
        _ => return Ok(None),
    };
    let ct = age::encrypt(recipient, text.as_bytes()).map_err(|e| anyhow!("age encrypt: {e}"))?;
    Ok(Some(format!(
        "{PREFIX}{}{}]",
        base64::engine::general_purpose::STANDARD.encode(ct),
        typed.suffix()
    )))
}

/// Opens an envelope into the value it sealed.
pub fn open(identity: &Identity, sealed: &str) -> Result<Value> {
    let env = parse(sealed).map_err(|d| anyhow!("{d}"))?;
    let plain = age::decrypt(identity, &env.ciphertext).map_err(|e| match e {
        age::DecryptError::NoMatchingKeys => {
            anyhow!("no matching key: it was encrypted to another talm.key")
        }
        other => anyhow!("the ciphertext is damaged or cut short ({other})"),
    })?;
    let text =
        String::from_utf8(plain).map_err(|_| anyhow!("the decrypted value is not UTF-8 text"))?;
    let bad = |what: &str| anyhow!("the decrypted value {what} does not match its type");
    Ok(match env.typed {
        Typed::Text => Value::String(text),
        Typed::Bool => Value::Bool(text.parse::<bool>().map_err(|_| bad("(a bool)"))?),
        Typed::Int => {
            if let Ok(i) = text.parse::<i64>() {
                Value::from(i)
            } else {
                Value::from(text.parse::<u64>().map_err(|_| bad("(an int)"))?)
            }
        }
        Typed::Float => Value::from(float(&text).ok_or_else(|| bad("(a float)"))?),
    })
}

/// A sealed float's text: what `Number`'s display wrote (`.inf`, `-.inf`, `.nan` for YAML's
/// special floats, which Rust's parser does not know), or any decimal form.
fn float(text: &str) -> Option<f64> {
    match text {
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Some(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => Some(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
        _ => text.parse::<f64>().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_values_round_trip() {
        let id = Identity::generate();
        for v in [
            "text",
            "5432",
            "-3",
            "1.5",
            "true",
            "18446744073709551615",
            ".inf",
            "-.inf",
            ".nan",
            "1e300",
            "-0.0",
        ] {
            let value: Value = serde_yaml_ng::from_str(v).unwrap();
            let sealed = seal(&id.to_public(), &value).unwrap().unwrap();
            assert_eq!(open(&id, &sealed).unwrap(), value, "{v} as {sealed}");
        }
        let s = seal(&id.to_public(), &Value::from(5)).unwrap().unwrap();
        assert!(s.ends_with(",type:int]"), "{s}");
        let s = seal(&id.to_public(), &Value::from("x")).unwrap().unwrap();
        assert!(
            s.starts_with("ENC[AGE,data:") && !s.contains(",type:"),
            "{s}"
        );
        assert_eq!(seal(&id.to_public(), &Value::Null).unwrap(), None);
    }

    #[test]
    fn damage_is_named() {
        assert_eq!(parse("ENC[AGE,data:YWJj"), Err(Damage::Unterminated));
        assert_eq!(parse("ENC[AES,data:YWJj]"), Err(Damage::NotAge));
        assert_eq!(parse("ENC[AGE,data:]"), Err(Damage::Empty));
        assert!(matches!(parse("ENC[AGE,data:!!]"), Err(Damage::Base64(_))));
        assert!(matches!(
            parse("ENC[AGE,data:YWJj,type:str]"),
            Err(Damage::UnknownType(_))
        ));
        let id = Identity::generate();
        let sealed = seal(&id.to_public(), &Value::from("secret"))
            .unwrap()
            .unwrap();
        // Cut inside the base64 but re-terminated: authenticated decryption refuses it.
        let cut = format!("{}]", &sealed[..sealed.len() - 12]);
        let err = open(&id, &cut).unwrap_err().to_string();
        assert!(err.contains("damaged") || err.contains("base64"), "{err}");
        assert!(open(&Identity::generate(), &sealed)
            .unwrap_err()
            .to_string()
            .contains("another talm.key"));
    }
}
