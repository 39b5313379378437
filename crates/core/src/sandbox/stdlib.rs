//! The stdlib as modules scripts import: `import "talm/validate" as v;`. The embedded Rhai
//! files (`stdlib/`), and `talm/net` and `talm/disk`, which are natives.

mod disk;
mod go;
mod net;
#[cfg(test)]
mod reference_tests;

use std::sync::OnceLock;

use rhai::{Engine, EvalAltResult, Module, ModuleResolver, Position, Scope, Shared};

use super::compiled::Upcoming;
use super::lanes::{Lane, PerLane};
use crate::embedded::STDLIB;

/// The stdlib modules of one lane by name, each compiled when a script on that lane first
/// imports it (or when [`prewarm`] got to it first) and then shared by every engine of the
/// lane: an engine's resolver holds them, it does not copy them.
pub struct Resolver(&'static [Entry], Lane);

/// What makes a native module.
type Build = fn() -> Module;

/// The stdlib modules written in Rust, by name.
const NATIVES: [(&str, Build); 2] = [("talm/net", net::module), ("talm/disk", disk::module)];

/// The native modules of each lane, made at their first import there.
///
/// Listed in [`talm_base::caches::KEPT`].
static NATIVE_MODULES: [PerLane<Shared<Module>>; 2] = [PerLane::new(), PerLane::new()];

fn native_module(path: &str, lane: Lane) -> Option<Shared<Module>> {
    let i = NATIVES.iter().position(|(name, _)| *name == path)?;
    Some(
        NATIVE_MODULES[i]
            .get_or_init(lane, || Shared::new(NATIVES[i].1()))
            .clone(),
    )
}

/// One stdlib file and, once compiled for a lane, its module there (`None` when it does not
/// compile).
pub struct Entry {
    name: &'static str,
    path: &'static str,
    source: &'static str,
    module: PerLane<Option<Shared<Module>>>,
}

impl Entry {
    /// The module compiled for `lane`; the first caller compiles it, others wait for that one.
    fn module(&self, lane: Lane) -> Option<Shared<Module>> {
        self.module.get_or_init(lane, || compile(self)).clone()
    }
}

impl ModuleResolver for Resolver {
    fn resolve(
        &self,
        _engine: &Engine,
        _source: Option<&str>,
        path: &str,
        pos: Position,
    ) -> Result<Shared<Module>, Box<EvalAltResult>> {
        native_module(path, self.1)
            .or_else(|| {
                self.0
                    .iter()
                    .find(|e| e.name == path)
                    .and_then(|e| e.module(self.1))
            })
            .ok_or_else(|| Box::new(EvalAltResult::ErrorModuleNotFound(path.to_string(), pos)))
    }
}

fn entries() -> &'static [Entry] {
    /// Listed in [`talm_base::caches::KEPT`].
    static ENTRIES: OnceLock<Vec<Entry>> = OnceLock::new();
    ENTRIES.get_or_init(|| {
        STDLIB
            .iter()
            .filter_map(|(path, source)| {
                Some(Entry {
                    name: path.strip_suffix(".rhai")?,
                    path,
                    source,
                    module: PerLane::new(),
                })
            })
            .collect()
    })
}

/// A resolver over the stdlib modules of `lane`.
pub fn resolver(lane: Lane) -> Resolver {
    Resolver(entries(), lane)
}

/// The script modules every render of the library's preset logic imports (its top-level
/// imports that are not natives). `talm/links` is imported only by a legacy render or one with
/// `network.extraLinks`, `talm/links_legacy` only by a legacy render and `talm/validate` by no
/// preset: compiled at their first import, they cost other renders nothing.
const PREWARMED: [&str; 1] = ["talm/values"];

/// The first lane's [`PREWARMED`] modules that [`prewarm`] queued and no thread has started
/// compiling yet, the largest last.
static QUEUED: std::sync::Mutex<Vec<&'static Entry>> = std::sync::Mutex::new(Vec::new());

/// Builds the standard package, compiles `script` (the command about to run, if given) and
/// then the first lane's [`PREWARMED`] modules not compiled yet on a thread of their own,
/// largest first, while the caller goes on with other work (a render compiles its templates
/// meanwhile); an import of a module still being compiled waits for it, and a thread with
/// nothing else to do takes the next module from the queue ([`help`]). Acts once per process:
/// a later call compiles nothing, its script included.
pub fn prewarm(script: Option<Upcoming>) {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let mut order: Vec<&'static Entry> = entries()
            .iter()
            .filter(|e| PREWARMED.contains(&e.name))
            .collect();
        order.sort_by_key(|e| e.source.len());
        *QUEUED.lock().unwrap_or_else(|e| e.into_inner()) = order;
        // Best effort: without a thread each module is compiled at its first import.
        let _ = talm_base::ahead::spawn(
            std::thread::Builder::new().name("stdlib".into()),
            move || {
                // In the order the command needs them: the package for its own engine, then
                // its script, then the modules its render imports.
                drop(super::standard_package());
                if let Some(script) = script {
                    script.compile();
                }
                help();
            },
        );
    });
}

/// Compiles the queued modules no thread has started yet, one at a time, until none is left:
/// for a thread that would otherwise wait for other work (a render waiting for its templates).
/// Each module is still compiled once: the thread that takes it from the queue compiles it.
pub fn help() {
    drain(&QUEUED, Lane::FIRST);
}

/// Takes the modules out of `queue` one at a time and compiles each for `lane`.
fn drain(queue: &std::sync::Mutex<Vec<&'static Entry>>, lane: Lane) {
    loop {
        let next = queue.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let Some(entry) = next else { return };
        entry.module(lane);
    }
}

/// Compiles one stdlib file into a module named by its path without `.rhai`. A stdlib file
/// that fails to compile is a build defect, caught by this module's test.
fn compile(entry: &Entry) -> Option<Shared<Module>> {
    /// Listed in [`talm_base::caches::KEPT`].
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    let engine = ENGINE.get_or_init(|| {
        let mut engine = Engine::new_raw();
        engine.register_global_module(super::standard_package());
        super::configure(&mut engine, &super::Limits::TEMPLATE);
        super::tpl::register(&mut engine);
        engine
    });
    let module = engine
        .compile(entry.source)
        .map_err(|e| e.to_string())
        .and_then(|mut ast| {
            ast.set_source(format!("stdlib/{}", entry.path));
            Module::eval_ast_as_new(Scope::new(), &ast, engine).map_err(|e| e.to_string())
        });
    match module {
        Ok(mut m) => {
            m.build_index();
            Some(Shared::new(m))
        }
        Err(e) => {
            eprintln!("WARN: stdlib/{} does not compile: {e}", entry.path);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_is_compiled_once_and_shared() {
        let engine = Engine::new_raw();
        let r = resolver(Lane::FIRST);
        let get = |name: &str| r.resolve(&engine, None, name, Position::NONE);
        for name in ["talm/values", "talm/net"] {
            let a = get(name).unwrap();
            let b = get(name).unwrap();
            assert!(
                Shared::ptr_eq(&a, &b),
                "one module for every import of {name}"
            );
            let other = resolver(Lane::LAST)
                .resolve(&engine, None, name, Position::NONE)
                .unwrap();
            assert!(!Shared::ptr_eq(&a, &other), "a module per lane: {name}");
        }
        let a = get("talm/values").unwrap();
        assert!(matches!(
            *get("talm/nope").unwrap_err(),
            EvalAltResult::ErrorModuleNotFound(ref p, _) if p == "talm/nope"
        ));
        prewarm(None);
        prewarm(None);
        for e in entries() {
            assert!(e.module(Lane::FIRST).is_some(), "stdlib/{}", e.path);
        }
        assert!(Shared::ptr_eq(&a, &get("talm/values").unwrap()));
    }

    #[test]
    fn a_thread_that_helps_compiles_the_queued_modules_itself() {
        let legacy = entries()
            .iter()
            .find(|e| e.name == "talm/links_legacy")
            .unwrap();
        let queue = std::sync::Mutex::new(vec![legacy]);
        drain(&queue, Lane::LAST);
        assert!(queue.lock().unwrap().is_empty());
        assert!(legacy.module.get(Lane::LAST).is_some_and(Option::is_some));
    }

    /// The modules compiled ahead are the script modules the library's preset logic imports at
    /// its top level, so every render: one it imports only in a branch is left out.
    #[test]
    fn the_prewarmed_modules_are_the_library_renders_top_level_imports() {
        let context = include_str!("../../../../presets/talm/templates/_context.rhai");
        let mut scripts: Vec<&str> = context
            .lines()
            .filter_map(|l| l.strip_prefix("import \""))
            .filter_map(|l| l.split('"').next())
            .filter(|p| !NATIVES.iter().any(|(n, _)| n == p))
            .collect();
        scripts.sort_unstable();
        assert_eq!(scripts, PREWARMED);
        for (line, why) in [
            ("        import \"talm/links\" as lk;", "with extraLinks"),
            ("    import \"talm/links\" as lk;", "in the legacy branch"),
            (
                "    import \"talm/links_legacy\" as lkl;",
                "in the legacy branch",
            ),
        ] {
            assert!(context.contains(&format!("\n{line}\n")), "imported {why}");
        }
    }

    /// The preset logic makes the discovered documents with the native `net::link_doc`, so
    /// that a render without extraLinks needs no `talm/links`; that module merges declarations
    /// into documents of its own `blank_doc` shape (kept for presets that call it): the same.
    #[test]
    fn the_native_link_document_is_the_links_modules_blank_one() {
        let engine = super::super::engine(&super::super::Limits::TEMPLATE);
        let same: bool = engine
            .eval(
                r#"import "talm/net" as net; import "talm/links" as lk;
                   let all = true;
                   for kind in ["LinkConfig", "BondConfig", "VLANConfig", "BridgeConfig"] {
                       all = all && net::link_doc(kind, "eth0.5") == lk::blank_doc(kind, "eth0.5");
                   }
                   all && net::link_doc("LinkConfig", "eth0").keys().len() == 12"#,
            )
            .unwrap();
        assert!(same);
    }

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
