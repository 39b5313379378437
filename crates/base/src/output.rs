//! Writing to stdout (data) and stderr (messages). When the reader of stdout went away
//! (`talm get ... | head`), talm ends quietly with success, as a Unix filter does, instead of
//! panicking or printing an error. While a `parallel()` item runs (see `crate::progress`),
//! its lines carry its node (`NODE: line`) when its call runs several items, and on a terminal
//! they are printed above the progress lines; every line goes out whole, in one write.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use crate::progress::{self, Item};

/// Stdout was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct Closed;

fn raw_out(text: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Writes to stdout without tearing the progress lines of `item` (drawn on stderr: only a
/// stdout on a terminal can tear them).
fn out_beside(item: &Item, text: &[u8]) -> anyhow::Result<()> {
    match item.board() {
        Some(b) if std::io::stdout().is_terminal() => b.suspend(|| raw_out(text)),
        _ => raw_out(text),
    }
}

/// Writes `text` to stdout and flushes; a closed pipe is [`Closed`]. During a `parallel` item
/// whose lines carry its node, only whole lines go out, each prefixed (the rest waits for its
/// line end, or for the item's end).
pub fn write(text: &[u8]) -> anyhow::Result<()> {
    match progress::current() {
        None => raw_out(text),
        Some(item) => write_lines(&item, text, false),
    }
}

/// `text` from `item` to stdout: with a prefix, its whole lines (and with `last`, the rest as a
/// line of its own); otherwise as is.
pub fn write_lines(item: &Arc<Item>, text: &[u8], last: bool) -> anyhow::Result<()> {
    let Some(prefix) = item.prefix() else {
        return out_beside(item, text);
    };
    let whole = take_lines(&mut item.partial(), text, last);
    if whole.is_empty() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&whole);
    let text = text.strip_suffix('\n').unwrap_or(&text);
    out_beside(item, progress::prefixed(&prefix, text).as_bytes())
}

/// Adds `text` to what waits in `partial` and takes out its whole lines (with `last`, all of
/// it); the rest stays.
fn take_lines(partial: &mut Vec<u8>, text: &[u8], last: bool) -> Vec<u8> {
    partial.extend_from_slice(text);
    let cut = if last {
        partial.len()
    } else {
        partial
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |end| end + 1)
    };
    partial.drain(..cut).collect()
}

/// Writes a message and a line end to stderr, in one write (`eprintln!` for talm's messages):
/// during a `parallel` item, each of its lines carries the item's node when its call runs
/// several items, and on a terminal it is printed above the progress lines.
pub fn err(text: &str) {
    let (block, board) = match progress::current() {
        None => (format!("{text}\n"), None),
        Some(item) => {
            let block = match item.prefix() {
                Some(p) => progress::prefixed(&p, text),
                None => format!("{text}\n"),
            };
            (block, item.board().cloned())
        }
    };
    if let Some(b) = board {
        if !b.is_hidden() && b.println(block.trim_end_matches('\n')).is_ok() {
            return;
        }
    }
    let _ = std::io::stderr().lock().write_all(block.as_bytes());
}

/// Whether an error is (or was caused by) a closed stdout.
pub fn is_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.is::<Closed>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::{Group, Label};

    #[test]
    fn stdout_text_waits_for_its_line_end() {
        let mut p = Vec::new();
        assert_eq!(take_lines(&mut p, b"half", false), b"");
        assert_eq!(take_lines(&mut p, b" line\nnext", false), b"half line\n");
        assert_eq!(p, b"next");
        assert_eq!(take_lines(&mut p, b" one", true), b"next one");
        assert!(p.is_empty());
    }

    #[test]
    fn an_item_of_several_keeps_its_line_until_it_ends() {
        let g = Group::new(
            vec![Label::Node("a".into()), Label::Node("b".into())],
            false,
        );
        let w = g.start(0);
        write(b"no line end yet").unwrap();
        let item = progress::current().unwrap();
        assert_eq!(&*item.partial(), b"no line end yet");
        item.partial().clear();
        drop(w);
        assert!(progress::current().is_none());
    }

    #[test]
    fn stdout_outside_items_is_written_as_is() {
        // No current item: the plain path (writes to the test's stdout).
        assert!(progress::current().is_none());
        write(b"").unwrap();
    }
}
