//! Compiled scripts, kept for the life of the process: the bundled commands a playbook runs
//! once per node (and a playbook run again from the REPL) are parsed once. Keyed by the script's
//! name, the limits it compiles under and its full text, so an edited file is compiled afresh.
//! A one-shot command's script is compiled ahead on another thread ([`Upcoming`]).

use std::sync::Arc;

use rhai::{Engine, ParseError, AST};

use super::Limits;
use talm_base::memo::Memo;

static COMPILED: Memo<(String, Limits, String), Arc<AST>> = Memo::new(64);

/// The compiled `source` (named `name` in errors and positions), compiled by `engine` on first
/// use.
pub fn compile(
    engine: &Engine,
    limits: &Limits,
    name: &str,
    source: &str,
) -> Result<Arc<AST>, ParseError> {
    let key = (name.to_string(), limits.clone(), source.to_string());
    COMPILED.get_or_try(key, |_| {
        let mut ast = engine.compile(source)?;
        ast.set_source(name);
        Ok(Arc::new(ast))
    })
}

/// A script a command will run, compiled ahead on another thread while the command gets ready.
pub struct Upcoming {
    /// Its name in errors and positions.
    pub name: String,
    pub source: &'static str,
    /// The limits it will run under (they bound its parse too).
    pub limits: Limits,
}

impl Upcoming {
    /// Compiles the script into the kept ones, so its run finds it compiled. What a script
    /// parses to depends on the limits it is parsed under, not on the functions an engine
    /// registers (a call is looked up when it runs): a bare engine under the same limits makes
    /// the same tree.
    pub fn compile(&self) {
        let mut engine = Engine::new_raw();
        super::configure(&mut engine, &self.limits);
        // A syntax error is reported by the run, which compiles the script again.
        let _ = compile(&engine, &self.limits, &self.name, self.source);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_text_compiles_once_and_an_edit_compiles_again() {
        let engine = crate::sandbox::engine(&Limits::PLAYBOOK);
        let a = compile(&engine, &Limits::PLAYBOOK, "t-cache.rhai", "40 + 2").unwrap();
        let b = compile(&engine, &Limits::PLAYBOOK, "t-cache.rhai", "40 + 2").unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let c = compile(&engine, &Limits::PLAYBOOK, "t-cache.rhai", "40 + 3").unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(engine.eval_ast::<i64>(&c).unwrap(), 43);
        let d = compile(&engine, &Limits::TEMPLATE, "t-cache.rhai", "40 + 2").unwrap();
        assert!(!Arc::ptr_eq(&a, &d));
        assert_eq!(c.source(), Some("t-cache.rhai"));
    }

    #[test]
    fn a_script_compiled_ahead_is_the_one_its_run_takes() {
        let ahead = Upcoming {
            name: "t-ahead.rhai".into(),
            source: "fn twice(x) { x * 2 }\nlet n = ARGS.n;\ntwice(n) + text::base64_encode(\"a\").len()",
            limits: Limits::PLAYBOOK,
        };
        ahead.compile();
        let key = (
            ahead.name.clone(),
            Limits::PLAYBOOK,
            ahead.source.to_string(),
        );
        assert!(COMPILED.holds(&key), "kept after the compile ahead");
        let engine = crate::sandbox::engine(&Limits::PLAYBOOK);
        let kept = compile(&engine, &Limits::PLAYBOOK, &ahead.name, ahead.source).unwrap();
        let mut args = rhai::Map::new();
        args.insert("n".into(), rhai::Dynamic::from(20_i64));
        let out =
            crate::sandbox::eval_ast(&engine, &Limits::PLAYBOOK, &ahead.name, &kept, args).unwrap();
        assert_eq!(out.as_int().unwrap(), 44, "40 + the length of YQ==");
        // Under other limits the script is compiled for them, not taken from the one ahead.
        let other = compile(&engine, &Limits::TEMPLATE, &ahead.name, ahead.source).unwrap();
        assert!(!Arc::ptr_eq(&kept, &other));
    }
}
