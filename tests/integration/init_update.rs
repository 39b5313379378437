//! `talm init --update`: the library re-synced exactly, preset files refreshed with the diff
//! policy, and Chart.yaml/values.yaml merged three-way so the user's pins survive a new preset.

use crate::common::{Dir, STABILITY_SECRETS};
use std::path::Path;

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} has no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

/// An "older release" of the presets: another image and Talos contract, no timeServers key,
/// a different worker template and an extra library file.
fn old_presets() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("presets"),
        dir.path(),
    );
    let coz = dir.path().join("cozystack");
    edit(
        &coz.join("values.yaml"),
        "image: \"ghcr.io/cozystack/cozystack/talos:v1.12.6\"",
        "image: \"ghcr.io/cozystack/cozystack/talos:v1.11.0\"",
    );
    let values = std::fs::read_to_string(coz.join("values.yaml")).unwrap();
    let start = values.find("timeServers: []").unwrap();
    std::fs::write(
        coz.join("values.yaml"),
        values.replacen("timeServers: []\n", "", 1),
    )
    .unwrap();
    assert!(start > 0);
    edit(
        &coz.join("Chart.yaml"),
        "talosVersion: \"v1.12\"",
        "talosVersion: \"v1.11\"",
    );
    let worker = coz.join("templates/worker.yaml");
    let w = std::fs::read_to_string(&worker).unwrap();
    std::fs::write(&worker, format!("{{# old worker #}}\n{w}")).unwrap();
    std::fs::write(
        dir.path().join("talm/templates/_old.tera"),
        "{# gone in the new release #}\n",
    )
    .unwrap();
    dir
}

fn old_project(old: &Path) -> Dir {
    let d = Dir::new();
    d.write("secrets.yaml", STABILITY_SECRETS);
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "mycluster",
        "--endpoints",
        "127.0.0.11",
    ])
    .env("TALM_PRESETS_DIR", old)
    .ok();
    assert!(d.read("values.yaml").contains("talos:v1.11.0"));
    assert!(d.exists("charts/talm/templates/_old.tera"));
    d
}

#[test]
fn update_to_a_new_preset_keeps_user_pins() {
    let old = old_presets();
    let d = old_project(old.path());
    // The user pins: a Kubernetes version, an OIDC issuer and the image (the preset changes that
    // line too), and edits the worker template.
    edit(
        &d.join("Chart.yaml"),
        "kubernetesVersion: \"v1.34.3\"",
        "kubernetesVersion: \"v1.33.2\"",
    );
    edit(
        &d.join("values.yaml"),
        "oidcIssuerUrl: \"\"",
        "oidcIssuerUrl: \"https://id.example.com\"",
    );
    edit(&d.join("values.yaml"), "talos:v1.11.0", "talos:v1.11.5");

    // Without --force and without a terminal, the changed template and then the conflicting
    // image line stop the update, and nothing is written.
    let before = d.snapshot();
    d.talm(["init", "--update", "--preset", "cozystack"])
        .expect().stderr("\
Error: file \"templates/worker.yaml\" differs from the preset template, but talm is running non-interactively and cannot prompt for confirmation
hint: rerun under a tty to answer the prompt, or pass --force to overwrite
").status(1).run();
    assert_eq!(d.snapshot(), before);
    let old_worker = d.read("templates/worker.yaml");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/cozystack/templates/worker.yaml"),
        d.join("templates/worker.yaml"),
    )
    .unwrap();
    let before = d.snapshot();
    d.talm(["init", "--update", "--preset", "cozystack"])
        .expect().stderr("\
Error: file \"values.yaml\" has lines changed both by you and by the new preset, and talm is running non-interactively and cannot ask which to keep
hint: rerun in a terminal to choose, or pass --force to keep your lines and take the rest of the preset
").status(1).run();
    assert_eq!(d.snapshot(), before);
    d.write("templates/worker.yaml", &old_worker);

    let o = d
        .talm(["init", "--update", "--preset", "cozystack", "--force"])
        .expect()
        .stdout("")
        .run();
    // The warning shows the whole merged values.yaml, the lines both changed marked; then the
    // update names each file.
    let (warn, rest) = o
        .stderr
        .split_once("\nUpdating talm library chart...\n")
        .unwrap_or_else(|| panic!("{}", o.stderr));
    assert!(
        warn.starts_with("WARN: values.yaml: you and the preset changed the same lines; your lines were kept:\n# Values of the cozystack preset.\n"),
        "{warn}"
    );
    assert_eq!(warn.matches("\n<<<<<<< yours\n").count(), 1, "{warn}");
    assert!(
        warn.contains("\n<<<<<<< yours\nimage: \"ghcr.io/cozystack/cozystack/talos:v1.11.5\"\n=======\nimage: \"ghcr.io/cozystack/cozystack/talos:v1.12.6\"\n>>>>>>> new preset\n"),
        "{warn}"
    );
    assert_eq!(
        rest,
        "\
Unchanged charts/talm/Chart.yaml
Unchanged charts/talm/templates/_context.rhai
Unchanged charts/talm/templates/_helpers.tera
Unchanged charts/talm/templates/_network_legacy.tera
Unchanged charts/talm/templates/_network_multidoc.tera
Unchanged charts/talm/templates/_time_legacy.tera
Removed charts/talm/templates/_old.tera
Updating preset templates...
Merged preset changes into Chart.yaml (your changes kept)
Unchanged templates/config.tera
Unchanged templates/controlplane.yaml
Overwriting templates/worker.yaml (--force)
Merged preset changes into values.yaml (your lines kept where both changed)
"
    );
    let chart = d.read("Chart.yaml");
    let values = d.read("values.yaml");
    // Pins survive...
    assert!(chart.contains("kubernetesVersion: \"v1.33.2\""), "{chart}");
    assert!(values.contains("oidcIssuerUrl: \"https://id.example.com\""));
    assert!(values.contains("talos:v1.11.5"));
    assert!(values.contains("endpoint: \"https://127.0.0.11:6443\""));
    assert!(chart.contains("\nname: mycluster\n"));
    // ...and what the user never touched follows the new preset.
    assert!(chart.contains("talosVersion: \"v1.12\""), "{chart}");
    assert!(values.contains("\ntimeServers: []\n"));
    assert!(!d.exists("charts/talm/templates/_old.tera"));
    assert_eq!(
        d.read("templates/worker.yaml"),
        std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/cozystack/templates/worker.yaml")
        )
        .unwrap()
    );
    // The lock moved to the new preset: no drift is reported any more.
    d.talm(["talosconfig"])
        .expect()
        .stdout("")
        .stderr(
            "\
Regenerating talosconfig from secrets.yaml...
Preserved endpoints and nodes from existing config
Updated $DIR/talosconfig
Encrypting talosconfig -> talosconfig.encrypted
",
        )
        .run();
    // A second update has nothing left to do.
    let before = d.snapshot();
    d.talm(["init", "-u", "-p", "cozystack"]).ok();
    assert_eq!(d.snapshot(), before);
}

#[test]
fn clean_merge_needs_no_force() {
    let old = old_presets();
    let d = old_project(old.path());
    // Only a pin on a line the preset does not change, and the same worker template.
    edit(
        &d.join("Chart.yaml"),
        "kubernetesVersion: \"v1.34.3\"",
        "kubernetesVersion: \"v1.33.2\"",
    );
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("presets/cozystack/templates/worker.yaml"),
        d.join("templates/worker.yaml"),
    )
    .unwrap();
    d.talm(["init", "-u", "-p", "cozystack"])
        .expect()
        .stdout("")
        .stderr(
            "\
Updating talm library chart...
Unchanged charts/talm/Chart.yaml
Unchanged charts/talm/templates/_context.rhai
Unchanged charts/talm/templates/_helpers.tera
Unchanged charts/talm/templates/_network_legacy.tera
Unchanged charts/talm/templates/_network_multidoc.tera
Unchanged charts/talm/templates/_time_legacy.tera
Removed charts/talm/templates/_old.tera
Updating preset templates...
Merged preset changes into Chart.yaml (your changes kept)
Unchanged templates/config.tera
Unchanged templates/controlplane.yaml
Unchanged templates/worker.yaml
Merged preset changes into values.yaml (your changes kept)
",
        )
        .run();
    assert!(d.read("values.yaml").contains("talos:v1.12.6"));
    assert!(d
        .read("Chart.yaml")
        .contains("kubernetesVersion: \"v1.33.2\""));
}

#[test]
fn a_changed_template_is_not_overwritten_silently() {
    let d = Dir::project("generic");
    d.write("templates/worker.yaml", "# my own worker template\n");
    d.write("charts/talm/templates/stray.tera", "stray\n");
    let before = d.snapshot();
    d.talm(["init", "--update", "--preset", "generic"])
        .expect().stderr("\
Error: file \"templates/worker.yaml\" differs from the preset template, but talm is running non-interactively and cannot prompt for confirmation
hint: rerun under a tty to answer the prompt, or pass --force to overwrite
").status(1).run();
    assert_eq!(d.snapshot(), before);
}

#[test]
fn update_finds_the_preset_in_the_lock_and_refuses_unknown_ones() {
    let d = Dir::project("generic");
    d.write("charts/talm/templates/stray.tera", "stray\n");
    d.talm(["init", "-u"])
        .expect()
        .stdout("")
        .stderr(
            "\
Updating talm library chart...
Unchanged charts/talm/Chart.yaml
Unchanged charts/talm/templates/_context.rhai
Unchanged charts/talm/templates/_helpers.tera
Unchanged charts/talm/templates/_network_legacy.tera
Unchanged charts/talm/templates/_network_multidoc.tera
Unchanged charts/talm/templates/_time_legacy.tera
Removed charts/talm/templates/stray.tera
Updating preset templates...
Unchanged Chart.yaml
Unchanged templates/config.tera
Unchanged templates/controlplane.yaml
Unchanged templates/worker.yaml
Unchanged values.yaml (your changes kept; the preset brings nothing new)
",
        )
        .run();
    d.talm(["init", "-u", "-p", "nope"])
        .expect()
        .stderr(
            "\
Error: invalid preset: nope. Valid presets are: [generic cozystack talm]
hint: pass one of the listed presets with --preset
",
        )
        .status(1)
        .run();
    d.remove(".talm-preset.lock");
    d.talm(["init", "-u"])
        .expect()
        .stderr(
            "\
Error: preset not found in Chart.yaml dependencies or .talm-preset.lock
hint: pass the preset the project was made from: talm init --update --preset <preset>
",
        )
        .status(1)
        .run();
}

fn talm_in_tty(d: &Dir, args: &str, input: &str) -> String {
    let (ok, screen) = d.talm_in_tty(args, input);
    assert!(ok, "{screen}");
    screen
}

#[test]
fn a_terminal_user_is_asked_per_file() {
    let d = Dir::project("generic");
    d.write("templates/worker.yaml", "# my own worker template\n");
    let screen = talm_in_tty(&d, "init -u -p generic", "n\n");
    assert!(
        screen.contains("File templates/worker.yaml differs from template. Overwrite? [y/N]:"),
        "{screen}"
    );
    assert!(
        screen.contains("-# my own worker template"),
        "the diff is shown: {screen}"
    );
    assert_eq!(
        d.read("templates/worker.yaml"),
        "# my own worker template\n"
    );
    let screen = talm_in_tty(&d, "init -u -p generic", "y\n");
    assert!(screen.contains("Updated templates/worker.yaml"), "{screen}");
    assert_ne!(
        d.read("templates/worker.yaml"),
        "# my own worker template\n"
    );
}

#[test]
fn update_names_the_files_it_left_unchanged() {
    let d = Dir::project("generic");
    let lib = "charts/talm/templates/_helpers.tera";
    let text = d.read(lib);
    d.write(lib, &format!("{text}{{# a local edit #}}\n"));
    let o = d.talm(["init", "-u"]).ok();
    assert_eq!(
        o.stderr,
        "Updating talm library chart...\n\
         Unchanged charts/talm/Chart.yaml\n\
         Unchanged charts/talm/templates/_context.rhai\n\
         Updated charts/talm/templates/_helpers.tera\n\
         Unchanged charts/talm/templates/_network_legacy.tera\n\
         Unchanged charts/talm/templates/_network_multidoc.tera\n\
         Unchanged charts/talm/templates/_time_legacy.tera\n\
         Updating preset templates...\n\
         Unchanged Chart.yaml\n\
         Unchanged templates/config.tera\n\
         Unchanged templates/controlplane.yaml\n\
         Unchanged templates/worker.yaml\n\
         Unchanged values.yaml (your changes kept; the preset brings nothing new)\n"
    );
    assert_eq!(d.read(lib), text);
}
