//! Drift detection on commands that load the project (here `talm talosconfig`): library and
//! preset drift warnings, strict mode, and missing baselines.

use crate::common::Dir;

#[test]
fn a_clean_project_has_no_drift() {
    let d = Dir::project("cozystack");
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
    d.talm(["talosconfig", "--strict-charts"]).ok();
}

#[test]
fn library_drift_warns_then_fails_when_strict() {
    let d = Dir::project("cozystack");
    d.write("charts/talm/templates/_helpers.tera", "{# edited #}\n");
    d.write("charts/talm/templates/extra.tera", "x\n");
    d.remove("charts/talm/Chart.yaml");
    d.talm(["talosconfig"])
        .expect()
        .stdout("")
        .stderr("\
WARN: project's vendored charts/talm/ library differs from the copy built into talm 0.1.0 (extra: templates/extra.tera, missing: Chart.yaml, modified: templates/_helpers.tera); run `talm init --update --preset cozystack` to re-sync (or ignore if this is intentional)
Regenerating talosconfig from secrets.yaml...
Preserved endpoints and nodes from existing config
Updated $DIR/talosconfig
Encrypting talosconfig -> talosconfig.encrypted
")
        .run();

    let before = d.snapshot();
    d.talm(["talosconfig", "--strict-charts"])
        .expect().stderr("\
Error: project's vendored charts/talm/ library differs from the copy built into talm 0.1.0 (extra: templates/extra.tera, missing: Chart.yaml, modified: templates/_helpers.tera); run `talm init --update --preset cozystack` to re-sync
hint: run `talm init --update --preset cozystack`, or unset strictCharts / drop --strict-charts to downgrade this to a warning
").status(1).run();
    assert_eq!(
        d.snapshot(),
        before,
        "strict drift must stop before the command runs"
    );

    // strictCharts in Chart.yaml has the same effect.
    let chart = d
        .read("Chart.yaml")
        .replace("strictCharts: false", "strictCharts: true");
    d.write("Chart.yaml", &chart);
    d.talm(["talosconfig"]).expect().stderr("\
Error: project's vendored charts/talm/ library differs from the copy built into talm 0.1.0 (extra: templates/extra.tera, missing: Chart.yaml, modified: templates/_helpers.tera); run `talm init --update --preset cozystack` to re-sync
hint: run `talm init --update --preset cozystack`, or unset strictCharts / drop --strict-charts to downgrade this to a warning
").status(1).run();
    // Re-syncing clears it.
    d.talm(["init", "-u", "-p", "cozystack", "--force"]).ok();
    d.talm(["talosconfig"]).ok();
}

#[test]
fn preset_drift_is_read_from_the_lock() {
    let d = Dir::project("generic");
    let lock = d.read(".talm-preset.lock");
    let hash = lock
        .lines()
        .find_map(|l| l.strip_prefix("presetHash: "))
        .unwrap()
        .to_string();
    d.write(".talm-preset.lock", &lock.replace(&hash, &"0".repeat(64)));
    d.talm(["talosconfig"])
        .expect()
        .stdout("")
        .stderr("\
WARN: project's generic preset differs from the copy built into talm 0.1.0; run `talm init --update --preset generic` to pull the new preset defaults (your templates/ edits are preserved via the interactive diff)
Regenerating talosconfig from secrets.yaml...
Preserved endpoints and nodes from existing config
Updated $DIR/talosconfig
Encrypting talosconfig -> talosconfig.encrypted
")
        .run();
    d.talm(["talosconfig", "--strict-charts"])
        .expect().stderr("\
Error: project's generic preset differs from the copy built into talm 0.1.0; run `talm init --update --preset generic` to pull the new preset defaults (your templates/ edits are preserved via the interactive diff)
hint: run `talm init --update --preset generic`, or unset strictCharts / drop --strict-charts to downgrade this to a warning
").status(1).run();
    // An unreadable lock is a warning, or an error when strict.
    d.write(".talm-preset.lock", "preset: [\n");
    d.talm(["talosconfig"])
        .expect()
        .stdout("")
        .stderr("\
WARN: could not check drift: parsing preset lock: preset: invalid type: sequence, expected a string at line 1 column 9
Regenerating talosconfig from secrets.yaml...
Preserved endpoints and nodes from existing config
Updated $DIR/talosconfig
Encrypting talosconfig -> talosconfig.encrypted
")
        .run();
    d.talm(["talosconfig", "--strict-charts"])
        .expect().stderr("\
Error: drift check failed under strict mode: parsing preset lock: preset: invalid type: sequence, expected a string at line 1 column 9
hint: repair .talm-preset.lock and charts/talm/ with `talm init --update --preset <preset>`, or unset strictCharts / drop --strict-charts
").status(1).run();
    d.write(".talm-preset.lock", "preset: generic\n");
    d.talm(["talosconfig"]).ok();
    d.talm(["talosconfig", "--strict-charts"])
        .expect().stderr("\
Error: drift check failed under strict mode: preset lock is missing preset or presetHash
hint: repair .talm-preset.lock and charts/talm/ with `talm init --update --preset <preset>`, or unset strictCharts / drop --strict-charts
").status(1).run();
}

#[test]
fn missing_baseline_is_silent_unless_strict() {
    let d = Dir::project("generic");
    d.remove(".talm-preset.lock");
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
    d.talm(["talosconfig", "--strict-charts"])
        .expect().stderr("\
Error: drift baseline missing under strict mode: $DIR/.talm-preset.lock does not exist
hint: run `talm init --update --preset <preset>` to record a baseline, or unset strictCharts / drop --strict-charts
").status(1).run();
}

#[test]
fn broken_chart_yaml_is_named() {
    let d = Dir::project("generic");
    d.write("Chart.yaml", "name: x\napplyOptions:\n  timeout: soon\n");
    d.talm(["talosconfig"])
        .expect().stderr("\
Error: parsing applyOptions.timeout \"soon\" from $DIR/Chart.yaml
hint: applyOptions.timeout in Chart.yaml must be a Go duration literal (e.g. \"30s\", \"2m\", \"1h\")
").status(1).run();
    d.write("Chart.yaml", "name: [x\n");
    d.talm(["talosconfig"])
        .expect()
        .stderr(
            "\
Error: $DIR/Chart.yaml:2:1: invalid YAML: did not find expected ',' or ']'
hint: fix the YAML syntax in $DIR/Chart.yaml near line 2, column 1
",
        )
        .status(1)
        .run();
}
