//! Trust changes through the real binary against simulated nodes: `apply --cert-fingerprint`
//! pinning the maintenance certificate, and `rotate-ca` (dry run by default; a real rotation
//! moves the nodes to new CAs, the project's secrets.yaml, talosconfig and twins following).

use crate::common::expect::addrs;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

/// A well-formed fingerprint no certificate has (SHA-256 of nothing in particular).
const NOBODY: &str = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";

#[test]
fn cert_fingerprint_pins_the_maintenance_certificate() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, &ip));
    let apply = |pins: &[&str]| {
        let mut args = vec!["apply", "-f", "nodes/node1.yaml", "-i"];
        for p in pins {
            args.extend(["--cert-fingerprint", p]);
        }
        d.talm(args)
    };

    apply(&["not!base64"]).expect().stderr("\
Error: --cert-fingerprint \"not!base64\": not base64: Invalid symbol 33, offset 3.
hint: give the SHA-256 of the server certificate's public key (SubjectPublicKeyInfo) in base64, as talosctl prints and takes it, e.g. `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`
").status(1).run();
    apply(&["AAAA"]).expect().stderr("\
Error: --cert-fingerprint \"AAAA\": 3 bytes, a SHA-256 hash has 32
hint: give the SHA-256 of the server certificate's public key (SubjectPublicKeyInfo) in base64, as talosctl prints and takes it, e.g. `openssl x509 -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64`
").status(1).run();

    let o = apply(&[NOBODY]).fails_with("which matches none of --cert-fingerprint");
    let line = o
        .stderr
        .lines()
        .find(|l| l.contains("matches none"))
        .unwrap();
    assert!(
        line.contains(&format!("node {ip}")),
        "names the node: {line}"
    );
    let seen = line
        .split("has fingerprint ")
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap()
        .to_string();
    assert_eq!(seen.len(), 44, "talosctl's base64 SHA-256: {seen:?}");
    assert_ne!(seen, NOBODY);
    assert!(
        o.stderr.contains("pass that one with --cert-fingerprint"),
        "{}",
        o.stderr
    );

    // The node's own fingerprint (among others, comma-separated as talosctl takes them too).
    let boots = nodes.boots(&ip);
    let both = format!("{NOBODY},{seen}");
    let o = apply(&[&both]).ok();
    assert!(
        o.stderr.contains("Applied configuration without a reboot"),
        "{}",
        o.stderr
    );
    nodes.wait_reboot(&ip, boots);
}

/// A generic project with one control plane (`nodes/cp1.yaml`, bootstrapped) and the given
/// workers (`nodes/worker.yaml`, `nodes/worker2.yaml`, ...).
pub(crate) fn cluster(nodes: &Nodes, cp: &str, workers: &[&str]) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/cp1.yaml", &template_node(&d, cp));
    let boots = nodes.boots(cp);
    d.talm(["apply", "-f", "nodes/cp1.yaml", "-i"]).ok();
    nodes.wait_reboot(cp, boots);
    for (i, w) in workers.iter().copied().enumerate() {
        let file = match i {
            0 => "nodes/worker.yaml".to_string(),
            n => format!("nodes/worker{}.yaml", n + 1),
        };
        let out = d
            .talm([
                "template",
                "-e",
                w,
                "--nodes",
                w,
                "-t",
                "templates/worker.yaml",
                "-i",
            ])
            .ok()
            .stdout;
        d.write(&file, &out);
        let boots = nodes.boots(w);
        d.talm(["apply", "-f", &file, "-i"]).ok();
        nodes.wait_reboot(w, boots);
    }
    d.talm(["bootstrap", "-f", "nodes/cp1.yaml"]).ok();
    d
}

/// (machine.ca.crt, cluster.ca.crt, machine.acceptedCAs) the node runs.
pub(crate) fn cas(nodes: &Nodes, ip: &str) -> (String, String, Vec<String>) {
    let st = nodes.node(ip).state();
    let cfg = st.config.as_ref().expect("configured");
    (cfg.machine_ca().0, cfg.cluster_ca().0, cfg.accepted_cas())
}

pub(crate) fn yaml(text: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(text).unwrap()
}

/// How many words of `text` are base64 of a PEM private key.
fn keys_in(text: &str) -> usize {
    use base64::Engine;
    text.split_whitespace()
        .filter_map(|w| base64::engine::general_purpose::STANDARD.decode(w).ok())
        .filter(|b| String::from_utf8_lossy(b).contains("PRIVATE KEY-----"))
        .count()
}

/// `text` with each word that is base64 of a PEM certificate written `<certificate>`.
fn shown_pems(text: &str) -> String {
    use base64::Engine;
    let mut out = String::new();
    for line in text.split_inclusive('\n') {
        let mut words = Vec::new();
        for w in line.split(' ') {
            let cert = base64::engine::general_purpose::STANDARD
                .decode(w.trim_end())
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains("BEGIN CERTIFICATE"));
            words.push(if cert {
                format!("<certificate>{}", if w.ends_with('\n') { "\n" } else { "" })
            } else {
                w.to_string()
            });
        }
        out.push_str(&words.join(" "));
    }
    out
}

/// What `rotate-ca` prints on a dry run against the control plane `cp`, certificates left out.
fn whole_dry_run(cp: &str) -> String {
    let hidden = "key: <hidden; --show-keys prints it>";
    let talos = [
        "> Starting Talos API PKI rotation, dry-run mode true...".to_string(),
        "> Using config context: \"mycluster\"".to_string(),
        format!("> Using Talos API endpoints: [\"{cp}\"]"),
        "> Cluster topology:".to_string(),
        format!("  - control plane nodes: [\"{cp}\"]"),
        "  - worker nodes: []".to_string(),
        "> Current Talos CA:".to_string(),
        "  crt: <certificate>".to_string(),
        format!("  {hidden}"),
        "> New Talos CA:".to_string(),
        "  crt: <certificate>".to_string(),
        format!("  {hidden}"),
        "> Generating new talosconfig:".to_string(),
        "context: mycluster".to_string(),
        "contexts:".to_string(),
        "    mycluster:".to_string(),
        "        endpoints:".to_string(),
        format!("            - {cp}"),
        "        ca: <certificate>".to_string(),
        "        crt: <certificate>".to_string(),
        format!("        {hidden}"),
        String::new(),
        "> Verifying connectivity with existing PKI:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
        "> Adding new Talos CA as accepted...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Verifying connectivity with new client cert, but old server CA:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
        "> Verifying direct connectivity with new client cert, but old server CA:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
        "> Making new Talos CA the issuing CA, old Talos CA the accepted CA...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Verifying connectivity with new PKI:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
        "> Verifying direct connectivity with new PKI:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
        "> Removing old Talos CA from the accepted CAs...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Verifying connectivity with new PKI:".to_string(),
        format!("  - {cp}: OK (dry-run)"),
    ];
    let k8s = [
        "> Starting Kubernetes API PKI rotation, dry-run mode true...".to_string(),
        "> Cluster topology:".to_string(),
        format!("  - control plane nodes: [\"{cp}\"]"),
        "  - worker nodes: []".to_string(),
        "> Building current Kubernetes client...".to_string(),
        "> Current Kubernetes CA:".to_string(),
        "  crt: <certificate>".to_string(),
        format!("  {hidden}"),
        "> New Kubernetes CA:".to_string(),
        "  crt: <certificate>".to_string(),
        format!("  {hidden}"),
        "> Verifying connectivity with existing PKI...".to_string(),
        " - OK (dry-run mode)".to_string(),
        "> Adding new Kubernetes CA as accepted...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Making new Kubernetes CA the issuing CA, old Kubernetes CA the accepted CA..."
            .to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Building new Kubernetes client...".to_string(),
        "> Verifying connectivity with new PKI...".to_string(),
        " - OK (dry-run mode)".to_string(),
        "> Removing old Kubernetes CA from the accepted CAs...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        "> Verifying connectivity with new PKI...".to_string(),
        " - OK (dry-run mode)".to_string(),
    ];
    let done = "> Dry-run mode enabled, no changes were made to the cluster, re-run with `--dry-run=false` to apply the changes.";
    format!("{}\n{done}\n{}\n{done}\n", talos.join("\n"), k8s.join("\n"))
}

#[test]
fn rotate_ca_dry_run_changes_nothing() {
    let cp = net::addr();
    let nodes = Nodes::start(&[&cp], |_| {});
    let d = cluster(&nodes, &cp, &[]);
    let before = d.snapshot();
    let config_before = nodes
        .node(&cp)
        .state()
        .config
        .as_ref()
        .unwrap()
        .text()
        .clone();
    let o = d
        .talm([
            "rotate-ca",
            "-f",
            "nodes/cp1.yaml",
            "--control-plane-nodes",
            &cp,
        ])
        .ok();
    let out = o.stdout;
    for line in [
        "> Starting Talos API PKI rotation, dry-run mode true...".to_string(),
        format!("> Using Talos API endpoints: [\"{cp}\"]"),
        format!("  - control plane nodes: [\"{cp}\"]"),
        "  - worker nodes: []".to_string(),
        "> Adding new Talos CA as accepted...".to_string(),
        format!("  - {cp}: skipped (dry-run)"),
        format!("  - {cp}: OK (dry-run)"),
        "> Starting Kubernetes API PKI rotation, dry-run mode true...".to_string(),
        " - OK (dry-run mode)".to_string(),
        "> Dry-run mode enabled, no changes were made to the cluster, re-run with `--dry-run=false` to apply the changes.".to_string(),
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in:\n{out}");
    }
    assert!(!out.contains("CA rotation completed"), "{out}");
    // No private key is printed unless asked: every one stands hidden, certificates show.
    assert_eq!(keys_in(&out), 0, "{out}");
    assert_eq!(shown_pems(&out), whole_dry_run(&cp), "{out}");
    let asked = d
        .talm([
            "rotate-ca",
            "-f",
            "nodes/cp1.yaml",
            "--control-plane-nodes",
            &cp,
            "--show-keys",
        ])
        .ok()
        .stdout;
    assert_eq!(
        keys_in(&asked),
        5,
        "the CAs' keys and the client key:\n{asked}"
    );
    assert_eq!(d.snapshot(), before, "a dry run writes nothing");
    assert_eq!(
        nodes.node(&cp).state().config.as_ref().unwrap().text(),
        config_before,
        "a dry run changes no node"
    );
}

#[test]
fn rotate_ca_refuses_several_nodes_or_endpoints() {
    let [a, b] = net::addrs();
    let d = Dir::project("generic");
    d.refuses(&["rotate-ca", "-n", &a, "-n", &b, "--control-plane-nodes", &a], 1, "\
Error: rotate-ca requires exactly one control-plane node, but 2 nodes were provided
hint: rotate-ca reaches the cluster through one control-plane node: pass it with -n (and one -e), and the whole cluster with --control-plane-nodes and --worker-nodes
");
    d.refuses(&["rotate-ca", "-n", &a, "-e", &a, "-e", &b], 1, "\
Error: rotate-ca requires exactly one control-plane node, but 2 endpoints were provided
hint: rotate-ca reaches the cluster through one control-plane node: pass it with -n (and one -e), and the whole cluster with --control-plane-nodes and --worker-nodes
");
}

#[test]
fn rotate_ca_rotates_both_cas_and_the_project_follows() {
    let [cp, w] = net::addrs();
    let nodes = Nodes::start(&[&cp, &w], |_| {});
    let d = cluster(&nodes, &cp, &[&w]);
    let (old_os, old_k8s, _) = cas(&nodes, &cp);
    let old_tc = d.read("talosconfig");
    let old_secrets = d.read("secrets.yaml");
    d.write("old-talosconfig", &old_tc);
    // Only twins that exist are refreshed: this project keeps none for the talosconfig.
    d.remove("talosconfig.encrypted");
    let enc_before = d.read("secrets.encrypted.yaml");

    let o = d
        .talm([
            "rotate-ca",
            "-f",
            "nodes/cp1.yaml",
            "--control-plane-nodes",
            &cp,
            "--worker-nodes",
            &w,
            "--dry-run=false",
        ])
        .ok();
    let out = o.stdout;
    let tc_path = d.join("talosconfig").display().to_string();
    for line in [
        "> Starting Talos API PKI rotation, dry-run mode false...".to_string(),
        format!("  - worker nodes: [\"{w}\"]"),
        "> Making new Talos CA the issuing CA, old Talos CA the accepted CA...".to_string(),
        format!("  - {w}: OK"),
        "> Verifying direct connectivity with new PKI:".to_string(),
        format!("> Writing new talosconfig to \"{tc_path}\""),
        "> Removing old Kubernetes CA from the accepted CAs...".to_string(),
        "> Kubernetes CA rotation done, new 'kubeconfig' can be fetched with `talosctl kubeconfig`.".to_string(),
        "> CA rotation completed successfully!".to_string(),
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line:?} in:\n{out}");
    }
    assert!(
        out.lines()
            .any(|l| l.starts_with(&format!("  - {cp}: OK (version "))),
        "{out}"
    );

    // The nodes run the new CAs, the old ones no longer accepted.
    let (os, k8s, accepted) = cas(&nodes, &cp);
    assert_ne!(os, old_os);
    assert_ne!(k8s, old_k8s);
    assert!(accepted.is_empty(), "old CA dropped: {accepted:?}");
    assert_eq!(cas(&nodes, &w).0, os, "the worker follows");

    // secrets.yaml holds them; talosconfig was reissued from the new CA.
    let secrets = yaml(&d.read("secrets.yaml"));
    assert_eq!(secrets["certs"]["os"]["crt"].as_str(), Some(os.as_str()));
    assert_eq!(secrets["certs"]["k8s"]["crt"].as_str(), Some(k8s.as_str()));
    assert_eq!(
        secrets["certs"]["etcd"],
        yaml(&old_secrets)["certs"]["etcd"],
        "the rest of the bundle is kept"
    );
    let tc = yaml(&d.read("talosconfig"));
    let ctx = tc["context"].as_str().unwrap().to_string();
    assert_eq!(
        tc["contexts"][ctx.as_str()]["ca"].as_str(),
        Some(os.as_str())
    );
    assert_eq!(d.mode("secrets.yaml"), 0o600);
    assert_eq!(d.mode("talosconfig"), 0o600);

    // The encrypted bundle was refreshed to the new content; no talosconfig twin appeared.
    let enc = d.read("secrets.encrypted.yaml");
    assert_ne!(enc, enc_before);
    let id = talm::secrets::crypt::parse_key(&d.read("talm.key"), "talm.key").unwrap();
    let opened = talm::secrets::crypt::decrypt_yaml(&id, &enc, "secrets.encrypted.yaml").unwrap();
    assert_eq!(yaml(&opened), secrets);
    assert!(!d.exists("talosconfig.encrypted"));

    // The new talosconfig is answered, by the control plane and the worker; the old one not.
    d.talm(["version", "-f", "nodes/cp1.yaml"]).ok();
    d.talm(["version", "-n", &w, "-e", &w]).ok();
    d.talm([
        "version",
        "-f",
        "nodes/cp1.yaml",
        "--talosconfig",
        "old-talosconfig",
    ])
    .expect().mask(addrs).stderr("\
Error: node $A1: connect: the node's certificate is not signed by the talosconfig's CA
hint: the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context
").status(1).run();

    // The project's kubeconfig was fetched again: it carries the new Kubernetes CA.
    assert!(
        out.lines().any(|l| l == "> Updating kubeconfig..."),
        "{out}"
    );
    let kc = yaml(&d.read("kubeconfig"));
    assert_eq!(
        kc["clusters"][0]["cluster"]["certificate-authority-data"].as_str(),
        Some(k8s.as_str())
    );
}
