//! YAML in and out: parsing with file/line/column errors, and the emitter that writes the
//! Talos/yaml.v3 layout (4-space indent, order kept) used for secrets, talosconfig and
//! encrypted files.

mod fast;
pub mod located;
pub mod ordered;
pub mod risky;
mod scalar;
mod stream;

pub use stream::{documents, parsed, stream};

use anyhow::Result;
use serde_yaml_ng::Value;

use crate::error::hinted;

/// Files parsed by every command (Chart.yaml, values, talosconfig, secrets): a playbook runs
/// a few commands per node, each loading the project anew. The last ones are kept, by their
/// whole text, so an edited file is parsed afresh.
///
/// Listed in [`crate::caches::KEPT`].
static PARSED: crate::caches::memo::Memo<String, std::sync::Arc<Value>> =
    crate::caches::memo::Memo::new(8);

/// Texts longer than this are parsed without being kept (project files are a few KiB; a
/// script's `yaml::parse` of a large file must not stay in memory after it).
pub const KEPT_TEXT_MAX: usize = 256 << 10;

/// Parses one YAML document; errors name the file, line and column.
pub fn parse(text: &str, file: &str) -> Result<Value> {
    if text.len() > KEPT_TEXT_MAX {
        return from_str(text).map_err(|e| read_error(&e, text, file));
    }
    let value = PARSED
        .get_or_try(text.to_string(), |text| {
            from_str(text).map(std::sync::Arc::new)
        })
        .map_err(|e| read_error(&e, text, file))?;
    Ok(value.as_ref().clone())
}

/// One YAML document as `serde_yaml_ng::from_str::<Value>` reads it (the same value, or the
/// same error), read by the quick reader when the text is plain block YAML.
pub fn from_str(text: &str) -> Result<Value, serde_yaml_ng::Error> {
    match fast::stream(text) {
        Some(mut docs) if docs.len() == 1 => Ok(docs.remove(0)),
        _ => serde_yaml_ng::from_str(text),
    }
}

/// Every document of `text`, as serde_yaml_ng's document iterator reads them.
pub fn read_stream(text: &str) -> Result<Vec<Value>, serde_yaml_ng::Error> {
    match fast::stream(text) {
        Some(docs) => Ok(docs),
        None => serde_yaml_ng::Deserializer::from_str(text)
            .map(serde::Deserialize::deserialize)
            .collect(),
    }
}

/// Parses a YAML document that must be a mapping (or empty, which counts as an empty mapping).
pub fn parse_map(text: &str, file: &str) -> Result<serde_yaml_ng::Mapping> {
    match parse(text, file)? {
        Value::Mapping(m) => Ok(m),
        Value::Null => Ok(serde_yaml_ng::Mapping::new()),
        _ => Err(hinted(
            format!("{file}: expected a YAML mapping at the top level"),
            format!("{file} must hold `key: value` pairs"),
        )),
    }
}

/// Where a key first repeats in a mapping of `text` (1-based line and column), when the text
/// is YAML the located reader follows: serde_yaml_ng places a duplicate at its mapping's start.
fn repeated_key(text: &str) -> Option<(usize, usize)> {
    fn walk(n: &located::Node) -> Option<usize> {
        match &n.kind {
            located::Kind::Map(entries) => {
                let mut seen = std::collections::HashSet::new();
                for (k, v) in entries {
                    if !seen.insert(k.value.as_str()) {
                        return Some(k.start);
                    }
                    if let Some(at) = walk(v) {
                        return Some(at);
                    }
                }
                None
            }
            located::Kind::Seq(items) => items.iter().find_map(walk),
            _ => None,
        }
    }
    let at = located::locate(text).ok()?.docs.iter().find_map(walk)?;
    let before = &text[..at];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Some((
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    ))
}

/// `syntax_error` for an error reading `text`, placed at the repeated key when one is the cause.
fn read_error(e: &serde_yaml_ng::Error, text: &str, file: &str) -> anyhow::Error {
    syntax_error_at(e, file, repeated_key(text))
}

/// Turns a serde_yaml_ng error into the user-facing message with position and a hint.
pub fn syntax_error(e: &serde_yaml_ng::Error, file: &str) -> anyhow::Error {
    syntax_error_at(e, file, None)
}

fn syntax_error_at(
    e: &serde_yaml_ng::Error,
    file: &str,
    at: Option<(usize, usize)>,
) -> anyhow::Error {
    let msg = e.to_string();
    let msg = msg
        .split(" at line ")
        .next()
        .unwrap_or(msg.as_str())
        .to_string();
    match at.or(e.location().map(|l| (l.line(), l.column()))) {
        Some((line, column)) => hinted(
            format!("{file}:{line}:{column}: invalid YAML: {msg}"),
            format!("fix the YAML syntax in {file} near line {line}, column {column}"),
        ),
        None => hinted(
            format!("{file}: invalid YAML: {msg}"),
            format!("fix the YAML in {file}"),
        ),
    }
}

/// Writes a value in the Talos layout: mappings in their order, 4-space indentation, sequences
/// indented under their key, `""`/`[]`/`{}` for empty values, a single trailing newline.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Mapping(m) if !m.is_empty() => emit_mapping(m, 0, &mut out),
        Value::Sequence(s) if !s.is_empty() => emit_sequence(s, 0, &mut out),
        other => {
            out.push_str(&inline(other, 0));
            out.push('\n');
        }
    }
    out
}

const INDENT: usize = 4;

fn pad(n: usize) -> String {
    " ".repeat(n)
}

fn emit_mapping(m: &serde_yaml_ng::Mapping, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&pad(indent));
        out.push_str(&key_text(k));
        out.push(':');
        emit_value_after_key(v, indent, out);
    }
}

fn emit_value_after_key(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Mapping(m) if !m.is_empty() => {
            out.push('\n');
            emit_mapping(m, indent + INDENT, out);
        }
        Value::Sequence(s) if !s.is_empty() => {
            out.push('\n');
            emit_sequence(s, indent + INDENT, out);
        }
        Value::Tagged(t) => emit_value_after_key(&t.value, indent, out),
        other => {
            out.push(' ');
            out.push_str(&inline(other, indent + INDENT));
            out.push('\n');
        }
    }
}

fn emit_sequence(s: &[Value], indent: usize, out: &mut String) {
    for item in s {
        out.push_str(&pad(indent));
        out.push('-');
        match item {
            Value::Mapping(m) if !m.is_empty() => {
                // First key on the dash line, the rest aligned under it.
                let mut first = true;
                for (k, v) in m {
                    if first {
                        out.push(' ');
                        first = false;
                    } else {
                        out.push_str(&pad(indent + 2));
                    }
                    out.push_str(&key_text(k));
                    out.push(':');
                    // Nested values indent from the dash, as yaml.v3 does.
                    emit_value_after_key(v, indent, out);
                }
            }
            Value::Sequence(inner) if !inner.is_empty() => {
                out.push('\n');
                emit_sequence(inner, indent + INDENT, out);
            }
            other => {
                out.push(' ');
                out.push_str(&inline(other, indent + 2));
                out.push('\n');
            }
        }
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => scalar_string(s, usize::MAX),
        other => inline(other, 0),
    }
}

/// A scalar (or empty collection) on one line; multi-line strings become literal blocks whose
/// lines are indented by `block_indent`.
fn inline(v: &Value, block_indent: usize) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        // Large and tiny floats in Go's exponent form (`2e+09`); the others as before, so
        // that an integral float still reads back as a float (`1.0`).
        Value::Number(n) => match n.as_f64().filter(|_| n.is_f64()).map(go_float) {
            Some(g) if g.contains('e') => g,
            _ => n.to_string(),
        },
        Value::String(s) => scalar_string(s, block_indent),
        Value::Sequence(_) => "[]".to_string(),
        Value::Mapping(_) => "{}".to_string(),
        Value::Tagged(t) => inline(&t.value, block_indent),
    }
}

/// A float as yaml.v3 writes one (Go's `strconv.FormatFloat(f, 'g', -1, 64)`): the shortest
/// digits, in exponent form (`2e+09`, `1e-05`) when the exponent is below -4 or 6 and above.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f != 0.0 && !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

fn scalar_string(s: &str, block_indent: usize) -> String {
    if s.is_empty() {
        return "\"\"".to_string();
    }
    if block_indent != usize::MAX && literal_block_ok(s) {
        return literal_block(s, block_indent);
    }
    if plain_ok(s) {
        s.to_string()
    } else {
        double_quoted(s)
    }
}

pub fn literal_block_ok(s: &str) -> bool {
    s.contains('\n')
        && !s.starts_with([' ', '\n', '\t'])
        && !s.contains('\r')
        && s.chars().all(|c| c == '\n' || c == '\t' || !unprintable(c))
        && s.split('\n').all(|l| !l.ends_with([' ', '\t']))
}

pub fn literal_block(s: &str, indent: usize) -> String {
    let trimmed = s.trim_end_matches('\n');
    let trailing = s.len() - trimmed.len();
    let chomp = match trailing {
        0 => "-",
        1 => "",
        _ => "+",
    };
    let mut out = format!("|{chomp}");
    let body = if trailing > 1 {
        &s[..s.len() - 1]
    } else {
        trimmed
    };
    for line in body.split('\n') {
        out.push('\n');
        if !line.is_empty() {
            out.push_str(&pad(indent));
            out.push_str(line);
        }
    }
    out
}

/// Whether a string can be written without quotes and still read back as the same string by
/// YAML 1.1 and 1.2 readers (Go's yaml.v3 among them).
pub fn plain_ok(s: &str) -> bool {
    plain_syntax_ok(s) && !looks_like_non_string(s)
}

/// Whether a string can be written plain as far as YAML syntax goes (what Go's
/// yaml.v3 does for an untagged node, even when it would read back as a number or a date).
pub fn plain_syntax_ok(s: &str) -> bool {
    if !s.is_ascii() {
        return plain_syntax_ok_chars(s);
    }
    // ASCII (nearly every string a config holds) in one pass over its bytes: the same answer
    // as the general path below, where every ASCII whitespace but the space is a control.
    let b = s.as_bytes();
    let (Some(&first), Some(&last)) = (b.first(), b.last()) else {
        return true;
    };
    if first == b' ' || last == b' ' || INDICATORS.as_bytes().contains(&first) && !dash_ok(s) {
        return false;
    }
    for (i, &c) in b.iter().enumerate() {
        let next = b.get(i + 1).copied();
        let breaks_out = match c {
            b':' => next.is_none_or(|n| n == b' '),
            b' ' => next == Some(b'#'),
            _ => c < 0x20 || c == 0x7f,
        };
        if breaks_out {
            return false;
        }
    }
    true
}

/// A leading `-` not followed by a space (`--flag`) starts a plain scalar, as yaml.v3 writes
/// it; a lone `-` and a document marker (`---`) do not.
fn dash_ok(s: &str) -> bool {
    let b = s.as_bytes();
    b.first() == Some(&b'-')
        && b.len() > 1
        && !matches!(b[1], b' ' | b'\t')
        && !s.starts_with("---")
}

/// Characters a plain scalar may not start with.
const INDICATORS: &str = "-?:,[]{}#&*!|>'\"%@`";

/// [`plain_syntax_ok`] for any text.
fn plain_syntax_ok_chars(s: &str) -> bool {
    let first = s.chars().next().unwrap_or(' ');
    if s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace) {
        return false;
    }
    if INDICATORS.contains(first) && !dash_ok(s) {
        return false;
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        return false;
    }
    !s.chars().any(unprintable)
}

/// Characters a YAML reader does not take as they are in a plain or block scalar: controls, the
/// Unicode line and paragraph separators (line breaks to YAML), the byte-order mark and the
/// non-characters U+FFFE/U+FFFF.
pub fn unprintable(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        )
}

fn looks_like_non_string(s: &str) -> bool {
    const WORDS: &[&str] = &[
        "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf",
        ".nan",
    ];
    if s.len() <= 5 && WORDS.iter().any(|w| s.eq_ignore_ascii_case(w)) {
        return true;
    }
    let body = s.trim_start_matches(['+', '-']);
    if body.is_empty() {
        return false;
    }
    // Integers in any base and floats.
    if body.starts_with("0x") || body.starts_with("0o") || body.starts_with("0b") {
        return true;
    }
    let numeric = body.chars().all(|c| {
        c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == 'E' || c == '+' || c == '-'
    });
    let dots = body.matches('.').count();
    if numeric
        && dots <= 1
        && body
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == '.')
    {
        return true;
    }
    // Dates and times (YAML 1.1 timestamps, sexagesimal numbers).
    let b = s.as_bytes();
    if b.len() >= 8 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' {
        return true;
    }
    base60(s)
}

/// A YAML 1.1 sexagesimal number (`190:20:30`, `1:30.5`), what yaml.v3 quotes:
/// `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?`.
fn base60(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    if !fraction.chars().all(|c| c.is_ascii_digit() || c == '_') {
        return false;
    }
    let mut parts = whole.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.starts_with(|c: char| c.is_ascii_digit())
        && head.chars().all(|c| c.is_ascii_digit() || c == '_');
    let rest: Vec<&str> = parts.collect();
    head_ok
        && !rest.is_empty()
        && rest.iter().all(|p| {
            let b = p.as_bytes();
            match b {
                [d] => d.is_ascii_digit(),
                [a, d] => (b'0'..=b'5').contains(a) && d.is_ascii_digit(),
                _ => false,
            }
        })
}

pub fn double_quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if unprintable(c) => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_host_ports_stay_plain_as_yaml_v3_writes_them() {
        assert!(plain_ok("--node-ip=10.0.0.1"));
        assert!(plain_ok("127.0.0.11:6443"));
        assert!(!plain_ok("-"));
        assert!(!plain_ok("- x"));
        assert!(!plain_ok("---"));
        assert!(!plain_ok("190:20:30"));
        assert!(!plain_ok("1:30.5"));
        assert!(!plain_ok("-12"));
        assert!(plain_ok("1:2:345"));
    }

    #[test]
    fn floats_are_written_as_go_formats_them() {
        let cases = [
            (2e9, "2e+09"),
            (65534.0, "65534"),
            (0.5, "0.5"),
            (1e-5, "1e-05"),
            (1234567.0, "1.234567e+06"),
            (0.0, "0"),
            (-1.5, "-1.5"),
        ];
        for (f, text) in cases {
            assert_eq!(go_float(f), text, "{f}");
        }
        let v: Value = from_str("priority: 2e+09\nport: 10257\n").unwrap();
        assert_eq!(to_string(&v), "priority: 2e+09\nport: 10257\n");
    }

    #[test]
    fn a_repeated_key_is_placed_where_it_repeats() {
        let err = parse("# c\na: 1\nb:\n  c: 1\n  c: 2\n", "v.yaml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "v.yaml:5:3: invalid YAML: b: duplicate entry with key \"c\""
        );
    }

    #[test]
    fn project_files_are_kept_by_text_and_large_ones_are_not() {
        let small = "a: [1, 2]\n";
        assert_eq!(parse(small, "f.yaml").unwrap()["a"][1].as_i64(), Some(2));
        assert!(PARSED.holds(&small.to_string()));
        let large = format!("big: \"{}\"\n", "y".repeat(KEPT_TEXT_MAX));
        assert!(parse(&large, "big.yaml").unwrap()["big"].is_string());
        assert!(!PARSED.holds(&large));
        // Errors are not kept and name the file every time.
        for _ in 0..2 {
            let e = parse("a: [1\n", "bad.yaml").unwrap_err();
            assert!(e.to_string().starts_with("bad.yaml:"), "{e}");
        }
    }

    fn roundtrip(src: &str) -> String {
        let v: Value = serde_yaml_ng::from_str(src).unwrap();
        let out = to_string(&v);
        let back: Value = serde_yaml_ng::from_str(&out).unwrap();
        assert_eq!(v, back, "round trip changed the value:\n{out}");
        out
    }

    #[test]
    fn writes_talos_layout() {
        let out = roundtrip("context: a\ncontexts:\n  a:\n    endpoints: [127.0.0.1]\n    nodes: []\n    ca: QUJD\n");
        assert_eq!(
            out,
            "context: a\ncontexts:\n    a:\n        endpoints:\n            - 127.0.0.1\n        nodes: []\n        ca: QUJD\n"
        );
    }

    #[test]
    fn line_separators_and_bom_are_escaped() {
        // Found by tests/trust/properties.rs: YAML reads U+2028/U+2029 as line breaks.
        for text in [
            "\u{2028}",
            "a\u{2029}b",
            "\u{feff}x",
            "l1\nl\u{2028}2\n",
            "\u{85}",
        ] {
            let mut m = serde_yaml_ng::Mapping::new();
            m.insert(text.into(), Value::Mapping(serde_yaml_ng::Mapping::new()));
            m.insert("k".into(), text.into());
            let v = Value::Mapping(m);
            let out = to_string(&v);
            assert_eq!(serde_yaml_ng::from_str::<Value>(&out).unwrap(), v, "{out}");
        }
        assert_eq!(to_string(&"\u{2028}".into()), "\"\\u2028\"\n");
    }

    #[test]
    fn quotes_what_would_change_type() {
        for s in [
            "yes",
            "No",
            "on",
            "1",
            "1.5",
            "0x1f",
            "2026-01-02",
            "12:30",
            "",
            "a: b",
            "- x",
            "#c",
            "null",
            " x",
        ] {
            let v = Value::String(s.to_string());
            let out = to_string(&v);
            let back: Value = serde_yaml_ng::from_str(&out).unwrap();
            assert_eq!(back, v, "{s:?} became {out:?}");
            assert!(out.starts_with('"'), "{s:?} must be quoted, got {out}");
        }
        assert_eq!(to_string(&Value::String("0raF93-w=".into())), "0raF93-w=\n");
    }

    #[test]
    fn multiline_strings_survive() {
        roundtrip("a:\n  b: \"line1\\nline2\\n\"\n  c: \"x\\ny\"\n  d: \"p\\n\\n\"\n  e: \"\\nlead\"\n  f: \"t \\nx\"\n");
        let out = roundtrip("k: \"one\\ntwo\\n\"\n");
        assert_eq!(out, "k: |\n    one\n    two\n");
        roundtrip("l:\n  - \"one\\ntwo\"\n  - {a: \"x\\ny\\n\", b: 1}\n  - [1, [2]]\n");
        let out = roundtrip("l:\n  - name: c\n    cluster: {server: s, l: [1]}\n");
        assert_eq!(
            out,
            "l:\n    - name: c\n      cluster:\n        server: s\n        l:\n            - 1\n"
        );
    }

    #[test]
    fn parse_error_names_file_and_position() {
        let err = parse("a: b\n  c: d: e\n", "values.yaml").unwrap_err();
        let text = crate::error::render(&err);
        assert!(text.contains("values.yaml:2:"), "{text}");
        assert!(text.contains("hint:"), "{text}");
    }

    /// The one-pass ASCII path answers as the general one, on strings made of what decides it
    /// (indicators, spaces, `: `, ` #`, controls, non-ASCII) around ordinary characters.
    #[test]
    fn plain_scalars_are_judged_alike_on_both_paths() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        const PARTS: &[&str] = &[
            "a", "Z", "1", "0x", " ", ":", "#", "-", "?", ",", "[", "}", "'", "\"", "%", "@", "`",
            "!", "|", ">", "&", "*", "\t", "\n", "\r", "\u{b}", "\u{c}", "\u{7f}", "\u{1}", ".",
            "é", "\u{a0}", "\u{2028}", "\u{feff}", "yes", "NULL", "~", ".inf", "-.Inf", "12:30",
        ];
        let strategy = proptest::collection::vec(proptest::sample::select(PARTS), 0..6);
        TestRunner::new(Config::with_cases(5000))
            .run(&strategy, |parts| {
                let s: String = parts.concat();
                prop_assert_eq!(plain_syntax_ok(&s), plain_syntax_ok_chars(&s), "{:?}", s);
                // The words were matched on a lowercased copy before.
                let words = [
                    "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf",
                    "-.inf", "+.inf", ".nan",
                ];
                if words.contains(&s.to_ascii_lowercase().as_str()) {
                    prop_assert!(looks_like_non_string(&s), "{:?}", s);
                }
                Ok(())
            })
            .unwrap();
        for (s, ok) in [
            ("a: b", false),
            ("a:b", true),
            ("a #b", false),
            ("a#b", true),
            ("x:", false),
            (" a", false),
            ("a ", false),
            ("-a", true),
            ("- a", false),
            ("-", false),
            ("a\u{7f}", false),
            ("", true),
        ] {
            assert_eq!(plain_syntax_ok(s), ok, "{s:?}");
        }
    }
}
