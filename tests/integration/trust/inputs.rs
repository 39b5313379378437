//! Values cannot inject YAML and inputs are validated where they enter (issue 9 §3), and
//! `template -I` never replaces a good node file with a bad render (§2).

use crate::common::{net, yaml_docs, Dir, GOLDEN_FACTS};

fn project() -> Dir {
    let d = Dir::project("cozystack");
    d.write("facts.yaml", GOLDEN_FACTS);
    d
}

fn render(d: &Dir, extra: &[&str]) -> crate::common::Out {
    render_cmd(d, extra).run()
}

/// The control-plane render from the golden facts, with `extra` flags.
fn render_cmd(d: &Dir, extra: &[&str]) -> crate::common::Run {
    let mut args = vec![
        "template",
        "--facts",
        "facts.yaml",
        "-t",
        "templates/controlplane.yaml",
    ];
    args.extend_from_slice(extra);
    d.talm(args)
}

#[test]
fn hostile_values_stay_values() {
    let d = project();
    for hostile in [
        "x\nevil: true",
        "x\" injected: \"y",
        "x: y # not a comment",
        "{a: 1}",
        "[1, 2]",
    ] {
        d.write(
            "hostile.yaml",
            &format!("image: {}\n", serde_json::to_string(hostile).unwrap()),
        );
        let o = render(&d, &["--values", "hostile.yaml"]);
        assert_eq!(o.code, 0, "{hostile:?}: {}", o.stderr);
        let docs = yaml_docs(&o.stdout);
        assert_eq!(
            docs[0]["machine"]["install"]["image"].as_str(),
            Some(hostile),
            "{}",
            o.stdout
        );
        assert!(docs[0]["machine"].get("evil").is_none() && docs[0].get("evil").is_none());
    }
}

#[test]
fn a_template_that_prints_a_value_raw_cannot_be_broken_out_of() {
    let d = project();
    d.write(
        "templates/raw.yaml",
        "machine:\n  type: worker\n  network:\n    hostname: {{ values.image }}\n",
    );
    let raw = |extra: &[&str]| {
        d.talm(super::args(
            &[
                "template",
                "--facts",
                "facts.yaml",
                "-t",
                "templates/raw.yaml",
            ],
            extra,
        ))
    };
    raw(&["--set-string", "image=node1\ncluster:\n  evil: true"])
        .expect().stderr("\
Error: templates/raw.yaml: the value at values.image would change the structure of the rendered document: it holds a line break and is printed as is
hint: fix the value at values.image; a template that prints free text should pass it through `| to_json`
").status(1).run();
    raw(&["--set-string", "image=a: b: c"])
        .expect().stderr("\
Error: templates/raw.yaml rendered text that is not valid YAML at line 4: mapping values are not allowed in this context at line 4 column 16
hint: a value holding a quote, a newline or `: ` may have broken the document: check the values printed near that line, and print them through `| to_json` in the template
").status(1).run();
    d.write("hostile.yaml", "image: \"[evil]\"\n");
    raw(&["--values", "hostile.yaml"]).expect().stderr("\
Error: templates/raw.yaml: the value at values.image would change the structure of the rendered document: it holds a leading YAML indicator and is printed as is
hint: fix the value at values.image; a template that prints free text should pass it through `| to_json`
").status(1).run();
    // An ordinary value renders as before.
    raw(&["--set-string", "image=node1"]).ok();
}

#[test]
fn addresses_are_checked_where_they_enter() {
    let d = Dir::new();
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "c",
        "--endpoints",
        "10.0.0.1;reboot",
    ])
    .expect().stderr("\
error: invalid value '10.0.0.1;reboot' for '--endpoints <IP>': \"10.0.0.1;reboot\" is not a node address: \"10.0.0.1;reboot\" is neither an IP address nor a DNS name (letters, digits, '-' and '.', labels of at most 63)

For more information, try '--help'.
").status(1).run();
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "c",
        "--cluster-endpoint",
        "https://exa mple:6443",
    ])
    .expect().stderr("\
Error: cluster-endpoint \"https://exa mple:6443\" is missing scheme, host, or port, or its host is not an IP address or DNS name
hint: pass a full URL such as https://10.0.0.1:6443 or https://[fd00::1]:6443
").status(1).run();
    assert!(d.snapshot().is_empty());
    let p = project();
    p.talm([
        "template",
        "--offline",
        "-t",
        "templates/controlplane.yaml",
        "-n",
        "1.2.3.4\nx",
    ])
    .expect().stderr("\
error: invalid value '1.2.3.4
x' for '--nodes <IP>': \"1.2.3.4\\nx\" is not a node address: \"1.2.3.4\\nx\" is neither an IP address nor a DNS name (letters, digits, '-' and '.', labels of at most 63)

For more information, try '--help'.
").status(1).run();
    p.talm([
        "version",
        "-e",
        "https://10.0.0.1:50000",
        "-n",
        &net::addr(),
    ])
    .expect().stderr("\
error: invalid value 'https://10.0.0.1:50000' for '--endpoints <IP>': \"https://10.0.0.1:50000\" is not a node address: it holds a scheme or a path: give the host (and port) only

For more information, try '--help'.
").status(1).run();
    p.write(
        "nodes/bad.yaml",
        "# talm: nodes=[\"10.0.0.1 --evil\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    p.talm(["template", "--offline", "-f", "nodes/bad.yaml"])
        .expect().stderr("\
Error: nodes/bad.yaml:1: modeline nodes[0] \"10.0.0.1 --evil\" is not a node address: \"10.0.0.1 --evil\" is neither an IP address nor a DNS name (letters, digits, '-' and '.', labels of at most 63)
hint: nodes and endpoints are IP addresses or DNS names, with an optional port
").status(1).run();
}

#[test]
fn set_refuses_empty_keys_and_segments() {
    let d = project();
    for (bad, stderr) in [
        ("=1", "\
Error: failed parsing --set data \"=1\": =1: empty key before '=': every segment of a path needs a name (e.g. a.b=1)
hint: use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)
"),
        ("a..b=1", "\
Error: failed parsing --set data \"a..b=1\": a..b=1: empty key before '.': every segment of a path needs a name (e.g. a.b=1)
hint: use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)
"),
        ("a.=1", "\
Error: failed parsing --set data \"a.=1\": a.=1: empty key before '=': every segment of a path needs a name (e.g. a.b=1)
hint: use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)
"),
        (".a=1", "\
Error: failed parsing --set data \".a=1\": .a=1: empty key before '.': every segment of a path needs a name (e.g. a.b=1)
hint: use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)
"),
        ("a=1,,b=2", "\
Error: failed parsing --set data \"a=1,,b=2\": a=1,,b=2: empty key before ',': every segment of a path needs a name (e.g. a.b=1)
hint: use key=value pairs separated by commas, e.g. --set a.b=1,c[0]=x (escape literal commas and dots with \\)
"),
    ] {
        render_cmd(&d, &["--set", bad])
            .expect()
            .stdout("")
            .stderr(stderr)
            .status(1)
            .run();
    }
}

#[test]
fn wrong_value_shapes_are_refused_naming_key_and_file() {
    let d = project();
    render_cmd(&d, &["--set", "image.a=1"])
        .expect()
        .stdout("")
        .stderr("\
Error: --set: image must be a single value (text, number or boolean) (as in the preset's values.yaml), but it is a mapping
hint: fix image in --set; `talm init --update` shows the preset's values.yaml
")
        .status(1)
        .run();
    d.write("extra.yaml", "podSubnets: 10.0.0.0/8\n");
    render_cmd(&d, &["--values", "extra.yaml"])
        .expect()
        .stdout("")
        .stderr("\
Error: extra.yaml: podSubnets must be a list (as in the preset's values.yaml), but it is a single value (text, number or boolean)
hint: fix podSubnets in extra.yaml; `talm init --update` shows the preset's values.yaml
")
        .status(1)
        .run();
}

#[test]
fn empty_values_and_facts_without_resources_say_so() {
    let d = project();
    d.write("values.yaml", "# nothing here\n");
    d.talm(super::RENDER_CP).expect().stderr("\
Error: values.yaml is empty: the templates read the cluster's settings (endpoint, image, subnets...) from it
hint: restore it with `git checkout -- values.yaml`, or see the preset's own in a scratch folder: `talm init -p <preset> -N x`
").status(1).run();
    let d = project();
    d.write("facts.yaml", "node: 10.0.0.1\nlinks: []\n");
    d.talm(super::RENDER_CP)
        .expect().stderr("\
Error: facts.yaml has no `resources:` key: it is not a talm facts file
hint: record one with `talm discover --nodes IP > facts.yaml` (it lists the node's links, addresses, routes, disks... under `resources:`)
").status(1).run();
}

#[test]
fn a_damaged_preset_baseline_is_named_with_the_way_out() {
    let d = project();
    d.write(".talm-preset.base", "values.yaml: [unclosed\n");
    d.refuses(&["init", "--update", "--force"], 1, "\
Error: .talm-preset.base is damaged: it is not YAML (did not find expected ',' or ']' at line 2 column 1, while parsing a flow sequence at line 1 column 14)
hint: it records the preset's Chart.yaml and values.yaml as talm last wrote them; restore it with `git checkout -- .talm-preset.base`, or delete it and run `talm init --update --force` (without a baseline your Chart.yaml and values.yaml are kept as they are, and the next update records a new one)
");
    // Bytes that are not text at all are damage too, with the same way out.
    std::fs::write(
        d.join(".talm-preset.base"),
        b"values.yaml: |\n  \xff\xfe\x00\x9c\n",
    )
    .unwrap();
    d.refuses(&["init", "--update", "--force"], 1, "\
Error: .talm-preset.base is damaged: it is not UTF-8 text (byte 17)
hint: it records the preset's Chart.yaml and values.yaml as talm last wrote them; restore it with `git checkout -- .talm-preset.base`, or delete it and run `talm init --update --force` (without a baseline your Chart.yaml and values.yaml are kept as they are, and the next update records a new one)
");
}

#[test]
fn in_place_never_replaces_a_good_node_file_with_a_bad_render() {
    let d = project();
    let good = "# talm: nodes=[\"127.9.3.21\"], templates=[\"templates/probe.yaml\"]\nmachine:\n  type: worker\n";
    d.write("nodes/n.yaml", good);
    // A render that is YAML but not Talos config.
    d.write(
        "templates/probe.yaml",
        "machine:\n  type: worker\n  notAKey: 1\n",
    );
    d.refuses(super::IN_PLACE, 1, "\
- talm: file=nodes/n.yaml, nodes=[127.9.3.21], endpoints=[127.0.0.11], templates=[templates/probe.yaml]
Error: nodes/n.yaml: the render does not decode as Talos config documents: error decoding document /v1alpha1/ (line 1): unknown keys found during decoding:
machine:
    notAKey: 1

hint: nodes/n.yaml was left as it was; fix the template or the values behind the line shown (run without -I to see the render)
");
    // A render that is not YAML at all.
    d.write("templates/probe.yaml", "machine:\n  type: [worker\n");
    d.refuses(super::IN_PLACE, 1, "\
- talm: file=nodes/n.yaml, nodes=[127.9.3.21], endpoints=[127.0.0.11], templates=[templates/probe.yaml]
Error: templates/probe.yaml rendered text that is not valid YAML at line 3: did not find expected ',' or ']' at line 3 column 1, while parsing a flow sequence at line 2 column 9
hint: a value holding a quote, a newline or `: ` may have broken the document: check the values printed near that line, and print them through `| to_json` in the template
");
    assert_eq!(d.read("nodes/n.yaml"), good);
}

#[test]
fn hostile_keys_stay_keys() {
    let d = project();
    d.write(
        "hostile.yaml",
        "extraSysctls:\n  \"net.a: \\\"1\\\"\\n    evil\": \"2\"\n",
    );
    let o = render(&d, &["--values", "hostile.yaml"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let docs = yaml_docs(&o.stdout);
    let sysctls = &docs[0]["machine"]["sysctls"];
    assert_eq!(
        sysctls["net.a: \"1\"\n    evil"].as_str(),
        Some("2"),
        "{}",
        o.stdout
    );
    assert!(sysctls.get("evil").is_none() && sysctls.get("net.a").is_none());
}
