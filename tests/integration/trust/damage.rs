//! Odd and damaged secret files (issue 9 §1): keys an encrypted file cannot keep are refused
//! naming the line, a bundle of the wrong shape is named by key path without a value in the
//! message, and the hints for a damaged talosconfig or kubeconfig lead somewhere that works.

use crate::common::{Dir, STABILITY_SECRETS};

/// A project over the stability secrets, encrypted, with a user secret in values-secret.yaml.
fn sealed() -> Dir {
    let d = Dir::project("cozystack");
    d.write("values-secret.yaml", "registry:\n  password: hunter2\n");
    d.talm(["init", "--encrypt"]).ok();
    d
}

/// The text without its digest line, as older talm and the Go talm write encrypted files.
fn without_digest(text: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap();
    assert!(first.starts_with("# talm-digest: "), "{text}");
    rest.to_string()
}

/// `text` with the top-level block `key:` (its line and the indented or `- ` lines under it)
/// replaced by `with` lines.
fn replace_block(text: &str, key: &str, with: &[String]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut inside = false;
    for l in text.lines() {
        if l == format!("{key}:") {
            out.extend(with.iter().cloned());
            inside = true;
            continue;
        }
        if inside && (l.starts_with(' ') || l.starts_with('-')) {
            continue;
        }
        inside = false;
        out.push(l.to_string());
    }
    out.join("\n") + "\n"
}

/// The stability bundle's cluster secret: what must never show in a message.
fn cluster_secret() -> String {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(STABILITY_SECRETS).unwrap();
    v["cluster"]["secret"].as_str().unwrap().to_string()
}

#[test]
fn keys_an_encrypted_file_cannot_keep_are_refused_naming_the_line() {
    let d = Dir::project("cozystack");
    d.write(
        "values-secret.yaml",
        "registry:\n  password: hunter2\n? [a, b]\n: [c]\n",
    );
    d.refuses(&["init", "--encrypt"], 1, "\
Error: refusing to encrypt values-secret.yaml:3: a mapping key there is a list or a mapping (`? [a, b]`), which an encrypted file cannot keep
hint: write the keys of values-secret.yaml as text, numbers or booleans, then run `talm init --encrypt` again
");
    assert!(!d.exists("values-secret.encrypted.yaml"));
    d.write(
        "values-secret.yaml",
        "registry:\n  ? {user: secretkey}\n  : hunter2\n",
    );
    let err = d.refuses(&["init", "--encrypt"], 1, "\
Error: refusing to encrypt values-secret.yaml:2: a mapping key there is a list or a mapping (`? [a, b]`), which an encrypted file cannot keep
hint: write the keys of values-secret.yaml as text, numbers or booleans, then run `talm init --encrypt` again
");
    assert!(
        !err.contains("secretkey") && !err.contains("hunter2"),
        "{err}"
    );
    d.write(
        "values-secret.yaml",
        "registry:\n  password: !vault hunter2\n",
    );
    d.refuses(&["init", "--encrypt"], 1, "\
Error: refusing to encrypt values-secret.yaml:2: it holds a YAML tag (`!name`), which an encrypted value cannot keep
hint: remove the tags from values-secret.yaml; values are read as plain text, numbers and booleans
");
}

#[test]
fn a_bundle_of_the_wrong_shape_is_named_by_key_never_by_value() {
    let secret = cluster_secret();
    let d = sealed();
    // An older talm's (or the Go talm's) file, without a digest, whose trustdinfo became one
    // envelope: that of the cluster secret.
    let body = without_digest(&d.read("secrets.encrypted.yaml"));
    let envelope = body
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("secret: "))
        .unwrap()
        .to_string();
    d.write(
        "secrets.encrypted.yaml",
        &replace_block(&body, "trustdinfo", &[format!("trustdinfo: {envelope}")]),
    );
    d.remove("secrets.yaml");
    let err = d.refuses(&["init", "--decrypt"], 1, "\
Error: secrets.encrypted.yaml: not a Talos secrets bundle: the value at trustdinfo is text, expected a mapping
hint: secrets.encrypted.yaml must hold cluster, secrets, trustdinfo and certs as `talm init` writes them
");
    assert!(!err.contains(&secret[..12]), "{err}");

    // The plain bundle is the root secret too.
    let plain = replace_block(
        STABILITY_SECRETS,
        "trustdinfo",
        &[format!("trustdinfo: {secret}")],
    );
    d.write("secrets.yaml", &plain);
    for args in [&["init", "--encrypt"][..], &["talosconfig"][..]] {
        let err = d.refuses(
            args,
            1,
            "\
Error: secrets.yaml: not a Talos secrets bundle: the value at trustdinfo is text, expected a mapping
hint: secrets.yaml must hold cluster, secrets, trustdinfo and certs as `talm init` writes them
",
        );
        assert!(!err.contains(&secret[..12]), "{args:?}: {err}");
    }
}

#[test]
fn a_damaged_talosconfig_gets_a_hint_that_works() {
    let d = sealed();
    let good = d.read("talosconfig");
    // The encrypted twin (digest-less, as the Go talm writes it) names a context it lacks.
    let twin = d.read("talosconfig.encrypted");
    let broken: Vec<String> = without_digest(&twin)
        .lines()
        .map(|l| {
            if l.starts_with("context: ") {
                "context: nope".to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    d.write("talosconfig.encrypted", &(broken.join("\n") + "\n"));
    d.remove("talosconfig");
    let err = d.refuses(&["init", "--decrypt"], 1, "\
Error: talosconfig.encrypted: current context \"nope\" is not among its contexts
hint: restore talosconfig.encrypted from git (`git checkout -- talosconfig.encrypted`) or a backup; or move it aside and run `talm talosconfig` to write a new talosconfig (sealed into a new talosconfig.encrypted) from the secrets bundle
");
    assert!(!err.contains("encrypted.encrypted"), "{err}");
    d.write("talosconfig.encrypted", &twin);
    d.talm(["init", "--decrypt"]).ok();

    // A broken plain talosconfig: `talm talosconfig` reads it too, so the hint moves it aside.
    d.write("talosconfig", "context: nope\ncontexts: {}\n");
    d.refuses(&["talosconfig"], 1, "\
Error: talosconfig: current context \"nope\" is not among its contexts
hint: move it aside (`mv talosconfig talosconfig.damaged`), then run `talm init -d` to restore it from talosconfig.encrypted, or `talm talosconfig` to write a new one from the secrets bundle
");
    // Both ways out work.
    std::fs::rename(d.join("talosconfig"), d.join("talosconfig.damaged")).unwrap();
    d.talm(["init", "-d"]).ok();
    assert_eq!(d.read("talosconfig"), good);
    d.write("talosconfig", "context: nope\ncontexts: {}\n");
    d.talm(["talosconfig"])
        .expect().stderr("\
Error: talosconfig: current context \"nope\" is not among its contexts
hint: move it aside (`mv talosconfig talosconfig.damaged`), then run `talm init -d` to restore it from talosconfig.encrypted, or `talm talosconfig` to write a new one from the secrets bundle
").status(1).run();
    std::fs::rename(d.join("talosconfig"), d.join("talosconfig.damaged")).unwrap();
    d.talm(["talosconfig"]).ok();
    assert!(d.read("talosconfig").contains("context: mycluster"));
}

const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: mycluster\n  cluster:\n    server: https://127.0.0.11:6443\nusers:\n- name: admin@mycluster\n  user:\n    token: kube-token-secret\ncontexts:\n- name: admin@mycluster\n  context:\n    cluster: mycluster\n    user: admin@mycluster\ncurrent-context: admin@mycluster\n";

#[test]
fn only_whole_kubeconfigs_are_encrypted_or_decrypted() {
    let d = sealed();
    // A cut plain kubeconfig is not sealed over anything; git holds no copy of it.
    let cut = replace_block(&replace_block(KUBECONFIG, "users", &[]), "contexts", &[]);
    d.write("kubeconfig", &cut);
    d.refuses(&["init", "--encrypt"], 1, "\
Error: kubeconfig is not a whole kubeconfig: users, contexts missing or empty
hint: fetch it again with `talm kubeconfig -f nodes/NODE.yaml` (kubeconfig is git-ignored, so git holds no copy of it)
");
    assert!(!d.exists("kubeconfig.encrypted"));
    d.write("kubeconfig", KUBECONFIG);
    d.talm(["init", "--encrypt"]).ok();
    // A digest-less twin that lost its users: nothing is decrypted.
    let twin = without_digest(&d.read("kubeconfig.encrypted"));
    d.write("kubeconfig.encrypted", &replace_block(&twin, "users", &[]));
    d.remove("kubeconfig");
    d.remove("secrets.yaml");
    let err = d.refuses(&["init", "--decrypt"], 1, "\
Error: kubeconfig.encrypted is not a whole kubeconfig: users missing or empty
hint: restore kubeconfig.encrypted from git (`git checkout -- kubeconfig.encrypted`) or a backup, or fetch a new kubeconfig with `talm kubeconfig -f nodes/NODE.yaml`
");
    assert!(!err.contains("kube-token-secret"), "{err}");
}
