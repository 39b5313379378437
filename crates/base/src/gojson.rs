//! JSON as Go's `encoding/json` writes it, for output that must match talosctl's and Go
//! templates' byte for byte: object keys sorted (Go sorts a map's keys), `<`, `>`, `&`,
//! U+2028 and U+2029 escaped as `\u003c`... (Go's HTML-safe default), compact or indented.

use serde::Serialize;
use serde_json::{Map, Value};

/// `json.Marshal`: no spaces.
pub fn compact(v: &Value) -> String {
    go_escapes(serde_json::to_string(&sorted(v)).unwrap_or_default())
}

/// `json.MarshalIndent(v, "", indent)` (and an `Encoder` with `SetIndent`, without the
/// newline `Encode` adds).
pub fn indented(v: &Value, indent: &str) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    // Writing a Value into memory cannot fail.
    let _ = sorted(v).serialize(&mut ser);
    go_escapes(String::from_utf8(buf).unwrap_or_default())
}

/// The value with every object's keys in byte order.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect::<Map<String, Value>>(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Go's escapes beyond serde_json's. These characters only occur inside strings (keys are
/// strings too), so replacing them in the whole text is exact.
fn go_escapes(text: String) -> String {
    if !text.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return text;
    }
    text.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_and_html_escaped_as_go_writes_them() {
        let v = json!({"b": [{"z": 1, "a": "<x & y>"}], "a": null, "c": "\u{2028}\n"});
        assert_eq!(
            compact(&v),
            r#"{"a":null,"b":[{"a":"\u003cx \u0026 y\u003e","z":1}],"c":"\u2028\n"}"#
        );
        assert_eq!(
            indented(&v, "    "),
            "{\n    \"a\": null,\n    \"b\": [\n        {\n            \"a\": \"\\u003cx \\u0026 y\\u003e\",\n            \"z\": 1\n        }\n    ],\n    \"c\": \"\\u2028\\n\"\n}"
        );
        assert_eq!(
            indented(&json!({"e": {}, "l": []}), "  "),
            "{\n  \"e\": {},\n  \"l\": []\n}"
        );
    }
}
