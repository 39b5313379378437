//! Talos configpatcher and configloader test vectors (tests/fixtures/talos, README §2 and §5).

use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;
use talm::config::decode::decode_docs;
use talm::config::encode::encode;
use talm::config::patch::{apply, decode_check, extract_deletes, load_patch, load_patches, Patch};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/talos")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(fixtures().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn patches(files: &[&str]) -> Vec<Patch> {
    let args: Vec<String> = files.iter().map(|f| format!("@{f}")).collect();
    load_patches(&args, &fixtures().join("configpatcher")).unwrap()
}

/// Runs a case with the base as raw bytes and as an already-parsed (re-encoded) config.
fn run(base: &str, files: &[&str]) -> anyhow::Result<String> {
    let base = read(&format!("configpatcher/{base}"));
    let patches = patches(files);
    let raw = apply(&base, &patches)?;
    let parsed = encode(&decode_docs(&base).unwrap());
    assert_eq!(
        apply(&parsed, &patches)?,
        raw,
        "parsed and raw bases differ"
    );
    Ok(raw)
}

fn ops(p: &Patch) -> Vec<(String, String)> {
    match p {
        Patch::Json(ops) => ops
            .iter()
            .map(|o| {
                (
                    o["op"].as_str().unwrap().into(),
                    o["path"].as_str().unwrap().into(),
                )
            })
            .collect(),
        Patch::Strategic(_) => panic!("expected a JSON patch"),
    }
}

#[test]
fn apply_mixed_patches() {
    let files = [
        "apply/strategic1.yaml",
        "apply/jsonpatch1.yaml",
        "apply/jsonpatch2.yaml",
        "apply/strategic2.yaml",
        "apply/strategic3.yaml",
    ];
    assert_eq!(patches(&files).len(), 4);
    assert_eq!(
        run("apply/config.yaml", &files).unwrap(),
        read("configpatcher/apply/expected.yaml")
    );
}

#[test]
fn json_patch_on_multi_doc_fails() {
    let err = run(
        "multidoc/config.yaml",
        &["multidoc/jsonpatch.yaml", "multidoc/strategic1.yaml"],
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "JSON6902 patches are not supported for multi-document machine configuration"
    );
}

#[test]
fn apply_multi_doc() {
    let out = run(
        "multidoc/config.yaml",
        &["multidoc/strategic1.yaml", "multidoc/strategic2.yaml"],
    );
    assert_eq!(out.unwrap(), read("configpatcher/multidoc/expected.yaml"));
}

#[test]
fn apply_audit_policy_replaces() {
    let out = run("auditpolicy/config.yaml", &["auditpolicy/patch1.yaml"]);
    assert_eq!(
        out.unwrap(),
        read("configpatcher/auditpolicy/expected.yaml")
    );
}

#[test]
fn apply_with_manifest_newline() {
    let out = run("apply/config.yaml", &["apply/strategic4.yaml"]).unwrap();
    assert_eq!(out, read("configpatcher/apply/expected_manifests.yaml"));
    decode_check(&out).unwrap();
}

#[test]
fn apply_multi_doc_delete() {
    let out = run("patchdelete/config.yaml", &["patchdelete/strategic1.yaml"]);
    assert_eq!(
        out.unwrap(),
        read("configpatcher/patchdelete/expected.yaml")
    );
}

#[test]
fn apply_multi_doc_cp_delete() {
    let files = [
        "patchdelete/strategic2.yaml",
        "patchdelete/strategic3.yaml",
        "patchdelete/strategic4.yaml",
    ];
    let out = run("patchdelete/controlplane_orig.yaml", &files);
    assert_eq!(
        out.unwrap(),
        read("configpatcher/patchdelete/controlplane_expected.yaml")
    );
}

#[test]
fn patch_delete_missing() {
    let err = run(
        "patchdeletemissing/config.yaml",
        &["patchdeletemissing/strategic1.yaml"],
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("patch delete: path 'machine.network.hostname' in document '/v1alpha1': failed to delete path 'machine.network.hostname': lookup failed"),
        "{err}"
    );
}

#[test]
fn patch_link() {
    let out = run("patchlink/base.yaml", &["patchlink/patch.yaml"]);
    assert_eq!(out.unwrap(), read("configpatcher/patchlink/expected.yaml"));
}

#[test]
fn json6902_inline() {
    let patch = load_patch(
        r#"[{"op": "add", "path": "/machine/kubelet/extraArgs", "value": {"cloud-provider": "external"}}]"#,
    )
    .unwrap();
    let out = apply("machine:\n  kubelet: {}\n", &[patch]).unwrap();
    assert_eq!(
        out,
        "machine:\n  kubelet:\n    extraArgs:\n      cloud-provider: external\n"
    );
}

#[test]
fn no_patches_returns_input_unchanged() {
    let base = read("configpatcher/patchdelete/controlplane_orig.yaml");
    assert_eq!(apply(&base, &[]).unwrap(), base);
}

#[test]
fn load_single_patches() {
    let p = load_patch(&read("configpatcher/patch.json")).unwrap();
    assert_eq!(ops(&p), [("add".into(), "/machine/certSANs".into())]);
    let p = load_patch(&read("configpatcher/patch.yaml")).unwrap();
    assert_eq!(ops(&p), [("add".into(), "/some/path".into())]);
    let Patch::Json(o) = &p else { unreachable!() };
    assert_eq!(o[0]["value"], serde_json::json!(["a", "b", "c"]));
    let p = load_patch(&read("configpatcher/strategic.yaml")).unwrap();
    let Patch::Strategic(s) = &p else {
        panic!("expected strategic")
    };
    assert_eq!(s.documents().len(), 1);
    let out = apply("version: v1alpha1\nmachine: {}\n", &[p]).unwrap();
    let v: Value = serde_yaml_ng::from_str(&out).unwrap();
    assert_eq!(v["machine"]["network"]["hostname"], Value::from("foo.bar"));
}

const INLINE: &str = r#"[{"op":"replace","path":"/some","value": []}]"#;

#[test]
fn load_patch_lists() {
    let base = fixtures().join("configpatcher");
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let p = load_patches(&args(&["@patch.json", "@patch.yaml", INLINE]), &base).unwrap();
    assert_eq!(p.len(), 1);
    let kinds: Vec<String> = ops(&p[0]).into_iter().map(|(o, _)| o).collect();
    assert_eq!(kinds, ["add", "add", "replace"]);

    let p = load_patches(
        &args(&["@patch.json", "@strategic.yaml", "@patch.yaml", INLINE]),
        &base,
    )
    .unwrap();
    assert_eq!(p.len(), 3);
    assert_eq!(ops(&p[0]).len(), 1);
    assert!(matches!(p[1], Patch::Strategic(_)));
    assert_eq!(ops(&p[2]).len(), 2);

    let p = load_patches(&args(&["strategic.yaml", INLINE]), &base).unwrap();
    assert_eq!(p.len(), 2);
    assert!(matches!(p[0], Patch::Strategic(_)));
    assert_eq!(ops(&p[1]).len(), 1);

    assert!(load_patches(&args(&["missing.yaml"]), &base).is_err());
}

#[test]
fn load_patch_errors() {
    let err = load_patch("[{\"op\": ").unwrap_err();
    assert!(err.to_string().contains("EOF"), "{err}");
    let err = load_patch("machine:\n  foo: bar\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:\nmachine:\n    foo: bar\n"
    );
}

#[test]
fn stability_patch_adds_kubelet_mount_in_struct_order() {
    let base = read("stability/v1.13/base-controlplane.yaml");
    let patch = load_patch(&read("stability/patch.yaml")).unwrap();
    let out = apply(&base, &[patch]).unwrap();
    let section = |text: &str| -> String {
        let start = text.find("    kubelet:\n").unwrap();
        let rest = &text[start + 1..];
        let end = rest.find("\n    install:").unwrap();
        rest[..end].to_string()
    };
    let expected = read("stability/v1.13/overrides-controlplane.yaml");
    assert_eq!(section(&out), section(&expected));
    // Everything else is the base, re-encoded unchanged.
    let kubelet = section(&out);
    assert_eq!(out.replace(&kubelet, ""), base.replace(&section(&base), ""));
}

#[test]
fn decoder_extracts_deletes() {
    let (sels, docs) = extract_deletes(&read("configloader/decoder/delete/delete.yaml")).unwrap();
    let sels: Vec<String> = sels.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        sels,
        [
            "{apiVersion:v1alpha1, kind:SideroLinkConfig, idx:0}",
            "{path:configFiles.[0], apiVersion:v1alpha1, kind:ExtensionServiceConfig, key:content, value:hello, idx:1, name:foo}",
            "{path:machine.hostname, kind:v1alpha1, idx:2}",
            "{path:machine.network.[0], kind:v1alpha1, key:interface, value:eth0, idx:2}",
        ]
    );
    // Our emitter writes block sequences, so the documents are compared as values.
    let expected: Vec<Value> = read("configloader/decoder/delete/delete_expected.yaml")
        .split("---\n")
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    assert_eq!(docs, expected);
}

#[test]
fn decoder_rejects_double_v1alpha1() {
    let err = decode_check(&read("configloader/decoder/double/v1alpha1.yaml")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "duplicate document /v1alpha1/ is not allowed (line 5)"
    );
}

#[test]
fn decoder_accepts_data_files() {
    for f in ["decoder/controlplane.yaml", "decoder/worker.yaml"]
        .into_iter()
        .chain(
            [
                "controlplane",
                "worker",
                "empty1",
                "empty2",
                "multidoc1",
                "multidoc2",
                "multidoc3",
            ]
            .map(|n| Box::leak(format!("loader/{n}.test").into_boxed_str()) as &str),
        )
    {
        decode_check(&read(&format!("configloader/{f}"))).unwrap_or_else(|e| panic!("{f}: {e}"));
    }
}

#[test]
fn decoder_messages() {
    let check = |src: &str| decode_check(src).unwrap_err().to_string();
    assert_eq!(
        check("---\napiVersion: v1alpha2\ntest: true\n"),
        "error decoding document v1alpha2/v1alpha1/ (line 2): missing kind"
    );
    assert_eq!(
        check("---\napiversion: v1alpha1\nkind: ExtensionServiceConfig\n"),
        "error decoding document /ExtensionServiceConfig/ (line 2): missing apiVersion"
    );
    assert_eq!(
        check("aaaversion: v1alpha1\nmachine: {}\n"),
        "error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:\naaaversion: v1alpha1\n"
    );
    assert_eq!(
        check("apiVersion: v1alpha1\nkind: LinkConfig\nname: eth0\naddresses:\n  - address: 10.0.0.1/24\n    not: working\n    more: extra\n"),
        "error decoding document v1alpha1/LinkConfig/eth0 (line 1): unknown keys found during decoding:\naddresses:\n    - more: extra\n      not: working\n"
    );
    assert_eq!(
        check("apiVersion: v1alpha1\nkind: Nope\n"),
        "error decoding document v1alpha1/Nope/ (line 1): \"Nope\" \"v1alpha1\": not registered"
    );
    assert_eq!(check("- a\n"), "expected a YAML document at line 1");
    // Known omitempty fields given a zero value are accepted, untyped fields take anything.
    decode_check(
        "machine:\n  kubelet:\n    extraConfig: {any: {thing: 1}}\n  install: {wipe: false}\n",
    )
    .unwrap();
}

#[test]
fn encoder_round_trips_generated_configs() {
    for c in ["v1.10", "v1.11", "v1.12", "v1.13"] {
        for f in [
            "base-controlplane",
            "base-worker",
            "overrides-controlplane",
            "overrides-worker",
        ] {
            let text = read(&format!("stability/{c}/{f}.yaml"));
            let docs = decode_docs(&text).unwrap_or_else(|e| panic!("{c}/{f}: {e}"));
            assert_eq!(encode(&docs), text, "{c}/{f}");
        }
    }
}
