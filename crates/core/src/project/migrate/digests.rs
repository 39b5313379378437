//! The embedded table of what every released Go talm wrote into a project (`go_talm.tsv`):
//! whole-file digests with the versions that shipped them, the presetHash values of Go
//! `.talm-preset.lock` files, and per-line digests of every released template text (a
//! dictionary of line digests, each file a sequence of indices into it) to diff against.
//! Digests only; no Go template text is carried.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

const TABLE: &str = include_str!("go_talm.tsv");

/// A pristine file some Go talm versions wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    /// `cozystack`, `generic`, or `talm` (the library).
    pub preset: String,
    /// Project-relative path.
    pub path: String,
    pub sha256: String,
    /// The versions that shipped it, as ranges (`v0.31.0..v0.32.0,v0.33.1`).
    pub versions: String,
}

/// The line digests of one pristine file.
#[derive(Debug, Clone)]
pub struct Lines {
    pub path: String,
    pub sha256: String,
    pub hashes: Vec<String>,
}

/// The parsed table.
#[derive(Debug, Default)]
pub struct Table {
    pub files: Vec<Known>,
    /// (preset, presetHash, versions).
    pub locks: Vec<(String, String, String)>,
    pub lines: Vec<Lines>,
}

/// The table, parsed once.
pub fn table() -> &'static Table {
    /// Listed in [`talm_base::caches::KEPT`].
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| parse(TABLE))
}

const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// The value of one base64 digit of a `seq` row.
fn digit(c: u8) -> usize {
    B64.iter().position(|&b| b == c).unwrap_or(0)
}

fn parse(text: &str) -> Table {
    let mut t = Table::default();
    let mut dict: Vec<String> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = line.split('\t').collect();
        match cols.as_slice() {
            ["file", preset, path, sha, versions] => t.files.push(Known {
                preset: preset.to_string(),
                path: path.to_string(),
                sha256: sha.to_string(),
                versions: versions.to_string(),
            }),
            ["lock", preset, _, hash, versions] => {
                t.locks
                    .push((preset.to_string(), hash.to_string(), versions.to_string()))
            }
            ["dict", hashes] => dict = hashes.split(',').map(str::to_string).collect(),
            ["seq", path, sha, codes] => t.lines.push(Lines {
                path: path.to_string(),
                sha256: sha.to_string(),
                hashes: codes
                    .as_bytes()
                    .chunks(2)
                    .map(|c| {
                        let i = digit(c[0]) * 64 + c.get(1).map_or(0, |&d| digit(d));
                        dict.get(i).cloned().unwrap_or_default()
                    })
                    .collect(),
            }),
            _ => {}
        }
    }
    t
}

/// Text with CRLF line ends turned into LF, as the Go talm hashes it.
pub fn lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

/// sha256 of `text` (after CRLF → LF), lower-case hex.
pub fn sha256(text: &str) -> String {
    hex(&Sha256::digest(lf(text).as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of one line as the table records it.
pub fn line_hash(line: &str) -> String {
    hex(&Sha256::digest(line.as_bytes()))[..12].to_string()
}

/// The lines of a text (CRLF → LF), without the empty piece after a final newline.
pub fn split_lines(text: &str) -> Vec<String> {
    let text = lf(text);
    let mut v: Vec<String> = text.split('\n').map(str::to_string).collect();
    if v.last().is_some_and(|l| l.is_empty()) {
        v.pop();
    }
    v
}

impl Table {
    /// The pristine file at `path` whose digest is `sha`.
    pub fn find(&self, path: &str, sha: &str) -> Option<&Known> {
        self.files
            .iter()
            .find(|k| k.path == path && k.sha256 == sha)
    }

    /// The Go lock whose presetHash is `hash`.
    pub fn lock(&self, hash: &str) -> Option<&(String, String, String)> {
        self.locks.iter().find(|(_, h, _)| h == hash)
    }

    /// Whether `path` is a file some Go preset or library shipped.
    pub fn ships(&self, path: &str) -> bool {
        self.files.iter().any(|k| k.path == path)
    }

    /// The pristine files at `path` whose lines we can diff against, with their facts.
    pub fn candidates(&self, path: &str) -> Vec<(&Lines, Option<&Known>)> {
        self.lines
            .iter()
            .filter(|l| l.path == path)
            .map(|l| (l, self.find(path, &l.sha256)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_holds_every_release_and_its_lines() {
        let t = table();
        assert!(t.files.len() > 120, "{}", t.files.len());
        // The v0.33.1 generic lock hash names both v0.33.x releases that write locks.
        let lock = t
            .lock("ac1a8ae5b24bc13bf33927b1b2765f28882b15bbc5ab1dfc25a41b54a6b916f5")
            .unwrap();
        assert_eq!(lock.0, "generic");
        assert_eq!(lock.2, "v0.33.1");
        // Every released template text has its lines: 79 `_helpers.tpl` texts of both presets
        // and the library, plus the two machine-type templates.
        assert_eq!(t.lines.len(), 81);
        for l in &t.lines {
            assert!(t.find(&l.path, &l.sha256).is_some(), "{}", l.path);
            assert!(l.hashes.iter().all(|h| h.len() == 12));
        }
        // A released text's lines decode to its own line digests.
        let text = std::fs::read_to_string(format!(
            "{}/../../tests/fixtures/go-talm/v0.33.1/talm/charts/talm/templates/_helpers.tpl",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        let lines = t.lines.iter().find(|l| l.sha256 == sha256(&text)).unwrap();
        let mine: Vec<String> = split_lines(&text).iter().map(|l| line_hash(l)).collect();
        assert_eq!(lines.hashes, mine);
        assert_eq!(sha256("a\r\nb\n"), sha256("a\nb\n"));
        assert_eq!(split_lines("a\r\nb\n"), vec!["a", "b"]);
    }
}
