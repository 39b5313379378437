//! `talm repl`: an interactive Rhai session over the talm API (rustyline): history in a file,
//! tab completion of API functions and of the session's variables, multi-line input while
//! brackets are open, `help` / `help NAME` from the API's doc comments, maps and arrays printed
//! as YAML, variables (and node connections), functions and imports kept between inputs
//! (`crate::runtime::repl::memory`), an error shown under its input with a caret, Ctrl-C drops the line
//! being typed or stops the line being run (playbook limits; `talm repl --max-ops N`).

mod memory;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Result;
use rhai::{Dynamic, Engine, Scope};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Context, Helper, Highlighter, Hinter};

use crate::runtime::repl::memory::{caret, Memory};

/// One documented API function: its signatures and doc comments.
#[derive(Default, Clone)]
struct Doc {
    signatures: Vec<String>,
    comments: Vec<String>,
}

fn collect_docs(json: &serde_json::Value, prefix: &str, out: &mut BTreeMap<String, Doc>) {
    if let Some(fns) = json.get("functions").and_then(|f| f.as_array()) {
        for f in fns {
            let Some(name) = f.get("name").and_then(|n| n.as_str()) else {
                continue;
            };
            if name.starts_with("anon$") || name.contains('$') {
                continue;
            }
            let full = format!("{prefix}{name}");
            let d = out.entry(full).or_default();
            if let Some(sig) = f.get("signature").and_then(|s| s.as_str()) {
                let sig = tidy(sig)
                    .replace("&mut ", "")
                    .replace("ImmutableString", "string")
                    .replace("&str", "string")
                    .replace("i64", "int")
                    .replace("f64", "float");
                d.signatures.push(format!("{prefix}{sig}"));
            }
            for c in f
                .get("docComments")
                .and_then(|c| c.as_array())
                .into_iter()
                .flatten()
            {
                if let Some(text) = c.as_str() {
                    let line = text.trim_start_matches("///").trim().to_string();
                    if !d.comments.contains(&line) {
                        d.comments.push(line);
                    }
                }
            }
        }
    }
    if let Some(mods) = json.get("modules").and_then(|m| m.as_object()) {
        for (name, m) in mods {
            collect_docs(m, &format!("{prefix}{name}::"), out);
        }
    }
}

/// A Rust type in a signature as a script writer knows it: fallible results by their value,
/// standard-library paths by their short names.
fn tidy(sig: &str) -> String {
    let mut s = sig.to_string();
    if let Some(i) = s.find("-> core::result::Result<") {
        let inner = &s[i + "-> core::result::Result<".len()..];
        let value = inner
            .split(",alloc::boxed::Box<")
            .next()
            .unwrap_or(inner)
            .to_string();
        s = format!("{}-> {value}", &s[..i]);
    }
    s.replace("alloc::string::String", "string")
        .replace("rhai::types::dynamic::Dynamic", "Dynamic")
        .replace(
            "smartstring::SmartString<smartstring::config::LazyCompact>",
            "string",
        )
        .replace("alloc::vec::Vec<rhai::types::dynamic::Dynamic>", "Array")
}

/// The API as `help` shows it (talm's functions, not Rhai's standard library).
fn api_docs(engine: &Engine) -> BTreeMap<String, Doc> {
    let mut out = BTreeMap::new();
    if let Ok(text) = engine.gen_fn_metadata_to_json(false) {
        if let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) {
            collect_docs(&json, "", &mut out);
        }
    }
    out
}

#[derive(Helper, Hinter, Highlighter)]
struct ReplHelper {
    names: Vec<String>,
    vars: Arc<Mutex<Vec<String>>>,
}

fn word_start(line: &str, pos: usize) -> usize {
    line[..pos]
        .rfind(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .map(|i| i + 1)
        .unwrap_or(0)
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let start = word_start(line, pos);
        let word = &line[start..pos];
        let vars = self.vars.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut seen = std::collections::BTreeSet::new();
        let pairs = vars
            .iter()
            .chain(self.names.iter())
            .filter(|n| n.starts_with(word) && seen.insert(n.to_string()))
            .map(|n| Pair {
                display: n.clone(),
                replacement: n.clone(),
            })
            .collect();
        Ok((start, pairs))
    }
}

/// Open brackets, braces and parentheses outside strings and comments.
fn open_brackets(text: &str) -> i64 {
    let mut depth = 0i64;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '`' | '\'') => quote = Some(c),
            (None, '/') if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth -= 1,
            _ => {}
        }
    }
    depth
}

impl Validator for ReplHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if open_brackets(ctx.input()) > 0 {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

fn history_file() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("TALM_REPL_HISTORY") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".talm_history"))
}

/// A value as the REPL prints it: maps and arrays as YAML, strings as they are.
pub fn show(v: &Dynamic) -> String {
    if v.is_unit() {
        return String::new();
    }
    if v.is_string() {
        return v.to_string();
    }
    if v.is_map() || v.is_array() {
        if let Ok(y) = rhai::serde::from_dynamic::<serde_yaml_ng::Value>(v) {
            return crate::yaml::to_string(&y).trim_end().to_string();
        }
    }
    v.to_string()
}

fn help(docs: &BTreeMap<String, Doc>, topic: &str) -> String {
    if topic.is_empty() {
        let mut out = String::from("talm API (help NAME for details; Tab completes):\n");
        for (name, d) in docs {
            let first = d.comments.first().cloned().unwrap_or_default();
            out.push_str(&format!("  {name:<28} {first}\n"));
        }
        return out;
    }
    match docs.get(topic) {
        Some(d) => {
            let mut out = String::new();
            for s in &d.signatures {
                out.push_str(&format!("{s}\n"));
            }
            for c in &d.comments {
                out.push_str(&format!("    {c}\n"));
            }
            out
        }
        None => format!("no API function {topic:?}; `help` lists them\n"),
    }
}

/// `talm help api [NAME]`: the API listing, or one function's signatures and docs.
pub fn api_help(topic: &str) -> String {
    help(
        &api_docs(&crate::runtime::engine(
            &crate::runtime::Limits::PLAYBOOK,
            &crate::runtime::Session::default(),
        )),
        topic,
    )
}

/// Evaluates one input with what the session remembers; a Ctrl-C while it runs stops it and
/// the session goes on.
fn eval_line(engine: &Engine, limits: &crate::runtime::Limits, memory: &mut Memory, input: &str) {
    use crate::sandbox::interrupt;
    interrupt::clear();
    let result = {
        let _running = interrupt::running();
        memory.eval(engine, input)
    };
    interrupt::clear();
    match result {
        Ok(v) => {
            let text = show(&v);
            if !text.is_empty() {
                println!("{text}");
            }
        }
        Err(e) => {
            let shown = caret(input, e.position()).unwrap_or_default();
            let err = crate::sandbox::from_rhai_within(*e, "repl", limits);
            eprint!("{shown}{}", crate::error::render(&err));
        }
    }
}

/// Runs the session on stdin/stdout until end of input; returns the exit code.
pub fn run(
    args: rhai::Map,
    limits: &crate::runtime::Limits,
    session: &crate::runtime::Session,
) -> Result<i32> {
    crate::sandbox::interrupt::install();
    let engine = crate::runtime::engine(limits, session);
    let docs = api_docs(&engine);
    let mut scope = Scope::new();
    scope.push_constant("ARGS", args);
    let mut memory = Memory::new(scope);
    let vars = Arc::new(Mutex::new(Vec::new()));
    let mut names: Vec<String> = docs.keys().cloned().collect();
    names.extend(
        [
            "help", "let", "const", "fn", "if", "else", "for", "while", "loop", "return",
        ]
        .map(String::from),
    );
    let mut rl: rustyline::Editor<ReplHelper, rustyline::history::DefaultHistory> =
        rustyline::Editor::new()?;
    rl.set_helper(Some(ReplHelper {
        names,
        vars: Arc::clone(&vars),
    }));
    let history = history_file();
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    eprintln!("talm repl: Rhai with the talm API. `help` lists it, Tab completes, Ctrl-D ends.");
    loop {
        match rl.readline("talm> ") {
            Ok(line) => {
                let input = line.trim();
                if input.is_empty() {
                    continue;
                }
                let _ = rl.add_history_entry(input);
                if input == "help" || input.starts_with("help ") {
                    print!("{}", help(&docs, input.trim_start_matches("help").trim()));
                    continue;
                }
                if input == "exit" || input == "quit" {
                    break;
                }
                eval_line(&engine, limits, &mut memory, input);
                let mut names: Vec<String> = memory
                    .scope
                    .iter()
                    .map(|(name, _, _)| name.to_string())
                    .collect();
                names.extend(memory.function_names());
                *vars.lock().unwrap_or_else(|e| e.into_inner()) = names;
            }
            Err(ReadlineError::Interrupted) => {
                eprintln!("^C");
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_decide_multi_line_input() {
        assert_eq!(open_brackets("let m = #{ a: [1, 2"), 2);
        assert_eq!(open_brackets("let s = \"{[(\"; // {"), 0);
        assert_eq!(open_brackets("fn f() {\n 1\n}"), 0);
    }

    #[test]
    fn help_comes_from_the_api_docs() {
        let docs = api_docs(&crate::runtime::engine(
            &crate::runtime::Limits::PLAYBOOK,
            &crate::runtime::Session::default(),
        ));
        assert!(
            docs.contains_key("node")
                && docs.contains_key("talos::targets")
                && docs.contains_key("parallel")
        );
        let h = help(&docs, "wait_ready");
        assert!(
            h.starts_with("wait_ready(_: Node, _: int) -> bool\n"),
            "{h}"
        );
        assert!(help(&docs, "").contains("  discover "));
    }
}
