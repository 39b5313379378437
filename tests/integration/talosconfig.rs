//! `talm talosconfig`: a new admin certificate from the secrets bundle, the old endpoints and
//! nodes kept, the encrypted copy refreshed.

use crate::common::Dir;

fn ctx_field(text: &str, ctx: &str, field: &str) -> serde_yaml_ng::Value {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap();
    v["contexts"][ctx][field].clone()
}

#[test]
fn regenerates_and_keeps_endpoints_and_nodes() {
    let d = Dir::project("cozystack");
    let old = d.read("talosconfig");
    let with_nodes = old.replace(
        "        endpoints:\n            - 127.0.0.11\n",
        "        endpoints:\n            - 127.0.0.11\n        nodes:\n            - 127.0.0.12\n",
    );
    d.write("talosconfig", &with_nodes);
    let enc_before = d.read("talosconfig.encrypted");
    let o = d.talm(["talosconfig", "-e", "127.0.0.99"]).ok();
    assert!(
        o.stderr
            .contains("Regenerating talosconfig from secrets.yaml..."),
        "{}",
        o.stderr
    );
    assert!(o
        .stderr
        .contains("Preserved endpoints and nodes from existing config"));
    let new = d.read("talosconfig");
    assert_eq!(d.mode("talosconfig"), 0o600);
    assert_eq!(
        ctx_field(&new, "mycluster", "endpoints")[0].as_str(),
        Some("127.0.0.11")
    );
    assert_eq!(
        ctx_field(&new, "mycluster", "nodes")[0].as_str(),
        Some("127.0.0.12")
    );
    assert_ne!(
        ctx_field(&new, "mycluster", "crt"),
        ctx_field(&old, "mycluster", "crt")
    );
    assert_eq!(
        ctx_field(&new, "mycluster", "ca"),
        ctx_field(&old, "mycluster", "ca")
    );
    assert_ne!(d.read("talosconfig.encrypted"), enc_before);
    // The encrypted copy opens to the new file.
    d.remove("talosconfig");
    d.talm(["init", "-d"]).ok();
    assert_eq!(d.read("talosconfig"), new);
}

#[test]
fn without_an_old_file_uses_endpoints_and_the_cluster_name() {
    let d = Dir::project("generic");
    d.remove("talosconfig");
    d.remove("talosconfig.encrypted");
    d.talm(["talosconfig", "-e", "127.0.0.21,127.0.0.22"]).ok();
    let tc = d.read("talosconfig");
    assert!(tc.starts_with("context: mycluster\n"), "{tc}");
    assert_eq!(
        ctx_field(&tc, "mycluster", "endpoints")
            .as_sequence()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn missing_secrets_are_named() {
    let d = Dir::project("generic");
    d.remove("secrets.yaml");
    let o = d
        .talm(["talosconfig"])
        .expect()
        .stderr(
            "\
Error: secrets.yaml not found at $DIR/secrets.yaml
hint: run 'talm init' or restore secrets.yaml (talm init -d opens secrets.encrypted.yaml)
",
        )
        .status(1)
        .run();
    assert!(o
        .stderr
        .contains("hint: run 'talm init' or restore secrets.yaml"));
}

#[test]
fn talosconfig_flag_must_point_inside_the_project() {
    let d = Dir::project("generic");
    let abs = d.join("talosconfig").display().to_string();
    d.talm(["talosconfig", "--talosconfig", &abs]).ok();
    let outside = tempfile::tempdir().unwrap();
    let other = outside.path().join("talosconfig").display().to_string();
    d.talm(["talosconfig", "--talosconfig", &other])
        .fails_with("is outside the project at");
}
