//! Values cannot inject YAML and inputs are validated where they enter (issue 9 §3), and
//! `template -I` never replaces a good node file with a bad render (§2).

use crate::common::{net, yaml_docs, Dir, GOLDEN_FACTS};

fn project() -> Dir {
    let d = Dir::project("cozystack");
    d.write("facts.yaml", GOLDEN_FACTS);
    d
}

fn render(d: &Dir, extra: &[&str]) -> crate::common::Out {
    let mut args = vec![
        "template",
        "--facts",
        "facts.yaml",
        "-t",
        "templates/controlplane.yaml",
    ];
    args.extend_from_slice(extra);
    d.talm(args).run()
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
        .fails_with("templates/raw.yaml: the value at values.image would change the structure of the rendered document: it holds a line break");
    raw(&["--set-string", "image=a: b: c"])
        .fails_with("templates/raw.yaml rendered text that is not valid YAML");
    d.write("hostile.yaml", "image: \"[evil]\"\n");
    raw(&["--values", "hostile.yaml"]).fails_with("it holds a leading YAML indicator");
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
    .fails_with("is not a node address");
    d.talm([
        "init",
        "-p",
        "cozystack",
        "-N",
        "c",
        "--cluster-endpoint",
        "https://exa mple:6443",
    ])
    .fails_with("is missing scheme, host, or port, or its host is not an IP address or DNS name");
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
    .fails_with("is not a node address");
    p.talm([
        "version",
        "-e",
        "https://10.0.0.1:50000",
        "-n",
        &net::addr(),
    ])
    .fails_with("it holds a scheme or a path");
    p.write(
        "nodes/bad.yaml",
        "# talm: nodes=[\"10.0.0.1 --evil\"], templates=[\"templates/controlplane.yaml\"]\n",
    );
    p.talm(["template", "--offline", "-f", "nodes/bad.yaml"])
        .fails_with(
            "nodes/bad.yaml:1: modeline nodes[0] \"10.0.0.1 --evil\" is not a node address",
        );
}

#[test]
fn set_refuses_empty_keys_and_segments() {
    let d = project();
    for bad in ["=1", "a..b=1", "a.=1", ".a=1", "a=1,,b=2"] {
        let o = render(&d, &["--set", bad]);
        assert_ne!(o.code, 0, "{bad}");
        assert!(o.stderr.contains("empty key"), "{bad}: {}", o.stderr);
    }
}

#[test]
fn wrong_value_shapes_are_refused_naming_key_and_file() {
    let d = project();
    let o = render(&d, &["--set", "image.a=1"]);
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("--set: image must be a single value (text, number or boolean) (as in the preset's values.yaml), but it is a mapping"), "{}", o.stderr);
    d.write("extra.yaml", "podSubnets: 10.0.0.0/8\n");
    let o = render(&d, &["--values", "extra.yaml"]);
    assert!(
        o.stderr.contains("extra.yaml: podSubnets must be a list"),
        "{}",
        o.stderr
    );
}

#[test]
fn empty_values_and_facts_without_resources_say_so() {
    let d = project();
    d.write("values.yaml", "# nothing here\n");
    d.talm(super::RENDER_CP).fails_with("values.yaml is empty");
    let d = project();
    d.write("facts.yaml", "node: 10.0.0.1\nlinks: []\n");
    d.talm(super::RENDER_CP)
        .fails_with("facts.yaml has no `resources:` key: it is not a talm facts file");
}

#[test]
fn a_damaged_preset_baseline_is_named_with_the_way_out() {
    let d = project();
    d.write(".talm-preset.base", "values.yaml: [unclosed\n");
    let err = d.refused(
        &["init", "--update", "--force"],
        ".talm-preset.base is damaged",
    );
    assert!(err.contains("git checkout -- .talm-preset.base"), "{err}");
    // Bytes that are not text at all are damage too, with the same way out.
    std::fs::write(
        d.join(".talm-preset.base"),
        b"values.yaml: |\n  \xff\xfe\x00\x9c\n",
    )
    .unwrap();
    let err = d.refused(
        &["init", "--update", "--force"],
        ".talm-preset.base is damaged: it is not UTF-8 text (byte 17)",
    );
    assert!(err.contains("git checkout -- .talm-preset.base"), "{err}");
    assert!(!err.contains("readable"), "{err}");
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
    d.refused(
        super::IN_PLACE,
        "nodes/n.yaml: the render does not decode as Talos config documents",
    );
    // A render that is not YAML at all.
    d.write("templates/probe.yaml", "machine:\n  type: [worker\n");
    d.refused(
        super::IN_PLACE,
        "templates/probe.yaml rendered text that is not valid YAML",
    );
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
