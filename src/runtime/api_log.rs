//! Script functions for talking to the user: `log`, `warn`, `fail`, `is_tty`, `prompt`.

use std::io::{BufRead, IsTerminal, Write};

use rhai::{Dynamic, Engine, EvalAltResult, FuncRegistration, Position};

use super::ScriptError;
use crate::error::Hinted;

fn fail(message: &str, hints: Vec<String>) -> Result<(), Box<EvalAltResult>> {
    Err(Box::new(EvalAltResult::ErrorRuntime(
        Dynamic::from(ScriptError(Hinted {
            message: message.to_string(),
            hints,
        })),
        Position::NONE,
    )))
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("log")
        .with_comments(["/// Prints a line on stderr (stdout is kept for data)."])
        .register_into_engine(engine, |msg: &str| eprintln!("{msg}"));
    FuncRegistration::new("warn")
        .with_comments(["/// Prints `WARN: <msg>` on stderr."])
        .register_into_engine(engine, |msg: &str| eprintln!("WARN: {msg}"));
    FuncRegistration::new("out")
        .with_comments(["/// Prints text on stdout, as is."])
        .register_into_engine(engine, |text: &str| {
            print!("{text}");
            let _ = std::io::stdout().flush();
        });
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message."])
        .register_into_engine(engine, |msg: &str| fail(msg, Vec::new()));
    FuncRegistration::new("fail")
        .with_comments(["/// Stops the script with an error message and a hint."])
        .register_into_engine(engine, |msg: &str, hint: &str| {
            fail(msg, vec![hint.to_string()])
        });
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
