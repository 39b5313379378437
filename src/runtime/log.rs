//! Script functions for talking to the user: `log`, `out`, `is_tty`, `prompt` (`warn` and
//! `fail` come from the sandbox).

use std::io::{BufRead, IsTerminal, Write};

use rhai::{Engine, FuncRegistration};

/// A line on stderr, as `log(msg)` prints it.
pub fn line(msg: &str) {
    crate::output::err(&crate::printable::printable(&crate::mask::scrub(msg)))
}

/// Text on stdout, as `out(text)` prints it.
pub fn out(text: &str) -> anyhow::Result<()> {
    crate::output::write(crate::printable::printable(text).as_bytes())
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("log")
        .with_comments(["/// Prints a line on stderr (stdout is kept for data)."])
        .register_into_engine(engine, line);
    FuncRegistration::new("out")
        .with_comments(["/// Prints text on stdout, control characters but line breaks and tabs escaped (`\\x1b`): a node's words cannot drive the terminal."])
        .register_into_engine(engine, |text: &str| crate::runtime::native(|| out(text)));
    FuncRegistration::new("is_tty")
        .with_comments(["/// Whether stdin is an interactive terminal."])
        .register_into_engine(engine, || std::io::stdin().is_terminal());
    FuncRegistration::new("prompt")
        .with_comments(["/// Asks a question on stderr and returns the answer line, trimmed."])
        .register_into_engine(engine, |question: &str| -> String {
            eprint!("{question}");
            let _ = std::io::stderr().flush();
            let mut line = String::new();
            let _ = std::io::stdin().lock().read_line(&mut line);
            line.trim().to_string()
        });
}
