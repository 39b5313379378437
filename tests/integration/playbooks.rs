//! Playbooks and scripts through the real binary: `talm run` bringing three nodes up with
//! `parallel()`, project scripts as commands, and script errors (syntax, unknown function, a
//! path outside the project) reported with file, line and column.

use crate::common::sim::Nodes;
use crate::common::{net, Dir};

#[test]
fn run_brings_up_three_nodes_in_parallel() {
    let ips: [String; 3] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    // The README's line, in a folder without the playbook: the bundled one runs.
    let d = Dir::new();
    let o = d
        .talm(["run", "bringup.rhai", "cluster", &ips[0], &ips[1], &ips[2]])
        .ok();
    assert!(o.stderr.contains("[6/7] kubeconfig"), "{}", o.stderr);
    for ip in &ips {
        assert!(!nodes.node(ip).state().in_maintenance(), "{ip} configured");
    }
    // etcd was bootstrapped on the first; the other control planes joined it.
    let start = std::time::Instant::now();
    while !ips
        .iter()
        .all(|ip| nodes.node(ip).state().etcd_bootstrapped)
    {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "the control planes did not join etcd"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let first = nodes.node(&ips[0]).state().etcd.clone().unwrap();
    assert_eq!(first.lock().members[0].addr, ips[0]);
    assert!(d
        .read("cluster/kubeconfig")
        .contains(&format!("server: https://{}:6443", ips[0])));
}

#[test]
fn bundled_playbooks_run_by_name_are_listed_and_a_local_file_wins() {
    let d = Dir::new();
    let o = d.talm(["run", "--list"]).ok();
    assert_eq!(
        o.stdout,
        "bringup  The Cozystack guide as one script: bare nodes in maintenance mode to a cluster and kubeconfig.\n"
    );
    // By its name, with or without .rhai: the bundled playbook's own refusal.
    for name in ["bringup", "bringup.rhai"] {
        let o = d.talm(["run", name]).run();
        assert_eq!(o.code, 1, "{name}");
        assert_eq!(
            o.stderr,
            "Error: bringup needs a project folder and the nodes\nhint: talm run bringup ROOT IP1 [IP2 ...]\n",
            "{name}"
        );
    }
    // A file of that name in the working folder runs instead.
    d.write("bringup.rhai", "log(`the local copy, ${ARGS.args}`);\n");
    let o = d.talm(["run", "bringup.rhai", "x"]).ok();
    assert_eq!(o.stderr, "the local copy, [\"x\"]\n");
    // Neither a file nor a bundled playbook.
    let o = d.talm(["run", "bring-up.rhai"]).run();
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "Error: playbook bring-up.rhai: no such file\nhint: give the path of a .rhai file, or the name of a playbook bundled with talm: bringup (`talm run --list`)\n"
    );
    d.talm(["run", "--list", "bringup"])
        .expect()
        .stderr(
            "\
error: the argument '--list' cannot be used with '[FILE]'

Usage: talm run --list [FILE] [ARGS]...

For more information, try '--help'.
",
        )
        .status(1)
        .run();
}

#[test]
fn a_mistyped_command_gets_the_one_it_resembles() {
    let d = Dir::project("generic");
    d.write("scripts/hello.rhai", "log(\"hello\");\n");
    let refused = |word: &str, tip: &str| {
        format!(
            "error: unrecognized subcommand '{word}'\n\n  tip: {tip}\n\n\
             Usage: talm [OPTIONS] <COMMAND>\n\nFor more information, try '--help'.\n"
        )
    };
    let o = d.talm(["aply", "-f", "nodes/node1.yaml"]).run();
    assert_eq!(
        (o.code, o.stderr),
        (1, refused("aply", "a similar subcommand exists: 'apply'"))
    );
    // A project script is a command too.
    let o = d.talm(["helo"]).run();
    assert_eq!(
        (o.code, o.stderr),
        (
            1,
            refused(
                "helo",
                "some similar subcommands exist: 'health', 'help', 'hello'"
            )
        )
    );
    assert_eq!(d.talm(["hello"]).ok().stderr, "hello\n");
    // Nothing close: talm's own word on it.
    let o = d.talm(["frobnicate"]).run();
    assert_eq!(
        (o.code, o.stderr.as_str()),
        (1, "Error: unknown command \"frobnicate\"\nhint: see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`\n")
    );
}

#[test]
fn parallel_keeps_order_and_reports_item_errors() {
    let d = Dir::new();
    d.write(
        "p.rhai",
        r#"
let r = parallel([1, 2, 3, 4], |x| { if x == 3 { fail("three is bad") } sleep(0.05); x * 10 }, 2);
out(`${r[0]} ${r[1]} ${is_error(r[2])} ${r[2].message} ${r[3]}`);
"#,
    );
    let o = d.talm(["run", "p.rhai"]).ok();
    assert_eq!(o.stdout, "10 20 true three is bad 40");
    d.write(
        "ff.rhai",
        r#"parallel([1, 2], |x| { fail(`item ${x} failed`) }, #{ limit: 1, fail_fast: true });"#,
    );
    d.talm(["run", "ff.rhai"])
        .expect()
        .stderr("Error: item 1 failed\n")
        .status(1)
        .run();
}

#[test]
fn a_playbook_ends_with_its_own_exit_status() {
    let d = Dir::new();
    // A CI check's "something would change" status; no try catches it.
    d.write(
        "ci.rhai",
        r#"try { fail_with_code(2, "2 nodes would change"); } catch { out("caught"); }"#,
    );
    d.talm(["run", "ci.rhai"])
        .expect()
        .stdout("")
        .stderr("Error: 2 nodes would change\n")
        .status(2)
        .run();
}

#[test]
fn project_scripts_are_commands_and_see_their_arguments() {
    let d = Dir::project("generic");
    d.write("scripts/hello.rhai", "let p = project();\nout(`hello ${ARGS.args} from ${p.chart.name}, ${p.values.endpoint}`);\n");
    let o = d.talm(["hello", "a", "b"]).ok();
    assert_eq!(
        o.stdout,
        "hello [\"a\", \"b\"] from mycluster, https://127.0.0.11:6443"
    );
    d.talm(["nosuch"])
        .expect()
        .stderr(
            "\
Error: unknown command \"nosuch\"
hint: see `talm --help`; a project's scripts/NAME.rhai also runs as `talm NAME`
",
        )
        .status(1)
        .run();
}

#[test]
fn script_errors_name_file_line_and_column() {
    let d = Dir::project("generic");
    d.write("bad.rhai", "let x = 1;\nlet y = (x + ;\n");
    let o = d
        .talm(["run", "bad.rhai"])
        .expect()
        .stderr(
            "\
Error: bad.rhai:2:14: syntax error: Unexpected ';'
hint: fix the script bad.rhai at the position shown
",
        )
        .status(1)
        .run();
    assert!(o.code != 0);
    d.write("unknown.rhai", "let x = 1;\nfrobnicate(x);\n");
    d.talm(["run", "unknown.rhai"])
        .expect()
        .stderr(
            "\
Error: unknown.rhai:2:1: Function not found: frobnicate (i64)
hint: the script unknown.rhai failed at the position shown
",
        )
        .status(1)
        .run();
    d.write("escape.rhai", "file::write(\"../outside.txt\", \"x\");\n");
    d.talm(["run", "escape.rhai"])
        .expect()
        .stderr(
            "\
Error: path \"../outside.txt\" is outside the project at $DIR
hint: scripts may only read and write files inside the project root
",
        )
        .status(1)
        .run();
    assert!(!d.path().parent().unwrap().join("outside.txt").exists());
    d.write(
        "inside.rhai",
        "file::write(\"notes/a.txt\", \"x\"); out(file::read(\"notes/a.txt\"));\n",
    );
    assert_eq!(d.talm(["run", "inside.rhai"]).ok().stdout, "x");
    d.talm(["run", "missing.rhai"]).expect().stderr("\
Error: playbook missing.rhai: no such file
hint: give the path of a .rhai file, or the name of a playbook bundled with talm: bringup (`talm run --list`)
").status(1).run();
}

#[test]
fn the_api_from_a_playbook() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    d.talm([
        "template",
        "-e",
        &ip,
        "--nodes",
        &ip,
        "-t",
        "templates/controlplane.yaml",
        "-i",
    ])
    .ok();
    d.write("nodes/n.yaml", &format!("# talm: nodes=[\"{ip}\"], endpoints=[\"{ip}\"], templates=[\"templates/controlplane.yaml\"]\n"));
    d.write(
        "api.rhai",
        &r#"
let n = node("NODE_IP", #{ insecure: true });
let cfg = render(#{ template: "templates/controlplane.yaml", node: n, full: true });
let dry = n.apply(cfg, #{ dry_run: true });
out(`dry=${dry.mode}\n`);
let r = n.apply(cfg, #{ mode: "auto" });
out(`mode=${r.mode}\n`);
let ready = node("NODE_IP").wait_ready(30);
let cp = nodes_of("nodes/n.yaml")[0];
out(`ready=${ready} type=${cp.get("machinetype", "machine-type").spec} version=${version(cp).tag}\n`);
cp.bootstrap();
let path = cp.kubeconfig("admin.kubeconfig");
out(`kubeconfig=${file::exists("admin.kubeconfig")}\n`);
let s = secrets::load("secrets.yaml");
out(`cluster=${s.cluster.id != ()}\n`);
file::write("extra.yaml", "token: abc\n");
secrets::encrypt("extra.yaml");
out(`sealed=${file::read("extra.encrypted.yaml").contains("ENC[AGE,data:")}\n`);
let j = json::parse(json::to_string(#{ a: [1, 2] }));
out(`json=${j.a[1]}\n`);
"#
        .replace("NODE_IP", &ip),
    );
    let o = d.talm(["run", "api.rhai"]).ok();
    // Backtick strings keep `\n` literally.
    assert_eq!(
        o.stdout.replace("\\n", "\n"),
        "dry=no-reboot\nmode=no-reboot\nready=true type=controlplane version=v1.13.7\nkubeconfig=true\ncluster=true\nsealed=true\njson=2\n"
    );
    assert_eq!(d.mode("admin.kubeconfig"), 0o600);
    assert!(nodes.node(&ip).state().etcd_bootstrapped);
    let api = d.talm(["help", "api"]).ok().stdout;
    for name in [
        "apply",
        "bootstrap",
        "discover",
        "kubeconfig",
        "parallel",
        "render",
        "upgrade",
        "wait_ready",
        "talos::targets",
        "secrets::load",
        "file::write",
    ] {
        assert!(api.contains(&format!("  {name} ")), "{name} listed: {api}");
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let d = Dir::new();
    d.write(
        "loud.rhai",
        "for i in 0..200000 { out(`line ${i} of a long listing\\n`); }\n",
    );
    for args in [
        vec!["run", "loud.rhai"],
        vec!["help", "api"],
        vec!["completion", "bash"],
    ] {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("talm"))
            .args(&args)
            .current_dir(d.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The reader goes away before (or while) talm writes: `talm ... | head -0`.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert_eq!(stderr, "", "{args:?}");
    }
}

/// One process renders, its project's files are edited right away (same sizes, the preset logic
/// and a template in a new folder too), and its next renders show every edit: the compiled
/// project is kept between renders, and change notices or the file check tell it is stale.
#[test]
fn a_long_session_renders_each_edit_at_once() {
    let d = Dir::project("generic");
    d.write("templates/t.yaml", "v: {{ node.x }}1\n");
    d.write("charts/talm/templates/_context.rhai", "#{ x: 7 }");
    d.write(
        "edit.rhai",
        r##"
fn edit(root, rel, text) {
    let p = project::plan(root);
    p.write(rel, text, "public", "");
    p.commit();
}
fn show(t) {
    let lines = render(#{ template: t, offline: true }).split("\n");
    lines.filter(|l| l != "" && !l.starts_with("#"))[0]
}
let seen = [show("templates/t.yaml")];
edit(ARGS.root, "templates/t.yaml", "v: {{ node.x }}2\n");
seen.push(show("templates/t.yaml"));
edit(ARGS.root, "charts/talm/templates/_context.rhai", "#{ x: 8 }");
seen.push(show("templates/t.yaml"));
edit(ARGS.root, "templates/new/n.yaml", "n: {{ node.x }}\n");
seen.push(show("templates/new/n.yaml"));
edit(ARGS.root, "templates/new/n.yaml", "m: {{ node.x }}\n");
seen.push(show("templates/new/n.yaml"));
out(seen.reduce(|a, s| if a == () { s } else { a + " | " + s }));
"##,
    );
    let o = d.talm(["run", "edit.rhai"]).ok();
    assert_eq!(o.stdout, "v: 71 | v: 72 | v: 82 | n: 8 | m: 8");
}
