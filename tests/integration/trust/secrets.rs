//! Secrets are never lost or silently replaced (issue 9 §1).

use crate::common::{Dir, STABILITY_SECRETS};

/// A project over the stability secrets, encrypted, with `values-secret.yaml` sealed too.
fn sealed_project(values_secret: &str) -> Dir {
    let d = Dir::project("cozystack");
    d.write("values-secret.yaml", values_secret);
    d.talm(["init", "--encrypt"]).ok();
    d
}

/// Without the plain values-secret.yaml, `--decrypt` gives back exactly `plain`.
fn decrypts_back(d: &Dir, plain: &str) {
    d.remove("values-secret.yaml");
    d.talm(["init", "--decrypt"]).ok();
    assert_eq!(d.read("values-secret.yaml"), plain);
}

/// Replaces the first occurrence of `from` in a project file.
pub(super) fn edit(d: &Dir, rel: &str, from: &str, to: &str) {
    let text = d.read(rel);
    assert!(text.contains(from), "{rel} holds no {from:?}");
    d.write(rel, &text.replacen(from, to, 1));
}

#[test]
fn decrypt_refuses_a_cut_envelope_naming_file_and_key() {
    let d = sealed_project("password: hunter2\n");
    // The envelope of the first value (after the digest line) loses its closing `]`.
    let enc = d.read("secrets.encrypted.yaml");
    let body_at = enc.find('\n').unwrap() + 1;
    let first_close = body_at + enc[body_at..].find("]\n").unwrap();
    d.write(
        "secrets.encrypted.yaml",
        &format!("{}{}", &enc[..first_close], &enc[first_close + 1..]),
    );
    d.refuses(&["init", "--decrypt", "--force"], 1, "\
Error: secrets.encrypted.yaml: cannot decrypt the value at cluster.id: it does not end with `]`: the envelope was cut short
hint: secrets.encrypted.yaml is damaged or was cut short at cluster.id; nothing was written: restore it from git (`git checkout -- secrets.encrypted.yaml`) or from a backup
");
}

/// The text without its digest line, as older talm and the Go talm write encrypted files.
fn without_digest(text: &str) -> String {
    text.split_once('\n').unwrap().1.to_string()
}

#[test]
fn decrypt_refuses_truncated_and_tampered_files() {
    let d = sealed_project("password: hunter2\n");
    let good = d.read("secrets.encrypted.yaml");
    d.remove("secrets.yaml");
    // Cut at a line boundary: valid YAML; the digest line says values are missing.
    let lines: Vec<&str> = good.lines().collect();
    d.write(
        "secrets.encrypted.yaml",
        &(lines[..lines.len() / 2].join("\n") + "\n"),
    );
    d.refuses(&["init", "--decrypt"], 1, "\
Error: secrets.encrypted.yaml does not hold what was encrypted into it: values were removed, added or changed outside talm (the file may have been cut short); nothing was written
hint: restore secrets.encrypted.yaml from git (`git checkout -- secrets.encrypted.yaml`) or a backup; if you edited it by hand on purpose, edit the plain file instead and run `talm init --encrypt`
");
    // Without a digest line (a file the Go talm wrote), the bundle check catches it.
    let plain_body = without_digest(&good);
    let blines: Vec<&str> = plain_body.lines().collect();
    d.write(
        "secrets.encrypted.yaml",
        &(blines[..blines.len() / 2].join("\n") + "\n"),
    );
    let err = d.refuses(
        &["init", "--decrypt"],
        1,
        "\
Error: secrets.encrypted.yaml is not a valid secrets bundle: 5 errors occurred:
\t* certs.etcd is invalid: failed to parse PEM block
\t* certs.k8s is required
\t* certs.k8saggregator is required
\t* certs.os is required
\t* certs.k8sserviceaccount is required
hint: restore secrets.encrypted.yaml from a backup or secrets.encrypted.yaml (`talm init -d`)
",
    );
    assert!(!err.contains("BEGIN"), "no key material in messages: {err}");
    // One base64 character flipped inside a ciphertext: authenticated decryption refuses it.
    let at = good.find("id: ENC[AGE,data:").unwrap() + 80;
    let flipped = if &good[at..at + 1] == "A" { "B" } else { "A" };
    d.write(
        "secrets.encrypted.yaml",
        &format!("{}{flipped}{}", &good[..at], &good[at + 1..]),
    );
    // The age library's own words depend on which byte of the random ciphertext was flipped.
    d.refused(
        &["init", "--decrypt"],
        "secrets.encrypted.yaml: cannot decrypt the value at cluster.id",
    );
    // A decrypted bundle missing a section.
    let mut cut = String::new();
    let mut skipping = false;
    for l in plain_body.lines() {
        if l.starts_with("    os:") {
            skipping = true;
            continue;
        }
        if skipping && l.starts_with("        ") {
            continue;
        }
        skipping = false;
        cut.push_str(l);
        cut.push('\n');
    }
    d.write("secrets.encrypted.yaml", &cut);
    d.refuses(
        &["init", "--decrypt"],
        1,
        "\
Error: secrets.encrypted.yaml is not a valid secrets bundle: 1 error occurred:
\t* certs.os is required
hint: restore secrets.encrypted.yaml from a backup or secrets.encrypted.yaml (`talm init -d`)
",
    );
}

#[test]
fn decrypt_keeps_plain_edits_unless_forced() {
    let d = sealed_project("registry:\n  password: hunter2\n");
    // A local edit never encrypted, and a newer talosconfig.
    edit(&d, "values-secret.yaml", "hunter2", "changed-locally");
    edit(&d, "talosconfig", "- 127.0.0.11", "- 127.0.0.99");
    let err = d.refuses(&["init", "--decrypt"], 1, "\
Error: refusing to overwrite plain files that hold what their encrypted twins do not:
talosconfig holds 1 value(s) its encrypted twin does not:
  ~ contexts.mycluster.endpoints[0] (a different value)
values-secret.yaml holds 1 value(s) its encrypted twin does not:
  ~ registry.password (a different value)
hint: run `talm init --encrypt` first to keep your plain edits, or pass --force to replace them with the decrypted files
");
    assert!(
        !err.contains("hunter2") && !err.contains("changed-locally"),
        "values never shown: {err}"
    );
    d.talm(["init", "--decrypt", "--force"])
        .expect()
        .stdout("")
        .stderr(
            "\
WARN: replacing plain files with their decrypted twins (--force):
talosconfig holds 1 value(s) its encrypted twin does not:
  ~ contexts.mycluster.endpoints[0] (a different value)
values-secret.yaml holds 1 value(s) its encrypted twin does not:
  ~ registry.password (a different value)
Decrypting secrets.encrypted.yaml -> secrets.yaml
Decrypting talosconfig.encrypted -> talosconfig
Skipping kubeconfig.encrypted (file not found)
Decrypting values-secret.encrypted.yaml -> values-secret.yaml
Decryption completed successfully. 3 file(s) decrypted.
",
        )
        .run();
    assert!(d.read("values-secret.yaml").contains("hunter2"));
    assert!(d.read("talosconfig").contains("127.0.0.11"));
    // On a terminal the user is shown the same and asked; "n" changes nothing.
    edit(&d, "values-secret.yaml", "hunter2", "changed-again");
    let before = d.snapshot();
    let (ok, screen) = d.talm_in_tty("init --decrypt", "n\n");
    assert!(
        !ok && screen.contains("Replace these plain files with the decrypted ones? [y/N]:"),
        "{screen}"
    );
    assert!(
        screen.contains("~ registry.password") && !screen.contains("hunter2"),
        "{screen}"
    );
    assert_eq!(d.snapshot(), before);
    let (ok, screen) = d.talm_in_tty("init --decrypt", "y\n");
    assert!(ok, "{screen}");
    assert!(d.read("values-secret.yaml").contains("hunter2"));
    // Nothing to lose: a plain file missing keys the twin has is simply completed.
    d.write("values-secret.yaml", "{}\n");
    d.talm(["init", "--decrypt"]).ok();
    assert!(d.read("values-secret.yaml").contains("hunter2"));
}

#[test]
fn encrypt_refuses_a_broken_bundle_and_a_lost_key() {
    let d = sealed_project("password: hunter2\n");
    let good = d.read("secrets.encrypted.yaml");
    edit(&d, "secrets.yaml", "trustdinfo:", "trustdinfo_broken:");
    d.refuses(
        &["init", "--encrypt"],
        1,
        "\
Error: secrets.yaml is not a valid secrets bundle: 1 error occurred:
\t* trustdinfo is required
hint: restore secrets.yaml from a backup or secrets.encrypted.yaml (`talm init -d`)
",
    );
    assert_eq!(d.read("secrets.encrypted.yaml"), good);
    d.write("secrets.yaml", STABILITY_SECRETS);
    // talm.key gone while files sealed to it exist: no new key.
    d.remove("talm.key");
    d.refuses(&["init", "--encrypt"], 1, "\
Error: talm.key is missing, but 3 encrypted file(s) sealed to it exist: secrets.encrypted.yaml, talosconfig.encrypted, values-secret.encrypted.yaml; refusing to generate a new key (it could not open them)
hint: restore talm.key from your backup into $DIR
hint: if that key is lost for good, move the encrypted files out of the project first (they cannot be opened by anyone), then run the command again to seal the plain files to a new key
");
    d.refuses(&["talosconfig"], 1, "\
Regenerating talosconfig from secrets.yaml...
Error: talm.key is missing, but 3 encrypted file(s) sealed to it exist: secrets.encrypted.yaml, talosconfig.encrypted, values-secret.encrypted.yaml; refusing to generate a new key (it could not open them)
hint: restore talm.key from your backup into $DIR
hint: if that key is lost for good, move the encrypted files out of the project first (they cannot be opened by anyone), then run the command again to seal the plain files to a new key
");
}

#[test]
fn typed_values_are_sealed_and_come_back_typed() {
    // YAML's special floats too: Rust's float parser does not know `.inf` or `.nan`.
    let plain = "db:\n  port: 5432\n  tls: true\n  ratio: 0.5\n  name: \"5432\"\n  ceiling: .inf\n  floor: -.inf\n  unset: .nan\n";
    let d = sealed_project(plain);
    let enc = d.read("values-secret.encrypted.yaml");
    for clear in ["5432", "true", "0.5", ".inf", "-.inf", ".nan"] {
        assert!(
            !enc.contains(&format!(": {clear}")),
            "{clear} left in clear:\n{enc}"
        );
    }
    assert!(
        enc.contains(",type:int]") && enc.contains(",type:bool]") && enc.contains(",type:float]"),
        "{enc}"
    );
    decrypts_back(&d, plain);
}

#[test]
fn comments_and_quoting_survive_a_round_trip() {
    let plain = "# Registry credentials for the private mirror.\nregistry:\n  user: \"ci-bot\"   # the CI account\n  password: 'p@ss: word'\n  token: abc123\n  # the CA below is the mirror's\n  ca: |\n    -----BEGIN CERTIFICATE-----\n    MIIB\n    -----END CERTIFICATE-----\n";
    let d = sealed_project(plain);
    let enc = d.read("values-secret.encrypted.yaml");
    assert!(enc.starts_with("# talm-digest: ENC[AGE,data:"), "{enc}");
    let enc = enc.split_once('\n').unwrap().1.to_string();
    assert!(
        enc.starts_with(
            "# Registry credentials for the private mirror.\nregistry:\n  user: \"ENC[AGE,data:"
        ),
        "{enc}"
    );
    assert!(
        enc.contains("   # the CI account\n  password: 'ENC[AGE,data:")
            && enc.contains("  # the CA below is the mirror's\n"),
        "{enc}"
    );
    decrypts_back(&d, plain);
}

#[test]
fn node_files_keep_comments_when_encrypted_values_are_in_scope() {
    let d = sealed_project("registryPassword: hunter2\n");
    edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        "valueFiles: [values-secret.encrypted.yaml]",
    );
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    d.write(
        "templates/probe.yaml",
        "# probe template\nmachine:\n  # the registry\n  registries:\n    config:\n      mirror.example:\n        auth:\n          password: {{ values.registryPassword }}\n          username: bot\n  type: worker\n",
    );
    d.write(
        "nodes/n.yaml",
        "# talm: nodes=[\"127.9.3.1\"], templates=[\"templates/probe.yaml\"]\n",
    );
    d.talm([
        "template",
        "--facts",
        "facts.yaml",
        "-f",
        "nodes/n.yaml",
        "-I",
    ])
    .ok();
    let node = d.read("nodes/n.yaml");
    assert!(
        node.contains("# probe template\nmachine:\n  # the registry\n"),
        "{node}"
    );
    assert!(
        !node.contains("hunter2") && !node.contains("password:"),
        "{node}"
    );
    assert!(node.contains("username: bot"), "{node}");
    // The preset's own node file: its discovered disks and interfaces stay as comments.
    d.write(
        "nodes/cp.yaml",
        "# talm: nodes=[\"127.9.3.1\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    d.talm([
        "template",
        "--facts",
        "facts.yaml",
        "-f",
        "nodes/cp.yaml",
        "-I",
    ])
    .ok();
    let cp = d.read("nodes/cp.yaml");
    assert!(
        cp.contains("# -- Discovered disks:") && cp.contains("# -- Discovered interfaces:"),
        "{cp}"
    );
}

#[test]
fn values_from_encrypted_files_never_appear_in_messages() {
    let d = sealed_project(
        "network:\n  extraLinks:\n    - interface: eth0\n      mtu: topsecret-mtu-value\n",
    );
    edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        "valueFiles: [values-secret.encrypted.yaml]",
    );
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    let o = d
        .talm([
            "template",
            "--facts",
            "facts.yaml",
            "-t",
            "templates/controlplane.yaml",
        ])
        .expect().stderr("Error: values-secret.encrypted.yaml: network.extraLinks[0].mtu=*** (LinkConfig \"***\") is outside the kernel's 68-65535 range.\n").status(1).run();
    assert!(!o.stderr.contains("topsecret-mtu-value"), "{}", o.stderr);
}

#[test]
fn talosconfig_refuses_a_ca_outside_its_validity() {
    use talm::secrets::pki::{self, KeyKind};
    let d = Dir::project("cozystack");
    let bundle = d.read("secrets.yaml");
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    let now = time::OffsetDateTime::now_utc();
    for (when, needle) in [
        (now - time::Duration::days(365 * 11), "expired on"),
        (now + time::Duration::days(30), "is not valid before"),
    ] {
        let ca = pki::self_signed_ca(KeyKind::Ed25519, Some("talos"), when).unwrap();
        let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&bundle).unwrap();
        v["certs"]["os"]["crt"] = b64(&ca.cert_pem).into();
        v["certs"]["os"]["key"] = b64(&ca.key.to_talos_pem().unwrap()).into();
        d.write("secrets.yaml", &talm::yaml::to_string(&v));
        d.refused(&["talosconfig"], needle);
    }
}

#[test]
fn full_renders_are_not_written_into_node_files_without_consent() {
    let d = Dir::project("cozystack");
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    d.write(
        "nodes/n.yaml",
        "# talm: nodes=[\"127.9.3.2\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    d.refuses(&super::args(super::IN_PLACE, &["--full"]), 1, "\
- talm: file=nodes/n.yaml, nodes=[127.9.3.2], endpoints=[127.0.0.11], templates=[templates/controlplane.yaml]
Error: refusing to write the whole machine config into nodes/n.yaml: it holds the cluster's private keys and tokens (CAs, service-account key, bootstrap token), and node files are meant to be committed to git
hint: render node files without --full (apply merges them with secrets.yaml when it sends them); or pass --allow-private-keys and keep the file out of git
");
    d.talm(super::args(
        super::IN_PLACE,
        &["--full", "--allow-private-keys"],
    ))
    .expect()
    .stdout("")
    .stderr("\
- talm: file=nodes/n.yaml, nodes=[127.9.3.2], endpoints=[127.0.0.11], templates=[templates/controlplane.yaml]
WARN: nodes/n.yaml now holds the cluster's private keys and tokens (--full --allow-private-keys): it is written 0600; do NOT commit it — add it to .gitignore
Updated.
")
    .run();
    assert_eq!(d.mode("nodes/n.yaml"), 0o600);
    assert!(
        d.read("nodes/n.yaml").contains("LS0tLS1CRUdJTi"),
        "the keys are there"
    );
}

#[test]
fn a_values_file_cut_at_a_line_is_refused_by_its_digest() {
    let d = sealed_project("a: one\nb: two\nc: three\n");
    let enc = d.read("values-secret.encrypted.yaml");
    assert!(enc.starts_with("# talm-digest: ENC[AGE,data:"), "{enc}");
    let lines: Vec<&str> = enc.lines().collect();
    d.write(
        "values-secret.encrypted.yaml",
        &(lines[..lines.len() - 1].join("\n") + "\n"),
    );
    d.remove("values-secret.yaml");
    d.refuses(&["init", "--decrypt"], 1, "\
Error: values-secret.encrypted.yaml does not hold what was encrypted into it: values were removed, added or changed outside talm (the file may have been cut short); nothing was written
hint: restore values-secret.encrypted.yaml from git (`git checkout -- values-secret.encrypted.yaml`) or a backup; if you edited it by hand on purpose, edit the plain file instead and run `talm init --encrypt`
");
}

#[test]
fn encrypt_does_not_replace_a_newer_twin_with_a_stale_plain_file() {
    let d = sealed_project("registry:\n  password: hunter2\n  user: bot\n");
    // A teammate's change arrives by git: the plain file is now stale and older.
    let stale = "registry:\n  password: hunter2\n";
    d.write("values-secret.yaml", stale);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let enc = d.read("values-secret.encrypted.yaml");
    d.write("values-secret.encrypted.yaml", &enc);
    d.refuses(&["init", "--encrypt"], 1, "\
Error: refusing to replace newer encrypted files with stale plain ones:
values-secret.encrypted.yaml is newer than values-secret.yaml and holds 1 value(s) it does not:
  - registry.user (only in values-secret.encrypted.yaml)
hint: run `talm init --decrypt` first to take the newer values (it asks before overwriting your plain edits), or pass --force to keep the plain files
");
    d.talm(["init", "--encrypt", "--force"]).ok();
    d.remove("values-secret.yaml");
    d.talm(["init", "--decrypt"]).ok();
    assert_eq!(d.read("values-secret.yaml"), stale);
}

#[test]
fn registry_keys_from_encrypted_values_stay_out_of_node_files() {
    let values = "registryTLS:\n  reg.example:\n    clientIdentity:\n      crt: |\n        -----BEGIN CERTIFICATE-----\n        MIIBcert\n        -----END CERTIFICATE-----\n      key: |\n        -----BEGIN EC PRIVATE KEY-----\n        MHcCAQEEIPrivateKeyMaterialThatMustNotLeak\n        -----END EC PRIVATE KEY-----\n";
    let d = sealed_project(values);
    edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        "valueFiles: [values-secret.encrypted.yaml]",
    );
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    for talos in ["v1.11", "v1.12"] {
        d.write(
            "nodes/n.yaml",
            "# talm: nodes=[\"127.9.3.3\"], templates=[\"templates/controlplane.yaml\"]\n",
        );
        d.talm(super::args(super::IN_PLACE, &["--talos-version", talos]))
            .ok();
        let node = d.read("nodes/n.yaml");
        assert!(!node.contains("PrivateKeyMaterial"), "{talos}: {node}");
        let key_b64 = {
            use base64::Engine as _;
            let pem = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPrivateKeyMaterialThatMustNotLeak\n-----END EC PRIVATE KEY-----\n";
            base64::engine::general_purpose::STANDARD.encode(pem)
        };
        assert!(
            !node.contains(&key_b64),
            "{talos}: base64 of the key leaked:\n{node}"
        );
    }
}

#[test]
fn encrypted_values_are_masked_in_messages_whatever_their_quoting() {
    for (value, clear) in [
        (r#""secretval\tx""#, "secretval"),
        (r#""SECRETVAL\n""#, "SECRETVAL"),
    ] {
        let d = sealed_project(&format!("clusterName: {value}\n"));
        edit(
            &d,
            "Chart.yaml",
            "valueFiles: []",
            "valueFiles: [values-secret.encrypted.yaml]",
        );
        d.write("facts.yaml", crate::common::GOLDEN_FACTS);
        let o = d
            .talm([
                "template",
                "--facts",
                "facts.yaml",
                "-t",
                "templates/controlplane.yaml",
            ])
            .expect().stderr("Error: values-secret.encrypted.yaml: clusterName=\"***\" is not a valid DNS-1123 subdomain (must be lowercase, only [a-z0-9-.], start and end with [a-z0-9])\n").status(1).run();
        assert!(!o.stderr.contains(clear), "{value}: {}", o.stderr);
    }
}

#[test]
fn a_line_break_that_would_fold_a_secret_into_a_node_file_is_refused() {
    let d = sealed_project(
        "registryPassword: \"first-secret-line\\n            second-secret-line\"\n",
    );
    edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        "valueFiles: [values-secret.encrypted.yaml]",
    );
    d.write("facts.yaml", crate::common::GOLDEN_FACTS);
    // Printed bare, the value's second line folds into one scalar sealing cannot tell.
    d.write(
        "templates/probe.yaml",
        "machine:\n  registries:\n    config:\n      mirror.example:\n        auth:\n          password: {{ values.registryPassword }}\n  type: worker\n",
    );
    let node = "# talm: nodes=[\"127.9.3.1\"], templates=[\"templates/probe.yaml\"]\nmachine:\n  type: worker\n";
    d.write("nodes/n.yaml", node);
    let err = d.refuses(super::IN_PLACE, 1, "\
- talm: file=nodes/n.yaml, nodes=[127.9.3.1], endpoints=[127.0.0.11], templates=[templates/probe.yaml]
Error: values-secret.encrypted.yaml: registryPassword holds a line break, and the template prints it so that it no longer reads as the value: it would be written in clear (node files) or printed unmasked; nothing was rendered
hint: keep registryPassword on one line in values-secret.encrypted.yaml, or print it whole in the template (as a block: `key: |` then the value indented, or with `| to_json`)
");
    assert!(!err.contains("secret-line"), "{err}");
    assert_eq!(d.read("nodes/n.yaml"), node);
    // Printed whole, it is sealed out of the node file as any secret.
    d.write(
        "templates/probe.yaml",
        "machine:\n  registries:\n    config:\n      mirror.example:\n        auth:\n          password: {{ values.registryPassword | to_json }}\n  type: worker\n",
    );
    d.talm(super::IN_PLACE).ok();
    let written = d.read("nodes/n.yaml");
    assert!(!written.contains("secret-line"), "{written}");
}

#[test]
fn a_key_file_others_can_read_is_warned_about_once() {
    use std::os::unix::fs::PermissionsExt;
    let d = sealed_project("registryPassword: hunter2\n");
    edit(
        &d,
        "Chart.yaml",
        "valueFiles: []",
        "valueFiles: [values-secret.encrypted.yaml]",
    );
    edit(
        &d,
        "values.yaml",
        "advertisedSubnets: []",
        "advertisedSubnets: [10.0.0.0/8]",
    );
    let key = d.join("talm.key");
    let render = ["template", "--offline", "-t", "templates/controlplane.yaml"];
    for (mode, who) in [(0o644, "every user of this machine"), (0o640, "its group")] {
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(mode)).unwrap();
        let o = d.talm(render).ok();
        let file = key.display();
        assert_eq!(
            o.stderr,
            format!("WARN: {file} is open to {who} (mode {mode:04o}): whoever reads it can open every encrypted file of the project; restrict it with `chmod 600 {file}`\n")
        );
        // Read twice in one run (decrypt, then encrypt again): warned once.
        d.talm(["init", "--encrypt"])
            .expect()
            .stdout("")
            .stderr(format!("\
WARN: $DIR/talm.key is open to {who} (mode {mode:04o}): whoever reads it can open every encrypted file of the project; restrict it with `chmod 600 $DIR/talm.key`
Encrypting secrets.yaml -> secrets.encrypted.yaml
Encrypting talosconfig -> talosconfig.encrypted
Skipping kubeconfig (file not found)
Encrypting values-secret.yaml -> values-secret.encrypted.yaml
Encryption completed successfully. 3 file(s) encrypted.
"))
            .run();
    }
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(d.talm(render).ok().stderr, "");
}
