//! The values a render sees, from every source in order (lowest first): the preset's
//! values.yaml, Chart.yaml `templateOptions.valueFiles`, `--values`, `--set`, `--set-string`,
//! `--set-file`, `--set-json`, `--set-literal`. Encrypted value files are opened in memory.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_yaml_ng::{Mapping, Value};

use super::strvals::{self, Typing};
use crate::secrets::crypt;
use talm_base::error::hinted;

/// The value flags of `template` and `apply` (Chart.yaml's lists come first).
#[derive(Debug, Clone, Default)]
pub struct ValueFlags {
    pub values: Vec<String>,
    pub set: Vec<String>,
    pub set_string: Vec<String>,
    pub set_file: Vec<String>,
    pub set_json: Vec<String>,
    pub set_literal: Vec<String>,
}

/// Values ready for rendering, with what the user should hear about them.
#[derive(Debug, Clone, Default)]
pub struct Values {
    pub tree: Value,
    pub warnings: Vec<String>,
    /// The opened contents of encrypted value files: these are secrets and must be kept out of
    /// node files and redacted in output.
    pub secrets: Vec<Value>,
    /// Each encrypted value file with the key paths of the values it set.
    pub sealed_origins: Vec<(String, Vec<String>)>,
    /// Every source in the order applied (`values.yaml`, value files, `--set`...) with the key
    /// paths of the values it set.
    pub origins: Vec<(String, Vec<String>)>,
}

/// The shape of a value, as the preset's defaults fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Scalar,
    List,
    Map,
}

impl Shape {
    fn of(v: &Value) -> Option<Shape> {
        match v {
            Value::Null => None,
            Value::Sequence(_) => Some(Shape::List),
            Value::Mapping(_) => Some(Shape::Map),
            Value::Tagged(t) => Shape::of(&t.value),
            _ => Some(Shape::Scalar),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Scalar => "a single value (text, number or boolean)",
            Shape::List => "a list",
            Shape::Map => "a mapping",
        }
    }
}

/// The key path of every scalar leaf of a value (`a.b[0].c`).
fn leaf_paths(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Mapping(m) => {
            for (k, x) in m {
                let key = k.as_str().map(str::to_string).unwrap_or_default();
                let p = if path.is_empty() {
                    key
                } else {
                    format!("{path}.{key}")
                };
                leaf_paths(x, p, out);
            }
        }
        Value::Sequence(items) => {
            for (i, x) in items.iter().enumerate() {
                leaf_paths(x, format!("{path}[{i}]"), out);
            }
        }
        _ => out.push(path),
    }
}

/// Whether `a` and `b` are the same key path or one lies below the other.
fn related(a: &str, b: &str) -> bool {
    let below = |long: &str, short: &str| {
        long.starts_with(short)
            && matches!(
                long.as_bytes().get(short.len()),
                None | Some(b'.') | Some(b'[')
            )
    };
    below(a, b) || below(b, a)
}

impl Values {
    /// The source that set the value at `path` last.
    pub fn origin(&self, path: &str) -> &str {
        self.origins
            .iter()
            .rev()
            .find(|(_, paths)| paths.iter().any(|p| related(p, path)))
            .map(|(label, _)| label.as_str())
            .unwrap_or("values.yaml")
    }

    /// Refuses a value whose shape (single value, list, mapping) differs from the preset's
    /// default for the same key, naming the key and the source that set it.
    pub fn check_shapes(&self, defaults: &Value) -> Result<()> {
        fn walk(values: &Values, def: &Value, got: &Value, path: String) -> Result<()> {
            let (Some(want), Some(have)) = (Shape::of(def), Shape::of(got)) else {
                return Ok(());
            };
            if want != have {
                let origin = values.origin(&path);
                return Err(hinted(
                    format!(
                        "{origin}: {path} must be {} (as in the preset's values.yaml), but it is {}",
                        want.name(),
                        have.name()
                    ),
                    format!("fix {path} in {origin}; `talm init --update` shows the preset's values.yaml"),
                ));
            }
            if let (Value::Mapping(d), Value::Mapping(g)) = (def, got) {
                for (k, dv) in d {
                    if let (Some(key), Some(gv)) = (k.as_str(), g.get(k)) {
                        let p = if path.is_empty() {
                            key.to_string()
                        } else {
                            format!("{path}.{key}")
                        };
                        walk(values, dv, gv, p)?;
                    }
                }
            }
            Ok(())
        }
        walk(self, defaults, &self.tree, String::new())
    }

    /// The encrypted value file that set the value at `path`, if one did.
    pub fn sealed_origin(&self, path: &str) -> Option<&str> {
        self.sealed_origins
            .iter()
            .rev()
            .find(|(_, paths)| paths.iter().any(|p| related(p, path)))
            .map(|(label, _)| label.as_str())
    }

    /// An error about the values as the user should read it: a message that speaks of
    /// `values.yaml: <path>` names the encrypted file that set <path> instead; secret values
    /// are masked when printed (`talm_base::mask`).
    pub fn attribute(&self, err: anyhow::Error) -> anyhow::Error {
        if self.sealed_origins.is_empty() {
            return err;
        }
        talm_base::error::rewrite(err, |text| {
            let mut out = String::new();
            let mut rest = text;
            while let Some(i) = rest.find("values.yaml: ") {
                out.push_str(&rest[..i]);
                let after = &rest[i + "values.yaml: ".len()..];
                let end = after
                    .find(|c: char| !(c.is_alphanumeric() || "_-.[]".contains(c)))
                    .unwrap_or(after.len());
                let path = after[..end].trim_end_matches('.');
                match self.sealed_origin(path) {
                    Some(label) if !path.is_empty() => out.push_str(&format!("{label}: ")),
                    _ => out.push_str("values.yaml: "),
                }
                rest = after;
            }
            out.push_str(rest);
            out
        })
    }
}

/// Maps merge key by key; anything else (lists too) is replaced by the later value.
pub fn deep_merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Mapping(b), Value::Mapping(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (b, o) => *b = o,
    }
}

fn read_map(path: &Path, label: &str) -> Result<Mapping> {
    let text = crate::project::fsutil::read_text(path)
        .with_context(|| format!("failed to read values file {label}"))?;
    match talm_base::yaml::parse(&text, label)? {
        Value::Mapping(m) => Ok(m),
        Value::Null => Ok(Mapping::new()),
        _ => Err(hinted(
            format!("values file {label} is not a map"),
            format!("{label} must hold `key: value` pairs at the top level"),
        )),
    }
}

/// Opens a `*.encrypted.yaml` value file with `<root>/talm.key`, in memory only.
fn read_encrypted(root: &Path, path: &Path, label: &str) -> Result<Mapping> {
    let text = crate::project::fsutil::read_text(path)
        .with_context(|| format!("failed to read values file {label}"))?;
    let sealed = talm_base::yaml::parse(&text, label)?;
    if crypt::count_sealed(&sealed) == 0 {
        return Err(hinted(
            format!("{label}: file is named *.encrypted.yaml but contains no ENC[AGE,...] encrypted values"),
            "encrypt it with `talm init --encrypt`, or rename it if it is meant to be plain",
        ));
    }
    let key_path = root.join(crypt::KEY_FILE);
    crypt::check_key_mode(&key_path);
    let key_text = talm_base::input::try_read_text(&key_path, talm_base::input::Kind::Secret)
        .map_err(|e| {
            hinted(
                format!(
                    "loading talm.key to decrypt {label:?}: read key file: {}: {}",
                    key_path.display(),
                    e.problem
                ),
                crypt::key_recovery_hint(label),
            )
        })?;
    let id = crypt::parse_key(&key_text, "talm.key")?;
    match crypt::decrypt_value(&id, &text, label)? {
        Value::Mapping(m) => Ok(m),
        _ => Err(hinted(
            format!("values file {label} is not a map"),
            "it must hold `key: value` pairs",
        )),
    }
}

/// A file Chart.yaml names (relative to the project root): it must stay inside the project, links
/// followed, since a project folder (maybe someone else's) must not read files beyond itself.
pub fn chart_path(root: &Path, file: &str, key: &str) -> Result<PathBuf> {
    crate::project::confine::inside(&root.display().to_string(), file).map_err(|e| {
        hinted(
            format!("Chart.yaml templateOptions.{key}: {e}"),
            "files Chart.yaml names must lie inside the project; pass a file from elsewhere on the command line (--values, --set-file) instead",
        )
    })
}

impl Values {
    fn record(&mut self, label: &str, v: &Value) {
        let mut paths = Vec::new();
        leaf_paths(v, String::new(), &mut paths);
        self.origins.push((label.to_string(), paths));
    }
}

/// Loads the values: `preset` is the project's values.yaml text, `chart_files` the Chart.yaml
/// value files (relative to the root), `flags` the command line (Chart.yaml lists prepended).
pub fn load(
    root: &Path,
    preset: &str,
    chart_files: &[String],
    flags: &ValueFlags,
) -> Result<Values> {
    let mut out = Values {
        tree: Value::Mapping(talm_base::yaml::parse_map(preset, "values.yaml")?),
        ..Values::default()
    };
    out.record("values.yaml", &out.tree.clone());
    let mut files = Vec::new();
    for f in chart_files {
        files.push((chart_path(root, f, "valueFiles")?, f.clone()));
    }
    files.extend(flags.values.iter().map(|f| (PathBuf::from(f), f.clone())));
    for (path, label) in files {
        let map = if label.ends_with(".encrypted.yaml") {
            let m = read_encrypted(root, &path, &label)?;
            let v = Value::Mapping(m.clone());
            talm_base::mask::register(crate::secrets::twins::scalar_texts(&v));
            let mut paths = Vec::new();
            leaf_paths(&v, String::new(), &mut paths);
            out.sealed_origins.push((label.clone(), paths));
            out.secrets.push(v);
            m
        } else {
            read_map(&path, &label)?
        };
        let map = Value::Mapping(map);
        out.record(&label, &map);
        deep_merge(&mut out.tree, map);
    }
    for (args, typing) in [
        (&flags.set, Typing::Typed),
        (&flags.set_string, Typing::Strings),
    ] {
        for arg in args {
            if typing == Typing::Typed {
                out.warnings.extend(super::strvals::literal_warnings(arg));
            }
            // Parsed into the values so far, as Helm does: `a[0].b=x` edits an existing list item.
            if !out.tree.is_mapping() {
                out.tree = Value::Mapping(Mapping::new());
            }
            let Value::Mapping(tree) = &mut out.tree else {
                unreachable!("made a mapping above")
            };
            strvals::parse_into(arg, typing, tree).map_err(|e| {
                hinted(
                    format!("failed parsing --set data {arg:?}: {e}"),
                    "use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)",
                )
            })?;
            let mut set = Mapping::new();
            let _ = strvals::parse_into(arg, typing, &mut set);
            let flag = if typing == Typing::Typed {
                "--set"
            } else {
                "--set-string"
            };
            out.record(flag, &Value::Mapping(set));
        }
    }
    for arg in &flags.set_file {
        let (key, path) = arg.split_once('=').ok_or_else(|| {
            hinted(
                format!("--set-file {arg:?} is not key=path"),
                "for example: --set-file motd=./motd.txt",
            )
        })?;
        let content = crate::project::fsutil::read_text(Path::new(path))
            .with_context(|| format!("failed to read file for set-file value {arg:?}"))?;
        let mut m = Mapping::new();
        strvals::parse_into(&format!("{key}=x"), Typing::Strings, &mut m)?;
        set_leaf(&mut m, Value::String(content));
        deep_merge(&mut out.tree, Value::Mapping(m));
    }
    for arg in &flags.set_json {
        let merged = if arg.trim_start().starts_with('{') {
            serde_json::from_str::<serde_json::Value>(arg)
                .map_err(|e| json_error(arg, e))
                .and_then(|j| Ok(serde_yaml_ng::to_value(j)?))?
        } else {
            let (key, json) = arg.split_once('=').ok_or_else(|| {
                hinted(
                    format!("--set-json {arg:?} is neither a JSON object nor key=json"),
                    "for example: --set-json 'a={\"b\":1}'",
                )
            })?;
            let j: serde_json::Value =
                serde_json::from_str(json).map_err(|e| json_error(arg, e))?;
            let mut m = Mapping::new();
            strvals::parse_into(&format!("{key}=x"), Typing::Strings, &mut m)?;
            set_leaf(&mut m, serde_yaml_ng::to_value(j)?);
            Value::Mapping(m)
        };
        deep_merge(&mut out.tree, merged);
    }
    for arg in &flags.set_literal {
        let (key, value) = arg.split_once('=').ok_or_else(|| {
            hinted(
                format!("--set-literal {arg:?} is not key=value"),
                "for example: --set-literal 'motd=a,b.c'",
            )
        })?;
        let mut m = Mapping::new();
        strvals::parse_into(&format!("{key}=x"), Typing::Strings, &mut m)?;
        set_leaf(&mut m, Value::String(value.to_string()));
        deep_merge(&mut out.tree, Value::Mapping(m));
    }
    Ok(out)
}

fn json_error(arg: &str, e: serde_json::Error) -> anyhow::Error {
    hinted(
        format!("failed to unmarshal JSON value {arg:?}: {e}"),
        "quote the JSON for your shell, e.g. --set-json '{\"a\":1}'",
    )
}

/// Replaces the single leaf that a `key=x` parse produced with `v`.
fn set_leaf(m: &mut Mapping, v: Value) {
    fn walk(node: &mut Value, v: Value) {
        match node {
            Value::Mapping(m) => {
                if let Some((_, child)) = m.iter_mut().next() {
                    walk(child, v);
                }
            }
            Value::Sequence(s) => {
                if let Some(child) = s.iter_mut().rev().find(|c| !c.is_null()) {
                    walk(child, v);
                }
            }
            leaf => *leaf = v,
        }
    }
    let mut wrapped = Value::Mapping(std::mem::take(m));
    walk(&mut wrapped, v);
    if let Value::Mapping(back) = wrapped {
        *m = back;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(s: &str) -> Value {
        serde_yaml_ng::from_str(s).unwrap()
    }

    #[test]
    fn precedence_and_merge() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("extra.yaml"),
            "a: {x: 1, y: 2}\nlist: [1, 2]\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("motd.txt"), "hello\n").unwrap();
        let flags = ValueFlags {
            values: vec![dir.path().join("extra.yaml").display().to_string()],
            set: vec!["a.y=3,k=42".into()],
            set_string: vec!["k=42".into()],
            set_file: vec![format!("motd={}", dir.path().join("motd.txt").display())],
            set_json: vec![r#"{"list": [9]}"#.into(), r#"j={"n": [1, "x"]}"#.into()],
            set_literal: vec!["lit=a,b.c".into()],
        };
        let v = load(dir.path(), "a: {x: 0, z: 0}\nlist: [0]\n", &[], &flags).unwrap();
        assert_eq!(
            v.tree,
            yaml("{a: {x: 1, z: 0, y: 3}, list: [9], k: '42', motd: \"hello\\n\", j: {n: [1, x]}, lit: 'a,b.c'}")
        );
    }

    #[test]
    fn set_edits_existing_list_items() {
        let flags = ValueFlags {
            set: vec!["links[0].mtu=9000,links[1].name=b".into()],
            ..Default::default()
        };
        let v = load(
            Path::new("/"),
            "links:\n- {name: a, mtu: 1500}\n",
            &[],
            &flags,
        )
        .unwrap();
        assert_eq!(v.tree, yaml("{links: [{name: a, mtu: 9000}, {name: b}]}"));
    }

    #[test]
    fn bad_values_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("list.yaml"), "- a\n- b\n").unwrap();
        let err = load(
            dir.path(),
            "",
            &["list.yaml".into()],
            &ValueFlags::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("values file list.yaml is not a map"),
            "{err}"
        );
        let err = load(
            dir.path(),
            "",
            &["missing.yaml".into()],
            &ValueFlags::default(),
        )
        .unwrap_err();
        assert!(
            format!("{err:#}").contains("failed to read values file missing.yaml"),
            "{err:#}"
        );
        let flags = ValueFlags {
            set: vec!["a".into()],
            ..Default::default()
        };
        let err = load(dir.path(), "", &[], &flags).unwrap_err();
        assert!(
            err.to_string().contains("failed parsing --set data \"a\""),
            "{err}"
        );
        std::fs::write(dir.path().join("v.encrypted.yaml"), "a: plain\n").unwrap();
        let err = load(
            dir.path(),
            "",
            &["v.encrypted.yaml".into()],
            &ValueFlags::default(),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("contains no ENC[AGE,...] encrypted values"),
            "{err}"
        );
    }

    #[test]
    fn encrypted_values_open_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let key = crypt::new_key_file();
        let id = crypt::parse_key(&key, "talm.key").unwrap();
        let sealed =
            crypt::encrypt_yaml(&id, "password: hunter2\n", "values-secret.yaml", None).unwrap();
        std::fs::write(dir.path().join("values-secret.encrypted.yaml"), sealed).unwrap();
        let files = ["values-secret.encrypted.yaml".to_string()];
        let err = load(dir.path(), "", &files, &ValueFlags::default()).unwrap_err();
        assert!(
            talm_base::error::render(&err).contains("Restore your backed-up key"),
            "{err}"
        );
        std::fs::write(dir.path().join("talm.key"), key).unwrap();
        let v = load(
            dir.path(),
            "password: \"\"\n",
            &files,
            &ValueFlags::default(),
        )
        .unwrap();
        assert_eq!(v.tree, yaml("{password: hunter2}"));
        assert_eq!(v.secrets, vec![yaml("{password: hunter2}")]);
    }
}
