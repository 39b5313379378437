//! The files compiled into the binary: presets, the Rhai stdlib and the bundled scripts (the
//! runtime's; the core only holds their index).
//! `TALM_PRESETS_DIR` points talm at a presets folder on disk instead, for preset authors
//! trying their changes without rebuilding talm.

use std::sync::OnceLock;

mod index {
    include!(concat!(env!("OUT_DIR"), "/embedded.rs"));
}

pub use index::{SCRIPTS, STDLIB};

/// Looks up an embedded file by its path relative to its folder.
pub fn find(set: &'static [(&'static str, &'static str)], path: &str) -> Option<&'static str> {
    set.iter().find(|(p, _)| *p == path).map(|(_, c)| *c)
}

/// The presets: `(path relative to presets/, content)`, sorted by path.
pub fn presets() -> &'static [(String, String)] {
    /// Listed in [`talm_base::caches::KEPT`].
    static PRESETS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    PRESETS.get_or_init(|| match std::env::var_os("TALM_PRESETS_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = std::path::PathBuf::from(dir);
            let files = crate::project::fsutil::files_below(&dir).and_then(|files| {
                files
                    .into_iter()
                    .map(|(rel, path)| Ok((rel, std::fs::read_to_string(path)?)))
                    .collect::<std::io::Result<Vec<_>>>()
            });
            files.unwrap_or_else(|e| {
                eprintln!("WARN: cannot read TALM_PRESETS_DIR {}: {e}", dir.display());
                Vec::new()
            })
        }
        _ => index::PRESETS
            .iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect(),
    })
}
