//! `talm version`, `get`, `discover`, `bootstrap` and `template` online, driving the real binary
//! against simulated nodes on loopback (each test has a /24 of its own from `common::net`), in
//! maintenance and authenticated modes.

use crate::common::expect::addrs;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, version_client, yaml_docs, Dir, VERSION_SIM_SERVER};

/// A cozystack project whose cluster endpoint is a VIP next to the test's nodes.
fn project(vip: &str) -> Dir {
    let d = Dir::project("cozystack");
    let values = d.read("values.yaml");
    let values = values
        .lines()
        .map(|l| {
            if l.starts_with("endpoint:") {
                format!("endpoint: \"https://{vip}:6443\"")
            } else if l.starts_with("floatingIP:") {
                format!("floatingIP: {vip}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    d.write("values.yaml", &(values + "\n"));
    d
}

#[test]
fn template_online_writes_the_node_file_with_discovered_comments() {
    let lan = net::subnet(24);
    let ip = lan.host(1);
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&lan.host(100));
    let out = template_node(&d, &ip);
    d.write("nodes/node1.yaml", &out);
    assert!(out.starts_with(&format!("# talm: nodes=[\"{ip}\"], endpoints=[\"{ip}\"], templates=[\"templates/controlplane.yaml\"]\n")), "{out}");
    assert!(
        out.contains("# -- Discovered disks:\n    # /dev/nvme0n1:\n    #    model: QEMU NVMe Ctrl"),
        "{out}"
    );
    assert!(
        out.contains("# -- Discovered interfaces:\n# eth0:"),
        "{out}"
    );
    let docs = yaml_docs(&out);
    let link = docs
        .iter()
        .find(|d| d["kind"] == "LinkConfig")
        .expect("LinkConfig from discovery");
    assert_eq!(link["name"], "eth0");
    assert_eq!(link["addresses"][0]["address"], format!("{ip}/24").as_str());
    assert_eq!(link["routes"][0]["gateway"], lan.host(1).as_str());
    let resolvers = docs.iter().find(|d| d["kind"] == "ResolverConfig").unwrap();
    assert_eq!(resolvers["nameservers"][0]["address"], "1.1.1.1");
    assert_eq!(docs[0]["machine"]["install"]["disk"], "/dev/nvme0n1");

    // The node file re-renders in place from its own modeline.
    d.talm(["template", "-f", "nodes/node1.yaml", "-I", "-i"])
        .ok();
    assert_eq!(d.read("nodes/node1.yaml"), out);

    // Several nodes in one online render are refused, as Go talm does.
    d.talm([
        "template",
        "--nodes",
        &format!("{ip},{ip}"),
        "-t",
        "templates/controlplane.yaml",
        "-i",
    ])
    .expect()
    .stderr(
        "\
Error: command \"talm template\" is not supported with multiple nodes
hint: render one node at a time (one node file per node), or pass --offline
",
    )
    .status(1)
    .run();
}

#[test]
fn discover_records_what_template_renders_from() {
    let lan = net::subnet(24);
    let ip = lan.host(2);
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&lan.host(100));
    let facts = d.talm(["discover", "-n", &ip, "-i"]).ok().stdout;
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&facts).unwrap();
    assert_eq!(v["node"], ip.as_str());
    assert_eq!(v["version"]["tag"], "v1.13.7");
    let res = &v["resources"];
    for kind in [
        "disks",
        "links",
        "addresses",
        "routes",
        "nodeaddress",
        "resolvers",
    ] {
        assert!(
            res[kind].as_sequence().is_some_and(|s| !s.is_empty()),
            "no {kind} in {facts}"
        );
    }
    assert!(
        res.get("machineconfig").is_none(),
        "maintenance mode cannot read the machine config"
    );
    assert!(res["links"]
        .as_sequence()
        .unwrap()
        .iter()
        .any(|l| l["metadata"]["id"] == "eth0" && l["spec"]["busPath"] == "0000:00:03.0"));
    d.write("node.facts.yaml", &facts);
    let offline = d
        .talm([
            "template",
            "--facts",
            "node.facts.yaml",
            "-e",
            &ip,
            "--nodes",
            &ip,
            "-t",
            "templates/controlplane.yaml",
        ])
        .ok()
        .stdout;
    assert_eq!(
        offline,
        template_node(&d, &ip),
        "a recorded node renders like the live one"
    );
}

#[test]
fn version_and_get_in_both_modes() {
    let lan = net::subnet(24);
    let ip = lan.host(3);
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&lan.host(100));
    let v = d.talm(["version", "--nodes", &ip, "-i"]).ok().stdout;
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    let client = format!(
        "Client:\n\tTag:         v1.13.7\n\tSHA:         undefined\n\tBuilt:       \n\tGo version:  none (talm {} is Rust)\n\tOS/Arch:     linux/{arch}\n",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(
        v,
        format!("{client}Server:\n\tNODE:        {ip}\n\tTag:         v1.13.7\n\tSHA:         simulated\n\tBuilt:       \n\tGo version:  go1.26.5\n\tOS/Arch:     linux/amd64\n\tEnabled:     \n")
    );
    // --client asks no node (none is given, and none would answer).
    assert_eq!(d.talm(["version", "--client"]).ok().stdout, client);
    let t = d.talm(["get", "links", "-n", &ip, "-i"]).ok().stdout;
    assert!(t.starts_with("NODE "), "{t}");
    // The definition's print columns, as talosctl shows them.
    assert_eq!(
        t.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        [
            "NODE",
            "NAMESPACE",
            "TYPE",
            "ID",
            "VERSION",
            "ALIAS",
            "TYPE",
            "KIND",
            "HW",
            "ADDR",
            "OPER",
            "STATE",
            "LINK",
            "STATE"
        ]
    );
    assert!(
        t.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()[..]
                == [ip.as_str(), "network", "LinkStatus", "eth0", "1", "ether"][..]
                || l.split_whitespace().take(6).collect::<Vec<_>>()
                    == [ip.as_str(), "network", "LinkStatus", "eth0", "1", "ether"]),
        "{t}"
    );
    let y = d
        .talm(["get", "disks", "nvme0n1", "-n", &ip, "-i", "-o", "yaml"])
        .ok()
        .stdout;
    assert!(y.starts_with(&format!("node: {ip}\nmetadata:\n    namespace: runtime\n    type: Disks.block.talos.dev\n    id: nvme0n1\n")), "{y}");
    assert!(y.contains("    pretty_size: 34 GB\n"), "{y}");
    let j = d
        .talm(["get", "routes", "-n", &ip, "-i", "-o", "json"])
        .ok()
        .stdout;
    assert!(
        j.contains(&format!("        \"gateway\": \"{}\"", lan.host(1))),
        "{j}"
    );
    // JSONPath over each resource (with its node), as talosctl's -o jsonpath=: every value found
    // and every piece of literal text is a result of its own, each on its own line.
    let p = d
        .talm([
            "get",
            "links",
            "eth0",
            "-n",
            &ip,
            "-i",
            "-o",
            "jsonpath={.node} {.metadata.id} mtu={.spec.mtu}",
        ])
        .ok()
        .stdout;
    assert_eq!(p, format!("{ip}\n \neth0\n mtu=\n1500\n"));
    d.talm(["get", "links", "-n", &ip, "-i", "-o", "wide"])
        .expect()
        .stderr(
            "\
error: invalid value 'wide' for '--output <OUTPUT>': output format \"wide\" is not supported

For more information, try '--help'.
",
        )
        .status(1)
        .run();
    let ns = d
        .talm([
            "get",
            "addresses",
            "--namespace",
            "network",
            "-n",
            &ip,
            "-i",
            "-o",
            "yaml",
        ])
        .ok()
        .stdout;
    assert!(ns.contains(&format!("id: eth0/{ip}/24")), "{ns}");
    d.talm([
        "get",
        "addresses",
        "--namespace",
        "runtime",
        "-n",
        &ip,
        "-i",
    ])
    .expect().stderr(format!("\
Error: node {ip}: list AddressStatuses.net.talos.dev: namespace \"runtime\" is not supported
hint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)
")).status(1).run();
    d.talm(["get", "nonsense", "-n", &ip, "-i"])
        .expect()
        .stderr(format!(
            "\
Error: node {ip}: resource \"nonsense\" is not registered
hint: list the node's resource types with `talm get rd`
"
        ))
        .status(1)
        .run();

    // Configure it, then talk through the project's talosconfig, nodes and endpoints from the
    // node file's modeline.
    d.write("nodes/node1.yaml", &template_node(&d, &ip));
    nodes.configure(&d, &ip);
    d.talm(["version", "-f", "nodes/node1.yaml"])
        .expect()
        .mask(addrs)
        .stdout(format!("{}{VERSION_SIM_SERVER}", version_client()))
        .stderr("")
        .run();
    let mt = d
        .talm(["get", "machinetype", "-f", "nodes/node1.yaml", "-o", "yaml"])
        .ok()
        .stdout;
    assert!(mt.contains("\nspec: controlplane\n"), "{mt}");
    let mc = d
        .talm([
            "get",
            "machineconfig",
            "v1alpha1",
            "-f",
            "nodes/node1.yaml",
            "-o",
            "yaml",
        ])
        .ok()
        .stdout;
    assert!(mc.contains("clusterName: mycluster"), "{mc}");
    let facts = d.talm(["discover", "-f", "nodes/node1.yaml"]).ok().stdout;
    assert!(
        facts.contains("machineconfig:"),
        "an admin discovery includes the machine config"
    );
    let os_key: serde_yaml_ng::Value = serde_yaml_ng::from_str(&d.read("secrets.yaml")).unwrap();
    let os_key = os_key["certs"]["os"]["key"].as_str().unwrap().to_string();
    assert!(
        !facts.contains(&os_key),
        "the machine config's secrets are redacted"
    );
    assert!(
        facts.contains("key: '***'")
            || facts.contains("key: \"***\"")
            || facts.contains("key: ***"),
        "{facts}"
    );
    d.talm(["bootstrap", "-f", "nodes/node1.yaml"]).ok();
    d.talm(["bootstrap", "-f", "nodes/node1.yaml"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: 1 error occurred:
\t* $A1: rpc error: code = AlreadyExists desc = etcd data directory is not empty


",
        )
        .status(1)
        .run();
    // The online template of a configured node goes through the talosconfig as well.
    let again = d.talm(["template", "-f", "nodes/node1.yaml"]).ok().stdout;
    assert!(again.contains("# -- Discovered interfaces:"), "{again}");
}

#[test]
fn scan_finds_maintenance_and_configured_nodes() {
    let lan = net::subnet(24);
    let (range, [one, two, three]) = (lan.head(29), [1, 2, 3].map(|i| lan.host(i)));
    let nodes = Nodes::start(&[&one, &two, &three], |s| {
        let addr = s.addr.to_string();
        if addr == two {
            s.version = "v1.13.5".into();
        } else if addr == three {
            s.version = "v1.12.11".into();
        }
    });
    let d = project(&lan.host(100));
    d.write("nodes/node1.yaml", &template_node(&d, &one));
    nodes.configure(&d, &one);
    let o = d.talm(["scan", &range, "--timeout", "300ms"]).ok();
    let rows: Vec<Vec<&str>> = o
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        vec![
            vec![one.as_str(), "configured"],
            vec![two.as_str(), "maintenance", "v1.13.5"],
            vec![three.as_str(), "maintenance"]
        ],
        "{}",
        o.stdout
    );
    assert_eq!(
        addrs(&o.stderr),
        "\
3 Talos endpoint(s) in $A1/29 on port 50000
"
    );
    // Talos 1.12 in maintenance has no Version: discovery goes on without it.
    let facts = d.talm(["discover", "-n", &three, "-i"]).ok().stdout;
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&facts).unwrap();
    assert!(
        v["resources"].get("links").is_some() && v.get("version").is_none(),
        "{facts}"
    );
    d.talm(["version", "-n", &three, "-i"])
        .expect().mask(addrs).stderr("\
Error: node $A1: Version: rpc error: code = Unimplemented desc = API is not implemented in maintenance mode
hint: the node is in maintenance mode, where this call is not available: apply a config first (`talm apply -f nodes/<node>.yaml -i`)
").status(1).run();
    d.talm(["scan", "10.0.0.0/8"])
        .expect()
        .stderr(
            "\
Error: 10.0.0.0/8 holds 16777216 addresses
hint: scan at most a /16 at a time
",
        )
        .status(1)
        .run();
    // A concurrency that would probe nothing is refused by name (no traffic is sent).
    let o = d.talm(["scan", &range, "--concurrency", "0"]).run();
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr.lines().next().unwrap(),
        "error: invalid value '0' for '--concurrency <CONCURRENCY>': 0 is not in 1..=4096"
    );
}

#[test]
fn a_nodes_words_cannot_drive_the_terminal() {
    let ip = net::addr();
    // A hostile node: escape sequences (retitle, clear the screen) in its version and in an
    // error it answers with.
    let nodes = Nodes::start(&[&ip], |s| {
        s.version = "v1.13.5\u{1b}]0;pwned\u{7}\u{1b}[2J".into();
    });
    let d = project(&ip);
    let v = d.talm(["version", "-n", &ip, "-i", "--short"]).ok().stdout;
    assert_eq!(
        v.lines().take(5).collect::<Vec<_>>(),
        [
            "Client:".to_string(),
            "Talos v1.13.7".to_string(),
            "Server:".to_string(),
            format!("\tNODE:        {ip}"),
            "\tTag:         v1.13.5\\x1b]0;pwned\\x07\\x1b[2J".to_string(),
        ]
    );
    nodes.node(&ip).set_faults(talm::sim::net::faults::Faults {
        fail: [(
            "Version".to_string(),
            "Unavailable: down\u{1b}[2J\rfine".to_string(),
        )]
        .into(),
        ..Default::default()
    });
    let o = d
        .talm(["version", "-n", &ip, "-i", "--short"])
        .expect()
        .mask(addrs)
        .stdout(
            "\
Client:
Talos v1.13.7
Server:
",
        )
        .stderr(
            "\
Error: node $A1: Version: rpc error: code = Unavailable desc = down\\x1b[2J\\rfine
",
        )
        .status(1)
        .run();
    assert!(!o.stderr.contains('\u{1b}') && !v.contains('\u{1b}'));
}

#[test]
fn a_deadline_too_short_for_any_call_is_named_with_its_flag() {
    let ip = net::addr();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = project(&ip);
    let o = d
        .talm([
            "version",
            "-n",
            &ip,
            "-i",
            "--short",
            "--call-timeout",
            "1ns",
        ])
        .run();
    assert_eq!(o.code, 1);
    assert_eq!(
        o.stderr,
        format!("Error: node {ip}: connect: no answer within 1ns (--call-timeout)\nhint: a deadline of 1ns is shorter than any connection takes: give --call-timeout e.g. 30s (the default is 1m)\n")
    );
}
