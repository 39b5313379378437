//! Whole lines from the chunks a node streams, bounded: a line longer than 64 KiB is handed
//! on in pieces (never splitting a character), and a tail keeps only its last lines.

/// Longest line held back waiting for its newline: a longer one is handed on in pieces of this
/// size, so a node that never ends its line cannot make talm grow without bound.
const MAX_LINE: usize = 64 << 10;

/// Splits chunks into whole lines (a chunk may end mid-line); a line longer than `MAX_LINE` is
/// cut into pieces (at a character boundary when the text is UTF-8).
#[derive(Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    /// How many leading bytes of `buf` are known to hold no newline (not searched again).
    clean: usize,
}

impl Lines {
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut from = 0;
        let mut skip = std::mem::take(&mut self.clean);
        loop {
            let rest = &self.buf[from..];
            let window = &rest[..rest.len().min(MAX_LINE + 1)];
            let newline = window[skip.min(window.len())..]
                .iter()
                .position(|b| *b == b'\n')
                .map(|i| i + skip);
            skip = 0;
            let cut = match newline {
                Some(i) => {
                    out.push(String::from_utf8_lossy(&rest[..i]).into_owned());
                    i + 1
                }
                None if rest.len() > MAX_LINE => {
                    let piece = piece_end(&rest[..MAX_LINE]);
                    out.push(String::from_utf8_lossy(&rest[..piece]).into_owned());
                    piece
                }
                None => break,
            };
            from += cut;
        }
        self.buf.drain(..from);
        self.clean = self.buf.len();
        out
    }

    pub(crate) fn rest(&mut self) -> Option<String> {
        self.clean = 0;
        (!self.buf.is_empty())
            .then(|| String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned())
    }
}

/// Where a piece of at most `bytes.len()` bytes ends: before a character the cut would split.
fn piece_end(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() && e.valid_up_to() > 0 => e.valid_up_to(),
        _ => bytes.len(),
    }
}

/// The last lines of a stream, at most a given number kept.
pub(crate) struct Last(std::collections::VecDeque<String>, usize);

impl Last {
    pub(crate) fn new(n: usize) -> Last {
        Last(std::collections::VecDeque::new(), n)
    }

    /// The lines kept, oldest first.
    pub(crate) fn into_lines(self) -> impl Iterator<Item = String> {
        self.0.into_iter()
    }

    pub(crate) fn extend(&mut self, lines: impl IntoIterator<Item = String>) {
        for l in lines {
            if self.0.len() == self.1 {
                self.0.pop_front();
            }
            self.0.push_back(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_become_lines() {
        let mut l = Lines::default();
        assert_eq!(l.push(b"a\nb"), ["a"]);
        assert_eq!(l.push(b"c\n\nd"), ["bc", ""]);
        assert_eq!(l.rest().as_deref(), Some("d"));
        assert_eq!(l.rest(), None);
    }

    #[test]
    fn a_line_without_end_is_cut_into_bounded_pieces() {
        let mut l = Lines::default();
        assert!(l.push(&[b'x'; MAX_LINE]).is_empty());
        let out = l.push(b"yz");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0], "x".repeat(MAX_LINE));
        assert_eq!(l.buf, b"yz");
        // A piece never splits a character: the cut comes before it.
        let mut l = Lines::default();
        let mut text = vec![b'a'; MAX_LINE - 1];
        text.extend_from_slice("é\n".as_bytes());
        let out = l.push(&text);
        assert_eq!(out, ["a".repeat(MAX_LINE - 1), "é".to_string()]);
        assert_eq!(l.rest(), None);
    }

    #[test]
    fn only_the_last_lines_are_kept() {
        let mut last = Last::new(2);
        last.extend(["1", "2", "3"].map(String::from));
        assert_eq!(Vec::from(last.0), ["2", "3"]);
    }
}
