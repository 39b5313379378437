//! The embedded stdlib (`stdlib/`) as modules scripts import: `import "talm/validate" as v;`.

use std::sync::OnceLock;

use rhai::module_resolvers::StaticModuleResolver;
use rhai::{Engine, Module, Scope, Shared};

use crate::embedded::STDLIB;

/// A resolver over the stdlib modules, compiled and indexed once per process and shared by
/// every engine (a copy of the resolver shares the modules).
pub fn resolver() -> StaticModuleResolver {
    static RESOLVER: OnceLock<StaticModuleResolver> = OnceLock::new();
    RESOLVER
        .get_or_init(|| {
            let mut resolver = StaticModuleResolver::new();
            for (name, module) in compile_all() {
                resolver.insert(name.as_str(), (*module).clone());
            }
            resolver
        })
        .clone()
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
            Ok(m) => out.push((name.to_string(), Shared::new(m))),
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
