//! Compiled scripts, kept for the life of the process: the bundled commands a playbook runs
//! once per node (and a playbook run again from the REPL) are parsed once. Keyed by the script's
//! name, the limits it compiles under and its full text, so an edited file is compiled afresh.

use std::sync::Arc;

use rhai::{Engine, ParseError, AST};

use super::Limits;
use crate::memo::Memo;

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
}
