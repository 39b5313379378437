//! The migration's report, exactly: what it detects in a Go talm project, its plan, the custom
//! edits that stop it, and what it says when there is nothing to migrate.

use super::*;
use crate::common::expect::utc_stamps;

#[test]
fn dry_run_prints_detection_and_plan_and_changes_nothing() {
    let d = go_project("v0.33.1", "cozystack", "v1.12");
    d.write(
        "values.yaml",
        &format!("{}myOwnKey: 1\n", d.read("values.yaml")),
    );
    // A Windows checkout (core.autocrlf): the digests are taken with LF line ends.
    let crlf = d.read("templates/_helpers.tpl").replace('\n', "\r\n");
    d.write("templates/_helpers.tpl", &crlf);
    d.write(".helmignore", "*.bak\n");
    let before = tree(&d);
    // Other commands point at migrate while the Go templates are there.
    d.talm(["template", "--offline", "-t", "templates/controlplane.yaml"])
        .expect()
        .stderr("\
WARN: this project's templates are the Go talm's (templates/_helpers.tpl), which talm does not render; run `talm migrate --dry-run` to see how it moves to talm's own preset
WARN: project's vendored charts/talm/ library differs from the copy built into talm 0.1.0 (extra: templates/_helpers.tpl, missing: templates/_context.rhai, missing: templates/_helpers.tera, missing: templates/_network_legacy.tera, missing: templates/_network_multidoc.tera, +1 more); run `talm init --update --preset cozystack` to re-sync (or ignore if this is intentional)
WARN: project's cozystack preset differs from the copy built into talm 0.1.0; run `talm init --update --preset cozystack` to pull the new preset defaults (your templates/ edits are preserved via the interactive diff)
Error: Found string but expected }}.
 --> _helpers.tpl:1:12
  |
1 | {{- define \"talos.config\" }}\\r
  |            ^^^^^^^^^^^^^^
hint: fix the template at the position shown
")
        .status(1)
        .run();
    d.talm(["migrate", "--dry-run"])
        .expect()
        .stdout("\
Go talm project: preset cozystack (decided by the digest of templates/_helpers.tpl)
  templates/_helpers.tpl: v0.31.0..v0.32.0,v0.33.1
  charts/talm/templates/_helpers.tpl: v0.29.0..v0.33.1
  .talm-preset.lock: written by Go talm v0.33.1, preset cozystack
  Chart.yaml version: 0.33.1
Plan:
  replaced (backed up first under migrate/backup-<UTC time>/):
    templates/_helpers.tpl
    templates/controlplane.yaml
    templates/worker.yaml
    charts/talm/Chart.yaml
    charts/talm/templates/_helpers.tpl
    .talm-preset.lock (the Go lock)
  written (what `talm init --preset cozystack` writes):
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
    .helmignore
    Chart.yaml
    nodes/
    secrets.encrypted.yaml
    secrets.yaml
    talm.key
    talosconfig
    talosconfig.encrypted
    values.yaml
  Chart.yaml: kept; nothing needs adding (optional keys it lacks take talm's defaults: strictCharts)
  note: .helmignore: the Go talm (Helm's loader) did not render the files it lists; talm does not read it, so review those files
  values.yaml: kept; every key the Go presets read has the same name in talm's
    read the same by talm's cozystack preset: endpoint, clusterName, clusterDomain, floatingIP, vipLink, image, podSubnets, serviceSubnets, advertisedSubnets, oidcIssuerUrl, certSANs, nr_hugepages, allocateNodeCIDRs, tcpKeepaliveTuning, etcd, extraKernelModules, extraKubeletExtraArgs, extraSysctls, extraMachineFiles
    absent, talm's defaults apply: timeServers, extraApiServerArgs, registryMirrors, registryTLS, vips, network
    unknown (kept, read by nothing): myOwnKey
Custom template edits: none (every Go template is a released Go talm's)
Proof, node by node: there are no node files (nodes/*.yaml) to prove.
Dry run: nothing was changed. Run `talm migrate` to carry the plan out.
")
        .stderr("")
        .run();
    assert_eq!(tree(&d), before, "--dry-run changed the project");
}

#[test]
fn legacy_go_release_is_dated_and_its_contract_change_named() {
    let d = go_project("v0.23.1", "cozystack", "v1.12");
    d.talm(["migrate", "--dry-run"])
        .expect()
        .stdout("\
Go talm project: preset cozystack (decided by the digest of templates/_helpers.tpl)
  templates/_helpers.tpl: v0.22.0..v0.23.1
  charts/talm/templates/_helpers.tpl: v0.22.2..v0.24.0
  .talm-preset.lock: none (Go talm before v0.33.0 wrote none)
  Chart.yaml version: 0.1.0 (every Go release before v0.33.0 wrote 0.1.0)
Plan:
  replaced (backed up first under migrate/backup-<UTC time>/):
    templates/_helpers.tpl
    templates/controlplane.yaml
    templates/worker.yaml
    charts/talm/Chart.yaml
    charts/talm/templates/_helpers.tpl
  written (what `talm init --preset cozystack` writes):
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
  note: these Go templates emit one legacy document whatever the talosVersion; talm's preset emits the multi-document format for talosVersion v1.12 — set templateOptions.talosVersion below v1.12 in Chart.yaml to keep the legacy format
  values.yaml: kept; every key the Go presets read has the same name in talm's
    read the same by talm's cozystack preset: endpoint, clusterDomain, floatingIP, image, podSubnets, serviceSubnets, advertisedSubnets, oidcIssuerUrl, certSANs, nr_hugepages, allocateNodeCIDRs
    absent, talm's defaults apply: clusterName, vipLink, tcpKeepaliveTuning, etcd, extraKernelModules, extraKubeletExtraArgs, extraSysctls, extraMachineFiles, timeServers, extraApiServerArgs, registryMirrors, registryTLS, vips, network
    unknown (kept, read by nothing): none
Custom template edits: none (every Go template is a released Go talm's)
Proof, node by node: there are no node files (nodes/*.yaml) to prove.
Dry run: nothing was changed. Run `talm migrate` to carry the plan out.
")
        .stderr("")
        .run();
}

#[test]
fn preset_flag_overrides_and_the_contradiction_is_named() {
    let d = go_project("v0.33.1", "cozystack", "v1.12");
    d.talm(["migrate", "--dry-run", "--preset", "generic"])
        .expect()
        .stdout("\
Go talm project: preset generic (decided by --preset)
  templates/_helpers.tpl: v0.31.0..v0.32.0,v0.33.1
  charts/talm/templates/_helpers.tpl: v0.29.0..v0.33.1
  note: templates/_helpers.tpl is the Go cozystack preset's; --preset was taken as generic
  note: the Go lock says preset cozystack, but the project is migrated as generic
  .talm-preset.lock: written by Go talm v0.33.1, preset cozystack
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
    read the same by talm's generic preset: endpoint, clusterName, floatingIP, vipLink, podSubnets, serviceSubnets, advertisedSubnets, certSANs, extraKernelModules, extraKubeletExtraArgs, extraSysctls, extraMachineFiles
    absent, talm's defaults apply: timeServers, extraApiServerArgs, registryMirrors, registryTLS, vips, network
    unknown (kept, read by nothing): clusterDomain (read by the Go cozystack preset only), image (read by the Go cozystack preset only), oidcIssuerUrl (read by the Go cozystack preset only), nr_hugepages (read by the Go cozystack preset only), allocateNodeCIDRs (read by the Go cozystack preset only), tcpKeepaliveTuning (read by the Go cozystack preset only), etcd (read by the Go cozystack preset only)
Custom template edits: none (every Go template is a released Go talm's)
Proof, node by node: there are no node files (nodes/*.yaml) to prove.
Dry run: nothing was changed. Run `talm migrate` to carry the plan out.
")
        .stderr("")
        .run();
    d.talm(["migrate", "--dry-run", "--preset", "nope"])
        .expect()
        .stderr(
            "\
Error: invalid preset: nope. Valid presets are: [generic cozystack talm]
hint: pass one of the listed presets with --preset
",
        )
        .status(1)
        .run();
}

#[test]
fn already_ours_is_nothing_to_migrate() {
    let d = Dir::project("generic");
    let before = tree(&d);
    let o = d.talm(["migrate"]).ok();
    assert_eq!(
        o.stdout,
        "This project already uses talm's own templates: nothing to migrate.\n"
    );
    assert_eq!(tree(&d), before);
}

#[test]
fn edited_helpers_stop_with_the_hunk_and_force_goes_on() {
    let d = go_project("v0.33.1", "generic", "");
    let helpers = d.read("templates/_helpers.tpl");
    let mut lines: Vec<&str> = helpers.lines().collect();
    lines.insert(9, "{{- include \"site.rule\" . }}");
    d.write("templates/_helpers.tpl", &(lines.join("\n") + "\n"));
    d.write("templates/custom.yaml", "machine: {}\n");
    d.talm(["migrate"])
        .expect()
        .mask(utc_stamps)
        .stdout("\
Go talm project: preset generic (decided by the Go .talm-preset.lock)
  templates/_helpers.tpl: no released Go talm wrote this text (edited)
  charts/talm/templates/_helpers.tpl: v0.29.0..v0.33.1
  .talm-preset.lock: written by Go talm v0.33.1, preset generic
  Chart.yaml version: 0.33.1
Plan:
  replaced (backed up first under migrate/backup-<UTC time>/):
    templates/_helpers.tpl
    templates/controlplane.yaml
    templates/custom.yaml
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
Custom template edits (talm's presets do not read Go templates; these would be lost):
  templates/_helpers.tpl: compared with the nearest pristine text (Go talm v0.30.0..v0.32.0,v0.33.1)
  templates/_helpers.tpl:10
    + {{- include \"site.rule\" . }}
    where it goes: template logic: a `_context.rhai` function (charts/talm/templates/_context.rhai) feeding config.tera
  extra file no Go talm release wrote: templates/custom.yaml
")
        .stderr("\
Error: the Go templates hold custom edits or extra files (listed above) that talm's generic preset would not carry over; nothing was migrated. They are saved in migrate/edits-<UTC time>/ with EDITS.txt
hint: move each edit where the listing says (values.yaml, a _context.rhai function, a side-patch node file), then rerun; or pass --force to migrate without them
")
        .status(1)
        .run();
    // Nothing switched; the edits are saved for the user.
    assert!(d.exists("templates/_helpers.tpl") && !d.exists("templates/config.tera"));
    let saved: Vec<_> = std::fs::read_dir(d.join("migrate")).unwrap().collect();
    assert_eq!(saved.len(), 1);
    let dir = saved[0].as_ref().unwrap().path();
    assert!(dir
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("edits-"));
    assert!(dir.join("templates/custom.yaml").exists());
    assert!(std::fs::read_to_string(dir.join("EDITS.txt"))
        .unwrap()
        .contains("templates/_helpers.tpl:10"));

    let o = d
        .talm(["migrate", "--force"])
        .expect()
        .mask(utc_stamps)
        .stdout("\
Go talm project: preset generic (decided by the Go .talm-preset.lock)
  templates/_helpers.tpl: no released Go talm wrote this text (edited)
  charts/talm/templates/_helpers.tpl: v0.29.0..v0.33.1
  .talm-preset.lock: written by Go talm v0.33.1, preset generic
  Chart.yaml version: 0.33.1
Plan:
  replaced (backed up first under migrate/backup-<UTC time>/):
    templates/_helpers.tpl
    templates/controlplane.yaml
    templates/custom.yaml
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
Custom template edits (talm's presets do not read Go templates; these would be lost):
  templates/_helpers.tpl: compared with the nearest pristine text (Go talm v0.30.0..v0.32.0,v0.33.1)
  templates/_helpers.tpl:10
    + {{- include \"site.rule\" . }}
    where it goes: template logic: a `_context.rhai` function (charts/talm/templates/_context.rhai) feeding config.tera
  extra file no Go talm release wrote: templates/custom.yaml
Proof, node by node: there are no node files (nodes/*.yaml) to prove.
Migrated to talm's generic preset. The Go templates, charts and lock are backed up in migrate/backup-<UTC time>/.
Next: review each node with `talm apply -f nodes/<node>.yaml --dry-run`; `talm init --update` keeps the preset current.
")
        .run();
    // Saved next to the first run's edits: in a folder of its own (`-2` within the same second).
    assert_eq!(
        utc_stamps(&o.stderr).replacen("<UTC time>-2/", "<UTC time>/", 1),
        "\
WARN: migrating without the custom edits listed above (--force); they are saved in migrate/edits-<UTC time>/
Removed templates/_helpers.tpl
Removed templates/custom.yaml
Removed charts/talm/templates/_helpers.tpl
Wrote .talm-preset.lock
Wrote charts/talm/Chart.yaml
Wrote charts/talm/templates/_context.rhai
Wrote charts/talm/templates/_helpers.tera
Wrote charts/talm/templates/_network_legacy.tera
Wrote charts/talm/templates/_network_multidoc.tera
Wrote charts/talm/templates/_time_legacy.tera
Wrote templates/config.tera
Wrote templates/controlplane.yaml
Wrote templates/worker.yaml
"
    );
    assert!(d.exists("templates/config.tera") && !d.exists("templates/_helpers.tpl"));
    assert!(!d.exists("templates/custom.yaml"));
}
