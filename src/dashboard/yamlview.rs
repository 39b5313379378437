//! A resource's YAML as talosctl's resource explorer writes it: two spaces a level, sequence
//! items as `- ` one level in under their key (a mapping item's later keys at the dash's
//! column, as talosctl's walker puts them), keys in cyan, strings in green (quoted when YAML
//! needs quotes, multi-line ones after `|`), numbers, booleans and nulls in yellow, dates as
//! they are.

use ratatui::style::Color;
use serde_yaml_ng::Value;

/// One line: its pieces and their colours (`None`: the terminal's own).
pub type Styled = Vec<(String, Option<Color>)>;

const KEY: Color = Color::Cyan;
const STRING: Color = Color::Green;
const OTHER: Color = Color::Yellow;

/// The coloured lines of a YAML document (`metadata:` and `spec:` as COSI marshals a
/// resource); text that does not parse shows as it is.
pub fn lines(text: &str) -> Vec<Styled> {
    let Ok(v) = talm_base::yaml::from_str(text) else {
        return text.lines().map(|l| vec![(l.to_string(), None)]).collect();
    };
    let mut w = Writer::default();
    w.node(&v, 0, false, true);
    w.flush();
    w.out
}

#[derive(Default)]
struct Writer {
    out: Vec<Styled>,
    line: Styled,
}

impl Writer {
    fn put(&mut self, text: impl Into<String>, colour: Option<Color>) {
        let text: String = text.into();
        // A literal block's own lines start lines of their own.
        let mut parts = text.split('\n');
        if let Some(first) = parts.next() {
            if !first.is_empty() {
                self.line.push((first.to_string(), colour));
            }
        }
        for p in parts {
            self.flush();
            if !p.is_empty() {
                self.line.push((p.to_string(), colour));
            }
        }
    }

    fn flush(&mut self) {
        if !self.line.is_empty() {
            self.out.push(std::mem::take(&mut self.line));
        }
    }

    fn end(&mut self) {
        let line = std::mem::take(&mut self.line);
        self.out.push(line);
    }

    /// Writes `v` at `indent` levels; `in_seq`: the caller wrote nothing yet for a sequence
    /// item whose first key takes the dash. `top`: the document's own mapping, where an empty
    /// value is an empty metadata field (`owner:`), not `null`.
    fn node(&mut self, v: &Value, indent: usize, in_seq: bool, top: bool) {
        let prefix = "  ".repeat(indent);
        match v {
            Value::Mapping(m) => {
                for (i, (k, val)) in m.iter().enumerate() {
                    let lead = if in_seq && i == 0 {
                        format!("{prefix}- ")
                    } else {
                        prefix.clone()
                    };
                    self.put(lead, None);
                    self.put(key_text(k), Some(KEY));
                    self.put(":", None);
                    match val {
                        Value::Mapping(_) | Value::Sequence(_) => {
                            self.end();
                            let meta = top && k.as_str() == Some("metadata");
                            self.node(val, indent + 1, false, meta);
                        }
                        scalar => {
                            self.put(" ", None);
                            self.scalar(scalar, top);
                            self.end();
                        }
                    }
                }
            }
            Value::Sequence(items) => {
                for item in items {
                    match item {
                        Value::Mapping(_) => self.node(item, indent, true, false),
                        Value::Sequence(_) => {
                            self.put(format!("{prefix}- "), None);
                            self.end();
                            self.node(item, indent + 1, false, false);
                        }
                        scalar => {
                            self.put(format!("{prefix}- "), None);
                            self.scalar(scalar, false);
                            self.end();
                        }
                    }
                }
            }
            Value::Tagged(t) => self.node(&t.value, indent, in_seq, top),
            scalar => {
                self.put(prefix, None);
                self.scalar(scalar, false);
                self.end();
            }
        }
    }

    fn scalar(&mut self, v: &Value, empty_null: bool) {
        match v {
            Value::String(s) if looks_like_date(s) => self.put(s.clone(), None),
            Value::String(s) if s.contains('\n') => self.put(format!("|\n{s}"), Some(STRING)),
            Value::String(s) if !s.is_empty() && talm_base::yaml::plain_ok(s) => {
                self.put(s.clone(), Some(STRING))
            }
            Value::String(s) => self.put(format!("\"{s}\""), Some(STRING)),
            Value::Number(n) => self.put(n.to_string(), Some(OTHER)),
            Value::Bool(b) => self.put(b.to_string(), Some(OTHER)),
            Value::Null if empty_null => {}
            Value::Null => self.put("null", Some(OTHER)),
            Value::Tagged(t) => self.scalar(&t.value, empty_null),
            other => self.put(talm_base::yaml::to_string(other).trim_end(), None),
        }
    }
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => talm_base::yaml::to_string(k).trim_end().to_string(),
    }
}

/// A YAML timestamp (`2026-12-06T19:51:38Z`, `2026-12-06`): its own tag, shown uncoloured.
fn looks_like_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[5..7].iter().all(u8::is_ascii_digit)
        && b[7] == b'-'
        && b[8..10].iter().all(u8::is_ascii_digit)
        && (b.len() == 10 || matches!(b[10], b'T' | b't' | b' '))
        && !s.contains('\n')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Styled]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.iter().map(|(t, _)| t.as_str()).collect())
            .collect()
    }

    #[test]
    fn talosctl_layout_and_colours() {
        let doc = "metadata:\n    namespace: network\n    id: eth0\n    version: 3\n    owner:\n    created: 2026-12-06T19:51:38Z\nspec:\n    mtu: 1500\n    kind: \"\"\n    port: \"8080\"\n    up: true\n    addresses:\n        - 10.5.0.2/24\n    routes:\n        - dst: 0.0.0.0/0\n          gateway: 10.5.0.1\n    note: |\n        a\n        b\n";
        let l = lines(doc);
        assert_eq!(
            text(&l),
            [
                "metadata:",
                "  namespace: network",
                "  id: eth0",
                "  version: 3",
                "  owner: ",
                "  created: 2026-12-06T19:51:38Z",
                "spec:",
                "  mtu: 1500",
                "  kind: \"\"",
                "  port: \"8080\"",
                "  up: true",
                "  addresses:",
                "    - 10.5.0.2/24",
                "  routes:",
                "    - dst: 0.0.0.0/0",
                "    gateway: 10.5.0.1",
                "  note: |",
                "a",
                "b",
                "",
            ]
        );
        assert_eq!(l[1][1], ("namespace".to_string(), Some(Color::Cyan)));
        assert_eq!(l[1][4], ("network".to_string(), Some(Color::Green)));
        assert_eq!(l[3][4], ("3".to_string(), Some(Color::Yellow)));
        assert_eq!(l[5][4].1, None);
        assert_eq!(l[9][4], ("\"8080\"".to_string(), Some(Color::Green)));
        assert_eq!(lines(": [")[0][0].0, ": [");
    }
}
