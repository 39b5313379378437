//! `text::` script functions the preset logic needs and Rhai lacks: standard base64 (padded,
//! one line) in both directions, for registry TLS material that legacy Talos wants encoded.

use base64::Engine as _;
use rhai::{Dynamic, Engine, FuncRegistration, Module};

/// Standard-alphabet, padded base64 of the text's UTF-8 bytes.
pub fn base64_encode(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// The text that `data` encodes (standard alphabet; whitespace and line breaks ignored), or
/// `None` when it is not base64 or does not decode to UTF-8.
pub fn base64_decode(data: &str) -> Option<String> {
    let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(compact.as_bytes())
        .ok()?;
    String::from_utf8(bytes).ok()
}

pub fn register(engine: &mut Engine) {
    let mut m = Module::new();
    FuncRegistration::new("base64_encode")
        .with_comments(["/// Standard padded base64 of the text, on one line."])
        .set_into_module(&mut m, |text: &str| base64_encode(text));
    FuncRegistration::new("base64_decode")
        .with_comments([
            "/// The UTF-8 text a base64 string encodes, or () when it is not base64 of text.",
        ])
        .set_into_module(&mut m, |data: &str| {
            base64_decode(data).map_or(Dynamic::UNIT, Dynamic::from)
        });
    engine.register_static_module("text", m.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusal() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIBdummyCA\n-----END CERTIFICATE-----\n";
        let enc = base64_encode(pem);
        assert_eq!(
            enc,
            "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkdW1teUNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K"
        );
        assert_eq!(base64_decode(&enc).as_deref(), Some(pem));
        assert_eq!(base64_decode("not base64!"), None);
    }
}
