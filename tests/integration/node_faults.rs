//! Bad input and faults when talking to nodes, driving the real binary: every case ends with a
//! clear message that names the node (or the file at fault) and a hint, and nothing hangs.

use crate::common::expect::addrs;
use std::time::{Duration, Instant};

use crate::common::sim::{server_cert, template_node, Nodes};
use crate::common::{net, Dir};
use talm::secrets::bundle::Bundle;
use talm::sim::net::faults::Faults;
use talm::sim::net::skew::Skew;
use time::OffsetDateTime;
use x509_parser::prelude::{FromDer, X509Certificate};

/// A project with nodes/node1.yaml rendered from the maintenance node at `ip`.
fn project_for(ip: &str) -> Dir {
    let d = Dir::project("generic");
    d.write("nodes/node1.yaml", &template_node(&d, ip));
    d
}

/// A talosconfig for the project's cluster with a client certificate for `roles`, valid from
/// `from` for a year.
fn talosconfig(d: &Dir, roles: &[&str], from: OffsetDateTime) -> String {
    let bundle = Bundle::load(&d.read("secrets.yaml"), "secrets.yaml").unwrap();
    let (ca, key) = bundle.os_ca().unwrap();
    let cert = talm::secrets::pki::client_cert(&ca, &key, roles, from).unwrap();
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(s)
    };
    format!(
        "context: mycluster\ncontexts:\n    mycluster:\n        endpoints:\n            - 127.0.0.11\n        ca: {}\n        crt: {}\n        key: {}\n",
        b64(&ca),
        b64(&cert.cert_pem),
        b64(&cert.key.to_talos_pem().unwrap())
    )
}

/// The day the client certificate of a talosconfig made by [`talosconfig`] expires.
fn expires_on(tc: &str) -> time::Date {
    use base64::Engine as _;
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(tc).unwrap();
    let pem = base64::engine::general_purpose::STANDARD
        .decode(v["contexts"]["mycluster"]["crt"].as_str().unwrap())
        .unwrap();
    let der = talm::secrets::pki::pem_decode(std::str::from_utf8(&pem).unwrap())
        .unwrap()
        .1;
    let (_, cert) = X509Certificate::from_der(&der).unwrap();
    cert.validity().not_after.to_datetime().date()
}

#[test]
fn unreachable_node() {
    // Nothing listens at an address of its own.
    let nobody = net::addr();
    let d = Dir::new();
    d
        .talm(["version", "-n", &nobody, "-i"])
        .expect().stderr(format!("\
Error: node {nobody}: connect: connection refused
hint: check the address and that the node is up with its Talos API on port 50000; a node that is rebooting comes back in a moment
")).status(1).run();
}

#[test]
fn maintenance_and_configured_nodes_refuse_the_wrong_mode() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project_for(&ip);
    // Authenticated calls to a node still in maintenance mode.
    d.talm(["bootstrap", "-f", "nodes/node1.yaml"])
        .expect().mask(addrs).stderr("\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: node $A1: connect: the node is in maintenance mode (it has no config yet)
hint: use -i/--insecure for maintenance nodes (template, apply); calls such as bootstrap and kubeconfig need the node configured first: `talm apply -f nodes/<node>.yaml -i`
").status(1).run();
    d
        .talm(["bootstrap", "-f", "nodes/node1.yaml", "-i"])
        .expect().mask(addrs).stderr("\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: rpc error: code = PermissionDenied desc = not authorized
hint: the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)
").status(1).run();
    // Maintenance calls to a configured node.
    nodes.configure(&d, &ip);
    d.talm(["template", "-f", "nodes/node1.yaml", "-i"])
        .expect()
        .mask(addrs)
        .stderr(
            "\
- talm: file=nodes/node1.yaml, nodes=[$A1], endpoints=[$A1], templates=[templates/controlplane.yaml]
Error: node $A1: connect: the node asks for a client certificate: it is not in maintenance mode
hint: drop -i/--insecure so talm authenticates with the talosconfig
",
        )
        .status(1)
        .run();
}

#[test]
fn credentials_of_another_cluster_expired_or_without_the_role() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project_for(&ip);
    nodes.configure(&d, &ip);
    d.talm(["version", "-f", "nodes/node1.yaml"]).ok();

    // Another project's talosconfig: its CA did not sign the node's certificate.
    let other = Dir::new();
    other
        .talm(["init", "--preset", "generic", "--name", "other"])
        .ok();
    other
        .talm(["version", "-n", &ip, "-e", &ip])
        .expect().stderr(format!("\
Error: node {ip}: connect: the node's certificate is not signed by the talosconfig's CA
hint: the node belongs to another cluster, or the talosconfig to another project: check --talosconfig and --context
")).status(1).run();

    // A reader certificate may read but not bootstrap or read secrets.
    d.write(
        "talosconfig",
        &talosconfig(&d, &["os:reader"], OffsetDateTime::now_utc()),
    );
    d.talm(["version", "-f", "nodes/node1.yaml"]).ok();
    d
        .talm(["bootstrap", "-f", "nodes/node1.yaml"])
        .expect().mask(addrs).stderr("\
- talm: bootstrapping etcd on $A1
Error: error executing bootstrap: rpc error: code = PermissionDenied desc = not authorized
hint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`
").status(1).run();
    d.talm(["get", "machineconfig", "-f", "nodes/node1.yaml"])
        .expect().stderr(format!("\
Error: node {ip}: list MachineConfigs.config.talos.dev: not authorized
hint: the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`
")).status(1).run();

    // An expired certificate is caught before connecting, naming the file.
    let past = OffsetDateTime::now_utc() - time::Duration::days(800);
    let tc = talosconfig(&d, &["os:admin"], past);
    d.write("talosconfig", &tc);
    d.talm(["version", "-f", "nodes/node1.yaml"])
        .expect()
        .stderr(format!(
            "\
Error: $DIR/talosconfig: contexts.mycluster.crt: the client certificate expired on {}
hint: run `talm talosconfig` to issue a fresh client certificate from secrets.yaml
",
            expires_on(&tc)
        ))
        .status(1)
        .run();
}

#[test]
fn malformed_talosconfig() {
    let ip = net::addr();
    let d = Dir::project("generic");
    d.write("talosconfig", "context: mycluster\ncontexts: [oops\n");
    d.talm(["version", "-n", &ip])
        .expect()
        .stderr(
            "\
Error: $DIR/talosconfig:3:1: invalid YAML: did not find expected ',' or ']'
hint: fix the YAML syntax in $DIR/talosconfig near line 3, column 1
",
        )
        .status(1)
        .run();
    d.write("talosconfig", "context: mycluster\ncontexts:\n    mycluster:\n        ca: bm90IGEgcGVt\n        crt: x\n        key: y\n");
    d.talm(["version", "-n", &ip])
        .expect().stderr("\
Error: $DIR/talosconfig: contexts.mycluster.ca is not base64-encoded PEM
hint: move it aside (`mv $DIR/talosconfig $DIR/talosconfig.damaged`), then run `talm init -d` to restore it from $DIR/talosconfig.encrypted, or `talm talosconfig` to write a new one from the secrets bundle
").status(1).run();
    d.remove("talosconfig");
    d.talm(["version", "-n", &ip])
        .expect().stderr("\
Error: failed to read talosconfig $DIR/talosconfig: No such file or directory (os error 2)
hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode
").status(1).run();
    d.talm(["version", "--context", "nope", "-n", &ip])
        .expect().stderr("\
Error: failed to read talosconfig $DIR/talosconfig: No such file or directory (os error 2)
hint: run `talm talosconfig` to regenerate it from secrets.yaml, `talm init -d` to open talosconfig.encrypted, or pass --talosconfig; use -i/--insecure for nodes in maintenance mode
").status(1).run();
}

#[test]
fn cut_streams_and_slow_nodes_end_in_time() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    nodes.node(&ip).set_faults(Faults {
        drop: vec!["List".into()],
        ..Faults::default()
    });
    d.talm(["discover", "-n", &ip, "-i"])
        .expect().stderr(format!("\
Error: node {ip}: list Disks.block.talos.dev: the connection was cut during the call (the node closed it)
hint: the node may be rebooting or the network dropped; retry once it answers again
")).status(1).run();
    let o = d
        .talm(["get", "links", "-n", &ip, "-i"])
        .expect().mask(addrs).stderr("\
Error: node $A1: list ResourceDefinitions.meta.cosi.dev: the connection was cut during the call (the node closed it)
hint: the node may be rebooting or the network dropped; retry once it answers again
").status(1).run();
    assert!(o.stderr.contains(&format!("node {ip}")), "{}", o.stderr);

    nodes.node(&ip).set_faults(Faults {
        delay: Some(std::time::Duration::from_secs(5)),
        ..Faults::default()
    });
    let started = Instant::now();
    d.talm(["version", "-n", &ip, "-i", "--call-timeout", "1s"])
        .expect()
        .stderr(format!(
            "\
Error: node {ip}: Version: no answer within 1s
hint: the node is slow or unreachable; raise --call-timeout, or check the network
"
        ))
        .status(1)
        .run();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the deadline held"
    );
    d.talm(["version", "-n", &ip, "-i", "--call-timeout", "soon"])
        .expect()
        .stderr(
            "\
Error: --call-timeout \"soon\" is not a duration: time: invalid duration \"soon\"
hint: give Go duration text such as 30s, 2m or 1m30s
",
        )
        .status(1)
        .run();

    nodes.node(&ip).set_faults(Faults {
        fail: [(
            "Version".to_string(),
            "Unavailable: apid is restarting".to_string(),
        )]
        .into(),
        ..Faults::default()
    });
    d.talm(["version", "-n", &ip, "-i"])
        .expect()
        .stderr(format!(
            "Error: node {ip}: Version: rpc error: code = Unavailable desc = apid is restarting\n"
        ))
        .status(1)
        .run();
}

/// Scripts match on what kind of failure a node call was, not on its message text.
#[test]
fn scripts_see_the_kind_of_a_node_failure() {
    let [ip, nobody] = net::addrs();
    let _nodes = Nodes::start(&[&ip], |_| {});
    let d = project_for(&ip);
    d.write(
        "kinds.rhai",
        &format!(
            r#"
fn kind_of(f) {{ let k = "none"; try {{ f.call(); }} catch (e) {{ k = error_kind(e); }} k }}
out(kind_of(|| node("{nobody}", #{{ insecure: true }}).version()) + "\n");
out(kind_of(|| node("{ip}").version()) + "\n");
out(kind_of(|| fail("plain")) + "|\n");
"#
        ),
    );
    let o = d.talm(["run", "kinds.rhai"]).ok();
    assert_eq!(o.stdout, "refused\nin-maintenance\n|\n");
}

/// What talm says of clocks that are off.
const CLOCK_HINT: &str = "hint: the node's clock or this machine's clock is off: check the time on this machine (`date -u`) and on the node (its console), and that both keep time by NTP (the node's machine.time.servers)";

/// Unix seconds as the messages print them.
fn stamp(secs: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp(secs).unwrap();
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// A configured node at a fresh address whose clock is off by `skew`, and its project.
fn skewed_node(skew: &str) -> (String, Nodes, Dir) {
    let ip = net::addr();
    let skew = Skew::parse(skew).unwrap();
    let nodes = Nodes::start(&[&ip], |s| s.faults.clock_skew = Some(skew));
    let d = project_for(&ip);
    nodes.configure(&d, &ip);
    (ip, nodes, d)
}

/// A node whose clock is off presents a certificate outside its window by this machine's
/// clock: talm names the window and the time here, and points at the clocks, not at the
/// talosconfig.
#[test]
fn a_node_certificate_outside_its_window_names_it_and_the_clocks() {
    for (skew, state, was) in [
        ("+10y", "is not valid yet", "is"),
        ("-48h", "has expired", "was"),
    ] {
        let (ip, _nodes, d) = skewed_node(skew);
        let der = server_cert(&ip);
        let (_, cert) = X509Certificate::from_der(&der).unwrap();
        let window = cert.validity();
        let before = OffsetDateTime::now_utc().unix_timestamp();
        let o = d.talm(["version", "-f", "nodes/node1.yaml"]).run();
        let after = OffsetDateTime::now_utc().unix_timestamp();
        assert_eq!(o.code, 1, "{}", o.stderr);
        // The time here is when talm checked, between the two readings around its run.
        let here = (before..=after)
            .map(stamp)
            .find(|t| o.stderr.contains(&format!("the time here is {t}\n")))
            .unwrap_or_else(|| panic!("no time between the readings in:\n{}", o.stderr));
        assert_eq!(
            o.stderr,
            format!(
                "Error: node {ip}: connect: the node's certificate {state}: it {was} valid from {} to {}, and the time here is {here}\n{CLOCK_HINT}; a node dates its certificate by its own clock, so a new talosconfig does not help\n",
                stamp(window.not_before.timestamp()),
                stamp(window.not_after.timestamp()),
            ),
            "{skew}"
        );
    }
}

/// A node whose clock is behind refuses a client certificate issued since by its time, with
/// the alert Go's TLS server sends (certificate_expired): talm says the certificate is valid
/// here, so a clock is off.
#[test]
fn a_node_refusing_a_valid_client_certificate_as_expired_names_the_clocks() {
    let (ip, _nodes, d) = skewed_node("-2h");
    // The node's own certificate is valid here (issued two hours ago for a day).
    let issued = OffsetDateTime::now_utc() - time::Duration::minutes(1);
    d.write("talosconfig", &talosconfig(&d, &["os:admin"], issued));
    let o = d.talm(["version", "-f", "nodes/node1.yaml"]).run();
    assert_eq!(
        o.stderr,
        format!(
            "Error: node {ip}: Version: the node rejected the client certificate as expired or not valid yet (TLS alert CertificateExpired), though it is valid by this machine's clock\n{CLOCK_HINT}\n"
        )
    );
    assert_eq!(o.code, 1);
}

/// A Copy call the node refuses (maintenance mode, a path that is not there, a role without the
/// right) is said as the node's refusal, with the path and the node's words: not as a damaged
/// archive.
#[test]
fn cp_names_a_copy_call_the_node_refused() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = project_for(&ip);
    let refused = |path: &str, why: &str, hint: &str| {
        format!("Error: node {ip}: the node refused to copy {path}: {why}; nothing was copied into out\nhint: {hint}\n")
    };
    let o = d.talm(["cp", "/etc/ssl", "out", "-n", &ip, "-i"]).run();
    assert_eq!(
        o.stderr,
        refused(
            "/etc/ssl",
            "not authorized",
            "the node is in maintenance mode, where only reads and applying a config are allowed: apply one first (`talm apply -i`), then talk to it with the talosconfig (without -i)"
        )
    );
    assert_eq!(o.code, 1);

    nodes.configure(&d, &ip);
    let o = d
        .talm(["cp", "/nope/x", "out", "-f", "nodes/node1.yaml"])
        .run();
    assert_eq!(
        o.stderr,
        refused(
            "/nope/x",
            "rpc error: code = Unknown desc = lstat /nope/x: no such file or directory",
            "check the path on the node: `talm list /nope` shows what is there"
        )
    );
    let o = d.talm(["cp", "etc", "out", "-f", "nodes/node1.yaml"]).run();
    assert_eq!(
        o.stderr,
        refused(
            "etc",
            "rpc error: code = Unknown desc = path is not absolute etc",
            "paths on the node start at its root: give /etc"
        )
    );

    d.write(
        "talosconfig",
        &talosconfig(&d, &["os:reader"], OffsetDateTime::now_utc()),
    );
    let o = d
        .talm(["cp", "/etc/ssl", "out", "-f", "nodes/node1.yaml"])
        .run();
    assert_eq!(
        o.stderr,
        refused(
            "/etc/ssl",
            "not authorized",
            "the talosconfig's client certificate lacks the role this call needs (os:admin for changes and secrets): regenerate it with `talm talosconfig`"
        )
    );
    assert_eq!(o.code, 1);
}
