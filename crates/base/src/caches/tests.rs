//! The registry held to the sources: every static of a keeping shape is listed, every listed
//! one exists, caches point at their entry and their `Memo` bounds are the listed ones.

use std::path::{Path, PathBuf};

use super::{Bound, KEPT, NOT_KEPT};

/// Types whose static can keep values between uses.
const KEEPING: [&str; 7] = [
    "Memo<",
    "OnceLock<",
    "LazyLock<",
    "PerLane<",
    "Mutex<",
    "RwLock<",
    "RefCell<",
];

/// A static found in the sources.
#[derive(Debug)]
struct Found {
    owner: String,
    name: String,
    /// Whether a comment right above it names `caches::KEPT`.
    linked: bool,
    /// The `n` of its `::new(n)`, a literal or a `usize` constant of its file.
    bound: Option<usize>,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The value of `const NAME: usize = N;` in `text`.
fn constant(text: &str, name: &str) -> Option<usize> {
    let decl = format!("const {name}: usize = ");
    let at = text.find(&decl)? + decl.len();
    text[at..].split(';').next()?.trim().parse().ok()
}

/// The statics of a keeping type declared in `text`.
fn keeping_statics(owner: &str, text: &str) -> Vec<Found> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or_else(|| t.strip_prefix("pub "))
            .unwrap_or(t);
        let Some(rest) = t.strip_prefix("static ") else {
            continue;
        };
        let Some((name, ty)) = rest.split_once(':') else {
            continue;
        };
        let decl = match lines.get(i + 1) {
            Some(next) if !ty.contains(';') => format!("{ty} {}", next.trim()),
            _ => ty.to_string(),
        };
        let ty = decl.split('=').next().unwrap_or_default();
        if !KEEPING.iter().any(|k| ty.contains(k)) {
            continue;
        }
        let linked = lines[..i]
            .iter()
            .rev()
            .map(|l| l.trim_start())
            .take_while(|l| l.starts_with("//") || l.starts_with("#["))
            .any(|l| l.contains("caches::KEPT"));
        let bound = decl.split_once("::new(").and_then(|(_, arg)| {
            let arg = arg.split(')').next()?.trim();
            arg.parse().ok().or_else(|| constant(text, arg))
        });
        found.push(Found {
            owner: owner.to_string(),
            name: name.trim().to_string(),
            linked,
            bound,
        });
    }
    found
}

fn workspace_statics() -> Vec<Found> {
    let root = root();
    let mut files = Vec::new();
    sources(&root.join("crates"), &mut files);
    sources(&root.join("src"), &mut files);
    assert!(files.len() > 100, "the workspace's sources, from {root:?}");
    let mut found = Vec::new();
    for file in files {
        let owner = file
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if owner == "crates/base/src/caches/tests.rs" {
            // Its examples of declarations are text for the scan's own test.
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        found.extend(keeping_statics(&owner, &text));
    }
    found
}

#[test]
fn every_kept_static_is_registered_and_every_registered_one_exists() {
    let found = workspace_statics();
    let mut wrong = Vec::new();
    let listed = |owner: &str, name: &str| {
        KEPT.iter().any(|k| k.owner == owner && k.name == name)
            || NOT_KEPT.iter().any(|k| k.owner == owner && k.name == name)
    };
    for f in &found {
        if !listed(&f.owner, &f.name) {
            wrong.push(format!(
                "{} in {} is in neither caches::KEPT nor caches::NOT_KEPT",
                f.name, f.owner
            ));
        }
    }
    let entries = KEPT
        .iter()
        .map(|k| (k.owner, k.name))
        .chain(NOT_KEPT.iter().map(|k| (k.owner, k.name)));
    for (owner, name) in entries {
        if !found.iter().any(|f| f.owner == owner && f.name == name) {
            wrong.push(format!("{name} is listed but not declared in {owner}"));
        }
    }
    for k in KEPT {
        let Some(f) = found
            .iter()
            .find(|f| f.owner == k.owner && f.name == k.name)
        else {
            continue;
        };
        if !f.linked {
            wrong.push(format!(
                "{} in {}: no comment above it names caches::KEPT",
                k.name, k.owner
            ));
        }
        let n = match k.bound {
            Bound::Last(n) | Bound::LastPerThread(n) => Some(n),
            _ => None,
        };
        if let (Some(n), Some(declared)) = (n, f.bound) {
            if n != declared {
                wrong.push(format!(
                    "{} in {} keeps {declared}, listed as {n}",
                    k.name, k.owner
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scan_finds_statics_of_keeping_types_their_link_and_bound() {
    let text = "const N: usize = 5;\n\
        /// Listed in [`crate::caches::KEPT`].\n\
        static A: Memo<String, u8> = Memo::new(N);\n\
        thread_local! {\n    static B: RefCell<Option<u8>> = const { RefCell::new(None) };\n}\n\
        pub static C: AtomicBool = AtomicBool::new(false);\n\
        // A long type.\n\
        static D: talm_base::caches::memo::Memo<String, Arc<Value>> =\n    Memo::new(3);\n";
    let found = keeping_statics("x.rs", text);
    let got: Vec<_> = found
        .iter()
        .map(|f| (f.name.as_str(), f.linked, f.bound))
        .collect();
    assert_eq!(
        got,
        [
            ("A", true, Some(5)),
            ("B", false, None),
            ("D", false, Some(3))
        ]
    );
}

#[test]
fn entries_are_unique() {
    let mut seen: Vec<(&str, &str)> = KEPT
        .iter()
        .map(|k| (k.owner, k.name))
        .chain(NOT_KEPT.iter().map(|k| (k.owner, k.name)))
        .collect();
    let all = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), all);
}
