//! Playbooks and scripts through the real binary: `talm run` bringing three nodes up with
//! `parallel()`, project scripts as commands, and script errors (syntax, unknown function, a
//! path outside the project) reported with file, line and column.

mod common;

use common::sim::Nodes;
use common::Dir;

const BRINGUP: &str = include_str!("../scripts/bringup.rhai");

#[test]
fn run_brings_up_three_nodes_in_parallel() {
    let nodes = Nodes::start(&["127.0.10.1", "127.0.10.2", "127.0.10.3"], |_| {});
    let d = Dir::new();
    d.write("bringup.rhai", BRINGUP);
    let o = d
        .talm([
            "run",
            "bringup.rhai",
            "cluster",
            "127.0.10.1",
            "127.0.10.2",
            "127.0.10.3",
        ])
        .ok();
    assert!(o.stderr.contains("[6/6] kubeconfig"), "{}", o.stderr);
    for ip in ["127.0.10.1", "127.0.10.2", "127.0.10.3"] {
        let st = nodes.node(ip).state();
        assert!(!st.in_maintenance(), "{ip} configured");
        assert_eq!(st.etcd_bootstrapped, ip == "127.0.10.1");
    }
    assert!(d
        .read("cluster/kubeconfig")
        .contains("server: https://127.0.10.1:6443"));
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
    d.talm(["run", "ff.rhai"]).fails_with("item 1 failed");
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
    d.talm(["nosuch"]).fails_with("unknown command \"nosuch\"");
}

#[test]
fn script_errors_name_file_line_and_column() {
    let d = Dir::project("generic");
    d.write("bad.rhai", "let x = 1;\nlet y = (x + ;\n");
    let o = d.talm(["run", "bad.rhai"]).fails_with("bad.rhai:2:");
    assert!(o.code != 0);
    d.write("unknown.rhai", "let x = 1;\nfrobnicate(x);\n");
    d.talm(["run", "unknown.rhai"])
        .fails_with("unknown.rhai:2:1: Function not found: frobnicate");
    d.write("escape.rhai", "file::write(\"../outside.txt\", \"x\");\n");
    d.talm(["run", "escape.rhai"])
        .fails_with("path \"../outside.txt\" is outside the project");
    assert!(!d.path().parent().unwrap().join("outside.txt").exists());
    d.write(
        "inside.rhai",
        "file::write(\"notes/a.txt\", \"x\"); out(file::read(\"notes/a.txt\"));\n",
    );
    assert_eq!(d.talm(["run", "inside.rhai"]).ok().stdout, "x");
    d.talm(["run", "missing.rhai"]).fails_with("missing.rhai");
}
