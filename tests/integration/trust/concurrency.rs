//! Several talm runs on one project or one target file at a time (issue 36 §4): each waits for
//! the other (`project::exclusive`), so none loses a write, fails on the other's staging folder
//! or reports a success that did not last.

use std::process::{Command, Output, Stdio};

use crate::common::cluster::{cluster, cp_file};
use crate::common::sim::Nodes;
use crate::common::{net, Dir};

/// `n` talm runs in `dir` started at once, each with its own arguments; their outputs.
fn at_once(dir: &std::path::Path, runs: Vec<Vec<String>>) -> Vec<Output> {
    let children: Vec<_> = runs
        .into_iter()
        .map(|args| {
            Command::new(assert_cmd::cargo::cargo_bin("talm"))
                .current_dir(dir)
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn words(s: &[&str]) -> Vec<String> {
    s.iter().map(|w| w.to_string()).collect()
}

#[test]
fn parallel_kubeconfig_logins_into_one_file_keep_every_context() {
    let cp = net::addr();
    let nodes = Nodes::start(&[&cp], |_| {});
    let d = cluster(&nodes, &[cp.as_str()], &[]);
    // An existing file, so that every run merges (and names its context).
    d.write("merged.yaml", "apiVersion: v1\nkind: Config\n");
    let runs = (0..6)
        .map(|i| {
            let ctx = format!("ctx{i}");
            words(&[
                "kubeconfig",
                "-f",
                &cp_file(1),
                "--login",
                "merged.yaml",
                "--force-context-name",
                &ctx,
            ])
        })
        .collect();
    for o in at_once(d.path(), runs) {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let merged: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("merged.yaml")).unwrap();
    let mut contexts: Vec<&str> = merged["contexts"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    contexts.sort();
    assert_eq!(contexts, ["ctx0", "ctx1", "ctx2", "ctx3", "ctx4", "ctx5"]);
}

#[test]
fn two_inits_into_one_new_folder_one_wins_the_other_says_so() {
    let d = Dir::new();
    let init = words(&[
        "init",
        "--preset",
        "generic",
        "--name",
        "mycluster",
        "--root",
        "new",
    ]);
    let outs = at_once(d.path(), vec![init.clone(), init]);
    let won: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "{:?}",
        outs.iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    let lost = outs.iter().find(|o| !o.status.success()).unwrap();
    let err = String::from_utf8_lossy(&lost.stderr);
    assert!(
        err.contains("refusing to init: ")
            && err.contains("file(s) already exist in target directory"),
        "{err}"
    );
}

#[test]
fn parallel_writes_of_one_project_all_succeed() {
    let d = Dir::project("generic");
    for _ in 0..5 {
        let outs = at_once(
            d.path(),
            vec![
                words(&["talosconfig"]),
                words(&["talosconfig"]),
                words(&["init", "--encrypt"]),
                words(&["init", "--encrypt"]),
            ],
        );
        for o in outs {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
    }
    d.talm(["init", "--decrypt"]).ok();
}
