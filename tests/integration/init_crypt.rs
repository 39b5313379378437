//! `talm init --encrypt` / `--decrypt` through the binary: the round trip, stable ciphertext,
//! the envelope read by the standard age tool, and every key or ciphertext fault.

use crate::common::Dir;

const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n    - name: c\n      cluster:\n        server: https://10.0.0.1:6443\ncontexts:\n    - name: admin@c\n      context:\n        cluster: c\n        user: admin@c\nusers:\n    - name: admin@c\n      user:\n        token: t0k3n\ncurrent-context: admin@c\n";
const VALUES_SECRET: &str = "registryAuth:\n    password: hunter2\n    port: 5000\n    insecure: false\nnote: |\n    multi\n    line\n";

fn envelope(text: &str, key: &str) -> String {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).unwrap();
    let mut cur = &v;
    for k in key.split('.') {
        cur = &cur[k];
    }
    cur.as_str().unwrap().to_string()
}

#[test]
fn encrypt_delete_decrypt_gives_identical_files() {
    let d = Dir::project("cozystack");
    d.write("kubeconfig", KUBECONFIG);
    d.write("values-secret.yaml", VALUES_SECRET);
    // secrets.yaml without Talos's leading comment line, so it is exactly what talm writes.
    d.write(
        "secrets.yaml",
        crate::common::STABILITY_SECRETS.split_once('\n').unwrap().1,
    );
    let originals: Vec<(String, String)> = [
        "secrets.yaml",
        "talosconfig",
        "kubeconfig",
        "values-secret.yaml",
    ]
    .iter()
    .map(|f| (f.to_string(), d.read(f)))
    .collect();
    d.talm(["init", "--encrypt"])
        .expect()
        .stdout("")
        .stderr(
            "\
Encrypting secrets.yaml -> secrets.encrypted.yaml
Encrypting talosconfig -> talosconfig.encrypted
Encrypting kubeconfig -> kubeconfig.encrypted
Encrypting values-secret.yaml -> values-secret.encrypted.yaml
Encryption completed successfully. 4 file(s) encrypted.
",
        )
        .run();
    for enc in [
        "secrets.encrypted.yaml",
        "talosconfig.encrypted",
        "kubeconfig.encrypted",
        "values-secret.encrypted.yaml",
    ] {
        assert_eq!(d.mode(enc), 0o600, "{enc}");
    }
    // Keys stay readable, every scalar is sealed (numbers and booleans with their type).
    let vs = d.read("values-secret.encrypted.yaml");
    assert!(
        vs.contains("registryAuth:\n    password: ENC[AGE,data:"),
        "{vs}"
    );
    assert!(!vs.contains("5000") && !vs.contains("false"), "{vs}");
    assert!(
        vs.contains(",type:int]\n    insecure: ENC[AGE,data:"),
        "{vs}"
    );
    assert!(!vs.contains("hunter2"));
    for (f, _) in &originals {
        d.remove(f);
    }
    d.talm(["init", "--decrypt"])
        .expect()
        .stdout("")
        .stderr(
            "\
Decrypting secrets.encrypted.yaml -> secrets.yaml
Decrypting talosconfig.encrypted -> talosconfig
Decrypting kubeconfig.encrypted -> kubeconfig
Decrypting values-secret.encrypted.yaml -> values-secret.yaml
Decryption completed successfully. 4 file(s) decrypted.
",
        )
        .run();
    for (f, content) in &originals {
        assert_eq!(&d.read(f), content, "{f} changed in the round trip");
        assert_eq!(d.mode(f), 0o600, "{f}");
    }
    assert!(d.read(".gitignore").contains("values-secret.yaml\n"));
}

#[test]
fn re_encryption_keeps_unchanged_ciphertext() {
    let d = Dir::project("generic");
    d.write(
        "values-secret.yaml",
        "a: one\nb: two\nlist:\n    - x\n    - y\n",
    );
    d.talm(["init", "-e"]).ok();
    let first = d.read("values-secret.encrypted.yaml");
    let secrets_first = d.read("secrets.encrypted.yaml");
    d.write(
        "values-secret.yaml",
        "a: one\nb: changed\nlist:\n    - x\n    - y\n",
    );
    d.talm(["init", "-e"]).ok();
    let second = d.read("values-secret.encrypted.yaml");
    assert_eq!(envelope(&first, "a"), envelope(&second, "a"));
    assert_ne!(envelope(&first, "b"), envelope(&second, "b"));
    let list =
        |t: &str| serde_yaml_ng::from_str::<serde_yaml_ng::Value>(t).unwrap()["list"].clone();
    assert_eq!(list(&first), list(&second));
    // Nothing changed in secrets.yaml, so its encrypted copy is byte-identical.
    assert_eq!(secrets_first, d.read("secrets.encrypted.yaml"));
}

#[test]
fn envelopes_open_with_the_age_cli() {
    let d = Dir::project("generic");
    let sealed = envelope(&d.read("secrets.encrypted.yaml"), "secrets.bootstraptoken");
    let b64 = sealed
        .strip_prefix("ENC[AGE,data:")
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    use base64::Engine as _;
    let ct = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    std::fs::write(d.join("token.age"), ct).unwrap();
    let out = std::process::Command::new("age")
        .args(["-d", "-i", "talm.key", "token.age"])
        .current_dir(d.path())
        .output()
        .expect("the age CLI must be installed (.ci/run installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "inn7ol.u4ehnti8qyls9ymo"
    );
    // And the other way: a value sealed by the age CLI opens in talm.
    let public = d
        .read("talm.key")
        .lines()
        .find_map(|l| l.strip_prefix("# public key: ").map(str::to_string))
        .unwrap();
    let out = std::process::Command::new("age")
        .args(["-r", &public, "-o", "v.age"])
        .current_dir(d.path())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"from-age-cli")?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let ct = std::fs::read(d.join("v.age")).unwrap();
    let env = format!(
        "ENC[AGE,data:{}]",
        base64::engine::general_purpose::STANDARD.encode(ct)
    );
    d.write(
        "values-secret.encrypted.yaml",
        &format!("password: {env}\n"),
    );
    d.talm(["init", "-d"]).ok();
    assert_eq!(d.read("values-secret.yaml"), "password: from-age-cli\n");
}

#[test]
fn decrypt_without_key_names_both_ways_out() {
    let d = Dir::project("generic");
    d.remove("talm.key");
    d.remove("secrets.yaml");
    d.refuses(&["init", "-d"], 1, "\
Error: read key file: $DIR/talm.key: no such file
hint: talm.key is required to decrypt secrets.encrypted.yaml. Restore your backed-up key, or re-run `talm init` to regenerate (this writes new secrets — the old secrets.encrypted.yaml will not be decryptable without the original key; move the *.encrypted* files out of the project first, talm will not seal new files next to ones it cannot open).
");
}

#[test]
fn wrong_key_names_file_and_value() {
    let d = Dir::project("generic");
    let other = Dir::project("generic");
    // A different key: generated by encrypting in another project.
    other.write("values-secret.yaml", "x: y\n");
    d.write("talm.key", &Dir::new_key());
    d.refuses(&["init", "-d"], 1, "\
Error: secrets.encrypted.yaml: cannot decrypt the value at cluster.id: no matching key: it was encrypted to another talm.key
hint: talm.key is required to decrypt secrets.encrypted.yaml. Restore your backed-up key, or re-run `talm init` to regenerate (this writes new secrets — the old secrets.encrypted.yaml will not be decryptable without the original key; move the *.encrypted* files out of the project first, talm will not seal new files next to ones it cannot open).
");
}

#[test]
fn tampered_and_truncated_ciphertext_are_named() {
    let d = Dir::project("generic");
    let enc = d.read("talosconfig.encrypted");
    // Flip the ciphertext of one value: the file and key path are named.
    let sealed = envelope(&enc, "context");
    let body = sealed
        .strip_prefix("ENC[AGE,data:")
        .unwrap()
        .strip_suffix(']')
        .unwrap();
    let mut bytes: Vec<u8> = body.bytes().collect();
    let i = bytes.len() - 8;
    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
    let tampered = enc.replace(body, std::str::from_utf8(&bytes).unwrap());
    d.write("talosconfig.encrypted", &tampered);
    d.refuses(&["init", "-d"], 1, "\
Error: talosconfig.encrypted: cannot decrypt the value at context: the ciphertext is damaged or cut short (decryption error)
hint: talosconfig.encrypted is damaged or was cut short at context; nothing was written: restore it from git (`git checkout -- talosconfig.encrypted`) or from a backup
");
    // Broken base64.
    d.write("talosconfig.encrypted", &enc.replace(body, "@@@"));
    d.refuses(&["init", "-d"], 1, "\
Error: talosconfig.encrypted: cannot decrypt the value at context: its data is not base64: Invalid symbol 64, offset 0.
hint: talosconfig.encrypted is damaged or was cut short at context; nothing was written: restore it from git (`git checkout -- talosconfig.encrypted`) or from a backup
");
    // A file cut in half is a YAML error with its position.
    d.write(
        "talosconfig.encrypted",
        &enc[..enc.len() / 2].replace("ENC[AGE", "\"ENC[AGE"),
    );
    d.refuses(
        &["init", "-d"],
        1,
        "\
Error: talosconfig.encrypted:6:16: invalid YAML: did not find expected key
hint: fix the YAML syntax in talosconfig.encrypted near line 6, column 16
",
    );
}

#[test]
fn encrypt_refuses_a_broken_plain_file_before_writing() {
    let d = Dir::project("generic");
    d.write("values-secret.yaml", "a: [unclosed\n");
    d.refuses(
        &["init", "--encrypt"],
        1,
        "\
Error: values-secret.yaml:2:1: invalid YAML: did not find expected ',' or ']'
hint: fix the YAML syntax in values-secret.yaml near line 2, column 1
",
    );
}

#[test]
fn encrypt_makes_a_key_when_missing() {
    let d = Dir::project("generic");
    d.remove("talm.key");
    d.remove("secrets.encrypted.yaml");
    d.remove("talosconfig.encrypted");
    d.talm(["init", "--encrypt"])
        .expect()
        .stdout("")
        .stderr(
            "\
Generated new encryption key: talm.key
Encrypting secrets.yaml -> secrets.encrypted.yaml
Encrypting talosconfig -> talosconfig.encrypted
Skipping kubeconfig (file not found)
Skipping values-secret.yaml (file not found)
┌─────────────────────────────────────────────────────────────────────────────┐
│ Security Information                                                        │
│                                                                             │
│ These files hold secrets and are git-ignored; never commit them:            │
│   secrets.yaml, talosconfig, talm.key, kubeconfig, values-secret.yaml       │
│ Their *.encrypted* copies are safe to commit: they open only with talm.key. │
│                                                                             │
│ Back up talm.key somewhere safe now (a password manager, a vault).          │
│ Without it the encrypted files cannot be decrypted, by anyone.              │
└─────────────────────────────────────────────────────────────────────────────┘
Encryption completed successfully. 2 file(s) encrypted.
",
        )
        .run();
    assert_eq!(d.mode("talm.key"), 0o600);
    let key = d.read("talm.key");
    let lines: Vec<&str> = key.lines().collect();
    assert!(
        lines[0].starts_with("# created: ")
            && lines[1].starts_with("# public key: age1")
            && lines[2].starts_with("AGE-SECRET-KEY-1")
    );
}
