//! `talm kubeconfig` against a simulated control plane: merging into an existing file with a
//! clashing context (`--login`), and the project's kubeconfig pointing at the cluster endpoint
//! and refreshing its encrypted twin.

use crate::common::expect::addrs;
use crate::common::net;
use crate::common::sim::Nodes;
use crate::upgrade_apply::configured;

/// A kubeconfig holding `mycluster` (another server, another user) and `other`.
const CLASHING: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: mycluster\n  cluster:\n    server: https://10.9.9.9:6443\n- name: other\n  cluster:\n    server: https://10.8.8.8:6443\nusers:\n- name: admin@mycluster\n  user:\n    token: old\n- name: admin@other\n  user:\n    token: x\ncontexts:\n- name: admin@mycluster\n  context:\n    cluster: mycluster\n    user: admin@mycluster\n- name: admin@other\n  context:\n    cluster: other\n    user: admin@other\ncurrent-context: admin@other\n";

fn names(v: &serde_yaml_ng::Value, key: &str) -> Vec<String> {
    v[key]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn kubeconfig_login_merges_into_an_existing_file_with_a_clashing_context() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.write("home/.kube/config", CLASHING);
    let home = d.join("home");
    let login = |extra: &[&str]| {
        let mut args = vec!["kubeconfig", "-f", "nodes/cp.yaml", "--login"];
        args.extend_from_slice(extra);
        d.talm(args).env("HOME", &home).env("KUBECONFIG", "")
    };
    // --force=false: the clashing cluster, its user and context are renamed, as talosctl does.
    let o = login(&["--force=false"]).ok();
    assert_eq!(
        o.stdout,
        "renamed cluster \"mycluster\" -> \"mycluster-1\"\nrenamed auth info \"admin@mycluster\" -> \"admin@mycluster-1\"\nrenamed context \"admin@mycluster\" -> \"admin@mycluster-1\"\n"
    );
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(names(&v, "clusters"), ["mycluster", "other", "mycluster-1"]);
    assert_eq!(
        names(&v, "users"),
        ["admin@mycluster", "admin@other", "admin@mycluster-1"]
    );
    assert_eq!(
        names(&v, "contexts"),
        ["admin@mycluster", "admin@other", "admin@mycluster-1"]
    );
    assert_eq!(v["current-context"], "admin@mycluster-1");
    assert_eq!(v["contexts"][2]["context"]["cluster"], "mycluster-1");
    assert_eq!(v["contexts"][2]["context"]["user"], "admin@mycluster-1");
    assert_eq!(
        v["clusters"][0]["cluster"]["server"], "https://10.9.9.9:6443",
        "the old one kept"
    );
    assert_eq!(d.mode("home/.kube/config"), 0o600);
    assert!(
        !d.exists("kubeconfig"),
        "the project's kubeconfig is left alone with --login"
    );
    // talm's default --force: the clash is overwritten in place; nothing renamed.
    d.write("home/.kube/config", CLASHING);
    let o = login(&[]).ok();
    assert_eq!(o.stdout, "");
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(names(&v, "clusters"), ["mycluster", "other"]);
    assert_ne!(
        v["clusters"][0]["cluster"]["server"],
        "https://10.9.9.9:6443"
    );
    assert_eq!(v["current-context"], "admin@mycluster");
    // --force-context-name names the merged context.
    let o = login(&["--force-context-name", "prod"]).ok();
    assert_eq!(
        o.stdout,
        "renamed context \"admin@mycluster\" -> \"prod\"\n"
    );
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("home/.kube/config")).unwrap();
    assert_eq!(v["current-context"], "prod");
    // Several files in $KUBECONFIG: which one is unclear.
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml", "--login"])
        .env(
            "KUBECONFIG",
            format!("{}:{}", d.join("a").display(), d.join("b").display()),
        )
        .expect()
        .stderr(
            "\
Error: multiple kubeconfig files defined
hint: name the file to merge into: talm kubeconfig --login PATH
",
        )
        .status(1)
        .run();
}

#[test]
fn project_kubeconfig_points_at_the_cluster_endpoint_and_refreshes_its_twin() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.write(".gitignore", "secrets.yaml\n");
    let values = d.read("values.yaml");
    let endpoint = values
        .lines()
        .find(|l| l.starts_with("endpoint:"))
        .unwrap()
        .to_string();
    d.write(
        "values.yaml",
        &values.replace(&endpoint, "endpoint: \"https://10.20.30.40:6443\""),
    );
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Updated cluster mycluster server to https://10.20.30.40:6443
kubeconfig written to $DIR/kubeconfig
Updated .gitignore
",
        )
        .run();
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("kubeconfig")).unwrap();
    assert_eq!(
        v["clusters"][0]["cluster"]["server"],
        "https://10.20.30.40:6443"
    );
    assert!(
        d.read(".gitignore").lines().any(|l| l == "kubeconfig"),
        "{}",
        d.read(".gitignore")
    );
    assert!(!d.exists("kubeconfig.encrypted"));
    // Once the project keeps an encrypted twin, each fetch refreshes it.
    d.talm(["init", "--encrypt"]).ok();
    assert!(d.exists("kubeconfig.encrypted"));
    let before = d.read("kubeconfig.encrypted");
    d.talm(["kubeconfig", "-f", "nodes/cp.yaml"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(
            "\
Updated cluster mycluster server to https://10.20.30.40:6443
kubeconfig written to $DIR/kubeconfig
Updated kubeconfig.encrypted
",
        )
        .run();
    assert_ne!(d.read("kubeconfig.encrypted"), before);
}
