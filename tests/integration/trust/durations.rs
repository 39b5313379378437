//! Duration flags and script options through the real binary: zero where it makes no sense,
//! negative and huge values get an error naming the flag (never a panic, which tonic's
//! grpc-timeout, `Instant + d` and `Duration::from_secs_f64` all did past Go's range), and the
//! hints name flags the command has.

use std::time::{Duration, Instant};

use talm::sim::net::faults::Faults;

use crate::common::expect::addrs;
use crate::common::sim::Nodes;
use crate::common::{net, Dir, Out};

/// The longest duration Go (and so talm) takes.
const GO_MAX: &str = "2562047h47m16.854775807s";

fn no_panic(o: &Out) {
    assert!(
        !o.stderr.contains("panicked") && o.code != 101,
        "talm panicked:\n{}",
        o.stderr
    );
}

/// Fails with `needle` and without a panic.
fn refused_with(d: &Dir, args: &[&str], needle: &str) -> Out {
    let o = d.talm(args).fails_with(needle);
    no_panic(&o);
    o
}

/// Fails with exit code 1 and exactly `stderr` (addresses read as `$A1`...), printing nothing
/// on stdout, and without a panic.
#[track_caller]
fn refused(d: &Dir, args: &[&str], stderr: &str) -> Out {
    let o = d
        .talm(args)
        .expect()
        .mask(addrs)
        .stdout("")
        .stderr(stderr)
        .status(1)
        .run();
    no_panic(&o);
    o
}

#[test]
fn call_timeout_zero_huge_and_negative_are_named() {
    // Refused before dialling; were one dialled, nothing of another test is at the address.
    let ip = net::addr();
    let d = Dir::new();
    let version = |t: &'static str| vec!["version", "-n", ip.as_str(), "-i", "--call-timeout", t];
    refused(
        &d,
        &version("0s"),
        "\
Error: --call-timeout \"0s\" is zero, which leaves no time at all
hint: every connection and call would give up at once; give e.g. 30s or 2m
",
    );
    // Each of these panicked: tonic's grpc-timeout header (over 99999999 hours) and
    // Duration::from_secs_f64 (over u64 seconds).
    for huge in ["999999999h", "99999999999999999999s", "2562048h"] {
        refused(
            &d,
            &version(huge),
            &format!("Error: --call-timeout {huge:?} is too long: the longest duration is {GO_MAX} (about 292 years)\nhint: give a shorter duration, such as 10m or 1h\n"),
        );
    }
    refused(
        &d,
        &["version", "-n", &ip, "-i", "--call-timeout=-5s"],
        "\
Error: --call-timeout \"-5s\" is negative
hint: give a positive duration, such as 30s or 2m
",
    );
    refused(
        &d,
        &version("1e30s"),
        "\
Error: --call-timeout \"1e30s\" is not a duration: time: unknown unit \"e\" in duration \"1e30s\"
hint: give Go duration text such as 30s, 2m or 1m30s
",
    );
    // The environment variable behind the flag goes through the same check.
    let o = d
        .talm(["version", "-n", &ip, "-i"])
        .env("TALM_CALL_TIMEOUT", "99999999999h")
        .expect().stderr("\
Error: --call-timeout \"99999999999h\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
").status(1).run();
    no_panic(&o);
}

#[test]
fn command_timeouts_refuse_zero_and_huge() {
    let ip = net::addr();
    let range = net::subnet(30).cidr();
    let d = Dir::new();
    refused(
        &d,
        &["apply", "-f", "nodes/n.yaml", "--timeout", "0s"],
        "\
Error: --timeout \"0s\" is zero, which leaves no time at all
hint: --timeout is how long a try-mode config stays before it is rolled back; give e.g. 1m
",
    );
    refused(
        &d,
        &["apply", "-f", "nodes/n.yaml", "--timeout", "99999999h"],
"\
Error: --timeout \"99999999h\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
    );
    refused(
        &d,
        &["upgrade", "-n", &ip, "--image", "x", "--timeout", "0s"],
        "\
Error: --timeout \"0s\" is zero, which leaves no time at all
hint: the upgrade waits for each node up to --timeout; to not wait at all, pass --wait=false
",
    );
    // Without waiting, a zero --timeout is no error (the command fails later, elsewhere).
    let o = d
        .talm([
            "upgrade",
            "-n",
            &ip,
            "--image",
            "x",
            "--timeout",
            "0s",
            "--wait=false",
        ])
        .run();
    assert!(!o.stderr.contains("--timeout"), "{}", o.stderr);
    no_panic(&o);
    refused(
        &d,
        &["scan", &range, "--timeout", "0s"],
        "\
Error: --timeout \"0s\" is zero, which leaves no time at all
hint: --timeout is how long each address gets to answer; give e.g. 500ms
",
    );
    refused(
        &d,
        &["scan", &range, "--timeout", "99999999999999999999s"],
"\
Error: --timeout \"99999999999999999999s\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
    );
    refused(
        &d,
        &["sim", "--node", &ip, "--reboot-delay", "99999999h"],
"\
Error: --reboot-delay \"99999999h\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
    );
    // Zero is a fine reboot delay: the command gets past it to the next check.
    refused(
        &d,
        &["sim", "--node", "10.9.4.9", "--reboot-delay", "0s"],
        "\
Error: 10.9.4.9 is not a loopback address
hint: simulated nodes listen on 127.0.0.0/8 (or ::1) only, e.g. --node 127.0.0.11
",
    );
}

#[test]
fn script_durations_are_checked_not_panicking() {
    let (ip, range) = (net::addr(), net::subnet(30).cidr());
    let d = Dir::new();
    let run = |body: &str| {
        d.write(
            "s.rhai",
            &body.replace("NODE_IP", &ip).replace("RANGE", &range),
        );
        d.talm(["run", "s.rhai"])
    };
    for (body, stderr) in [
        ("sleep(1.0e30);", "\
Error: sleep \"1000000000000000000000000000000\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
"),
        ("sleep(-1);", "\
Error: sleep \"-1\" is negative
hint: give a positive duration, such as 30s or 2m
"),
        (
            "let s = parse_duration_seconds(\"99999999999h\");",
            "\
Error: parse_duration_seconds \"99999999999h\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
        ),
        (
            // Instant + 2^63 s overflowed before the first poll.
            "node(\"NODE_IP\", #{insecure: true}).wait_ready(9223372036854775807);",
            "\
Error: seconds \"9223372036854775807\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
        ),
        (
            "node(\"NODE_IP\", #{insecure: true}).wait_reboot(-1);",
            "\
Error: seconds \"-1\" is negative
hint: give a positive duration, such as 30s or 2m
",
        ),
        (
            "node(\"NODE_IP\", #{insecure: true, timeout: 1.0e30}).version();",
            "\
Error: timeout \"1000000000000000000000000000000\" is too long: the longest duration is 2562047h47m16.854775807s (about 292 years)
hint: give a shorter duration, such as 10m or 1h
",
        ),
        (
            "node(\"NODE_IP\", #{insecure: true, timeout: 0}).version();",
            "\
Error: timeout \"0\" is zero, which leaves no time at all
hint: give a deadline above zero: seconds, or text such as 30s or 2m
",
        ),
        (
            "node(\"NODE_IP\", #{insecure: true, timeout: \"soon\"}).version();",
            "\
Error: timeout \"soon\" is not a duration: time: invalid duration \"soon\"
hint: give Go duration text such as 30s, 2m or 1m30s
",
        ),
        (
            "talos::scan(\"RANGE\", #{timeout: \"0s\"});",
            "\
Error: timeout \"0s\" is zero, which leaves no time at all
hint: give a deadline above zero: seconds, or text such as 30s or 2m
",
        ),
    ] {
        let o = run(body)
            .expect()
            .mask(addrs)
            .stdout("")
            .stderr(stderr)
            .status(1)
            .run();
        no_panic(&o);
    }
}

/// The flags a command's `--help` lists.
fn has_flag(d: &Dir, command: &str, flag: &str) -> bool {
    let help = d.talm([command, "--help"]).ok().stdout;
    help.split(|c: char| c.is_whitespace() || c == ',' || c == '=')
        .any(|w| w == flag)
}

#[test]
fn deadline_hints_name_flags_the_command_has() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::new();
    // The longest duration Go has is taken and carried to the node as a grpc-timeout.
    let o = d
        .talm(["version", "-n", &ip, "-i", "--call-timeout", GO_MAX])
        .ok();
    assert!(
        o.stdout.contains(&format!("NODE:        {ip}")),
        "{}",
        o.stdout
    );

    nodes.node(&ip).set_faults(Faults {
        delay: Some(std::time::Duration::from_secs(4)),
        ..Faults::default()
    });
    let started = Instant::now();
    for command in ["version", "get"] {
        let mut args = vec![command];
        if command == "get" {
            args.push("links");
        }
        args.extend(["-n", &ip, "-i", "--call-timeout", "500ms"]);
        let o = refused_with(&d, &args, "no answer within 500ms");
        let hint = o
            .stderr
            .lines()
            .find(|l| l.starts_with("hint: "))
            .unwrap_or_default();
        assert!(hint.contains("--call-timeout"), "{}", o.stderr);
        for word in hint.split_whitespace().filter(|w| w.starts_with("--")) {
            let flag = word.trim_end_matches([',', '.', ';']);
            assert!(
                has_flag(&d, command, flag),
                "`talm {command}` has no {flag}: {hint}"
            );
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the deadlines held"
    );
}
