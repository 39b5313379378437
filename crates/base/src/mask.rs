//! Values no message may show: everything read from an encrypted file is registered here, and
//! every error and warning talm prints passes through `scrub`. Process-wide on purpose: a secret
//! must stay hidden whichever engine, thread or command path ends up printing the message.

use std::borrow::Cow;
use std::sync::RwLock;

static MASKED: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Shorter values are too common to mask (`1`, `on`); up to `TOKEN_ONLY` characters a value is
/// masked only where it stands alone, not inside longer words.
const MIN_LEN: usize = 3;
const TOKEN_ONLY: usize = 6;

/// The texts a value may be printed as: itself, trimmed, each of its lines, and the inside of
/// its quoted forms (JSON, Rust and YAML escape a tab or a line break as `\t`, `\n`).
fn forms(v: &str) -> Vec<String> {
    let inner = |q: String| {
        q.strip_prefix('"')
            .and_then(|q| q.strip_suffix('"'))
            .map(str::to_string)
    };
    let mut out = vec![v.to_string(), v.trim().to_string()];
    out.extend(v.lines().map(|l| l.trim().to_string()));
    out.extend(inner(serde_json::to_string(v).unwrap_or_default()));
    out.extend(inner(format!("{v:?}")));
    out.extend(inner(crate::yaml::double_quoted(v)));
    out
}

/// Registers values that must never be printed, in every form they may be printed in.
pub fn register(values: impl IntoIterator<Item = String>) {
    let mut m = MASKED.write().unwrap_or_else(|e| e.into_inner());
    for v in values.into_iter().flat_map(|v| forms(&v)) {
        if v.chars().count() >= MIN_LEN && !m.contains(&v) {
            m.push(v);
        }
    }
    // Longest first, so a secret that contains another is masked whole.
    m.sort_by_key(|v| std::cmp::Reverse(v.len()));
}

fn is_word(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

fn mask_token(text: &str, secret: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(secret) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + secret.len()..].chars().next();
        out.push_str(&rest[..i]);
        if is_word(before) || is_word(after) {
            out.push_str(secret);
        } else {
            out.push_str("***");
        }
        rest = &rest[i + secret.len()..];
    }
    out.push_str(rest);
    out
}

/// `text` with every registered value replaced by `***`.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let m = MASKED.read().unwrap_or_else(|e| e.into_inner());
    if m.iter().all(|s| !text.contains(s.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_string();
    for s in m.iter() {
        if s.chars().count() >= TOKEN_ONLY {
            out = out.replace(s.as_str(), "***");
        } else {
            out = mask_token(&out, s);
        }
    }
    Cow::Owned(out)
}

/// A serde message with the input it quotes left out: `invalid type: string "s3cr3t", expected
/// struct X` becomes `invalid type: string ***, expected struct X`. Only the part before
/// `expected` quotes the input; what follows names the wanted shape and stays.
pub fn quoted_values(text: &str) -> String {
    let (input, rest) = match text.find(", expected") {
        Some(i) => text.split_at(i),
        None => (text, ""),
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = input.chars();
    while let Some(c) = chars.next() {
        let close = match c {
            '"' => '"',
            '`' => '`',
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str("***");
        let mut escaped = false;
        for c in chars.by_ref() {
            match c {
                '\\' if close == '"' && !escaped => escaped = true,
                c if c == close && !escaped => break,
                _ => escaped = false,
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_messages_lose_the_values_they_quote() {
        assert_eq!(
            quoted_values(r#"invalid type: string "pof\"Hb/x", expected struct TrustdInfo"#),
            "invalid type: string ***, expected struct TrustdInfo"
        );
        assert_eq!(
            quoted_values("invalid type: integer `5432`, expected a string"),
            "invalid type: integer ***, expected a string"
        );
        assert_eq!(
            quoted_values("unknown variant `x`, expected one of `a`, `b`"),
            "unknown variant ***, expected one of `a`, `b`"
        );
        assert_eq!(quoted_values("missing field id"), "missing field id");
    }

    #[test]
    fn quoted_and_multiline_forms_are_masked() {
        register(["secretval\tx".to_string(), "SECRETVAL\n".to_string()]);
        assert_eq!(scrub(r#"mtu "secretval\tx" is bad"#), r#"mtu "***" is bad"#);
        assert_eq!(scrub("mtu \"SECRETVAL\\n\" is bad"), "mtu \"***\" is bad");
        assert_eq!(scrub("line: SECRETVAL"), "line: ***");
    }

    #[test]
    fn registered_values_are_masked() {
        register([
            "hunter2-long".to_string(),
            "9000".to_string(),
            "x".to_string(),
        ]);
        assert_eq!(scrub("mtu=9000 (eth0)"), "mtu=*** (eth0)");
        assert_eq!(scrub("line 19000 is fine"), "line 19000 is fine");
        assert_eq!(scrub("pw \"hunter2-long\"!"), "pw \"***\"!");
        assert_eq!(scrub("x marks"), "x marks");
    }
}
