//! A quick reader for plain block YAML — what talm's emitter, Talos and the templates write:
//! block mappings and sequences, one-line scalars and literal blocks, and one-line flow lists of
//! plain words (`[10.0.0.0/8, 443]`, as values files set subnets), on their key's line or the
//! next (`nameservers:` then `  []`, as templates print an empty list). It answers only for texts
//! wholly inside that subset and gives `None` for anything else (other flow collections, anchors,
//! tags, folded or multi-line scalars, non-ASCII text, anything malformed), which the caller
//! then reads with serde_yaml_ng. Where it answers, the answer is serde_yaml_ng's, key order
//! and scalar types included (the differential tests next to it hold it to that); libyaml
//! through serde costs about ten times as much, and a bring-up reads each node's config a few
//! times over.

use serde_yaml_ng::{Mapping, Value};

use super::scalar::resolve;

/// Nesting deeper than this is left to serde_yaml_ng (and its recursion limit).
const MAX_DEPTH: usize = 64;

/// libyaml refuses a simple key longer than 1024 characters; leave those to it.
const MAX_KEY: usize = 1000;

/// Every document of `text`, or `None` when `text` is outside the subset this reader is sure
/// of (including empty streams and empty documents).
pub fn stream(text: &str) -> Option<Vec<Value>> {
    let plain = text
        .bytes()
        .all(|b| b == b'\n' || b == b'\t' || (0x20..0x7f).contains(&b));
    if !plain {
        return None;
    }
    Reader::new(text).documents()
}

/// One line: its indentation (leading spaces) and what follows it.
#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    body: &'a str,
}

impl Line<'_> {
    /// Blank, or only a comment: skipped between nodes.
    fn ignorable(&self) -> bool {
        self.body.is_empty() || self.body.starts_with('#')
    }
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    /// The next line not read yet.
    at: usize,
    depth: usize,
}

/// What a line's text starts with, seen as a mapping entry.
enum Entry<'a> {
    /// `key: rest` (rest: what follows the colon, leading spaces dropped).
    Key(Value, &'a str),
    /// Not a key: a scalar (or something a scalar reader judges).
    Scalar,
}

/// How a literal block ends (`|`, `|-`, `|+`).
#[derive(Clone, Copy)]
enum Chomp {
    Clip,
    Strip,
    Keep,
}

impl<'a> Reader<'a> {
    fn new(text: &'a str) -> Self {
        let lines = text
            .split('\n')
            .map(|raw| {
                let body = raw.trim_start_matches(' ');
                Line {
                    indent: raw.len() - body.len(),
                    body,
                }
            })
            .collect();
        Reader {
            lines,
            at: 0,
            depth: 0,
        }
    }

    /// The index of the next line that is not blank or a comment (not consumed).
    fn next_content(&self) -> Option<usize> {
        (self.at..self.lines.len()).find(|&i| !self.lines[i].ignorable())
    }

    fn documents(mut self) -> Option<Vec<Value>> {
        let mut docs = Vec::new();
        // A `---` read whose document has not come yet.
        let mut open = false;
        while let Some(i) = self.next_content() {
            let line = self.lines[i];
            if line.indent != 0 {
                return None;
            }
            if marker(line.body)? {
                if open {
                    return None;
                }
                open = true;
                self.at = i + 1;
                continue;
            }
            if !docs.is_empty() && !open {
                return None;
            }
            docs.push(self.block(i)?);
            open = false;
        }
        (!open && !docs.is_empty()).then_some(docs)
    }

    /// The block collection that starts on line `i`.
    fn block(&mut self, i: usize) -> Option<Value> {
        let line = self.lines[i];
        if is_item(line.body) {
            self.sequence(line.indent)
        } else {
            self.mapping(line.indent)
        }
    }

    /// The next line of the collection at `indent`: `Some(None)` once it has ended (a less
    /// indented line, a document marker, the end of the text), `None` for a line indented
    /// deeper than its siblings.
    fn member(&self, indent: usize) -> Option<Option<usize>> {
        let Some(i) = self.next_content() else {
            return Some(None);
        };
        let line = self.lines[i];
        if line.indent < indent || (line.indent == 0 && marker(line.body)?) {
            return Some(None);
        }
        (line.indent == indent).then_some(Some(i))
    }

    /// Checks how deep the reader is before one more collection.
    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    fn mapping(&mut self, indent: usize) -> Option<Value> {
        self.enter()?;
        let mut map = Mapping::new();
        while let Some(i) = self.member(indent)? {
            let line = self.lines[i];
            if is_item(line.body) {
                return None;
            }
            let Entry::Key(key, rest) = entry(line.body)? else {
                return None;
            };
            self.at = i + 1;
            let value = self.value(rest, indent, true)?;
            if map.insert(key, value).is_some() {
                // serde_yaml_ng refuses a duplicate key: let it say so.
                return None;
            }
        }
        self.depth -= 1;
        Some(Value::Mapping(map))
    }

    fn sequence(&mut self, indent: usize) -> Option<Value> {
        self.enter()?;
        let mut items = Vec::new();
        while let Some(i) = self.member(indent)? {
            let line = self.lines[i];
            if !is_item(line.body) {
                // The end of a sequence that is a mapping value at the mapping's indentation;
                // anywhere else the caller finds the line out of place.
                break;
            }
            let after = &line.body[1..];
            let rest = after.trim_start_matches(' ');
            if rest.is_empty() || rest.starts_with('#') {
                self.at = i + 1;
                items.push(self.value("", indent, false)?);
                continue;
            }
            if rest.starts_with('\t') || is_item(rest) {
                return None;
            }
            match entry(rest)? {
                Entry::Key(..) => {
                    // `- key: value`: a mapping whose indentation is its first key's column.
                    let column = indent + 1 + (after.len() - rest.len());
                    self.lines[i] = Line {
                        indent: column,
                        body: rest,
                    };
                    items.push(self.mapping(column)?);
                }
                Entry::Scalar => {
                    self.at = i + 1;
                    items.push(self.inline(rest, indent)?);
                }
            }
        }
        self.depth -= 1;
        Some(Value::Sequence(items))
    }

    /// The value after a key's colon or an item's dash: `rest` is the rest of that line, the
    /// node's parent collection is at `indent`; a mapping value's sequence may sit at the
    /// mapping's own indentation (`in_map`).
    fn value(&mut self, rest: &'a str, indent: usize, in_map: bool) -> Option<Value> {
        if !rest.is_empty() && !rest.starts_with('#') {
            return self.inline(rest, indent);
        }
        let Some(j) = self.next_content() else {
            return Some(Value::Null);
        };
        let next = self.lines[j];
        if next.indent > indent && next.body.starts_with(['[', '{']) {
            // A flow node on a line of its own (`nameservers:` then `  []`, as the templates
            // print an empty list).
            self.at = j + 1;
            return self.inline(next.body, indent);
        }
        if next.indent > indent {
            return self.block(j);
        }
        if in_map && next.indent == indent && is_item(next.body) {
            return self.sequence(indent);
        }
        Some(Value::Null)
    }

    /// A node written on the rest of its line.
    fn inline(&mut self, rest: &'a str, indent: usize) -> Option<Value> {
        let value = match rest.as_bytes()[0] {
            b'"' | b'\'' => {
                let (text, after) = quoted(rest)?;
                end_of_line(after)?;
                Value::String(text)
            }
            b'|' => return self.literal(rest, indent),
            b'[' => flow_sequence(rest)?,
            b'{' => {
                end_of_line(rest.get(2..)?)?;
                match &rest[..2] {
                    "{}" => Value::Mapping(Mapping::new()),
                    _ => return None,
                }
            }
            b'-' | b'?' | b':' if rest.len() == 1 || rest.as_bytes()[1] == b' ' => return None,
            b'>' | b'&' | b'*' | b'!' | b'%' | b'@' | b'`' | b',' | b']' | b'}' | b'#' => {
                return None
            }
            _ => resolve(plain(rest)?)?,
        };
        // A more indented line after a one-line node continues a plain scalar or is an error.
        match self.next_content() {
            Some(j) if self.lines[j].indent > indent => None,
            _ => Some(value),
        }
    }

    /// A literal block (`|`, `|-`, `|+`) whose header is `rest`, inside a collection at
    /// `indent`; its lines follow.
    fn literal(&mut self, rest: &str, indent: usize) -> Option<Value> {
        let (chomp, comment) = match rest.as_bytes().get(1) {
            Some(b'-') => (Chomp::Strip, &rest[2..]),
            Some(b'+') => (Chomp::Keep, &rest[2..]),
            _ => (Chomp::Clip, &rest[1..]),
        };
        if !comment.is_empty() && !comment.trim_start_matches(' ').starts_with('#') {
            // An indentation indicator, or text after the header.
            return None;
        }
        if !comment.is_empty() && !comment.starts_with(' ') {
            return None;
        }
        let first = (self.at..self.lines.len()).find(|&i| !self.lines[i].body.is_empty())?;
        let column = self.lines[first].indent;
        let leading_max = self.lines[self.at..first]
            .iter()
            .map(|l| l.indent)
            .max()
            .unwrap_or(0);
        if column <= indent || leading_max > column || self.lines[first].body.starts_with('\t') {
            return None;
        }
        let mut text = String::new();
        let mut breaks = 0;
        let mut started = false;
        let mut i = self.at;
        while let Some(line) = self.lines.get(i) {
            if line.body.is_empty() && line.indent <= column {
                breaks += 1;
            } else if line.indent >= column {
                if started {
                    text.push('\n');
                }
                text.extend(std::iter::repeat_n('\n', breaks));
                text.extend(std::iter::repeat_n(' ', line.indent - column));
                text.push_str(line.body);
                breaks = 0;
                started = true;
            } else if line.body.starts_with('\t') {
                // A tab where the indentation should be: libyaml's error.
                return None;
            } else {
                break;
            }
            i += 1;
        }
        if i == self.lines.len() {
            // The text's last line is empty after its final newline: not a break of its own.
            breaks = breaks.saturating_sub(1);
            if !self.lines[i - 1].body.is_empty() || self.lines[i - 1].indent > column {
                // The block runs to the end of a text without a final newline.
                return None;
            }
        }
        match chomp {
            Chomp::Clip => text.push('\n'),
            Chomp::Strip => {}
            Chomp::Keep => {
                text.push('\n');
                text.extend(std::iter::repeat_n('\n', breaks));
            }
        }
        self.at = i;
        Some(Value::String(text))
    }
}

/// Whether a line at column 0 is a document marker: `Some(true)` for `---`, `None` for
/// markers this reader leaves alone (`--- text`, `...`).
fn marker(body: &str) -> Option<bool> {
    for m in ["---", "..."] {
        if let Some(after) = body.strip_prefix(m) {
            if after.trim_end_matches(' ').is_empty() && m == "---" {
                return Some(true);
            }
            if after.is_empty() || after.starts_with([' ', '\t']) {
                return None;
            }
        }
    }
    Some(false)
}

/// A block sequence entry: `-` alone or followed by a space.
fn is_item(body: &str) -> bool {
    body == "-" || body.starts_with("- ")
}

/// Reads `body` as a mapping entry when it is one.
fn entry(body: &str) -> Option<Entry<'_>> {
    if body.starts_with(['"', '\'']) {
        let (key, after) = quoted(body)?;
        let trimmed = after.trim_start_matches(' ');
        if let Some(rest) = trimmed.strip_prefix(':') {
            if !rest.is_empty() && !rest.starts_with(' ') {
                return None;
            }
            if body.len() - rest.len() > MAX_KEY {
                return None;
            }
            return Some(Entry::Key(Value::String(key), rest.trim_start_matches(' ')));
        }
        return Some(Entry::Scalar);
    }
    let line = uncommented(body);
    let b = line.as_bytes();
    let Some(colon) =
        (0..b.len()).find(|&i| b[i] == b':' && b.get(i + 1).is_none_or(|&c| c == b' '))
    else {
        return Some(Entry::Scalar);
    };
    if colon > MAX_KEY || b"-?:,[]{}#&*!|>'\"%@`".contains(&b[0]) || line[..colon].contains('\t') {
        return None;
    }
    let key = line[..colon].trim_end_matches(' ');
    if key.is_empty() {
        return None;
    }
    Some(Entry::Key(
        resolve(key)?,
        body[colon + 1..].trim_start_matches(' '),
    ))
}

/// `body` up to a comment (` #`).
fn uncommented(body: &str) -> &str {
    let b = body.as_bytes();
    match (1..b.len()).find(|&i| b[i] == b'#' && b[i - 1] == b' ') {
        Some(i) => &body[..i - 1],
        None => body,
    }
}

/// A one-line plain scalar, trailing spaces and comment dropped.
fn plain(rest: &str) -> Option<&str> {
    let text = uncommented(rest).trim_end_matches(' ');
    let b = text.as_bytes();
    let breaks = b
        .iter()
        .enumerate()
        .any(|(i, &c)| c == b'\t' || (c == b':' && b.get(i + 1).is_none_or(|&n| n == b' ')));
    (!breaks).then_some(text)
}

/// A one-line flow sequence of plain words (`[10.0.0.0/8, 443]`, `[]`): letters, digits and
/// `. / _ + -`, a sign only before a digit or a dot; anything else (quotes, nesting, spaces
/// within an item, an empty item) is left to serde_yaml_ng.
fn flow_sequence(rest: &str) -> Option<Value> {
    let close = rest.find(']')?;
    end_of_line(&rest[close + 1..])?;
    let inner = &rest[1..close];
    if inner.bytes().all(|b| b == b' ') {
        return Some(Value::Sequence(Vec::new()));
    }
    inner
        .split(',')
        .map(|item| {
            let word = item.trim_matches(' ');
            let b = word.as_bytes();
            let signed = matches!(b.first(), Some(b'-' | b'+'));
            let word_ok = !b.is_empty()
                && b.iter().all(|&c| {
                    c.is_ascii_alphanumeric() || matches!(c, b'.' | b'/' | b'_' | b'+' | b'-')
                })
                && (!signed || b.get(1).is_some_and(|&c| c.is_ascii_digit() || c == b'.'));
            if word_ok {
                resolve(word)
            } else {
                None
            }
        })
        .collect::<Option<Vec<Value>>>()
        .map(Value::Sequence)
}

/// What may follow a node on its line: spaces, then a comment after at least one of them.
fn end_of_line(after: &str) -> Option<()> {
    let trimmed = after.trim_start_matches(' ');
    (trimmed.is_empty() || (trimmed.starts_with('#') && trimmed.len() < after.len())).then_some(())
}

/// A one-line quoted scalar at the start of `s`: its text and what follows the closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let b = s.as_bytes();
    let quote = b[0];
    let mut out = String::new();
    let mut i = 1;
    loop {
        let c = *b.get(i)?;
        i += 1;
        if c == quote {
            if quote == b'\'' && b.get(i) == Some(&b'\'') {
                out.push('\'');
                i += 1;
                continue;
            }
            return Some((out, &s[i..]));
        }
        if c == b'\\' && quote == b'"' {
            let e = *b.get(i)?;
            i += 1;
            let simple = match e {
                b'\\' => '\\',
                b'"' => '"',
                b'/' => '/',
                b' ' => ' ',
                b'n' => '\n',
                b't' => '\t',
                b'r' => '\r',
                b'0' => '\0',
                b'a' => '\x07',
                b'b' => '\x08',
                b'v' => '\x0b',
                b'f' => '\x0c',
                b'e' => '\x1b',
                b'x' | b'u' | b'U' => {
                    let n = match e {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let digits = s.get(i..i + n)?;
                    if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
                        return None;
                    }
                    i += n;
                    char::from_u32(u32::from_str_radix(digits, 16).ok()?)?
                }
                _ => return None,
            };
            out.push(simple);
            continue;
        }
        out.push(c as char);
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
