//! Performance machinery and the registry of everything talm keeps between uses: what is
//! memoized, by what key, why, and how much of it. The machinery: [`memo::Memo`] (the last few
//! results of one kind of pure work), [`digest`] (keyed digests of inputs too large to keep as
//! keys), [`claim::Claim`] (one build of a compiled thing, the other threads wait for it) and
//! [`lanes`] (a copy of compiled code per render running at once).
//!
//! [`KEPT`] lists every cache: a static that holds work done once to be reused. [`NOT_KEPT`]
//! lists the statics of the same shapes that hold process state and are not caches (a crypto
//! provider, a start instant, a pool of workers), each with what it is instead. The test of
//! this module reads the workspace's sources (`crates/` and `src/`), finds every `static` whose
//! type can keep values (`Memo`, `OnceLock`, `LazyLock`, `PerLane`, `Mutex`, `RwLock`, `RefCell`,
//! in `thread_local!` blocks too), and fails when one is in neither list, when a listed one is
//! gone from its file, when a cache's declaration does not point here (a comment above it
//! naming `caches::KEPT`), or when a `Memo::new(n)` bound differs from the listed one. A new
//! cache, or a moved one, is therefore registered in the change that makes it. Caches held
//! inside a value (a compiled project's Tera environment, a script's compiled copies, a fact
//! set's derived data) live as long as the static that keeps their owner and are described in
//! that static's entry.

pub mod claim;
pub mod digest;
pub mod lanes;
pub mod memo;

/// One kept cache.
#[derive(Debug, Clone, Copy)]
pub struct Kept {
    /// The static that holds it.
    pub name: &'static str,
    /// The file that declares it, from the workspace's root (the module that owns it).
    pub owner: &'static str,
    /// What it holds.
    pub holds: &'static str,
    /// What a kept value is found by.
    pub key: &'static str,
    /// Why it is kept: the work a hit saves.
    pub why: &'static str,
    pub bound: Bound,
}

/// How much a cache keeps, and what goes when it is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// One value, made at first use and kept for the life of the process: what it is made from
    /// is compiled in or fixed for the process.
    Once,
    /// The `n` most recently used values, the oldest dropped first.
    Last(usize),
    /// The `n` most recently used values of each thread.
    LastPerThread(usize),
    /// One value per lane, [`lanes::LANES`] at most.
    PerLane,
    /// At most `n` spare values, taken by a user and given back.
    Spares(usize),
}

/// A static of a keeping shape that is not a cache.
#[derive(Debug, Clone, Copy)]
pub struct NotKept {
    pub name: &'static str,
    pub owner: &'static str,
    /// What it holds instead.
    pub is: &'static str,
}

/// Every cache of the workspace.
pub const KEPT: &[Kept] = &[
    Kept {
        name: "PARSED",
        owner: "crates/base/src/yaml/mod.rs",
        holds: "YAML documents parsed from files every command reads (Chart.yaml, values, talosconfig, secrets)",
        key: "the whole text",
        why: "a playbook runs a few commands per node, each loading the project anew",
        bound: Bound::Last(8),
    },
    Kept {
        name: "PARSED",
        owner: "crates/base/src/yaml/stream.rs",
        holds: "multi-document YAML streams (a node's patch, node file, whole config)",
        key: "the whole text",
        why: "one node's command reads its own texts again within the next parses",
        bound: Bound::LastPerThread(3),
    },
    Kept {
        name: "SCHEMA",
        owner: "crates/wire/src/config/schema/mod.rs",
        holds: "the type tree of Talos config documents built from Talos's JSON schemas",
        key: "none: built from embedded schemas",
        why: "every config decode and encode walks it; building it parses the schemas",
        bound: Bound::Once,
    },
    Kept {
        name: "REGISTRY",
        owner: "crates/wire/src/registry.rs",
        holds: "the resource types and namespaces Talos registers, parsed from the embedded data",
        key: "none: the data is embedded",
        why: "every simulated COSI call looks its type up; `get rd` builds every definition",
        bound: Bound::Once,
    },
    Kept {
        name: "EDGES",
        owner: "crates/sim/src/api/controllers.rs",
        holds: "the controller dependency graph a simulated node serves, parsed from the embedded data",
        key: "none: the data is embedded",
        why: "every InspectService call reads the whole graph",
        bound: Bound::Once,
    },
    Kept {
        name: "CERTIFIED",
        owner: "crates/client/src/creds.rs",
        holds: "client certificates ready for TLS (rustls CertifiedKey)",
        key: "a digest of certificate and key",
        why: "a fleet's connections share their context's instead of parsing its key again",
        bound: Bound::Last(4),
    },
    Kept {
        name: "CONTEXTS",
        owner: "crates/client/src/creds.rs",
        holds: "talosconfig contexts parsed and checked, with their certificate's validity",
        key: "the file's text, its name and the context asked for",
        why: "each node handle of a fleet reads the same talosconfig; checking a key pair is slow",
        bound: Bound::Last(4),
    },
    Kept {
        name: "CA_VERIFIERS",
        owner: "crates/client/src/verify.rs",
        holds: "TLS server verifiers of the talosconfig CAs in use",
        key: "the CA's PEM text",
        why: "every connection of a context shares its verifier",
        bound: Bound::Last(4),
    },
    Kept {
        name: "COMPILED",
        owner: "crates/core/src/sandbox/compiled.rs",
        holds: "compiled Rhai scripts, one copy per lane: playbook commands, a project's preset logic and Rhai templates",
        key: "the script's name, its limits and its full text",
        why: "a playbook runs its commands once per node, a render runs the preset logic once per node",
        bound: Bound::Last(64),
    },
    Kept {
        name: "PACKAGE",
        owner: "crates/core/src/sandbox/mod.rs",
        holds: "Rhai's standard package, shared by every engine",
        key: "none",
        why: "a thousand functions registered: about a millisecond per engine",
        bound: Bound::Once,
    },
    Kept {
        name: "NATIVE_MODULES",
        owner: "crates/core/src/sandbox/stdlib.rs",
        holds: "the stdlib modules written in Rust (talm/net, talm/disk)",
        key: "the module and the lane",
        why: "imported by every render of the preset logic",
        bound: Bound::PerLane,
    },
    Kept {
        name: "ENTRIES",
        owner: "crates/core/src/sandbox/stdlib.rs",
        holds: "the stdlib's script modules, each compiled once per lane at its first import",
        key: "the module's path, then the lane",
        why: "imported by every render of the preset logic; compiling them took most of a render",
        bound: Bound::Once,
    },
    Kept {
        name: "ENGINE",
        owner: "crates/core/src/sandbox/stdlib.rs",
        holds: "the bare engine that compiles the stdlib's script modules",
        key: "none",
        why: "one engine for every module compile",
        bound: Bound::Once,
    },
    Kept {
        name: "MODULE",
        owner: "crates/core/src/sandbox/tpl.rs",
        holds: "the template helpers' Rhai module",
        key: "none",
        why: "registered into every template engine",
        bound: Bound::Once,
    },
    Kept {
        name: "GENERATED",
        owner: "crates/core/src/config/assemble.rs",
        holds: "generated machine configs, decoded",
        key: "contract, Kubernetes version, bundle, machine type, cluster name and endpoint",
        why: "a fleet's nodes share their cluster's configs, so each is generated once",
        bound: Bound::Last(8),
    },
    Kept {
        name: "CACHE",
        owner: "crates/core/src/render/cache.rs",
        holds: "compiled projects: the Tera environment, the preset logic and the Rhai templates (their compiled copies kept with COMPILED's)",
        key: "the project's root, checked fresh by the templates' stamps and contents",
        why: "every node and every render of a project reuse its templates until a file changes",
        bound: Bound::Last(8),
    },
    Kept {
        name: "RENDERS",
        owner: "crates/core/src/render/kept.rs",
        holds: "rendered patches",
        key: "the compiled project and a digest of templates, values, versions and facts",
        why: "`talm apply` renders again what `talm template` rendered from the same discovery",
        bound: Bound::Last(512),
    },
    Kept {
        name: "ENGINES",
        owner: "crates/core/src/render/context.rs",
        holds: "the preset logic's engine, with `lookup` and `once`",
        key: "the lane",
        why: "built once per lane, for every render",
        bound: Bound::PerLane,
    },
    Kept {
        name: "KEPT_VALUES",
        owner: "crates/core/src/render/prepared.rs",
        holds: "a project's values prepared for YAML, JSON, Rhai and Tera",
        key: "the values tree, compared in place",
        why: "every node of a fleet renders with the same values",
        bound: Bound::Last(4),
    },
    Kept {
        name: "PRESETS",
        owner: "crates/core/src/embedded.rs",
        holds: "the presets' files (from the binary, or TALM_PRESETS_DIR)",
        key: "none",
        why: "every project command reads them",
        bound: Bound::Once,
    },
    Kept {
        name: "HASHES",
        owner: "crates/core/src/project/presets.rs",
        holds: "the hash of a preset's embedded files recorded in .talm-preset.lock",
        key: "the preset's name",
        why: "every project command checks the hash; embedded files never change in a process",
        bound: Bound::Last(8),
    },
    Kept {
        name: "HASH",
        owner: "crates/core/src/project/presets.rs",
        holds: "the library's hash",
        key: "none",
        why: "every project command checks it",
        bound: Bound::Once,
    },
    Kept {
        name: "T",
        owner: "crates/core/src/project/migrate/digests.rs",
        holds: "the parsed table of what released Go talms wrote",
        key: "none: the table is embedded",
        why: "a migration looks up every file against it",
        bound: Bound::Once,
    },
    Kept {
        name: "SPARE_COMMANDS",
        owner: "src/dispatch.rs",
        holds: "spare definitions of the command line (clap)",
        key: "none: all alike",
        why: "a playbook's commands each need one mutably; building the tree cost more than the parse",
        bound: Bound::Spares(2),
    },
    Kept {
        name: "DEFAULTS",
        owner: "src/runtime/local/render.rs",
        holds: "a preset's values.yaml, parsed",
        key: "the preset's name",
        why: "the presets are part of the binary: each one's defaults are parsed once",
        bound: Bound::Last(4),
    },
    Kept {
        name: "BUNDLES",
        owner: "src/runtime/local/render.rs",
        holds: "secrets bundles, parsed and validated",
        key: "the bundle's text and its file name",
        why: "a fleet's renders all read the same bundle",
        bound: Bound::Last(4),
    },
];

/// Statics of a keeping shape that hold process state, not cached work.
pub const NOT_KEPT: &[NotKept] = &[
    NotKept {
        name: "RT",
        owner: "crates/base/src/rt.rs",
        is: "the async runtime",
    },
    NotKept {
        name: "STARTED",
        owner: "crates/base/src/humanize.rs",
        is: "the process's start instant",
    },
    NotKept {
        name: "CURRENT",
        owner: "crates/base/src/progress.rs",
        is: "the progress item of this thread",
    },
    NotKept {
        name: "STATES",
        owner: "crates/base/src/caches/digest.rs",
        is: "the digests' hasher keys, drawn once per process",
    },
    NotKept {
        name: "MASKED",
        owner: "crates/base/src/mask.rs",
        is: "the secrets output masks",
    },
    NotKept {
        name: "PROVIDER",
        owner: "crates/sim/src/net/certs.rs",
        is: "the TLS crypto provider",
    },
    NotKept {
        name: "TEXTS",
        owner: "crates/sim/src/node/intern.rs",
        is: "weak references to the config text pieces the simulated nodes own",
    },
    NotKept {
        name: "DOCS",
        owner: "crates/sim/src/node/intern.rs",
        is: "weak references to the config documents the simulated nodes own",
    },
    NotKept {
        name: "COOKIE",
        owner: "crates/sim/src/cosi/store.rs",
        is: "the simulator's random cookie, drawn once",
    },
    NotKept {
        name: "EMPTY",
        owner: "crates/wire/src/config/schema/mod.rs",
        is: "the empty definition handed out by reference",
    },
    NotKept {
        name: "PROVIDER",
        owner: "crates/client/src/verify.rs",
        is: "the TLS crypto provider",
    },
    NotKept {
        name: "BOARD",
        owner: "crates/core/src/sandbox/watchdog.rs",
        is: "the runs the watchdog times",
    },
    NotKept {
        name: "STARTED",
        owner: "crates/core/src/sandbox/watchdog.rs",
        is: "whether the watchdog thread runs",
    },
    NotKept {
        name: "QUEUED",
        owner: "crates/core/src/sandbox/stdlib.rs",
        is: "stdlib modules waiting to be compiled ahead",
    },
    NotKept {
        name: "STARTED",
        owner: "crates/core/src/sandbox/stdlib.rs",
        is: "whether the compile ahead started",
    },
    NotKept {
        name: "IDLE",
        owner: "crates/core/src/sandbox/guard.rs",
        is: "idle worker threads with large stacks",
    },
    NotKept {
        name: "STATM",
        owner: "crates/core/src/sandbox/guard.rs",
        is: "an open descriptor of /proc/self/statm",
    },
    NotKept {
        name: "START",
        owner: "crates/core/src/sandbox/guard.rs",
        is: "the clock's origin",
    },
    NotKept {
        name: "CURRENT",
        owner: "crates/core/src/render/current.rs",
        is: "the facts of the node this thread renders",
    },
    NotKept {
        name: "FAIL_HINT",
        owner: "crates/core/src/render/engine.rs",
        is: "the hint of this thread's failing template",
    },
    NotKept {
        name: "CURRENT",
        owner: "crates/core/src/render/once.rs",
        is: "the `once` results of the script this thread runs (kept by its Script)",
    },
    NotKept {
        name: "AHEAD",
        owner: "crates/core/src/render/cache.rs",
        is: "compiles in flight, handed to CACHE when they end",
    },
    NotKept {
        name: "TURN",
        owner: "crates/core/src/render/cache_tests.rs",
        is: "the turn of tests that share the render cache",
    },
    NotKept {
        name: "LIVE",
        owner: "crates/core/src/project/txn/folder.rs",
        is: "the folders of transactions in progress",
    },
    NotKept {
        name: "START",
        owner: "crates/core/src/project/txn/mod.rs",
        is: "the process's start, for unique names",
    },
    NotKept {
        name: "ALIVE",
        owner: "src/runtime/scratch.rs",
        is: "scratch folders to remove at exit",
    },
    NotKept {
        name: "WORDS",
        owner: "src/completion.rs",
        is: "the words of the command line being completed",
    },
];

#[cfg(test)]
mod tests;
