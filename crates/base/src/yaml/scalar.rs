//! A plain YAML scalar's type as serde_yaml_ng resolves it (null, bool, integers in four radixes,
//! floats, else a string), for the quick reader, which must answer exactly as serde_yaml_ng does.

use serde_yaml_ng::Value;
use std::num::ParseIntError;

/// A plain scalar's value, by serde_yaml_ng's rules: null, bool, integer (decimal, 0x, 0o,
/// 0b; a leading zero keeps digits a string), float, else string. `None` for integers
/// beyond 64 bits, which serde_yaml_ng refuses for a `Value`.
pub(super) fn resolve(s: &str) -> Option<Value> {
    match s {
        "null" | "Null" | "NULL" | "~" => return Some(Value::Null),
        "true" | "True" | "TRUE" => return Some(Value::Bool(true)),
        "false" | "False" | "FALSE" => return Some(Value::Bool(false)),
        _ => {}
    }
    if !s.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '.')) {
        // No number starts otherwise (Rust's `inf` and `nan` are not finite, so strings).
        return Some(Value::String(s.to_string()));
    }
    // A number is letters, digits, signs and at most one dot: addresses, CIDRs, versions and
    // paths are strings without five parse attempts.
    let number_bytes = s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !number_bytes || s.bytes().filter(|&b| b == b'.').count() > 1 {
        return Some(Value::String(s.to_string()));
    }
    if let Some(u) = unsigned(s, u64::from_str_radix) {
        return Some(Value::Number(u.into()));
    }
    if let Some(i) = negative(s, i64::from_str_radix) {
        return Some(Value::Number(i.into()));
    }
    if unsigned(s, u128::from_str_radix).is_some() || negative(s, i128::from_str_radix).is_some() {
        return None;
    }
    if !zero_led(s) {
        if let Some(f) = float(s) {
            return Some(Value::Number(f.into()));
        }
    }
    Some(Value::String(s.to_string()))
}

type Radix<T> = fn(&str, u32) -> Result<T, ParseIntError>;

const PREFIXES: [(&str, u32); 3] = [("0x", 16), ("0o", 8), ("0b", 2)];

/// A non-negative integer, with an optional `+` and a radix prefix.
fn unsigned<T>(s: &str, parse: Radix<T>) -> Option<T> {
    let digits = s.strip_prefix('+').unwrap_or(s);
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = digits.strip_prefix(prefix) {
            if rest.starts_with(['+', '-']) {
                return None;
            }
            if let Ok(v) = parse(rest, radix) {
                return Some(v);
            }
        }
    }
    if digits.starts_with(['+', '-']) || zero_led(s) {
        return None;
    }
    parse(digits, 10).ok()
}

/// A signed integer (what is left when [`unsigned`] did not read it), `-0x..` and the like
/// included.
fn negative<T>(s: &str, parse: Radix<T>) -> Option<T> {
    for (prefix, radix) in PREFIXES {
        if let Some(rest) = s.strip_prefix('-').and_then(|r| r.strip_prefix(prefix)) {
            if let Ok(v) = parse(&format!("-{rest}"), radix) {
                return Some(v);
            }
        }
    }
    if zero_led(s) {
        return None;
    }
    parse(s, 10).ok()
}

/// Digits after a leading zero (`0123`, `-07`): a string, not a number.
fn zero_led(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    s.len() > 1 && s.starts_with('0') && s[1..].bytes().all(|b| b.is_ascii_digit())
}

/// A finite float, `.inf` and `.nan` spelled YAML's way.
fn float(s: &str) -> Option<f64> {
    let unsigned = match s.strip_prefix('+') {
        Some(u) if u.starts_with(['+', '-']) => return None,
        Some(u) => u,
        None => s,
    };
    match (unsigned, s) {
        (".inf" | ".Inf" | ".INF", _) => return Some(f64::INFINITY),
        (_, "-.inf" | "-.Inf" | "-.INF") => return Some(f64::NEG_INFINITY),
        (_, ".nan" | ".NaN" | ".NAN") => return Some(f64::NAN),
        _ => {}
    }
    unsigned.parse::<f64>().ok().filter(|f| f.is_finite())
}
