//! A project's secret files and their encrypted twins: what each kind must hold to count as
//! whole before it may replace the other, and what a plain file would lose if its twin's
//! content replaced it (named by key path, never by value).

use std::str::FromStr;

use anyhow::Result;
use serde_yaml_ng::Value;

use super::{bundle::Bundle, talosconfig};
use talm_base::error::hinted;

/// What a secret file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `secrets.yaml`: the Talos secrets bundle.
    Bundle,
    Talosconfig,
    Kubeconfig,
    /// `values-secret.yaml` and other value files: any mapping.
    Values,
}

impl FromStr for Kind {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Kind> {
        Ok(match s {
            "bundle" => Kind::Bundle,
            "talosconfig" => Kind::Talosconfig,
            "kubeconfig" => Kind::Kubeconfig,
            "values" => Kind::Values,
            other => anyhow::bail!(
                "unknown secret file kind {other:?} (bundle, talosconfig, kubeconfig, values)"
            ),
        })
    }
}

impl Kind {
    /// The kind of a project file by its name, for callers that have nothing better.
    pub fn of_file(file: &str) -> Kind {
        let name = std::path::Path::new(file)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = name.trim_end_matches(".encrypted");
        match name {
            "secrets.yaml" | "secrets.encrypted.yaml" => Kind::Bundle,
            "talosconfig" => Kind::Talosconfig,
            n if n.contains("kubeconfig") => Kind::Kubeconfig,
            _ => Kind::Values,
        }
    }
}

/// The encrypted twin of a plain project file, as `talm init --encrypt` names it:
/// `secrets.yaml` → `secrets.encrypted.yaml`, `talosconfig` → `talosconfig.encrypted`.
pub fn twin_name(plain: &str) -> String {
    match plain.strip_suffix(".yaml") {
        Some(stem) => format!("{stem}.encrypted.yaml"),
        None => format!("{plain}.encrypted"),
    }
}

/// Every scalar of a value as text (for masking).
pub fn scalar_texts(v: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Mapping(m) => m.values().for_each(|x| walk(x, out)),
            Value::Sequence(s) => s.iter().for_each(|x| walk(x, out)),
            Value::String(s) => out.push(s.clone()),
            Value::Number(n) => out.push(n.to_string()),
            Value::Bool(b) => out.push(b.to_string()),
            Value::Tagged(t) => walk(&t.value, out),
            Value::Null => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

/// Fails unless `text` is a whole file of its kind; `file` names it.
pub fn check(kind: Kind, text: &str, file: &str) -> Result<()> {
    match kind {
        Kind::Bundle => Bundle::load(text, file).map(|_| ()),
        Kind::Talosconfig => talosconfig::load(text, file).map(|_| ()),
        Kind::Kubeconfig => check_kubeconfig(text, file),
        Kind::Values => talm_base::yaml::parse_map(text, file).map(|_| ()),
    }
}

fn check_kubeconfig(text: &str, file: &str) -> Result<()> {
    let m = talm_base::yaml::parse_map(text, file)?;
    let missing: Vec<&str> = ["clusters", "users", "contexts"]
        .into_iter()
        .filter(|k| {
            m.get(*k)
                .and_then(Value::as_sequence)
                .is_none_or(|s| s.is_empty())
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(hinted(
        format!(
            "{file} is not a whole kubeconfig: {} missing or empty",
            missing.join(", ")
        ),
        match file.strip_suffix(".encrypted") {
            Some(_) => format!("restore {file} from git (`git checkout -- {file}`) or a backup, or fetch a new kubeconfig with `talm kubeconfig -f nodes/NODE.yaml`"),
            None => format!("fetch it again with `talm kubeconfig -f nodes/NODE.yaml` ({file} is git-ignored, so git holds no copy of it)"),
        },
    ))
}

/// One thing the old plain file holds that the new content does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loss {
    /// A value at this path differs.
    Changed(String),
    /// This path exists only in the old file.
    Dropped(String),
    /// Comment lines only the old file holds.
    Comments(usize),
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Loss::Changed(p) => write!(f, "~ {p} (a different value)"),
            Loss::Dropped(p) => write!(f, "- {p} (only in the plain file)"),
            Loss::Comments(n) => write!(f, "# {n} comment line(s) only in the plain file"),
        }
    }
}

/// What replacing `old` with `new` would lose: every path where `old` holds a value `new` does
/// not hold the same. Paths only in `new` lose nothing. Unparsable old text counts as a loss of
/// the whole file.
pub fn losses(old: &str, new: &str) -> Vec<Loss> {
    let (Ok(o), Ok(n)) = (
        serde_yaml_ng::from_str::<Value>(old),
        serde_yaml_ng::from_str::<Value>(new),
    ) else {
        return if old.trim() == new.trim() {
            Vec::new()
        } else {
            vec![Loss::Changed("(the whole file)".into())]
        };
    };
    let mut out = Vec::new();
    walk(&o, Some(&n), String::new(), &mut out);
    let comments = |t: &str| -> Vec<String> {
        t.lines()
            .map(str::trim)
            .filter(|l| l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    let new_comments = comments(new);
    let only_old = comments(old)
        .into_iter()
        .filter(|c| !new_comments.contains(c))
        .count();
    if only_old > 0 {
        out.push(Loss::Comments(only_old));
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(old: &Value, new: Option<&Value>, path: String, out: &mut Vec<Loss>) {
    let Some(new) = new else {
        if !old.is_null() {
            out.push(Loss::Dropped(if path.is_empty() {
                "(the whole file)".into()
            } else {
                path
            }));
        }
        return;
    };
    match (old, new) {
        (Value::Mapping(o), Value::Mapping(n)) => {
            for (k, v) in o {
                let key = k.as_str().map(str::to_string).unwrap_or_else(|| {
                    serde_yaml_ng::to_string(k)
                        .unwrap_or_default()
                        .trim()
                        .to_string()
                });
                walk(v, n.get(k), join(&path, &key), out);
            }
        }
        (Value::Sequence(o), Value::Sequence(n)) => {
            for (i, v) in o.iter().enumerate() {
                walk(v, n.get(i), format!("{path}[{i}]"), out);
            }
        }
        (o, n) if o == n => {}
        _ => out.push(Loss::Changed(if path.is_empty() {
            "(the whole file)".into()
        } else {
            path
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_name_paths_not_values() {
        let old = "a: 1\nb: {c: secret, d: x}\nl: [1, 2]\n";
        let new = "a: 1\nb: {c: other}\nl: [1]\nextra: fine\n";
        let got: Vec<String> = losses(old, new).iter().map(|l| l.to_string()).collect();
        assert_eq!(
            got,
            [
                "~ b.c (a different value)",
                "- b.d (only in the plain file)",
                "- l[1] (only in the plain file)"
            ]
        );
        assert!(losses("a: 1\n", "a: 1\nb: 2\n").is_empty());
        assert_eq!(losses("# mine\na: 1\n", "a: 1\n"), [Loss::Comments(1)]);
        assert_eq!(twin_name("secrets.yaml"), "secrets.encrypted.yaml");
        assert_eq!(twin_name("talosconfig"), "talosconfig.encrypted");
        assert!(!got.iter().any(|l| l.contains("secret")));
    }

    #[test]
    fn kinds_check_wholeness() {
        assert!(check(
            Kind::Kubeconfig,
            "apiVersion: v1\nclusters: []\n",
            "kubeconfig"
        )
        .is_err());
        assert!(check(Kind::Bundle, "cluster:\n  id: x\n", "secrets.yaml").is_err());
        assert!(check(Kind::Values, "a: 1\n", "v.yaml").is_ok());
        assert!("bundel".parse::<Kind>().is_err());
    }
}
