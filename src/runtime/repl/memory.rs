//! What a `talm repl` session remembers between inputs, as rhai's own rhai-repl does: the
//! variables (one `Scope` for the session), the functions defined so far (kept in an AST whose
//! statements are dropped after each input) and the modules imported (`import "..." as x;`
//! lines, run again before each input); and an error shown under the input with a caret at
//! its position.

use rhai::{Dynamic, Engine, EvalAltResult, Position, Scope, AST};

/// The session's memory.
pub struct Memory {
    pub scope: Scope<'static>,
    /// The functions defined so far; no statements.
    functions: AST,
    /// The import statements typed so far, in order, each alone on its line.
    imports: Vec<String>,
    /// `imports` compiled.
    imports_ast: AST,
}

impl Memory {
    pub fn new(scope: Scope<'static>) -> Memory {
        Memory {
            scope,
            functions: AST::empty(),
            imports: Vec::new(),
            imports_ast: AST::empty(),
        }
    }

    /// The names of the functions defined so far.
    pub fn function_names(&self) -> Vec<String> {
        self.functions
            .iter_functions()
            .map(|f| f.name.to_string())
            .collect()
    }

    /// Runs `input` with what was typed before: its functions are kept whether it then runs
    /// or fails; its import lines are kept when it runs.
    pub fn eval(&mut self, engine: &Engine, input: &str) -> Result<Dynamic, Box<EvalAltResult>> {
        let ast = engine.compile_with_scope(&self.scope, input)?;
        let mut run = self.imports_ast.merge(&self.functions);
        run += ast;
        let result = engine.eval_ast_with_scope::<Dynamic>(&mut self.scope, &run);
        run.clear_statements();
        self.functions = run;
        if result.is_ok() {
            self.remember_imports(engine, input);
        }
        result
    }

    /// Keeps the lines of `input` that are an import statement and nothing else.
    fn remember_imports(&mut self, engine: &Engine, input: &str) {
        let mut added = false;
        for line in input.lines().map(str::trim) {
            let import = line.starts_with("import ") && engine.compile(line).is_ok();
            if import && !self.imports.iter().any(|l| l == line) {
                self.imports.push(line.to_string());
                added = true;
            }
        }
        if added {
            if let Ok(ast) = engine.compile(self.imports.join("\n")) {
                self.imports_ast = ast;
            }
        }
    }
}

/// The line of `input` at `pos` with a caret under its column, for an error's message; `None`
/// when the error has no position in the input.
pub fn caret(input: &str, pos: Position) -> Option<String> {
    let (line_no, col) = (pos.line()?, pos.position()?);
    let line = input.split('\n').nth(line_no.checked_sub(1)?)?;
    let indent: String = line
        .chars()
        .take(col.saturating_sub(1))
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect();
    Some(format!("{line}\n{indent}^\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session() -> (Engine, Memory) {
        let engine = crate::runtime::engine(
            &crate::runtime::Limits::PLAYBOOK,
            &crate::runtime::Session::default(),
        );
        (engine, Memory::new(Scope::new()))
    }

    #[test]
    fn functions_variables_and_imports_outlive_their_input() {
        let (engine, mut m) = session();
        let _ = m.eval(&engine, "fn dbl(x) { x * 2 }").unwrap();
        let _ = m.eval(&engine, "let base = 20;").unwrap();
        let _ = m.eval(&engine, "import \"talm/fleet\" as fleet;").unwrap();
        let v = m.eval(&engine, "dbl(base) + 2").unwrap();
        assert_eq!(v.as_int().unwrap(), 42);
        let v = m.eval(&engine, "fleet::joined([\"a\", \"b\"])").unwrap();
        assert_eq!(v.into_string().unwrap(), "a, b");
        // A later definition replaces an earlier one.
        let _ = m.eval(&engine, "fn dbl(x) { x * 3 }").unwrap();
        assert_eq!(m.eval(&engine, "dbl(2)").unwrap().as_int().unwrap(), 6);
        assert_eq!(m.function_names(), ["dbl"]);
    }

    #[test]
    fn a_caret_points_at_the_error() {
        let (engine, mut m) = session();
        let e = m.eval(&engine, "1 + nosuch(2)").unwrap_err();
        assert_eq!(
            caret("1 + nosuch(2)", e.position()).as_deref(),
            Some("1 + nosuch(2)\n    ^\n")
        );
        assert_eq!(
            caret("let a = 1;\nlet b = ;", Position::new(2, 9)).as_deref(),
            Some("let b = ;\n        ^\n")
        );
        assert_eq!(caret("x", Position::NONE), None);
    }
}
