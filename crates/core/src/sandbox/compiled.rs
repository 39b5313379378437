//! Compiled scripts, the one cache of Rhai trees: a playbook's commands (run once per node, and
//! again from the REPL) and a project's preset logic and Rhai templates (run for every node) are
//! parsed once. A script is kept by its name, the limits it compiles under and its full text, so
//! an edited file is compiled afresh and two projects with the same preset logic share it. Each
//! kept script holds one compiled copy per lane (`talm_base::caches::lanes`): renders at once
//! each run their own. A one-shot command's script is compiled ahead on another thread
//! ([`Upcoming`]).

use std::sync::Arc;

use rhai::{Engine, ParseError, AST};

use super::Limits;
use talm_base::caches::claim::Claim;
use talm_base::caches::lanes::{Lane, PerLane};
use talm_base::caches::memo::Memo;

/// Listed in [`talm_base::caches::KEPT`].
static COMPILED: Memo<(String, Limits, String), Arc<Code>> = Memo::new(64);

/// One script's compiled copies, one per lane that ran it.
pub struct Code {
    name: String,
    source: String,
    copies: PerLane<Arc<AST>>,
    /// The turn to compile it: one compile at a time, the others wait for it.
    compiling: Claim,
}

/// The kept script named `name` (in errors and positions) with text `source` under `limits`,
/// compiled on no lane yet if it is new.
pub fn code(name: &str, limits: &Limits, source: &str) -> Arc<Code> {
    let key = (name.to_string(), limits.clone(), source.to_string());
    let made = COMPILED.get_or_try(key, |(name, _, source)| {
        Ok::<_, std::convert::Infallible>(Arc::new(Code {
            name: name.clone(),
            source: source.clone(),
            copies: PerLane::new(),
            compiling: Claim::new(),
        }))
    });
    match made {
        Ok(code) => code,
        Err(never) => match never {},
    }
}

impl Code {
    /// The copy for `lane`, compiled by `engine` (configured for the script's limits) on first
    /// use there, or waited for while another thread compiles it; a syntax error is returned
    /// on every use.
    pub fn ast(&self, engine: &Engine, lane: Lane) -> Result<Arc<AST>, ParseError> {
        self.compiling.get_or_build(
            || self.copies.get(lane).cloned(),
            || self.compile_on(engine, lane),
        )
    }

    /// [`Code::ast`] unless another thread compiles it already: for a thread with time to
    /// spare.
    pub fn offer(&self, engine: &Engine, lane: Lane) {
        self.compiling.offer(
            || self.copies.get(lane).cloned(),
            || self.compile_on(engine, lane),
        );
    }

    fn compile_on(&self, engine: &Engine, lane: Lane) -> Result<Arc<AST>, ParseError> {
        let mut ast = engine.compile(&self.source)?;
        ast.set_source(self.name.as_str());
        let ast = Arc::new(ast);
        Ok(self.copies.get_or_init(lane, || ast).clone())
    }

    /// On how many lanes the script has been compiled.
    pub fn copies(&self) -> usize {
        self.copies.count()
    }
}

/// The compiled `source` (named `name` in errors and positions) on the first lane, compiled by
/// `engine` on first use.
pub fn compile(
    engine: &Engine,
    limits: &Limits,
    name: &str,
    source: &str,
) -> Result<Arc<AST>, ParseError> {
    code(name, limits, source).ast(engine, Lane::FIRST)
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
        assert_eq!(
            code(&ahead.name, &Limits::PLAYBOOK, ahead.source).copies(),
            1
        );
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
