//! The embedded stdlib (`stdlib/`) as modules scripts import: `import "talm/validate" as v;`.

use std::sync::OnceLock;

use rhai::{Engine, EvalAltResult, Module, ModuleResolver, Position, Scope, Shared};

use crate::embedded::STDLIB;

/// The stdlib modules by name, compiled once per process and shared by every engine (an
/// engine's resolver holds them, it does not copy them).
pub struct Resolver(&'static [(String, Shared<Module>)]);

impl ModuleResolver for Resolver {
    fn resolve(
        &self,
        _engine: &Engine,
        _source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> Result<Shared<Module>, Box<EvalAltResult>> {
        self.0
            .iter()
            .find(|(name, _)| name == path)
            .map(|(_, m)| m.clone())
            .ok_or_else(|| Box::new(EvalAltResult::ErrorModuleNotFound(path.to_string(), pos)))
    }
}

/// A resolver over the stdlib modules.
pub fn resolver() -> Resolver {
    static MODULES: OnceLock<Vec<(String, Shared<Module>)>> = OnceLock::new();
    Resolver(MODULES.get_or_init(compile_all))
}

/// Compiles every stdlib file into a module named by its path without `.rhai`. A stdlib file
/// that fails to compile is a build defect, caught by this module's test.
fn compile_all() -> Vec<(String, Shared<Module>)> {
    let mut out = Vec::new();
    let mut engine = Engine::new();
    super::configure(&mut engine, &super::Limits::TEMPLATE);
    for (path, source) in STDLIB {
        let Some(name) = path.strip_suffix(".rhai") else {
            continue;
        };
        let module = engine
            .compile(source)
            .map_err(|e| e.to_string())
            .and_then(|mut ast| {
                ast.set_source(format!("stdlib/{path}"));
                Module::eval_ast_as_new(Scope::new(), &ast, &engine).map_err(|e| e.to_string())
            });
        match module {
            Ok(mut m) => {
                m.build_index();
                out.push((name.to_string(), Shared::new(m)))
            }
            Err(e) => eprintln!("WARN: stdlib/{path} does not compile: {e}"),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_stdlib_module_compiles() {
        let mut engine = rhai::Engine::new();
        super::super::configure(&mut engine, &super::super::Limits::TEMPLATE);
        for (path, source) in super::STDLIB {
            engine
                .compile(source)
                .unwrap_or_else(|e| panic!("stdlib/{path}: {e}"));
        }
    }
}
