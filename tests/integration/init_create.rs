//! `talm init` in create mode, through the binary: what it writes, with which modes, and every
//! refusal leaving the folder as it was.

use crate::common::{Dir, STABILITY_SECRETS};

const SECRET_FILES: &[&str] = &[
    "secrets.yaml",
    "secrets.encrypted.yaml",
    "talosconfig",
    "talosconfig.encrypted",
    "talm.key",
];

/// What `init` prints when it makes a key for kept or new secrets and seals them.
const KEYED: &str = "\
Generated new encryption key: talm.key
Encrypting secrets.yaml -> secrets.encrypted.yaml
Created $DIR/talosconfig
Encrypting talosconfig -> talosconfig.encrypted
";
/// The project files `init` writes, as it names them.
const CREATED: &str = "\
Created $DIR/.gitignore
Created $DIR/Chart.yaml
Created $DIR/templates/config.tera
Created $DIR/templates/controlplane.yaml
Created $DIR/templates/worker.yaml
Created $DIR/values.yaml
Created $DIR/charts/talm/Chart.yaml
Created $DIR/charts/talm/templates/_context.rhai
Created $DIR/charts/talm/templates/_helpers.tera
Created $DIR/charts/talm/templates/_network_legacy.tera
Created $DIR/charts/talm/templates/_network_multidoc.tera
Created $DIR/charts/talm/templates/_time_legacy.tera
Created $DIR/.talm-preset.lock
";
/// The banner `init` prints once it made a key.
const BANNER: &str = "\
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
";
/// The hint `init` prints while values.yaml::endpoint is empty.
const NEXT: &str = "
Next: set values.yaml::endpoint to the cluster's control-plane URL, e.g. https://192.168.0.1:6443.
  --endpoints fills in the talosconfig endpoints, and with exactly one address also sets
  values.yaml::endpoint to https://<address>:6443; --cluster-endpoint URL sets it directly
  (use it for a VIP or a load balancer in front of several control-plane nodes).
";

#[test]
fn cozystack_project_from_scratch() {
    let d = Dir::new();
    // A key was made: the banner names the secret files; endpoint is empty: the hint shows.
    // Nothing on stdout: progress goes to stderr.
    d.talm(["init", "--preset", "cozystack", "--name", "mycluster"])
        .expect()
        .stdout("")
        .stderr(format!(
            "Created $DIR/secrets.yaml\n{KEYED}{CREATED}{BANNER}{NEXT}"
        ))
        .run();
    for f in [
        "Chart.yaml",
        "values.yaml",
        "templates/controlplane.yaml",
        "templates/worker.yaml",
        "charts/talm/Chart.yaml",
        ".talm-preset.lock",
        ".gitignore",
    ] {
        assert!(d.exists(f), "{f} missing");
        assert_eq!(d.mode(f), 0o644, "{f}");
    }
    for f in SECRET_FILES {
        assert_eq!(d.mode(f), 0o600, "{f}");
    }
    assert!(d.join("nodes").is_dir());
    // Chart.yaml carries the cluster name and talm's version; the library its own name.
    let chart = d.read("Chart.yaml");
    assert!(chart.contains("\nname: mycluster\n"), "{chart}");
    assert!(chart.contains(&format!("\nversion: {}\n", env!("CARGO_PKG_VERSION"))));
    assert!(d.read("charts/talm/Chart.yaml").contains("\nname: talm\n"));
    // The lock records the preset.
    let lock = d.read(".talm-preset.lock");
    assert!(lock.starts_with("# Managed by talm."));
    assert!(lock.contains("\npreset: cozystack\npresetHash: "));
    // The generated secrets are a valid bundle; the talosconfig context is the cluster's,
    // with the default endpoint.
    talm::secrets::bundle::Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let tc = d.read("talosconfig");
    assert!(tc.starts_with("context: mycluster\ncontexts:\n    mycluster:\n        endpoints:\n            - 127.0.0.1\n"), "{tc}");
    // .gitignore lists every secret-bearing file.
    assert_eq!(
        d.read(".gitignore"),
        "# Sensitive files\nsecrets.yaml\ntalosconfig\ntalm.key\nvalues-secret.yaml\nkubeconfig\n"
    );
    assert!(
        d.read("values.yaml").contains("\nendpoint: \"\"\n")
            || d.read("values.yaml").starts_with("endpoint: \"\"")
            || d.read("values.yaml").contains("endpoint: \"\"")
    );
}

#[test]
fn one_endpoint_sets_the_cluster_endpoint() {
    let d = Dir::seeded();
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "mycluster",
        "--endpoints",
        "127.0.0.11",
    ])
    .expect()
    .stdout("")
    .stderr(format!("{KEYED}{CREATED}{BANNER}"))
    .run();
    assert!(d
        .read("values.yaml")
        .contains("\nendpoint: \"https://127.0.0.11:6443\"\n"));
    assert!(d
        .read("talosconfig")
        .contains("endpoints:\n            - 127.0.0.11\n"));
    // The existing secrets were kept and encrypted.
    assert_eq!(d.read("secrets.yaml"), STABILITY_SECRETS);
    assert!(d.exists("secrets.encrypted.yaml"));
}

#[test]
fn ipv6_endpoint_is_bracketed() {
    let d = Dir::seeded();
    d.talm([
        "init",
        "-p",
        "generic",
        "-N",
        "c6",
        "--endpoints",
        "fd00::11",
    ])
    .ok();
    assert!(d
        .read("values.yaml")
        .contains("\nendpoint: \"https://[fd00::11]:6443\"\n"));
}

#[test]
fn several_endpoints_leave_endpoint_empty_with_a_hint() {
    let d = Dir::seeded();
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "c",
        "--endpoints",
        "127.0.0.11,127.0.0.12",
    ])
    .expect()
    .stdout("")
    .stderr(format!("{KEYED}{CREATED}{BANNER}{NEXT}"))
    .run();
    assert!(d.read("values.yaml").contains("\nendpoint: \"\"\n"));
    let tc = d.read("talosconfig");
    assert!(
        tc.contains("- 127.0.0.11\n            - 127.0.0.12\n"),
        "{tc}"
    );
}

#[test]
fn cluster_endpoint_and_image_are_written() {
    let d = Dir::seeded();
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "c",
        "--endpoints",
        "127.0.0.11",
        "--cluster-endpoint",
        "https://10.0.0.1:6443",
        "--image",
        "ghcr.io/acme/talos:v1.12.6",
    ])
    .ok();
    let v = d.read("values.yaml");
    assert!(v.contains("\nendpoint: \"https://10.0.0.1:6443\"\n"), "{v}");
    assert!(
        v.contains("\nimage: \"ghcr.io/acme/talos:v1.12.6\"\n"),
        "{v}"
    );
}

#[test]
fn generic_and_bare_library_presets() {
    let d = Dir::seeded();
    d.talm(["init", "-p", "generic", "-N", "g"]).ok();
    assert!(!d.read("values.yaml").contains("\nimage:"));
    assert!(d.read(".talm-preset.lock").contains("preset: generic"));

    let b = Dir::seeded();
    b.talm(["init", "-p", "talm", "-N", "bare"]).ok();
    assert!(b.read("Chart.yaml").contains("\nname: bare\n"));
    assert!(b.exists("charts/talm/templates/_helpers.tera"));
    assert!(!b.exists("charts/talm/project/Chart.yaml"));
    assert!(b.read(".talm-preset.lock").contains("preset: talm"));
}

#[test]
fn bad_flags_are_refused_before_any_write() {
    let d = Dir::new();
    d.refuses(
        &["init", "-p", "nope", "-N", "c"],
        1,
        "\
Error: invalid preset: nope. Valid presets are: [generic cozystack talm]
hint: pass one of the listed presets with --preset
",
    );
    d.refuses(
        &["init", "-N", "c"],
        1,
        "\
Error: preset is required (use --preset or -p flag)
hint: valid presets: [\"generic\", \"cozystack\", \"talm\"]
",
    );
    d.refuses(
        &["init", "-p", "generic"],
        1,
        "\
Error: cluster name is required (use --name or -N flag)
hint: for example: talm init --preset cozystack --name mycluster
",
    );
    d.refuses(&["init", "-p", "generic", "-N", "My_Cluster"], 1, "\
Error: --name \"My_Cluster\" is not a valid DNS-1123 subdomain: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
hint: use lower-case letters, digits, '-' and '.', for example --name mycluster
");
    d.refuses(&["init", "-p", "generic", "--name=-bad"], 1, "\
Error: --name \"-bad\" is not a valid DNS-1123 subdomain: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')
hint: use lower-case letters, digits, '-' and '.', for example --name mycluster
");
    for url in [
        "10.0.0.1:6443",
        "https://10.0.0.1",
        "https://:6443",
        "https://10.0.0.1:99999",
    ] {
        d.refuses(&[
                "init",
                "-p",
                "generic",
                "-N",
                "c",
                "--cluster-endpoint",
                url,
            ], 1, &format!("\
Error: cluster-endpoint \"{url}\" is missing scheme, host, or port, or its host is not an IP address or DNS name
hint: pass a full URL such as https://10.0.0.1:6443 or https://[fd00::1]:6443
"));
    }
    for (image, msg) in [
        (
            ":v1",
            "is malformed: starts with a reserved separator (':' or '@' or '/')",
        ),
        (
            "ghcr.io/a/b:",
            "is malformed: ends with a separator with nothing after it",
        ),
        ("talos:v1", "is missing a registry / path component"),
        ("ghcr.io/a/talos", "has no tag or digest"),
    ] {
        d.refuses(
            &["init", "-p", "cozystack", "-N", "c", "--image", image],
            1,
            &format!(
                "Error: --image {image:?} {msg}\n\
                 hint: pass a full reference such as ghcr.io/cozystack/cozystack/talos:v1.12.6\n"
            ),
        );
    }
    d.refuses(&[
            "init",
            "-p",
            "generic",
            "-N",
            "c",
            "--image",
            "ghcr.io/a/b:v1",
        ], 1, "Error: --image was set but preset \"generic\" does not declare a top-level image: field in values.yaml; remove --image or choose a preset that exposes it (e.g. cozystack)\n");
    d.refuses(
        &[
            "init",
            "-p",
            "generic",
            "-N",
            "c",
            "--talos-version",
            "latest",
        ],
        1,
        "\
Error: invalid Talos version \"latest\"
hint: use a version like v1.12 or v1.13.2
",
    );
    for mode in ["--update", "--encrypt", "--decrypt"] {
        d.refuses(
            &["init", mode, "--image", "ghcr.io/a/b:v1"],
            1,
            "\
Error: --image is honored on initial init only; not valid with --encrypt, --decrypt, or --update
hint: for an existing project, edit the image field in values.yaml directly
",
        );
        d.refuses(&["init", mode, "--cluster-endpoint", "https://a:1"], 1, "\
Error: --cluster-endpoint is honored on initial init only; not valid with --encrypt, --decrypt, or --update
hint: for an existing project, edit endpoint in values.yaml directly
");
    }
    d.refuses(&["init", "--encrypt"], 1, "\
Error: not in a project root: Chart.yaml and secrets.yaml (or secrets.encrypted.yaml) must exist in $DIR or parent directories
hint: run it inside a project made by `talm init`, or pass --root
");
    assert!(d.snapshot().is_empty());
}

#[test]
fn init_over_existing_files_lists_them_and_writes_nothing() {
    let d = Dir::new();
    d.write("values.yaml", "mine: true\n");
    d.write("templates/worker.yaml", "mine\n");
    d.refuses(&["init", "-p", "cozystack", "-N", "c"], 1, "\
Error: refusing to init: 2 file(s) already exist in target directory; pass --force to overwrite, or --update to refresh only the talm library chart:
  - templates/worker.yaml
  - values.yaml
hint: run `talm init --update --preset <preset>` to refresh an existing project
");
    // --force overwrites them.
    d.write("secrets.yaml", STABILITY_SECRETS);
    d.talm(["init", "-p", "cozystack", "-N", "c", "--force"])
        .expect()
        .stdout("")
        .stderr(format!("{KEYED}{CREATED}{BANNER}{NEXT}"))
        .run();
    assert!(d.read("values.yaml").contains("clusterDomain"));
}

#[test]
fn init_inside_an_existing_project_is_refused_unless_root_is_explicit() {
    let d = Dir::project("generic");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    let before = d.snapshot();
    d.talm_in("sub", ["init", "-p", "generic", "-N", "inner"])
        .expect().stderr("Error: refusing to init: $DIR/sub is inside an existing talm project at $DIR. To create a new project under the current directory, pass --root . explicitly. To re-initialise the parent, run from the parent directory\n").status(1).run();
    assert_eq!(d.snapshot(), before);
    d.talm_in(
        "sub",
        ["init", "-p", "generic", "-N", "inner", "--root", "."],
    )
    .ok();
    assert!(d.read("sub/Chart.yaml").contains("name: inner"));
}

#[test]
fn broken_secrets_are_refused_with_file_and_position() {
    // A YAML syntax error names the file, line and column.
    let d = Dir::new();
    d.write("secrets.yaml", "cluster:\n    id: a\n  secret: [b\n");
    d.refuses(
        &["init", "-p", "generic", "-N", "c"],
        1,
        "\
Error: secrets.yaml:3:3: invalid YAML: did not find expected key
hint: fix the YAML syntax in secrets.yaml near line 3, column 3
",
    );
    // A bundle Talos would reject lists Talos's reasons.
    let d = Dir::new();
    d.write(
        "secrets.yaml",
        include_str!("../fixtures/talos/secrets/invalid-secrets.yaml"),
    );
    d.refuses(
        &["init", "-p", "generic", "-N", "c"],
        1,
        "\
Error: secrets.yaml is not a valid secrets bundle: 6 errors occurred:
\t* cluster.secret is required
\t* one of [secrets.secretboxencryptionsecret, secrets.aescbcencryptionsecret] is required
\t* trustdinfo is required
\t* certs.etcd is invalid: failed to parse PEM block
\t* certs.k8saggregator is required
\t* certs.os is invalid: unsupported key type: \"CERTIFICATE\"
hint: restore secrets.yaml from a backup or secrets.encrypted.yaml (`talm init -d`)
",
    );
    // An unreadable file (a folder where the file should be) is named.
    let d = Dir::new();
    std::fs::create_dir_all(d.join("secrets.yaml")).unwrap();
    d.refuses(&["init", "-p", "generic", "-N", "c"], 1, "\
Error: cannot read $DIR/secrets.yaml: it is a directory, not a regular file
hint: talm reads its inputs from regular files: put the file itself there (a link to a regular file is fine)
");
    // A malformed talosconfig is refused too.
    let d = Dir::seeded();
    d.write(
        "talosconfig",
        "context: x\ncontexts:\n    x:\n        ca: not-base64-pem\n",
    );
    d.refuses(&["init", "-p", "generic", "-N", "c"], 1, "\
Error: talosconfig: contexts.x.ca is not base64-encoded PEM
hint: move it aside (`mv talosconfig talosconfig.damaged`), then run `talm init -d` to restore it from talosconfig.encrypted, or `talm talosconfig` to write a new one from the secrets bundle
");
}

#[test]
fn encrypted_secrets_without_key_are_refused() {
    let d = Dir::project("generic");
    let fresh = Dir::new();
    fresh.write("secrets.encrypted.yaml", &d.read("secrets.encrypted.yaml"));
    fresh.refuses(&["init", "-p", "generic", "-N", "c"], 1, "\
Error: secrets.encrypted.yaml exists but secrets.yaml and talm.key are missing. Cannot decrypt without key
hint: talm.key is required to decrypt secrets.encrypted.yaml. Restore your backed-up key, or re-run `talm init` to regenerate (this writes new secrets — the old secrets.encrypted.yaml will not be decryptable without the original key; move the *.encrypted* files out of the project first, talm will not seal new files next to ones it cannot open).
");
    // With the key, init opens the encrypted copy instead of making new secrets.
    fresh.write("talm.key", &d.read("talm.key"));
    fresh.talm(["init", "-p", "generic", "-N", "c"]).ok();
    let load = |t: &str| talm::secrets::bundle::Bundle::load(t, "secrets.yaml").unwrap();
    assert!(load(&fresh.read("secrets.yaml")) == load(&d.read("secrets.yaml")));
    assert_eq!(fresh.mode("secrets.yaml"), 0o600);
}

#[test]
fn completion_scripts() {
    let d = Dir::new();
    for shell in ["bash", "zsh", "fish"] {
        let o = d.talm(["completion", shell]).ok();
        assert!(o.stdout.contains("talm"), "{shell}");
        // Dynamic: the script calls talm back for the candidates (tests/integration/talk.rs).
        assert!(o.stdout.contains("TALM_COMPLETE="), "{shell}");
    }
    d.talm(["completion", "tcsh"])
        .expect()
        .stderr(
            "\
error: invalid value 'tcsh' for '<SHELL>'
  [possible values: bash, elvish, fish, powershell, zsh]

  tip: a similar value exists: 'zsh'

For more information, try '--help'.
",
        )
        .status(1)
        .run();
}

#[test]
fn flags_live_on_the_commands_that_use_them() {
    let d = Dir::new();
    d.talm(["--version"])
        .expect()
        .stdout(format!("talm {}\n", env!("CARGO_PKG_VERSION")))
        .stderr("")
        .run();
    let o = d.talm(["version", "--help"]).ok();
    for flag in [
        "--talosconfig",
        "--root",
        "--context",
        "--nodes",
        "--strict-charts",
        "--call-timeout",
    ] {
        assert!(o.stdout.contains(flag), "{flag}");
    }
    // -n is --nodes, as the guide's `talm discover -n IP` uses it.
    assert!(o.stdout.contains("-n, --nodes"), "{}", o.stdout);
    let o = d.talm(["sim", "--help"]).ok();
    for flag in ["--talosconfig", "--nodes", "--strict-charts", "--root"] {
        assert!(!o.stdout.contains(flag), "sim --help lists {flag}");
    }
}
