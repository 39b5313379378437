//! Scripts and templates run bounded (issue 9, section 4): strict limits for templates and
//! preset logic, generous ones for playbooks (`--max-ops`), Tera renders watched, Ctrl-C stopping
//! a playbook with 130, `parallel()` on a bounded pool, typed option maps (an unknown key is an error, `reset` never defaults to everything) and
//! a missing map property being an error. Simulated nodes use addresses from `common::net`.

mod ctrl_c;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir, Out, Run};

/// Runs a command that must end on its own well within `secs` (a hang fails the test).
fn within(secs: u64, mut r: Run) -> Out {
    r.cmd.timeout(Duration::from_secs(secs));
    let start = Instant::now();
    let o = r.run();
    assert!(
        start.elapsed() < Duration::from_secs(secs),
        "still running after {secs}s: {}",
        o.stderr
    );
    o
}

fn fails(secs: u64, r: Run, needle: &str) -> Out {
    let o = within(secs, r);
    assert_ne!(o.code, 0, "unexpectedly succeeded:\n{}", o.stderr);
    assert!(
        o.stderr.contains(needle),
        "expected {needle:?} in stderr:\n{}",
        o.stderr
    );
    o
}

/// Runs a command that must fail within `secs` with exit code 1 and exactly `stderr` (`d`'s
/// folder read as `$DIR`).
#[track_caller]
fn refused_within(secs: u64, d: &Dir, r: Run, stderr: &str) -> Out {
    let o = within(secs, r);
    assert_eq!(o.code, 1, "{}", o.stderr);
    let said = o.stderr.replace(&d.path().display().to_string(), "$DIR");
    if said != stderr {
        panic!(
            "stderr differs (- expected, + actual):\n{}",
            crate::common::expect::diff(stderr, &said)
        );
    }
    o
}

// ---- limits -------------------------------------------------------------------------------

#[test]
fn template_logic_runs_under_strict_limits() {
    let d = Dir::project("generic");
    d.write("templates/spin.rhai", "let i = 0;\nloop { i += 1; }\n");
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/spin.rhai"]),
        "\
Error: templates/spin.rhai:2:8: the script exceeded the limit of 20000000 operations (templates and preset logic run with strict limits)
hint: template logic cannot raise its operation limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
    d.write("templates/grow.rhai", "let s = \"x\";\nloop { s += s; }\n");
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/grow.rhai"]),
        "\
Error: templates/grow.rhai:2:10: the script exceeded the size limit of 16777216 bytes of text (templates and preset logic run with strict limits)
hint: template logic cannot raise its size limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
    d.write(
        "templates/deep.rhai",
        "fn down(n) { down(n + 1) }\ndown(0)\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/deep.rhai"]),
        "\
Error: templates/deep.rhai:2:1: the script exceeded the call-depth limit of 64 nested function calls (templates and preset logic run with strict limits)
hint: template logic cannot raise its call-depth limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
    d.write(
        "templates/wide.rhai",
        "let a = [];\nfor i in 0..1000000 { a.push(i); }\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/wide.rhai"]),
        "\
Error: templates/wide.rhai:2:25: the script exceeded the size limit of 100000 array items (templates and preset logic run with strict limits)
hint: template logic cannot raise its size limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
    // A map filled key by key (`m[k] = v`) is measured when it next goes through a function
    // call, as docs/rhai-api.md says; until then the operation and memory limits bound it.
    d.write(
        "templates/keys.rhai",
        "let m = #{};\nfor i in 0..300000 { m[`k${i}`] = i; }\nm.len()\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/keys.rhai"]),
        "\
Error: templates/keys.rhai:3:3: the script exceeded the size limit of 250000 map entries (templates and preset logic run with strict limits)
hint: template logic cannot raise its size limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
    d.write(
        "templates/fill.rhai",
        "let m = #{};\nlet s = \"x\";\ns.pad(1000, \"y\");\nlet i = 0;\nloop { m[`k${i}`] = s + i; i += 1; }\n",
    );
    fails(
        60,
        d.talm(["template", "--offline", "-t", "templates/fill.rhai"]),
        "the script exceeded the memory limit of 512 MiB (growth of talm's memory while it runs)",
    );
    // Preset logic: the project's _context.rhai runs before every template.
    d.write(
        "templates/_context.rhai",
        "// preset logic\nwhile true {}\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/controlplane.yaml"]),
        "\
Error: templates/_context.rhai:2:12: the script exceeded the limit of 20000000 operations (templates and preset logic run with strict limits)
hint: template logic cannot raise its operation limit: look for an endless loop, runaway recursion or a value that keeps growing at the position shown
",
    );
}

#[test]
fn playbooks_run_under_generous_limits_that_max_ops_sets() {
    let d = Dir::project("generic");
    d.write("spin.rhai", "let i = 0;\nloop { i += 1; }\n");
    refused_within(
        60,
        &d,
        d.talm(["run", "--max-ops", "100000", "spin.rhai"]),
        "\
Error: spin.rhai:2:13: the script exceeded the limit of 100000 operations (playbooks run with generous limits)
hint: raise it with `talm run --max-ops N` (or TALM_MAX_OPS=N; 0 = no limit), or look for an endless loop at the position shown
",
    );
    // The environment sets it too, for project scripts (`talm NAME`) as for `talm run`.
    d.write("scripts/spin.rhai", "let i = 0;\nloop { i += 1; }\n");
    refused_within(
        60,
        &d,
        d.talm(["spin"]).env("TALM_MAX_OPS", "5000"),
        "\
Error: $DIR/scripts/spin.rhai:2:8: the script exceeded the limit of 5000 operations (playbooks run with generous limits)
hint: raise it with `talm run --max-ops N` (or TALM_MAX_OPS=N; 0 = no limit), or look for an endless loop at the position shown
",
    );
    d.talm(["spin"])
        .env("TALM_MAX_OPS", "lots")
        .expect()
        .stderr(
            "\
Error: TALM_MAX_OPS=\"lots\" is not a number of operations
hint: set TALM_MAX_OPS to a whole number (0 = no limit), or unset it
",
        )
        .status(1)
        .run();
    // A playbook may count far beyond a template's limit; 0 lifts the limit.
    d.write(
        "count.rhai",
        "let i = 0;\nwhile i < 8000000 { i += 1; }\nout(`${i}`);\n",
    );
    assert_eq!(within(120, d.talm(["run", "count.rhai"])).stdout, "8000000");
    assert_eq!(
        within(120, d.talm(["run", "--max-ops", "0", "count.rhai"])).stdout,
        "8000000"
    );
    d.write("grow.rhai", "let s = \"x\";\nloop { s += s; }\n");
    refused_within(
        60,
        &d,
        d.talm(["run", "grow.rhai"]),
        "\
Error: grow.rhai:2:10: the script exceeded the size limit of 67108864 bytes of text (playbooks run with generous limits)
hint: look for runaway recursion or a value that keeps growing at the position shown (the size limit is fixed)
",
    );
    d.write("deep.rhai", "fn down(n) { down(n + 1) }\ndown(0);\n");
    refused_within(
        60,
        &d,
        d.talm(["run", "deep.rhai"]),
        "\
Error: deep.rhai:2:1: the script exceeded the call-depth limit of 128 nested function calls (playbooks run with generous limits)
hint: look for runaway recursion or a value that keeps growing at the position shown (the call-depth limit is fixed)
",
    );
    d.write(
        "wide.rhai",
        "let m = #{};\nfor i in 0..600000 { m[`k${i}`] = i; }\nout(`${m.len()}`);\n",
    );
    refused_within(
        120,
        &d,
        d.talm(["run", "wide.rhai"]),
        "\
Error: wide.rhai:3:10: the script exceeded the size limit of 500000 map entries (playbooks run with generous limits)
hint: look for runaway recursion or a value that keeps growing at the position shown (the size limit is fixed)
",
    );
}

#[test]
fn tera_renders_are_bounded() {
    let d = Dir::project("generic");
    // Tera's own bounds hold: an include cycle and a huge range are errors, not hangs.
    d.write("templates/a.tera", "{% include \"b.tera\" %}");
    d.write("templates/b.tera", "{% include \"a.tera\" %}");
    d.write("templates/cycle.yaml", "{% include \"a.tera\" %}\n");
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/cycle.yaml"]),
        "\
Error: Circular include detected for template 'a.tera'. Include chain: `[\"a.tera\", \"b.tera\", \"a.tera\"]`
hint: fix the template at the position shown
",
    );
    d.remove("templates/a.tera");
    d.remove("templates/b.tera");
    d.remove("templates/cycle.yaml");
    d.write(
        "templates/range.yaml",
        "{% for i in range(end=1000000000) %}x{% endfor %}\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/range.yaml"]),
        "\
Error: Function `range` would produce 1000000000 elements, which exceeds the limit of 100000
 --> range.yaml:1:13
  |
1 | {% for i in range(end=1000000000) %}x{% endfor %}
  |             ^^^^^^^^^^^^^^^^^^^^^
hint: fix the template at the position shown
",
    );
    // What Tera does not bound: a value doubling in a loop, loops nested over large ranges, a
    // filter asked for a giant indent.
    d.write(
        "templates/grow.yaml",
        "{% set s = \"x\" %}{% for i in range(end=64) %}{% set_global s = s ~ s %}{% endfor %}a: {{ s | length }}\n",
    );
    let o = refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/grow.yaml"]),
        "\
Error: templates/grow.yaml: the render grew talm's memory by more than 512 MiB (templates and preset logic run with strict limits)
hint: look for a value that keeps growing (`set_global s = s ~ s` in a loop); template logic cannot raise its limits
",
    );
    assert_eq!(o.code, 1, "an error, not an abort: {}", o.stderr);
    // Renders inside `parallel()` (on the worker threads themselves, or handed over from the
    // calling thread) are bounded the same way.
    d.write(
        "grow.rhai",
        "parallel([1, 2, 3], |i| render(#{ template: \"templates/grow.yaml\", offline: true }), 3);\n",
    );
    let o = refused_within(
        60,
        &d,
        d.talm(["run", "grow.rhai"]),
        "\
Error: templates/grow.yaml: the render grew talm's memory by more than 512 MiB (templates and preset logic run with strict limits)
hint: look for a value that keeps growing (`set_global s = s ~ s` in a loop); template logic cannot raise its limits
",
    );
    assert_eq!(o.code, 1, "an error, not an abort: {}", o.stderr);
    d.write(
        "templates/indent.yaml",
        "a: {{ \"x\\ny\" | indent(width=100000000000) }}\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/indent.yaml"]),
        "\
Error: indent width 100000000000 is out of range (0 to 1024)
 --> indent.yaml:1:16
  |
1 | a: {{ \"x\\ny\" | indent(width=100000000000) }}
  |                ^^^^^^^^^^^^^^^^^^^^^^^^^^
hint: fix the template at the position shown
",
    );
    d.write(
        "templates/nested.yaml",
        "{% for a in range(end=100000) %}{% for b in range(end=100000) %}{% endfor %}{% endfor %}a: 1\n",
    );
    refused_within(
        60,
        &d,
        d.talm(["template", "--offline", "-t", "templates/nested.yaml"]),
        "\
Error: templates/nested.yaml: the render did not finish within 10s (templates and preset logic run with strict limits)
hint: look for loops nested over large ranges; template logic cannot raise its limits
",
    );
}

// ---- parallel -----------------------------------------------------------------------------

fn threads(pid: u32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

#[test]
fn parallel_runs_on_a_bounded_pool() {
    let d = Dir::new();
    d.write(
        "many.rhai",
        "let items = [];\nfor i in 0..2000 { items.push(i); }\nlet r = parallel(items, |x| { sleep(0.01); x * 2 });\nout(`${r.len()} ${r[1999]}`);\n",
    );
    let child = Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["run", "many.rhai"])
        .current_dir(d.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let sampler = std::thread::spawn(move || {
        let mut most = 0;
        while let Some(n) = threads(pid) {
            most = most.max(n);
            std::thread::sleep(Duration::from_millis(5));
        }
        most
    });
    let out = child.wait_with_output().unwrap();
    let most = sampler.join().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "2000 3998");
    assert!(most <= 48, "{most} threads at once");

    d.write("zero.rhai", "parallel([1, 2], |x| x, 0);\n");
    d.talm(["run", "zero.rhai"])
        .expect()
        .stderr(
            "\
Error: parallel: limit 0 is not a number of items at once
hint: give a limit of 1 or more (at most 32 run at once), or leave it out
",
        )
        .status(1)
        .run();
    d.write("neg.rhai", "parallel([1, 2], |x| x, #{ limit: -3 });\n");
    d.talm(["run", "neg.rhai"])
        .expect()
        .stderr(
            "\
Error: parallel: limit -3 is not a number of items at once
hint: give a limit of 1 or more (at most 32 run at once), or leave it out
",
        )
        .status(1)
        .run();
    d.write("typo.rhai", "parallel([1, 2], |x| x, #{ limt: 2 });\n");
    d.talm(["run", "typo.rhai"])
        .expect().stderr("\
Error: unknown option \"limt\" for parallel; the options are: limit, fail_fast, quiet, stop_after_failure
hint: did you mean \"limit\" instead of \"limt\"?
hint: `talm help api parallel` describes the options
").status(1).run();
}

// ---- option maps and map properties -------------------------------------------------------

#[test]
fn missing_map_properties_are_errors() {
    let d = Dir::project("generic");
    d.write(
        "prop.rhai",
        "let m = #{ a: 1 };\nout(`${m.get(\"b\") ?? 5} ${\"b\" in m}` + \"\\n\");\nlet x = m.b;\n",
    );
    let o = d
        .talm(["run", "prop.rhai"])
        .expect()
        .stderr(
            "\
Error: prop.rhai:3:11: Property not found: b
hint: the script prop.rhai failed at the position shown
hint: a map has no \"b\": read an optional key with `m.get(\"b\")` (or test `\"b\" in m`)
",
        )
        .status(1)
        .run();
    assert_eq!(o.stdout, "5 false\n");
    d.write("templates/t.rhai", "#{ a: ARGS.values.no_such_value }\n");
    d.talm(["template", "--offline", "-t", "templates/t.rhai"])
        .expect().stderr("\
Error: templates/t.rhai:1:19: Property not found: no_such_value
hint: the script templates/t.rhai failed at the position shown
hint: a map has no \"no_such_value\": read an optional key with `m.get(\"no_such_value\")` (or test `\"no_such_value\" in m`)
").status(1).run();
}

#[test]
fn apply_options_are_typed() {
    let ip = &net::addr();
    let nodes = Nodes::start(&[ip], |_| {});
    let d = Dir::project("generic");
    d.write(
        "cfg.yaml",
        &crate::common::sim::config(
            talm::config::generate::MachineType::ControlPlane,
            Some("/dev/nvme0n1"),
        ),
    );
    d.write(
        "typo.rhai",
        &format!("let n = node(\"{ip}\", #{{ insecure: true }});\nn.apply(file::read(\"cfg.yaml\"), #{{ dryrun: true }});\n"),
    );
    d.talm(["run", "typo.rhai"])
        .expect()
        .stderr(
            "\
Error: unknown option \"dryrun\" for n.apply; the options are: mode, dry_run, timeout, as_is
hint: did you mean \"dry_run\" instead of \"dryrun\"?
hint: `talm help api apply` describes the options
",
        )
        .status(1)
        .run();
    std::thread::sleep(Duration::from_millis(500));
    let st = nodes.node(ip).state();
    assert!(
        st.in_maintenance() && st.config_version == 0,
        "nothing applied"
    );
    drop(st);
    d.write(
        "bad.rhai",
        &format!("node(\"{ip}\", #{{ insecure: \"yes\" }});\n"),
    );
    d.talm(["run", "bad.rhai"])
        .expect()
        .stderr(
            "\
Error: option \"insecure\" of node must be true or false, not \"yes\" (string)
hint: `talm help api node` describes the options
",
        )
        .status(1)
        .run();
    d.write(
        "dry.rhai",
        &format!("let n = node(\"{ip}\", #{{ insecure: true }});\nout(n.apply(file::read(\"cfg.yaml\"), #{{ dry_run: true }}).mode);\n"),
    );
    d.talm(["run", "dry.rhai"]).ok();
    assert!(
        nodes.node(ip).state().in_maintenance(),
        "a dry run applies nothing"
    );
}

/// A generic project whose control plane at `ip` is configured.
fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, ip));
    let boots = nodes.boots(ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(ip, boots);
    d
}

fn labels(nodes: &Nodes, ip: &str) -> Option<(Vec<String>, i32, bool)> {
    let st = nodes.node(ip).state();
    st.last_reset.as_ref().map(|r| {
        (
            r.system_partitions_to_wipe
                .iter()
                .map(|p| p.label.clone())
                .collect(),
            r.mode,
            r.graceful,
        )
    })
}

#[test]
fn reset_never_defaults_to_everything() {
    let [a, b] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    for (ip, call) in [(a.as_str(), "n.reset(#{})"), (b.as_str(), "n.reset()")] {
        let d = configured(&nodes, ip);
        d.write(
            "typo.rhai",
            &format!("let n = node(\"{ip}\");\nn.reset(#{{ system_label: [\"STATE\"] }});\n"),
        );
        d.talm(["run", "typo.rhai"]).expect().stderr("\
Error: unknown option \"system_label\" for n.reset; the options are: graceful, reboot, wipe_mode, system_labels, user_disks, wait, timeout, kernel_log
hint: did you mean \"system_labels\" instead of \"system_label\"?
hint: `talm help api reset` describes the options
").status(1).run();
        d.write(
            "mode.rhai",
            &format!("let n = node(\"{ip}\");\nn.reset(#{{ wipe_mode: \"everything\" }});\n"),
        );
        d.talm(["run", "mode.rhai"])
            .expect()
            .stderr(
                "\
Error: unknown wipe mode \"everything\" for n.reset
hint: use all, system-disk or user-disks, or leave wipe_mode out to wipe only STATE and EPHEMERAL
hint: `talm help api reset` describes the options
",
            )
            .status(1)
            .run();
        assert_eq!(labels(&nodes, ip), None, "nothing was reset");
        assert!(!nodes.node(ip).state().in_maintenance());

        d.write("reset.rhai", &format!("let n = node(\"{ip}\");\n{call};\n"));
        d.talm(["run", "reset.rhai"]).ok();
        assert_eq!(
            labels(&nodes, ip),
            Some((vec!["STATE".to_string(), "EPHEMERAL".to_string()], 0, true)),
            "{call} wipes STATE and EPHEMERAL only, gracefully (META kept)"
        );
        // Without `reboot` a reset ends with the machine powered off, as on Talos.
        nodes.wait_down(ip);
    }
}
