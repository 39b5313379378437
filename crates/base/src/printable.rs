//! Text from elsewhere (a node's names, versions, logs and error messages) made safe to print:
//! control characters other than line breaks and tabs, and terminal escape sequences with them,
//! are shown escaped (`\x1b`, `\r`, `\u009b`), so a node cannot move the cursor, retitle the
//! terminal or hide text in what talm prints.

use std::borrow::Cow;

/// Whether `c` is printed escaped.
fn escaped(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || c == '\u{2028}' || c == '\u{2029}'
}

/// `text` with every control character but `\n` and `\t` escaped; borrowed when there is none.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if escaped(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if escaped(c) => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_plain_text_kept() {
        assert!(matches!(printable("v1.13.7\tok\n"), Cow::Borrowed(_)));
        assert_eq!(
            printable("v1.13.7\u{1b}]0;pwned\u{7}\u{1b}[2J\r\u{9b}31m\u{7f}\u{0}é"),
            "v1.13.7\\x1b]0;pwned\\x07\\x1b[2J\\r\\u009b31m\\x7f\\x00é"
        );
    }
}
