//! The install-image writeback after an upgrade: `machine.install.image` of a node file is set
//! to the image the node now runs, in place — only that scalar's text changes, so comments, the
//! modeline, other documents, quoting and layout stay as they were — and the next `apply` does
//! not send the old image back.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Result;

use super::fsutil::{self, Mode};
use talm_base::error::hinted;
use talm_base::yaml::located::{self, Kind, Node, Scalar, Style};

/// What the writeback did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// The image was replaced.
    Updated,
    /// The file already names the image.
    Same,
    /// No document has `machine.install.image` (an orphan file or a side-patch).
    NoKey,
}

impl Synced {
    /// The name scripts see.
    pub fn name(&self) -> &'static str {
        match self {
            Synced::Updated => "updated",
            Synced::Same => "same",
            Synced::NoKey => "no-key",
        }
    }
}

fn kind_name(n: &Node) -> &'static str {
    match &n.kind {
        Kind::Scalar(s) if s.value.is_empty() && s.style == Style::Plain => "null",
        Kind::Scalar(_) => "scalar",
        Kind::Seq(_) => "sequence",
        Kind::Map(_) => "mapping",
        Kind::Alias => "alias",
    }
}

/// The image scalar of one document: `Ok(None)` when a key on the way is missing.
fn image_of<'n>(doc: &'n Node, file: &str) -> Result<Option<&'n Scalar>> {
    let mut at = doc;
    for key in ["machine", "install", "image"] {
        let entries =
            match &at.kind {
                Kind::Map(entries) => entries,
                // An empty document (only comments) has nothing on the way.
                Kind::Scalar(s) if s.value.is_empty() && at.start == at.end => return Ok(None),
                _ => return Err(hinted(
                    format!(
                        "{file}: expected mapping while walking to {key:?}, got {}",
                        kind_name(at)
                    ),
                    "machine.install.image sits under mappings: machine: {install: {image: ...}}",
                )),
            };
        match entries.iter().find(|(k, _)| k.value == key) {
            Some((_, v)) => at = v,
            None => return Ok(None),
        }
    }
    match &at.kind {
        Kind::Scalar(s) => Ok(Some(s)),
        _ => Err(hinted(
            format!(
                "{file}: expected scalar at machine.install.image, got {}",
                kind_name(at)
            ),
            "machine.install.image is one image reference, e.g. ghcr.io/siderolabs/installer:v1.13.7",
        )),
    }
}

/// Whether `s` reads back as the same string when written plain.
fn plain_safe(s: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || "._/:@+-".contains(c);
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.chars().all(word)
        && !s.contains(": ")
        && serde_yaml_ng::from_str::<serde_yaml_ng::Value>(s).ok()
            == Some(serde_yaml_ng::Value::String(s.to_string()))
}

fn double_quoted(s: &str) -> String {
    // JSON string escapes are valid YAML double-quoted escapes.
    serde_json::Value::String(s.to_string()).to_string()
}

/// `image` written in the style the old value had where that style can hold it.
fn written(image: &str, old: &Scalar) -> String {
    match old.style {
        Style::Single if !image.contains('\n') => format!("'{}'", image.replace('\'', "''")),
        Style::Plain if plain_safe(image) && !old.in_flow => image.to_string(),
        _ => double_quoted(image),
    }
}

/// The text with the first `machine.install.image` set to `image`.
pub fn set(text: &str, image: &str, file: &str) -> Result<(String, Synced)> {
    let located = located::locate(text).map_err(|e| {
        hinted(
            format!(
                "{file}: cannot read the YAML to update machine.install.image: {}",
                e.0
            ),
            format!("fix the YAML in {file}"),
        )
    })?;
    for doc in &located.docs {
        let Some(s) = image_of(doc, file)? else {
            continue;
        };
        if s.value == image {
            return Ok((text.to_string(), Synced::Same));
        }
        let edited = located::splice(text, vec![(s.start, s.end, written(image, s))]);
        return Ok((edited, Synced::Updated));
    }
    Ok((text.to_string(), Synced::NoKey))
}

/// Sets `machine.install.image` in the file at `path`, keeping its mode.
pub fn sync_file(path: &Path, image: &str) -> Result<Synced> {
    let file = path.display().to_string();
    let text = fsutil::read_text(path)?;
    let (edited, what) = set(&text, image, &file)?;
    if what != Synced::Updated {
        return Ok(what);
    }
    let perm = std::fs::metadata(path)?.permissions();
    let mode = if perm.mode() & 0o077 == 0 {
        Mode::Secret
    } else {
        Mode::Public
    };
    fsutil::write_atomic(path, edited.as_bytes(), mode)?;
    if perm.mode() & 0o777 != mode.bits() {
        std::fs::set_permissions(path, perm)?;
    }
    Ok(what)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "# talm: nodes=[\"10.0.0.1\"], endpoints=[\"10.0.0.1\"], templates=[\"templates/controlplane.yaml\"]\n# THIS FILE IS AUTOGENERATED. PREFER TEMPLATE EDITS OVER MANUAL ONES.\nmachine:\n  type: controlplane\n  install:\n    disk: /dev/sda  # the first disk\n    image:   ghcr.io/siderolabs/installer:v1.13.7   # pinned\n    wipe: false\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: cp1\n";

    #[test]
    fn only_the_image_text_changes() {
        let (out, what) = set(NODE, "ghcr.io/siderolabs/installer:v1.13.8", "n.yaml").unwrap();
        assert_eq!(what, Synced::Updated);
        assert_eq!(out, NODE.replace("v1.13.7", "v1.13.8"));
        let (same, what) = set(&out, "ghcr.io/siderolabs/installer:v1.13.8", "n.yaml").unwrap();
        assert_eq!((same, what), (out, Synced::Same));
    }

    #[test]
    fn quoting_is_kept_or_chosen() {
        let q = "machine:\n  install:\n    image: \"a:1\"\n";
        assert_eq!(
            set(q, "a:2", "q").unwrap().0,
            "machine:\n  install:\n    image: \"a:2\"\n"
        );
        let s = "machine:\n  install:\n    image: 'a:1'\n";
        assert_eq!(
            set(s, "a:2", "s").unwrap().0,
            "machine:\n  install:\n    image: 'a:2'\n"
        );
        let p = "machine:\n  install:\n    image: a\n";
        assert_eq!(
            set(p, "true", "p").unwrap().0,
            "machine:\n  install:\n    image: \"true\"\n"
        );
        let f = "machine: {install: {image: a}}\n";
        assert_eq!(
            set(f, "b:1", "f").unwrap().0,
            "machine: {install: {image: \"b:1\"}}\n"
        );
    }

    #[test]
    fn files_without_the_key_and_wrong_shapes() {
        for text in [
            "",
            "# just a comment\n",
            "cluster:\n  x: 1\n",
            "machine:\n  install:\n    disk: /dev/sda\n",
        ] {
            assert_eq!(set(text, "a:1", "f").unwrap().1, Synced::NoKey, "{text:?}");
        }
        let e = set("machine: [1]\n", "a:1", "f.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.yaml: expected mapping while walking to \"install\", got sequence"
        );
        let e = set("machine:\n  install:\n    image: [a]\n", "a:1", "f.yaml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.yaml: expected scalar at machine.install.image, got sequence"
        );
        // A later document holds it.
        let two = "cluster: {}\n---\nmachine:\n  install:\n    image: a:1\n";
        assert_eq!(set(two, "a:2", "f").unwrap().0, two.replace("a:1", "a:2"));
    }
}
