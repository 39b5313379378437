//! A YAML text as a tree of located nodes — each node's byte range, style and key path — so
//! values can be replaced or entries removed in place, keeping comments, order and quoting.

use saphyr_parser::{Event, Parser, ScalarStyle};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// A key path as people write it: `cluster.secret`, `list[0].name`.
pub fn path_text(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// How a scalar is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Plain,
    Single,
    Double,
    Literal,
    Folded,
}

/// A scalar: its value, style, core-schema tag and where its own text lies.
#[derive(Debug, Clone)]
pub struct Scalar {
    pub value: String,
    pub style: Style,
    /// The suffix of a `!!` tag written on it (`str`, `int`...).
    pub tag: Option<String>,
    /// Byte range of the scalar's text: quotes included, block scalars from their indicator,
    /// anchors and tags before it left out.
    pub start: usize,
    pub end: usize,
    /// The column block content under it is indented at.
    pub indent: usize,
    /// Inside a flow collection (`[...]`, `{...}`), where block scalars cannot go.
    pub in_flow: bool,
}

/// What a node is.
#[derive(Debug, Clone)]
pub enum Kind {
    Scalar(Scalar),
    Seq(Vec<Node>),
    /// Entries with their key scalar.
    Map(Vec<(Scalar, Node)>),
    Alias,
}

/// A node with the byte range of all its text (`start` at its first token, anchors included;
/// `end` after its last token).
#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub flow: bool,
}

/// The documents of a text.
#[derive(Debug, Clone)]
pub struct Located {
    pub docs: Vec<Node>,
}

/// Why a text could not be located (the callers fall back to re-encoding).
#[derive(Debug, Clone)]
pub struct Unlocatable(pub String);

struct Walker<'a> {
    text: &'a str,
    events: Vec<(Event<'a>, usize, usize, usize)>,
    pos: usize,
}

fn style(s: ScalarStyle) -> Style {
    match s {
        ScalarStyle::SingleQuoted => Style::Single,
        ScalarStyle::DoubleQuoted => Style::Double,
        ScalarStyle::Literal => Style::Literal,
        ScalarStyle::Folded => Style::Folded,
        _ => Style::Plain,
    }
}

impl<'a> Walker<'a> {
    fn new(text: &'a str) -> Result<Walker<'a>, Unlocatable> {
        let mut bytes: Vec<usize> = text.char_indices().map(|(b, _)| b).collect();
        bytes.push(text.len());
        let mut events = Vec::new();
        for item in Parser::new_from_str(text) {
            let (ev, span) = item.map_err(|e| Unlocatable(e.to_string()))?;
            let at = |i: usize| bytes.get(i).copied().unwrap_or(text.len());
            events.push((
                ev,
                at(span.start.index()),
                at(span.end.index()),
                span.start.col(),
            ));
        }
        Ok(Walker {
            text,
            events,
            pos: 0,
        })
    }

    fn next(&mut self) -> Result<(Event<'a>, usize, usize, usize), Unlocatable> {
        let e = self
            .events
            .get(self.pos)
            .cloned()
            .ok_or_else(|| Unlocatable("unexpected end of events".into()))?;
        self.pos += 1;
        Ok(e)
    }

    fn peek_is_end(&self) -> bool {
        matches!(
            self.events.get(self.pos),
            Some((Event::MappingEnd | Event::SequenceEnd, ..)) | None
        )
    }

    /// Skips anchors (`&a`) and tags (`!t`) at the start of a flow scalar's span.
    fn after_properties(&self, mut at: usize, end: usize) -> usize {
        let t = self.text.as_bytes();
        while at < end && (t[at] == b'&' || t[at] == b'!') {
            while at < end && !t[at].is_ascii_whitespace() {
                at += 1;
            }
            while at < end && t[at].is_ascii_whitespace() {
                at += 1;
            }
        }
        at
    }

    /// The `|`/`>` indicator of a block scalar whose content starts at `content`, searched after
    /// `after` (the end of the token before it).
    fn block_indicator(&self, after: usize, content: usize) -> usize {
        let region = &self.text[after.min(content)..content];
        region
            .find(['|', '>'])
            .map(|i| after.min(content) + i)
            .unwrap_or(content)
    }

    fn scalar(
        &self,
        ev: (Event<'a>, usize, usize, usize),
        prev_end: usize,
        indent: usize,
        in_flow: bool,
    ) -> Result<(Scalar, usize), Unlocatable> {
        let (Event::Scalar(value, st, _, tag), start, end, _) = ev else {
            return Err(Unlocatable("expected a scalar".into()));
        };
        let st = style(st);
        let own = match st {
            Style::Literal | Style::Folded => self.block_indicator(prev_end, start),
            _ => self.after_properties(start, end),
        };
        // The parser's range of a quoted scalar may run on over blanks and a comment.
        let end = match st {
            Style::Single | Style::Double => quoted_end(self.text, own, st).unwrap_or(end),
            _ => end,
        };
        let tag = tag.and_then(|t| {
            (t.handle == "tag:yaml.org,2002:" || t.handle == "!!").then(|| t.suffix.clone())
        });
        Ok((
            Scalar {
                value: value.into_owned(),
                style: st,
                tag,
                start: own,
                end,
                indent,
                in_flow,
            },
            start,
        ))
    }

    /// Reads one node; `indent` is the column block content below it would use.
    fn node(&mut self, prev_end: usize, indent: usize, in_flow: bool) -> Result<Node, Unlocatable> {
        let ev = self.next()?;
        match &ev.0 {
            Event::Scalar(..) => {
                let end = ev.2;
                let (s, start) = self.scalar(ev, prev_end, indent, in_flow)?;
                let start = start.min(s.start);
                Ok(Node {
                    kind: Kind::Scalar(s),
                    start,
                    end,
                    flow: in_flow,
                })
            }
            Event::Alias(_) => Ok(Node {
                kind: Kind::Alias,
                start: ev.1,
                end: ev.2,
                flow: in_flow,
            }),
            Event::SequenceStart(..) => {
                let flow = self.text[ev.1..].starts_with('[');
                let start = ev.1;
                let mut items = Vec::new();
                let mut last = if flow { ev.2 } else { ev.1 };
                while !self.peek_is_end() {
                    let col = self.events.get(self.pos).map(|e| e.3).unwrap_or(indent);
                    let item = self.node(last, col, in_flow || flow)?;
                    last = last.max(item.end);
                    items.push(item);
                }
                let (_, _, end_end, _) = self.next()?;
                let end = if flow { end_end } else { last };
                Ok(Node {
                    kind: Kind::Seq(items),
                    start,
                    end,
                    flow,
                })
            }
            Event::MappingStart(..) => {
                let flow = self.text[ev.1..].starts_with('{');
                let start = ev.1;
                let mut entries = Vec::new();
                let mut last = if flow { ev.2 } else { ev.1 };
                while !self.peek_is_end() {
                    let kev = self.next()?;
                    if !matches!(kev.0, Event::Scalar(..)) {
                        return Err(Unlocatable("a mapping key that is not a scalar".into()));
                    }
                    let key_col = kev.3;
                    let (key, _) = self.scalar(kev, last, indent, in_flow || flow)?;
                    let value = self.node(key.end, key_col + 2, in_flow || flow)?;
                    last = last.max(value.end).max(key.end);
                    entries.push((key, value));
                }
                let (_, _, end_end, _) = self.next()?;
                let end = if flow { end_end } else { last };
                Ok(Node {
                    kind: Kind::Map(entries),
                    start,
                    end,
                    flow,
                })
            }
            other => Err(Unlocatable(format!("unexpected event {other:?}"))),
        }
    }
}

/// The byte after the closing quote of the quoted scalar starting at `start`.
fn quoted_end(text: &str, start: usize, style: Style) -> Option<usize> {
    let b = text.as_bytes();
    let quote = if style == Style::Double { b'"' } else { b'\'' };
    if b.get(start) != Some(&quote) {
        return None;
    }
    let mut i = start + 1;
    while i < b.len() {
        match b[i] {
            b'\\' if style == Style::Double => i += 2,
            q if q == quote => {
                if style == Style::Single && b.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return Some(i + 1);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Locates every node of a (multi-document) YAML text.
pub fn locate(text: &str) -> Result<Located, Unlocatable> {
    let mut w = Walker::new(text)?;
    let mut docs = Vec::new();
    while let Some((ev, ..)) = w.events.get(w.pos).cloned() {
        match ev {
            Event::StreamStart | Event::DocumentEnd | Event::Nothing => w.pos += 1,
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                w.pos += 1;
                let doc = w.node(0, 2, false)?;
                docs.push(doc);
            }
            other => return Err(Unlocatable(format!("unexpected event {other:?}"))),
        }
    }
    Ok(Located { docs })
}

/// Every scalar in value position (keys left out) with its path, in document order.
pub fn value_scalars(node: &Node) -> Vec<(Vec<Seg>, &Scalar)> {
    fn walk<'n>(n: &'n Node, path: &mut Vec<Seg>, out: &mut Vec<(Vec<Seg>, &'n Scalar)>) {
        match &n.kind {
            Kind::Scalar(s) => out.push((path.clone(), s)),
            Kind::Seq(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Seg::Index(i));
                    walk(item, path, out);
                    path.pop();
                }
            }
            Kind::Map(entries) => {
                for (k, v) in entries {
                    path.push(Seg::Key(k.value.clone()));
                    walk(v, path, out);
                    path.pop();
                }
            }
            Kind::Alias => {}
        }
    }
    let mut out = Vec::new();
    walk(node, &mut Vec::new(), &mut out);
    out
}

/// What an encrypted file cannot keep in place, found where it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsealable {
    /// A mapping key that is a list or a mapping (`? [a, b]`).
    ComplexKey,
    /// A tag outside the core schema (`!vault`).
    LocalTag,
}

/// The line (1-based) of the first `what` in `text`, if the parser reaches one.
pub fn first_line_of(text: &str, what: Unsealable) -> Option<usize> {
    // Per open collection: for a mapping, whether its next node is a key.
    let mut open: Vec<Option<bool>> = Vec::new();
    for item in Parser::new_from_str(text) {
        let (ev, span) = item.ok()?;
        let tag = match &ev {
            Event::Scalar(_, _, _, t) | Event::SequenceStart(_, t) | Event::MappingStart(_, t) => {
                t.as_ref()
            }
            _ => None,
        };
        let starts_node = matches!(
            ev,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::SequenceStart(..)
                | Event::MappingStart(..)
        );
        let is_key = starts_node
            && match open.last_mut() {
                Some(Some(next_is_key)) => {
                    let k = *next_is_key;
                    *next_is_key = !k;
                    k
                }
                _ => false,
            };
        let found = match what {
            Unsealable::ComplexKey => {
                is_key && matches!(ev, Event::SequenceStart(..) | Event::MappingStart(..))
            }
            Unsealable::LocalTag => {
                tag.is_some_and(|t| t.handle != "!!" && t.handle != "tag:yaml.org,2002:")
            }
        };
        if found {
            return Some(span.start.line());
        }
        match ev {
            Event::SequenceStart(..) => open.push(None),
            Event::MappingStart(..) => open.push(Some(true)),
            Event::SequenceEnd | Event::MappingEnd => {
                open.pop();
            }
            _ => {}
        }
    }
    None
}

/// Replaces byte ranges of `text`; ranges must not overlap.
pub fn splice(text: &str, mut edits: Vec<(usize, usize, String)>) -> String {
    edits.sort_by_key(|e| e.0);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (s, e, with) in edits {
        if s < at {
            continue;
        }
        out.push_str(&text[at..s]);
        out.push_str(&with);
        at = e;
    }
    out.push_str(&text[at..]);
    out
}

/// The start of the line holding byte `at`.
pub fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

/// The byte after the line break ending the line that holds the byte before `at` (or the text's
/// end), when only blanks or a comment follow `at` on that line.
pub fn line_end_after(text: &str, at: usize) -> Option<usize> {
    if at > 0 && text.as_bytes().get(at - 1) == Some(&b'\n') {
        return Some(at);
    }
    let rest = &text[at..];
    let (line, next) = match rest.find('\n') {
        Some(i) => (&rest[..i], at + i + 1),
        None => (rest, text.len()),
    };
    let tail = line.trim_start();
    let comment = tail.starts_with('#') && (line.len() > tail.len() || at == line_start(text, at));
    (tail.is_empty() || comment).then_some(next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalars(text: &str) -> Vec<(String, String, Style, String)> {
        let l = locate(text).unwrap();
        l.docs
            .iter()
            .flat_map(value_scalars)
            .map(|(p, s)| {
                (
                    path_text(&p),
                    s.value.clone(),
                    s.style,
                    text[s.start..s.end].to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn scalars_know_their_place() {
        let text = "# c\na: plain # t\nb: \"dq é\"  # c\nc: 'sq'\nd: |\n  lit\n  two\ne: &x !!str 5\nf:\n  - x\n  - {k: v}\ng: *x\nh:\n";
        let got = scalars(text);
        let want = [
            ("a", "plain", Style::Plain, "plain"),
            ("b", "dq é", Style::Double, "\"dq é\""),
            ("c", "sq", Style::Single, "'sq'"),
            ("d", "lit\ntwo\n", Style::Literal, "|\n  lit\n  two\n"),
            ("e", "5", Style::Plain, "5"),
            ("f[0]", "x", Style::Plain, "x"),
            ("f[1].k", "v", Style::Plain, "v"),
            ("h", "", Style::Plain, ""),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert_eq!((g.0.as_str(), g.1.as_str(), g.2, g.3.as_str()), w);
        }
    }

    #[test]
    fn nodes_span_their_text_and_documents_split() {
        let text = "a:\n  b: 1\n  c: [1, 2]\nz: 2\n---\n- x\n- y: 1\n  w: 2\n";
        let l = locate(text).unwrap();
        assert_eq!(l.docs.len(), 2);
        let Kind::Map(entries) = &l.docs[0].kind else {
            panic!()
        };
        assert_eq!(
            &text[entries[0].1.start..entries[0].1.end],
            "b: 1\n  c: [1, 2]"
        );
        let Kind::Seq(items) = &l.docs[1].kind else {
            panic!()
        };
        assert_eq!(&text[items[1].start..items[1].end], "y: 1\n  w: 2");
        assert_eq!(
            splice(text, vec![(text.len() - 2, text.len() - 1, "3".into())])
                .lines()
                .last(),
            Some("  w: 3")
        );
    }

    #[test]
    fn unsealable_parts_are_found_by_line() {
        let complex = "a: 1\n? [x, y]\n: [c]\n";
        assert_eq!(first_line_of(complex, Unsealable::ComplexKey), Some(2));
        let nested = "a:\n  b: {k: v}\n  ? {x: s}\n  : v\n";
        assert_eq!(first_line_of(nested, Unsealable::ComplexKey), Some(3));
        assert_eq!(
            first_line_of("a: [b, {c: d}]\n", Unsealable::ComplexKey),
            None
        );
        let tagged = "a: !!str 1\nb:\n  c: !vault x\n";
        assert_eq!(first_line_of(tagged, Unsealable::LocalTag), Some(3));
        assert_eq!(first_line_of("a: !!int 1\n", Unsealable::LocalTag), None);
    }

    #[test]
    fn line_ends() {
        let t = "a: 1 # c\nb: 2\n";
        assert_eq!(line_end_after(t, 4), Some(9));
        assert_eq!(line_end_after(t, 1), None);
        assert_eq!(line_start(t, 11), 9);
    }
}
