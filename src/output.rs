//! Writing data to stdout: when the reader went away (`talm get ... | head`), talm ends quietly
//! with success, as a Unix filter does, instead of panicking or printing an error.

use std::io::Write;

/// Stdout was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed by its reader")]
pub struct Closed;

/// Writes `text` to stdout and flushes; a closed pipe is [`Closed`].
pub fn write(text: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write to stdout")),
    }
}

/// Whether an error is (or was caused by) a closed stdout.
pub fn is_closed(err: &anyhow::Error) -> bool {
    err.chain().any(|c| c.is::<Closed>())
}
