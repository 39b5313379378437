//! The migration's switch and its stops: linked files, a switch killed midway, an unreachable node, values and templates it cannot read.

use super::*;
use crate::common::expect::{addrs, utc_stamps};

#[test]
fn linked_lock_or_migrate_folder_is_refused_before_anything_changes() {
    let d = go_project("v0.33.1", "generic", "");
    let outside = Dir::new();
    outside.write("lock", "preset: generic\npresetHash: x\n");
    std::fs::remove_file(d.join(".talm-preset.lock")).ok();
    std::os::unix::fs::symlink(outside.join("lock"), d.join(".talm-preset.lock")).unwrap();
    let before = tree(&d);
    d.talm(["migrate"])
        .expect().stderr("\
Error: $DIR/.talm-preset.lock is a link
hint: talm writes .talm-preset.lock itself: remove the link (keep a copy of what it points to if you need it) and rerun; nothing was changed
").status(1).run();
    assert_eq!(tree(&d), before, "a refused switch changed the project");
    assert_eq!(outside.read("lock"), "preset: generic\npresetHash: x\n");
    std::fs::remove_file(d.join(".talm-preset.lock")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.join("migrate")).unwrap();
    let before = tree(&d);
    d.talm(["migrate"]).expect().stderr("\
Error: $DIR/migrate is a link
hint: talm keeps backups and saved edits in the project's own migrate/ folder: move the link away and rerun
").status(1).run();
    assert_eq!(tree(&d), before);
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn a_linked_library_is_backed_up_as_a_link_and_replaced() {
    let d = go_project("v0.33.1", "generic", "");
    std::fs::remove_dir_all(d.join("charts/talm")).unwrap();
    std::os::unix::fs::symlink("../../talm", d.join("charts/talm")).unwrap();
    let o = d
        .talm(["migrate", "--dry-run"])
        .expect().stderr("\
Error: the Go templates hold custom edits or extra files (listed above) that talm's generic preset would not carry over; nothing was migrated.
hint: move each edit where the listing says (values.yaml, a _context.rhai function, a side-patch node file), then rerun; or pass --force to migrate without them
").status(1).run();
    assert!(
        o.stdout
            .contains("  links (backed up as links, never followed): charts/talm\n"),
        "{}",
        o.stdout
    );
    assert!(o
        .stdout
        .contains("  extra file no Go talm release wrote: charts/talm (a link)\n"));
    d.talm(["migrate"])
        .fails_with("custom edits or extra files");
    d.talm(["migrate", "--force"]).ok();
    let meta = std::fs::symlink_metadata(d.join("charts/talm")).unwrap();
    assert!(
        meta.is_dir(),
        "charts/talm is a folder of talm's library now"
    );
    assert!(d.exists("charts/talm/templates/_context.rhai"));
    let backup = std::fs::read_dir(d.join("migrate"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("backup-")
        })
        .unwrap();
    assert_eq!(
        std::fs::read_link(backup.join("charts/talm")).unwrap(),
        Path::new("../../talm")
    );
}

/// Whether a committed journal waits in a staging folder of `dir`.
fn journal_in(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name().to_string_lossy().starts_with(".talm-txn-")
                && std::fs::read_dir(e.path()).is_ok_and(|mut inside| {
                    inside.any(|f| {
                        let name = f
                            .map(|f| f.file_name().to_string_lossy().into_owned())
                            .unwrap_or_default();
                        name.starts_with("journal") && !name.ends_with(".tmp")
                    })
                })
        })
}

#[test]
fn a_switch_killed_midway_is_completed_by_the_next_run() {
    let d = go_project("v0.33.1", "generic", "");
    let encrypted = d.read("secrets.encrypted.yaml");
    // talm announces each step of its commits and holds the third, so the kill lands inside
    // the commit with a few of its renames done and most not, whatever the machine's load.
    let outside = Dir::new();
    let steps = outside.join("steps");
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("talm"))
        .current_dir(d.path())
        .arg("migrate")
        .env("TALM_TXN_PAUSE_FILE", &steps)
        .env("TALM_TXN_PAUSE_AT", "2")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while std::fs::read_to_string(&steps).map_or(0, |t| t.lines().count()) < 3 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "migrate ended before the third step of its commit"
        );
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "no commit seen"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(journal_in(d.path()), "the kill landed inside the commit");
    // Half switched on disk; the next talm run in the project completes the switch first.
    let o = d.talm(["migrate"]).ok();
    assert_eq!(
        o.stdout,
        "This project already uses talm's own templates: nothing to migrate.\n"
    );
    assert!(!journal_in(d.path()));
    assert!(d.exists("templates/config.tera") && !d.exists("templates/_helpers.tpl"));
    assert!(!d.exists("charts/talm/templates/_helpers.tpl"));
    assert_eq!(d.read("secrets.encrypted.yaml"), encrypted);
    d.talm(["init", "--update"]).ok();
}

#[test]
fn an_unreachable_node_is_not_proven_and_stops_the_migration() {
    let d = go_project("v0.33.1", "generic", "");
    let ip = net::addr(); // nothing listens there
    d.write(
        "nodes/node1.yaml",
        &node_file(&ip, "controlplane", "machine: {}\n"),
    );
    // A node file that is a link out of the project is not read: it stops the proof, named.
    let outside = Dir::new();
    outside.write("n.yaml", &node_file(&ip, "worker", "machine: {}\n"));
    std::os::unix::fs::symlink(outside.join("n.yaml"), d.join("nodes/linked.yaml")).unwrap();
    d.talm(["migrate", "--dry-run"])
        .expect()
        .replace(outside.path().display().to_string(), "$OUTSIDE")
        .stdout(format!("{GENERIC_PLAN}\
Custom template edits: none (every Go template is a released Go talm's)
"))
        .stderr("\
Error: nodes/linked.yaml leads outside the project at $DIR: through a symbolic link it resolves to $OUTSIDE/n.yaml
hint: scripts and templates read and write only inside the project: copy the file into the project instead of linking to it
")
        .status(1)
        .run();
    std::fs::remove_file(d.join("nodes/linked.yaml")).unwrap();
    // A killed run's staging copy (it held copies of the secrets) is gone after the next run.
    let dead = d.join(".talm-txn-4194304-killed/project");
    std::fs::create_dir_all(&dead).unwrap();
    std::fs::write(dead.join("talm.key"), "AGE-SECRET-KEY-1...").unwrap();
    std::fs::write(dead.parent().unwrap().join("owner.lock"), "").unwrap();
    let before = tree(&d);
    d.talm(["migrate", "--call-timeout", "5s"])
        .expect().mask(addrs).stdout(format!("{GENERIC_PLAN}\
Custom template edits: none (every Go template is a released Go talm's)
Proof, node by node (talm's render against the node file's body):
  nodes/node1.yaml: cannot render through talm's preset: node $A1: connect: connection refused
    (the proof renders as `talm template -f` does, with the node's discovery: make the node reachable, or set templateOptions.offline in Chart.yaml)
")).stderr("\
Error: 1 node file(s) could not be rendered (shown above); nothing was migrated
hint: move what differs into values.yaml or the node files' bodies and rerun, or pass --accept-changes to migrate anyway and review each node with `talm apply -f nodes/X.yaml --dry-run`
").status(1).run();
    assert!(
        !d.exists(".talm-txn-4194304-killed"),
        "a dead run's copy is left"
    );
    // This run's own copy, made inside the project, is gone too; nothing else changed.
    let mut want = before;
    want.retain(|k, _| !k.starts_with(".talm-txn-"));
    assert_eq!(tree(&d), want);
}

#[test]
fn values_it_cannot_parse_are_refused_as_template_refuses_them() {
    let d = go_project("v0.33.1", "generic", "");
    let values = d.read("values.yaml");
    // values.yaml has its own clusterName: the second added line repeats it.
    assert!(values.contains("\nclusterName: "));
    let line = values.lines().count() + 1;
    d.write("values.yaml", &format!("{values}clusterName: a\n"));
    let template = d
        .talm(["template", "--offline", "-t", "templates/controlplane.yaml"])
        .expect().stderr("\
WARN: this project's templates are the Go talm's (templates/_helpers.tpl), which talm does not render; run `talm migrate --dry-run` to see how it moves to talm's own preset
WARN: project's vendored charts/talm/ library differs from the copy built into talm 0.1.0 (extra: templates/_helpers.tpl, missing: templates/_context.rhai, missing: templates/_helpers.tera, missing: templates/_network_legacy.tera, missing: templates/_network_multidoc.tera, +1 more); run `talm init --update --preset generic` to re-sync (or ignore if this is intentional)
WARN: project's generic preset differs from the copy built into talm 0.1.0; run `talm init --update --preset generic` to pull the new preset defaults (your templates/ edits are preserved via the interactive diff)
Error: values.yaml:127:1: invalid YAML: duplicate entry with key \"clusterName\"
hint: fix the YAML syntax in values.yaml near line 127, column 1
").status(1).run();
    let said = |stderr: &str| {
        stderr
            .lines()
            .skip_while(|l| !l.starts_with("Error: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let want = format!("Error: values.yaml:{line}:1: invalid YAML: duplicate entry with key \"clusterName\"\nhint: fix the YAML syntax in values.yaml near line {line}, column 1");
    assert_eq!(said(&template.stderr), want);
    for args in [&["migrate", "--dry-run"][..], &["migrate"][..]] {
        let err = d.refuses(
            args,
            1,
            "\
Error: values.yaml:127:1: invalid YAML: duplicate entry with key \"clusterName\"
hint: fix the YAML syntax in values.yaml near line 127, column 1
",
        );
        assert_eq!(said(&err), want, "{args:?}");
    }
}

#[test]
fn a_binary_template_stops_the_dry_run_as_it_stops_the_run() {
    let d = go_project("v0.33.1", "generic", "");
    let mut bytes = d.read("templates/controlplane.yaml").into_bytes();
    bytes.extend_from_slice(b"\xff\xfe{{ x }}\n");
    std::fs::write(d.join("templates/controlplane.yaml"), bytes).unwrap();
    let before = tree(&d);
    let refusal = "Error: the Go templates hold custom edits or extra files (listed above) that talm's generic preset would not carry over; nothing was migrated.";
    let hint = "hint: move each edit where the listing says (values.yaml, a _context.rhai function, a side-patch node file), then rerun; or pass --force to migrate without them\n";
    d.talm(["migrate", "--dry-run"])
        .expect()
        .stdout(format!(
            "{GENERIC_PLAN}\
Custom template edits (talm's presets do not read Go templates; these would be lost):
  extra file no Go talm release wrote: templates/controlplane.yaml (edited; not UTF-8 text)
Proof, node by node: there are no node files (nodes/*.yaml) to prove.
Dry run: nothing was changed.
"
        ))
        .stderr(format!("{refusal}\n{hint}"))
        .status(1)
        .run();
    assert_eq!(tree(&d), before, "--dry-run changed the project");
    d.talm(["migrate"])
        .expect()
        .mask(utc_stamps)
        .stderr(format!(
            "{refusal} They are saved in migrate/edits-<UTC time>/ with EDITS.txt\n{hint}"
        ))
        .status(1)
        .run();
    // What the dry run then recommends is what goes through.
    std::fs::remove_dir_all(d.join("migrate")).unwrap();
    let o = d.talm(["migrate", "--dry-run", "--force"]).ok();
    assert!(
        o.stdout.ends_with(
            "Dry run: nothing was changed. Run `talm migrate --force` to carry the plan out.\n"
        ),
        "{}",
        o.stdout
    );
    d.talm(["migrate", "--force"]).ok();
}

/// What `talm migrate` says of a released Go talm generic project, up to the template edits.
const GENERIC_PLAN: &str = "\
Go talm project: preset generic (decided by the digest of templates/_helpers.tpl)
  templates/_helpers.tpl: v0.30.0..v0.32.0,v0.33.1
  charts/talm/templates/_helpers.tpl: v0.29.0..v0.33.1
  .talm-preset.lock: written by Go talm v0.33.1, preset generic
  Chart.yaml version: 0.33.1
Plan:
  replaced (backed up first under migrate/backup-<UTC time>/):
    templates/_helpers.tpl
    templates/controlplane.yaml
    templates/worker.yaml
    charts/talm/Chart.yaml
    charts/talm/templates/_helpers.tpl
    .talm-preset.lock (the Go lock)
  written (what `talm init --preset generic` writes):
    .talm-preset.base
    .talm-preset.lock
    charts/talm/Chart.yaml
    charts/talm/templates/_context.rhai
    charts/talm/templates/_helpers.tera
    charts/talm/templates/_network_legacy.tera
    charts/talm/templates/_network_multidoc.tera
    charts/talm/templates/_time_legacy.tera
    templates/config.tera
    templates/controlplane.yaml
    templates/worker.yaml
  kept byte for byte (encrypted files are not re-keyed):
    .gitignore
    Chart.yaml
    nodes/
    secrets.encrypted.yaml
    secrets.yaml
    talm.key
    talosconfig
    talosconfig.encrypted
    values.yaml
  Chart.yaml: kept; nothing needs adding (optional keys it lacks take talm's defaults: strictCharts)
  values.yaml: kept; every key the Go presets read has the same name in talm's
    read the same by talm's generic preset: endpoint, floatingIP, vipLink, clusterName, podSubnets, serviceSubnets, advertisedSubnets, certSANs, extraKernelModules, extraKubeletExtraArgs, extraSysctls, extraMachineFiles
    absent, talm's defaults apply: timeServers, extraApiServerArgs, registryMirrors, registryTLS, vips, network
    unknown (kept, read by nothing): none
";
