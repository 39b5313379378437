//! Build script: writes the index of the embedded files (`presets/`, `stdlib/`, `scripts/`, all
//! at the repository's root) that the binary carries.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    write_embedded_index()?;
    Ok(())
}

/// Writes `embedded.rs`: one `(&str, &str)` slice per embedded folder, keyed by the path relative
/// to that folder with `/` separators, sorted by path so the order never depends on the file system.
fn write_embedded_index() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let mut out = String::new();
    // All three live at the repository's root. The scripts are the binary's (the core never
    // reads them); they are indexed here too so that one build script embeds every file.
    for (name, dir) in [
        ("PRESETS", "presets"),
        ("STDLIB", "stdlib"),
        ("SCRIPTS", "scripts"),
    ] {
        let root = manifest.join("../..").join(dir);
        println!("cargo:rerun-if-changed=../../{dir}");
        let mut files = Vec::new();
        if root.is_dir() {
            collect(&root, &root, &mut files)?;
        }
        files.sort();
        writeln!(out, "pub static {name}: &[(&str, &str)] = &[")?;
        for (rel, abs) in files {
            writeln!(out, "    ({rel:?}, include_str!({abs:?})),")?;
        }
        writeln!(out, "];")?;
    }
    let dest = PathBuf::from(std::env::var("OUT_DIR")?).join("embedded.rs");
    std::fs::write(dest, out)?;
    Ok(())
}

fn collect(
    root: &Path,
    dir: &Path,
    files: &mut Vec<(String, String)>,
) -> Result<(), Box<dyn std::error::Error>> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(root, &path, files)?;
        } else if path.is_file() {
            let rel = path
                .strip_prefix(root)?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            files.push((rel, path.to_string_lossy().into_owned()));
        }
    }
    Ok(())
}
