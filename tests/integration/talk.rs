//! Talking to nodes as talosctl does, through the real binary: connection flags before the
//! subcommand, `--skip-verify`, failover across endpoints, dynamic shell completion; and the
//! Rhai API as docs/rhai-api.md shows it, with `parallel()` errors a playbook must look at.

use std::process::Stdio;

use crate::common::expect::addrs;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, version_client, Dir, VERSION_SIM_SERVER};
use talm::secrets::bundle::Bundle;
use talm::secrets::contract::Contract;
use time::OffsetDateTime;

/// A generic project whose nodes/node1.yaml was rendered from the maintenance node at `ip`,
/// with that node configured from it.
fn configured(nodes: &Nodes, ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, ip));
    nodes.configure(&d, ip);
    d
}

fn b64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// A talosconfig with the project's client certificate but another cluster's CA: the nodes'
/// certificates do not verify against it.
fn foreign_ca_talosconfig(d: &Dir) -> String {
    let bundle = Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let (ca, key) = bundle.os_ca().unwrap();
    let cert = talm::secrets::pki::client_cert(&ca, &key, &["os:admin"], OffsetDateTime::now_utc())
        .unwrap();
    let other =
        Bundle::generate(Contract::parse("v1.13").unwrap(), OffsetDateTime::now_utc()).unwrap();
    let (other_ca, _) = other.os_ca().unwrap();
    format!(
        "context: mycluster\ncontexts:\n    mycluster:\n        endpoints: []\n        ca: {}\n        crt: {}\n        key: {}\n",
        b64(&other_ca),
        b64(&cert.cert_pem),
        b64(&cert.key.to_talos_pem().unwrap())
    )
}

#[test]
fn an_unreachable_first_endpoint_falls_through_to_the_next() {
    let [dead, ip, gone] = net::addrs();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let eps = format!("{dead},{ip}");
    d.talm(["version", "-n", &ip, "-e", &eps])
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
    // Every endpoint gone: each is named with what it showed.
    let eps = format!("{dead},{gone}");
    d.talm(["version", "-n", &ip, "-e", &eps])
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: node $A1: connect: no endpoint answered: $A2:50000: connection refused; $A3:50000: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
hint: each endpoint was tried in order; remove the ones that are gone with -e or in the talosconfig context
")
        .status(1)
        .run();
    // The same from a playbook's node handle.
    d.write(
        "eps.rhai",
        &format!("out(node(\"{ip}\", #{{ endpoints: [\"{dead}\", \"{ip}\"] }}).version().tag);"),
    );
    assert!(d.talm(["run", "eps.rhai"]).ok().stdout.starts_with('v'));
}

#[test]
fn connection_flags_go_before_the_subcommand() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    // The Go README's form, and the same flags after the subcommand: one render.
    let before = d
        .talm([
            "--nodes",
            &ip,
            "-e",
            &ip,
            "template",
            "-t",
            "templates/controlplane.yaml",
            "-i",
        ])
        .ok()
        .stdout;
    assert_eq!(before, template_node(&d, &ip));
    assert!(before.contains(&format!("nodes=[\"{ip}\"]")), "{before}");
    // A command that talks to no node refuses them by name; its help lists none of them.
    let o = d.talm(["-e", &ip, "sim"]).run();
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        "Error: `talm sim` does not take --endpoints, given before it\nhint: flags before the subcommand are passed on to it; `talm sim --help` lists the flags it takes\n"
    );
    let help = d.talm(["sim", "--help"]).ok().stdout;
    for flag in ["--endpoints", "--nodes", "--talosconfig", "--skip-verify"] {
        assert!(!help.contains(flag), "sim --help lists {flag}:\n{help}");
    }
}

#[test]
fn skip_verify_keeps_the_client_certificate() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    d.write("foreign-talosconfig", &foreign_ca_talosconfig(&d));
    let base = ["--talosconfig", "foreign-talosconfig", "-n", &ip, "-e", &ip];
    let mut args = vec!["version"];
    args.extend(base);
    d.talm(&args).expect().stderr(format!("\
Error: node {ip}: connect: the node's certificate is not signed by the talosconfig's CA
hint: the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context
")).status(1).run();
    // Unverified, the node still sees the client certificate: a configured node answers
    // only to one (in maintenance mode it would refuse the call).
    args.push("--skip-verify");
    d.talm(&args)
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
    let mut global = vec!["--skip-verify", "version"];
    global.extend(base);
    d.talm(&global).ok();
}

/// Runs the completion function `talm completion bash` defines, as bash does when Tab is
/// pressed after `words` (the last one being completed), in `dir` below the project.
fn bash_complete(d: &Dir, dir: &str, words: &[&str]) -> Vec<String> {
    let script = d.talm(["completion", "bash"]).ok().stdout;
    d.write(".talm-completion.bash", &script);
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let cword = words.len() - 1;
    let line = format!(
        "source {}; COMP_WORDS=({}); COMP_CWORD={cword}; COMP_TYPE=9; COMP_LINE='{}'; _clap_complete_talm talm '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        d.join(".talm-completion.bash").display(),
        quoted.join(" "),
        words.join(" "),
        words[cword],
        words[cword.saturating_sub(1)],
    );
    let o = std::process::Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &line])
        .current_dir(d.join(dir))
        .env_remove("TALOSCONFIG")
        .output()
        .expect("bash runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_node_files_nodes_presets_and_kinds() {
    let d = Dir::project("generic");
    let modeline = |ip: &str| {
        format!("# talm: nodes=[\"{ip}\"], endpoints=[\"{ip}\"], templates=[\"templates/controlplane.yaml\"]\nmachine:\n  type: controlplane\n")
    };
    d.write("nodes/cp1.yaml", &modeline("10.9.0.1"));
    d.write("nodes/cp2.yaml", &modeline("10.9.0.2"));
    d.write("nodes/patch.yaml", "machine:\n  sysctls: {}\n");
    d.write("extra/w1.yaml", &modeline("10.9.0.3"));
    d.write(
        "talosconfig",
        "context: a\ncontexts:\n    a:\n        endpoints: [10.9.0.9]\n        nodes: [10.9.0.1, 10.9.0.2]\n    b:\n        endpoints: [10.9.0.8]\n        nodes: [10.9.0.2, 10.9.0.3]\n",
    );
    assert_eq!(
        bash_complete(&d, ".", &["talm", "apply", "-f", ""]),
        ["extra/w1.yaml", "nodes/cp1.yaml", "nodes/cp2.yaml"]
    );
    assert_eq!(
        bash_complete(&d, ".", &["talm", "upgrade", "-f", "nodes/"]),
        ["nodes/cp1.yaml", "nodes/cp2.yaml"]
    );
    // From a sub-folder, paths are the shell's, relative to it.
    assert_eq!(
        bash_complete(&d, "nodes", &["talm", "template", "-f", "c"]),
        ["cp1.yaml", "cp2.yaml"]
    );
    assert_eq!(
        bash_complete(&d, ".", &["talm", "version", "--nodes", ""]),
        ["10.9.0.1", "10.9.0.2", "10.9.0.3"]
    );
    assert_eq!(
        bash_complete(&d, ".", &["talm", "-e", ""]),
        ["10.9.0.9", "10.9.0.8"]
    );
    assert_eq!(
        bash_complete(&d, ".", &["talm", "init", "--preset", ""]),
        ["generic", "cozystack", "talm"]
    );
    let kinds = bash_complete(&d, ".", &["talm", "get", "link"]);
    assert!(kinds.contains(&"links".to_string()), "{kinds:?}");
    assert!(kinds.iter().all(|k| k.starts_with("link")), "{kinds:?}");
}

#[test]
fn completion_descriptions_and_closed_pipes() {
    let d = Dir::project("generic");
    let ask = |var: &str| {
        d.talm(["--", "talm", "init", "--preset", "g"])
            .env(var, "fish")
            .env("_CLAP_COMPLETE_INDEX", "4")
            .ok()
            .stdout
    };
    assert_eq!(ask("TALM_COMPLETE"), "generic\tpreset\n");
    assert_eq!(ask("TALM_COMPLETE_NO_DESCRIPTIONS"), "generic\n");
    let plain = d
        .talm(["completion", "zsh", "--no-descriptions"])
        .ok()
        .stdout;
    assert!(plain.contains("TALM_COMPLETE_NO_DESCRIPTIONS"), "{plain}");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let s = d.talm(["completion", shell]).ok().stdout;
        assert!(s.contains("TALM_COMPLETE"), "{shell}: {s}");
    }
    // Printing into a pipe nobody reads: a quiet end, no panic.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["completion", "bash"])
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    // The same for the answer to a shell's callback.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_talm"))
        .args(["--", "talm", "init", "--preset", ""])
        .env("TALM_COMPLETE", "zsh")
        .env("_CLAP_COMPLETE_INDEX", "4")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// The example of docs/rhai-api.md with its three addresses replaced by `ips`.
fn documented_example(ips: &[String; 3]) -> String {
    let doc = include_str!("../../docs/rhai-api.md");
    let start = doc.find("```rhai\n").expect("the doc has a rhai block") + "```rhai\n".len();
    let len = doc[start..].find("```").expect("the block ends");
    let mut example = doc[start..start + len].to_string();
    for (fixed, ip) in ["127.0.0.11", "127.0.0.12", "127.0.0.13"].iter().zip(ips) {
        assert!(example.contains(fixed));
        example = example.replace(fixed, ip);
    }
    example
}

#[test]
fn the_documented_bring_up_runs_as_written() {
    // The spec's own text, where this checkout sits beside it.
    let spec = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/spec/rhai-api.md");
    if let Ok(text) = std::fs::read_to_string(spec) {
        let doc = include_str!("../../docs/rhai-api.md");
        let block = |t: &str| {
            t.split("```rhai\n")
                .nth(1)
                .map(|b| b.split("```").next().unwrap_or("").to_string())
        };
        assert_eq!(
            block(doc),
            block(&text),
            "docs/rhai-api.md's example is the spec's"
        );
    }
    let ips: [String; 3] = net::addrs();
    let nodes = Nodes::start(&ips, |_| {});
    let d = Dir::project("generic");
    d.write("bringup.rhai", &documented_example(&ips));
    d.talm(["run", "bringup.rhai"]).ok();
    for ip in &ips {
        let st = nodes.node(ip).state();
        assert!(!st.in_maintenance(), "{ip} is configured");
    }
    // The first node was bootstrapped (a second bootstrap would have been refused and failed
    // the run); the other control planes join its etcd on their own, in their own time.
    assert!(nodes.node(&ips[0]).state().etcd_bootstrapped);
    assert!(d.read("kubeconfig").contains("clusters:"));
    assert_eq!(d.mode("kubeconfig"), 0o600);
    // A patch given as a map is made whole too.
    d.write(
        "again.rhai",
        &format!("let n = node(\"{}\");\nlet cfg = render(#{{ template: \"templates/controlplane.yaml\", node: n }});\nlet first = cfg.split(\"\\n---\")[0];\nlet r = n.apply(yaml::parse(first), #{{ dry_run: true }});\nout(type_of(r.mode));\n", ips[1]),
    );
    assert_eq!(d.talm(["run", "again.rhai"]).ok().stdout, "string");
}

#[test]
fn a_patch_needs_a_project_to_be_made_whole() {
    let nobody = net::addr();
    let d = Dir::new();
    d.write(
        "p.rhai",
        &format!("node(\"{nobody}\", #{{ insecure: true }}).apply(\"machine:\\n  type: worker\\n\", #{{}});\n"),
    );
    d.talm(["run", "p.rhai"]).expect().stderr("\
Error: n.apply: the config is a patch, and there is no project whose secrets make it a whole config
hint: run inside a talm project (or call use_project(root) first), or pass a whole config (render with `full: true`)
").status(1).run();
}

#[test]
fn the_documented_bring_up_fails_at_its_end_for_a_node_it_ignored() {
    let [a, b, dead] = net::addrs();
    let nodes = Nodes::start(&[&a, &b], |_| {});
    let d = Dir::project("generic");
    d.write(
        "bringup.rhai",
        &documented_example(&[a.clone(), b.clone(), dead.clone()]),
    );
    // (The generic preset leaves kubernetesVersion empty: its warning comes first.) The node
    // is named once: the failure's own `node IP:` says it.
    d.talm(["run", "bringup.rhai"])
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr("\
$A1: WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
$A2: WARN: templateOptions.kubernetesVersion is empty: no image is set for kubelet, kube-proxy or the control-plane components, so Talos uses its own defaults. Pin it in Chart.yaml (or --kubernetes-version) to control the Kubernetes version.
Error: bringup.rhai: parallel(): 1 item failed and the script did not check it with is_error():
  node $A3: connect: connection refused
hint: look at each result with `if is_error(r) { ... r.message ... }`, or pass #{ fail_fast: true } to stop at the first failure
")
        .status(1)
        .run();
    // The rest ran: bootstrap and kubeconfig on the first node.
    assert!(nodes.node(&a).state().etcd_bootstrapped);
    assert!(d.exists("kubeconfig"));
}

#[test]
fn parallel_errors_must_be_looked_at() {
    let d = Dir::new();
    d.write(
        "ignored.rhai",
        "let r = parallel([1, 2, 3], |x| { if x > 1 { fail(`item ${x} is bad`) } x });\nout(`${r[0]}`);\n",
    );
    let o = d.talm(["run", "ignored.rhai"]).run();
    assert_eq!((o.code, o.stdout.as_str()), (1, "1"));
    assert_eq!(
        o.stderr,
        "Error: ignored.rhai: parallel(): 2 items failed and the script did not check them with is_error():\n  2: item 2 is bad\n  3: item 3 is bad\nhint: look at each result with `if is_error(r) { ... r.message ... }`, or pass #{ fail_fast: true } to stop at the first failure\n"
    );
    // Checked, any copy of it: the script decides what the failure means.
    d.write(
        "checked.rhai",
        "let r = parallel([1, 2], |x| { if x == 2 { fail(\"bad\") } x });\nlet copy = r[1];\nif is_error(copy) { out(`${r[1].item}: ${r[1][\"message\"]}`); }\n",
    );
    assert_eq!(d.talm(["run", "checked.rhai"]).ok().stdout, "2: bad");
    // One checked, one not: only the other is named.
    d.write(
        "half.rhai",
        "let r = parallel([1, 2], |x| { fail(`no ${x}`) });\nis_error(r[0]);\n",
    );
    d.talm(["run", "half.rhai"])
        .expect()
        .stdout("")
        .stderr("\
Error: half.rhai: parallel(): 1 item failed and the script did not check it with is_error():
  2: no 2
hint: look at each result with `if is_error(r) { ... r.message ... }`, or pass #{ fail_fast: true } to stop at the first failure
")
        .status(1)
        .run();
    // A script that fails on its own reports its own error.
    d.write(
        "own.rhai",
        "let r = parallel([1], |x| { fail(\"inner\") });\nfail(\"outer\");\n",
    );
    d.talm(["run", "own.rhai"])
        .expect()
        .stderr("Error: outer\n")
        .status(1)
        .run();
}

#[test]
fn talosconfig_env_names_the_talosconfig_outside_a_project() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = configured(&nodes, &ip);
    let tc = d.join("talosconfig");
    let outside = Dir::new();
    let version = |dir: &Dir, extra: &[&str]| {
        let mut args = vec!["version", "-n", ip.as_str(), "-e", ip.as_str()];
        args.extend(extra);
        dir.talm(args)
    };
    // As talosctl: $TALOSCONFIG when --talosconfig is not given.
    version(&outside, &[])
        .env("TALOSCONFIG", &tc)
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
    // --talosconfig wins over it.
    version(&outside, &["--talosconfig", "nowhere/talosconfig"])
        .env("TALOSCONFIG", &tc)
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: failed to read talosconfig $DIR/nowhere/talosconfig: No such file or directory (os error 2)
hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode
")
        .status(1)
        .run();
    // Without it, ./talosconfig, which is not there.
    version(&outside, &[])
        .env_remove("TALOSCONFIG")
        .expect()
        .mask(addrs)
        .stdout(format!("{}Server:\n", version_client()))
        .stderr("\
Error: failed to read talosconfig $DIR/talosconfig: No such file or directory (os error 2)
hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode
")
        .status(1)
        .run();
    // Inside a project its own talosconfig is used.
    version(&d, &[])
        .env("TALOSCONFIG", "nowhere/talosconfig")
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
}
