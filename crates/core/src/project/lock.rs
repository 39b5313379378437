//! `.talm-preset.lock` (which preset a project came from, and that preset's hash) and
//! `.talm-preset.base` (the preset's Chart.yaml and values.yaml as first written, the baseline
//! of the three-way merge in `init --update`).

use std::collections::BTreeMap;

use anyhow::Result;
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

pub const LOCK_FILE: &str = ".talm-preset.lock";
pub const BASE_FILE: &str = ".talm-preset.base";

/// The files whose baseline is kept for merging.
pub const MERGED_FILES: &[&str] = &["Chart.yaml", "values.yaml"];

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Lock {
    #[serde(default)]
    pub preset: String,
    #[serde(default, rename = "presetHash")]
    pub preset_hash: String,
}

/// The lock file's text: the fixed header, then the preset and its hash.
pub fn render(preset: &str, hash: &str) -> String {
    format!(
        "# Managed by talm. Records the preset this project was generated from and the\n\
         # content hash of that preset at init time, so talm can warn when the installed\n\
         # binary ships a newer preset. Do not edit by hand; run\n\
         # `talm init --update --preset <preset>` to refresh.\n\
         preset: {preset}\n\
         presetHash: {hash}\n"
    )
}

/// Parses the lock; both fields are required.
pub fn parse(text: &str) -> Result<Lock> {
    let lock: Lock =
        serde_yaml_ng::from_str(text).map_err(|e| anyhow::anyhow!("parsing preset lock: {e}"))?;
    if lock.preset.is_empty() || lock.preset_hash.is_empty() {
        anyhow::bail!("preset lock is missing preset or presetHash");
    }
    Ok(lock)
}

/// The baseline file's text.
pub fn render_base(files: &BTreeMap<String, String>) -> String {
    let mut m = Mapping::new();
    for name in MERGED_FILES {
        if let Some(c) = files.get(*name) {
            m.insert(Value::from(*name), Value::from(c.as_str()));
        }
    }
    format!(
        "# Managed by talm: the preset's Chart.yaml and values.yaml as talm last wrote them.\n\
         # `talm init --update` merges preset changes into your files against this baseline,\n\
         # so your own edits survive. Commit it; do not edit by hand.\n{}",
        talm_base::yaml::to_string(&Value::Mapping(m))
    )
}

/// The error for a damaged baseline: what is wrong and how to rebuild it.
fn damaged(why: String) -> anyhow::Error {
    talm_base::error::hinted(
        format!("{BASE_FILE} is damaged: {why}"),
        format!("it records the preset's Chart.yaml and values.yaml as talm last wrote them; restore it with `git checkout -- {BASE_FILE}`, or delete it and run `talm init --update --force` (without a baseline your Chart.yaml and values.yaml are kept as they are, and the next update records a new one)"),
    )
}

/// Reads the baseline file's bytes (`None`: there is none); bytes that are not UTF-8 text
/// are damage like any other.
pub fn read_base(bytes: Option<&[u8]>) -> Result<BTreeMap<String, String>> {
    let Some(bytes) = bytes else {
        return Ok(BTreeMap::new());
    };
    let text = std::str::from_utf8(bytes)
        .map_err(|e| damaged(format!("it is not UTF-8 text (byte {})", e.valid_up_to())))?;
    parse_base(text)
}

/// Reads the baseline file (empty text: no baseline); a damaged one is an error that says how
/// to rebuild it.
pub fn parse_base(text: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    if text.trim().is_empty() {
        return Ok(out);
    }
    let m = match serde_yaml_ng::from_str::<Value>(text) {
        Ok(Value::Mapping(m)) => m,
        Ok(_) => {
            return Err(damaged(
                "it is not a mapping of file names to their text".into(),
            ))
        }
        Err(e) => return Err(damaged(format!("it is not YAML ({e})"))),
    };
    for (k, v) in m {
        match (k.as_str(), v.as_str()) {
            (Some(k), Some(v)) if MERGED_FILES.contains(&k) => {
                out.insert(k.to_string(), v.to_string());
            }
            (Some(k), Some(_)) => {
                return Err(damaged(format!("it names {k:?}, which talm never records")))
            }
            _ => return Err(damaged("an entry is not file name: text".into())),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_roundtrip_and_refusals() {
        let text = render("cozystack", "ab12");
        assert!(text.starts_with("# Managed by talm."));
        assert_eq!(
            parse(&text).unwrap(),
            Lock {
                preset: "cozystack".into(),
                preset_hash: "ab12".into()
            }
        );
        assert!(parse("preset: x\n")
            .unwrap_err()
            .to_string()
            .contains("missing preset or presetHash"));
        assert!(parse("[")
            .unwrap_err()
            .to_string()
            .contains("parsing preset lock"));
    }

    #[test]
    fn baseline_roundtrip() {
        let mut files = BTreeMap::new();
        files.insert(
            "values.yaml".to_string(),
            "# c  \nendpoint: \"\"\n".to_string(),
        );
        files.insert("Chart.yaml".to_string(), "name: x\n".to_string());
        files.insert("templates/a.yaml".to_string(), "ignored".to_string());
        let back = parse_base(&render_base(&files)).unwrap();
        assert_eq!(back.len(), 2);
        assert_eq!(back["values.yaml"], files["values.yaml"]);
        assert!(parse_base("").unwrap().is_empty());
        for bad in [
            "values.yaml: [",
            "- a\n",
            "values.yaml: {a: 1}\n",
            "other.yaml: x\n",
        ] {
            let err = parse_base(bad).unwrap_err().to_string();
            assert!(err.contains(".talm-preset.base is damaged"), "{err}");
        }
        let err = read_base(Some(b"values.yaml: |\n  a\xff\n")).unwrap_err();
        assert_eq!(
            err.to_string(),
            ".talm-preset.base is damaged: it is not UTF-8 text (byte 18)"
        );
        assert!(read_base(None).unwrap().is_empty());
    }
}
