//! The full machine config of one node from a rendered template: the Talos patches in the
//! render (documents with `machine`/`cluster`) are merged into the config Talos would generate
//! for the node's type, cluster name and endpoint; the render's typed documents (HostnameConfig,
//! LinkConfig, ...) follow as they are. This is what `template --full` prints and apply sends.
//! The generated configs are kept (a few, by all they are made from): a fleet's nodes share them.

use std::sync::Arc;

use anyhow::{Context, Result};
use serde_yaml_ng::Value;

use super::generate::{self, Input, MachineType, Options};
use super::{encode, patch};
use crate::secrets::{bundle::Bundle, contract::Contract};
use talm_base::caches::memo::Memo;
use talm_base::error::hinted;

/// A render split into Talos patches and the documents that pass through.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Split {
    pub patches: Vec<String>,
    pub extras: Vec<String>,
}

/// Splits rendered text on `---` lines; empty documents are dropped.
pub fn split(text: &str) -> Result<Split> {
    let mut out = Split::default();
    for doc in documents(text)? {
        match doc {
            Part::Patch(text, _) => out.patches.push(text),
            Part::Extra(text) => out.extras.push(text),
        }
    }
    Ok(out)
}

/// One non-empty document of a render: a Talos patch (its text and parse) or a document that
/// passes through (its text without the trailing newline).
enum Part {
    Patch(String, Value),
    Extra(String),
}

/// The documents of a render in order, each parsed once: the render's check parsed the whole
/// text already (kept by `yaml::stream`), and its documents are these when the text has no
/// other document boundary than the `---` lines split on here.
fn documents(text: &str) -> Result<Vec<Part>> {
    let text = text.replace("\r\n", "\n");
    let docs = split_lines(&text);
    let mut kept = kept_parse(&text, &docs).map(Vec::into_iter);
    let mut out = Vec::new();
    for doc in docs {
        let value = match kept.as_mut().and_then(Iterator::next) {
            Some(value) => value,
            None => talm_base::yaml::from_str(&doc).map_err(|e| {
                hinted(
                    format!("invalid YAML in template output: {e}\n\nTemplate output:\n{doc}"),
                    "the template rendered text that is not YAML; fix the template",
                )
            })?,
        };
        match &value {
            Value::Null => {}
            Value::Mapping(m) if m.contains_key("machine") || m.contains_key("cluster") => {
                out.push(Part::Patch(doc, value))
            }
            _ => out.push(Part::Extra(doc.trim_end_matches('\n').to_string())),
        }
    }
    Ok(out)
}

/// `text` split on its `---` lines.
fn split_lines(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if body.starts_with("---") && body[3..].trim_matches([' ', '\t']).is_empty() {
            docs.push(String::new());
        } else {
            docs.last_mut()
                // Cannot fail: the list starts with one document.
                .expect("one document at least")
                .push_str(line);
        }
    }
    docs
}

/// The parse of each of `docs` (the split of `text`) from the kept parse of the whole text, or
/// `None` unless the two split alike: no line starts another document (`--- x`), ends one
/// (`...`) or holds a directive (`%`), so the YAML stream's documents are the split's, but for
/// an empty first one (the YAML stream does not count what comes before a leading `---`).
fn kept_parse(text: &str, docs: &[String]) -> Option<Vec<Value>> {
    let other_boundary = text.split('\n').any(|line| {
        line.starts_with("...")
            || line.starts_with('%')
            || line.starts_with("---") && !line[3..].trim_matches([' ', '\t', '\r']).is_empty()
    });
    if other_boundary {
        return None;
    }
    let parsed = talm_base::yaml::parsed(text).ok()?;
    let leading = usize::from(parsed.len() + 1 == docs.len() && blank(&docs[0]));
    if parsed.len() + leading != docs.len() {
        return None;
    }
    let mut values = Vec::with_capacity(docs.len());
    values.extend((0..leading).map(|_| Value::Null));
    values.extend(parsed.iter().cloned());
    Some(values)
}

/// Whether a document holds nothing but blank lines and comments.
fn blank(doc: &str) -> bool {
    doc.lines().all(|l| {
        let l = l.trim_start();
        l.is_empty() || l.starts_with('#')
    })
}

/// What the generated base needs besides the render.
pub struct Base<'a> {
    pub contract: Contract,
    /// Without a leading `v`; empty leaves component images to Talos.
    pub kubernetes_version: &'a str,
    pub bundle: &'a Bundle,
}

/// What a generated config is made from: contract, Kubernetes version, bundle, machine type,
/// cluster name and endpoint.
type Made = (Contract, String, Bundle, MachineType, String, String);

/// The generated configs a process rendered last, by everything they are made from: a fleet's
/// nodes share their cluster's, so each is generated once (control plane and worker of a couple
/// of clusters, and the anonymous control-plane probe each render starts with).
///
/// Listed in [`talm_base::caches::KEPT`].
static GENERATED: Memo<Made, Arc<patch::Decoded>> = Memo::new(8);

/// The config Talos generates for the node, kept encoded and decoded.
fn generated(
    base: &Base<'_>,
    kind: MachineType,
    name: &str,
    endpoint: &str,
) -> Result<Arc<patch::Decoded>> {
    let made = (
        base.contract,
        base.kubernetes_version.to_string(),
        base.bundle.clone(),
        kind,
        name.to_string(),
        endpoint.to_string(),
    );
    GENERATED.get_or_try(
        made,
        |(contract, kubernetes_version, bundle, kind, name, endpoint)| {
            let input = Input {
                cluster_name: name.clone(),
                endpoint: endpoint.clone(),
                kubernetes_version: kubernetes_version.clone(),
                contract: *contract,
                bundle: bundle.clone(),
                options: Options::default(),
            };
            let text = encode::encode(&generate::generate(&input, *kind)?);
            Ok(Arc::new(patch::Decoded::new(text)?))
        },
    )
}

fn text_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(v, |cur, k| cur.get(*k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The node's machine type, cluster name and endpoint: the patches applied to a control-plane
/// base with neither name nor endpoint (the first of the two generations).
pub fn identify(
    base: &Base<'_>,
    patches: &[patch::Patch],
) -> Result<(MachineType, String, String)> {
    let probe = generated(base, MachineType::ControlPlane, "", "")?
        .apply(patches)
        .context("applying the rendered patches")?
        .first_doc()?;
    let kind = match text_at(&probe, &["machine", "type"]) {
        "controlplane" | "init" => MachineType::ControlPlane,
        _ => MachineType::Worker,
    };
    let name = text_at(&probe, &["cluster", "clusterName"]).to_string();
    let endpoint = text_at(&probe, &["cluster", "controlPlane", "endpoint"]).to_string();
    Ok((kind, name, endpoint))
}

/// The full config: machine type, cluster name and endpoint are read from the patches applied
/// to a control-plane base, then the base of that type is generated and patched; its v1alpha1
/// document is followed by the render's own typed documents.
pub fn full(rendered: &str, base: &Base<'_>) -> Result<String> {
    let mut patches = Vec::new();
    let mut extras = Vec::new();
    for part in documents(rendered)? {
        match part {
            Part::Patch(text, value) => patches.push(
                patch::load_parsed_patch(&text, value).context("loading the rendered patches")?,
            ),
            Part::Extra(text) => extras.push(text),
        }
    }
    let (kind, name, endpoint) = identify(base, &patches)?;
    let patched = generated(base, kind, &name, &endpoint)?
        .apply(&patches)
        .context("applying the rendered patches")?;
    let mut out = encode::encode(&[patched.first_doc()?]);
    for extra in &extras {
        out.push_str("---\n");
        out.push_str(extra);
        out.push('\n');
    }
    check_full(&out)?;
    Ok(out)
}

/// Checks a full config as Talos's loader would. It is read through the kept streams: merging
/// a node file's body onto it reads the same text next. The text is decoded on its own only to
/// report what fails, with its line.
fn check_full(out: &str) -> Result<()> {
    let decodes = talm_base::yaml::parsed(out)
        .ok()
        .is_some_and(|docs| super::decode::check_values(&docs).is_ok());
    if decodes {
        return Ok(());
    }
    patch::decode_check(out).context("the full config does not decode as Talos config")
}

/// Whether `text` is a whole machine config rather than a patch: its v1alpha1 document (the one
/// with `machine` or `cluster`) carries the `version` and the `machine.token` every generated
/// config has and no patch needs.
pub fn is_whole(text: &str) -> bool {
    // The config being applied was parsed by the steps before (kept by `yaml::stream`).
    let Ok(docs) = talm_base::yaml::parsed(text) else {
        return false;
    };
    docs.iter().any(|v| {
        (v.get("machine").is_some() || v.get("cluster").is_some())
            && v.get("version").is_some()
            && !text_at(v, &["machine", "token"]).is_empty()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_configs_are_told_from_patches() {
        assert!(!is_whole("machine:\n  type: controlplane\n"));
        assert!(!is_whole("version: v1alpha1\nmachine:\n  type: worker\n"));
        assert!(is_whole(
            "version: v1alpha1\nmachine:\n  type: worker\n  token: abc.def\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n"
        ));
        assert!(!is_whole("a: [b\n"));
    }

    #[test]
    fn documents_come_from_the_kept_parse_only_when_it_splits_alike() {
        let plain = "machine:\n  type: worker\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n";
        for (text, kept) in [
            (plain, true),
            (
                "# head\n---\nmachine: {}\n---\n# only a comment\n---\nb: 1\n---\n",
                true,
            ),
            ("---\nmachine: {}\n", true),
            ("machine: {}\n--- b: 2\n---\nnull\n", false),
            ("machine: {}\n...\n---\nb: 2\n", false),
            ("%YAML 1.2\n---\nmachine: {}\n", false),
            ("machine: [\n", false),
        ] {
            let docs = split_lines(text);
            let got = kept_parse(text, &docs);
            assert_eq!(got.is_some(), kept, "{text:?}");
            if let Some(values) = got {
                let each: Vec<Value> = docs
                    .iter()
                    .map(|d| serde_yaml_ng::from_str(d).unwrap())
                    .collect();
                assert_eq!(values, each, "{text:?}");
            }
        }
    }

    #[test]
    fn split_keeps_typed_documents_aside() {
        let s = split("\nmachine:\n  type: worker\n---\n# only a comment\n---   \napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n").unwrap();
        assert_eq!(s.patches, vec!["\nmachine:\n  type: worker\n".to_string()]);
        assert_eq!(
            s.extras,
            vec!["apiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a".to_string()]
        );
        let err = split("a: [b\n").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid YAML in template output"),
            "{err}"
        );
    }

    fn bundle() -> Bundle {
        Bundle::load(
            include_str!("../../../../tests/fixtures/talos/stability/secrets.yaml"),
            "s",
        )
        .unwrap()
    }

    #[test]
    fn a_full_config_that_talos_would_refuse_names_the_line() {
        let bundle = bundle();
        let base = v1_12(&bundle);
        let patch = "machine:\n  type: worker\n";
        let good = full(
            &format!("{patch}---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\n"),
            &base,
        )
        .unwrap();
        assert!(talm_base::yaml::parsed(&good).is_ok());
        let err = full(
            &format!(
                "{patch}---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: a\nbogus: 1\n"
            ),
            &base,
        )
        .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.starts_with("the full config does not decode as Talos config"),
            "{text}"
        );
        assert!(text.contains("bogus") && text.contains("line"), "{text}");
    }

    fn v1_12(bundle: &Bundle) -> Base<'_> {
        Base {
            contract: Contract::parse("v1.12").unwrap(),
            kubernetes_version: "1.34.3",
            bundle,
        }
    }

    #[test]
    fn generated_configs_are_kept_by_all_they_are_made_from() {
        let bundle = bundle();
        let base = v1_12(&bundle);
        let w = MachineType::Worker;
        let first = generated(&base, w, "kept", "https://10.9.0.1:6443").unwrap();
        let again = generated(&base, w, "kept", "https://10.9.0.1:6443").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = generated(&base, w, "kept", "https://10.9.0.2:6443").unwrap();
        assert!(other.text.contains("https://10.9.0.2:6443"));
        let older = Base {
            contract: Contract::parse("v1.11").unwrap(),
            ..base
        };
        assert!(!Arc::ptr_eq(
            &first,
            &generated(&older, w, "kept", "https://10.9.0.1:6443").unwrap()
        ));
        let mut rotated = bundle.clone();
        rotated.trustdinfo.as_mut().unwrap().token = "abcdef.0123456789abcdef".into();
        let rotated_base = Base {
            bundle: &rotated,
            ..older
        };
        let text = &generated(&rotated_base, w, "kept", "https://10.9.0.1:6443")
            .unwrap()
            .text;
        assert!(text.contains("abcdef.0123456789abcdef"), "{text}");
    }

    #[test]
    fn full_config_takes_type_name_and_endpoint_from_the_patch() {
        let bundle = bundle();
        let base = v1_12(&bundle);
        let out = full(
            "machine:\n  type: worker\n  sysctls:\n    a: \"1\"\ncluster:\n  clusterName: c1\n  controlPlane:\n    endpoint: https://10.0.0.1:6443\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: n1\n",
            &base,
        )
        .unwrap();
        let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&out)
            .map(|d| serde::Deserialize::deserialize(d).unwrap())
            .collect();
        assert_eq!(docs.len(), 2, "{out}");
        assert_eq!(text_at(&docs[0], &["machine", "type"]), "worker");
        assert_eq!(text_at(&docs[0], &["cluster", "clusterName"]), "c1");
        assert_eq!(text_at(&docs[0], &["machine", "sysctls", "a"]), "1");
        assert_eq!(
            text_at(&docs[0], &["machine", "kubelet", "image"]),
            "ghcr.io/siderolabs/kubelet:v1.34.3"
        );
        assert!(
            docs[0]["cluster"].get("apiServer").is_none(),
            "a worker has no control-plane parts"
        );
        assert_eq!(docs[1]["hostname"].as_str(), Some("n1"));
        assert_eq!(docs[1]["kind"].as_str(), Some("HostnameConfig"));
    }
}
