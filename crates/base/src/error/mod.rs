//! User-facing errors: a message with `hint:` lines, and how the binary prints any error.

use std::fmt;

pub mod node;

mod local_write;

pub use local_write::{local_write, Left};

/// An error the user can act on: what went wrong plus hints on what to do.
#[derive(Debug, Clone)]
pub struct Hinted {
    pub message: String,
    pub hints: Vec<String>,
}

impl fmt::Display for Hinted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Hinted {}

/// A command that ran and failed with an exit code of its own (a debug container's): talm
/// prints the message as any error and exits with `code`.
#[derive(Debug, Clone)]
pub struct Exit {
    pub code: i32,
    pub message: String,
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// The exit code an error asks talm to end with, when it is (or wraps) an [`Exit`].
pub fn exit_code(err: &anyhow::Error) -> Option<i32> {
    err.chain()
        .find_map(|c| c.downcast_ref::<Exit>())
        .map(|e| e.code)
}

/// An error with one hint.
pub fn hinted(message: impl Into<String>, hint: impl Into<String>) -> anyhow::Error {
    Hinted {
        message: message.into(),
        hints: vec![hint.into()],
    }
    .into()
}

/// An error without hints, for places that want to return a plain message.
pub fn plain(message: impl Into<String>) -> anyhow::Error {
    Hinted {
        message: message.into(),
        hints: Vec::new(),
    }
    .into()
}

/// A failure already told to the user where it happened (talosctl's `ERROR: ...` lines of a
/// log stream): the binary exits 1 and prints nothing more.
#[derive(Debug, Clone, Copy)]
pub struct Shown;

impl fmt::Display for Shown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the failure was shown above")
    }
}

impl std::error::Error for Shown {}

/// The hints an error in a chain carries: a `Hinted`'s, or a node failure's.
pub fn hints_of<'a>(cause: &'a (dyn std::error::Error + 'static)) -> &'a [String] {
    if let Some(h) = cause.downcast_ref::<Hinted>() {
        return &h.hints;
    }
    if let Some(n) = cause.downcast_ref::<node::NodeError>() {
        return &n.hints;
    }
    &[]
}

/// Renders an error as the binary prints it: the context chain on one line, then every hint
/// found anywhere in the chain on its own `hint:` line.
pub fn render(err: &anyhow::Error) -> String {
    let mut out = String::new();
    if err.chain().any(|c| c.is::<Shown>()) {
        return out;
    }
    let parts: Vec<String> = err.chain().map(|e| e.to_string()).collect();
    let mut line = String::new();
    for p in parts {
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&p);
    }
    out.push_str("Error: ");
    // Some libraries (Tera) start their messages with their own `error: `: said once. A node's
    // words in it are printed escaped.
    out.push_str(&crate::printable::printable(
        line.strip_prefix("error: ").unwrap_or(&line),
    ));
    out.push('\n');
    for cause in err.chain() {
        for hint in hints_of(cause) {
            out.push_str("hint: ");
            out.push_str(hint);
            out.push('\n');
        }
    }
    crate::mask::scrub(&out).into_owned()
}

/// The error flattened into one message with its hints, both passed through `f`.
pub fn rewrite(err: anyhow::Error, f: impl Fn(&str) -> String) -> anyhow::Error {
    let message = err
        .chain()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(": ");
    let hints = err
        .chain()
        .filter_map(|c| c.downcast_ref::<Hinted>())
        .flat_map(|h| h.hints.iter().map(|x| f(x)))
        .collect();
    Hinted {
        message: f(&message),
        hints,
    }
    .into()
}

/// Joins errors the way Talos (hashicorp multierror) prints them.
pub fn multierror(errs: &[String]) -> String {
    let head = if errs.len() == 1 {
        "1 error occurred:".to_string()
    } else {
        format!("{} errors occurred:", errs.len())
    };
    let mut out = head;
    out.push('\n');
    for e in errs {
        out.push_str("\t* ");
        out.push_str(e);
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_said_once() {
        let e = hinted("error: Unexpected end of input", "fix it");
        assert_eq!(render(&e), "Error: Unexpected end of input\nhint: fix it\n");
        let e = plain("errors: 2").context("loading");
        assert_eq!(render(&e), "Error: loading: errors: 2\n");
    }
    use anyhow::Context;

    #[test]
    fn render_prints_chain_and_hints() {
        let err = Err::<(), _>(hinted("inner", "do this"))
            .context("outer")
            .unwrap_err();
        assert_eq!(render(&err), "Error: outer: inner\nhint: do this\n");
    }
}
