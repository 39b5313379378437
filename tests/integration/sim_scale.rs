//! `talm sim --node-range`: one simulator process started with a whole block of addresses serves a
//! node on every one of them, each answering `version -i`; bad ranges are refused by name.

use crate::common::expect::addrs;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use talm::talos::client::{Client, Options};
use talm::talos::creds::Auth;

use crate::common::{net, Dir};

/// The simulator process, killed if the test ends before stopping it.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Version in maintenance mode (insecure TLS) from every node, 32 at a time: the nodes that
/// did not answer, with why.
fn unanswered(addrs: &[String]) -> Vec<String> {
    talm::talos::block_on(async {
        let mut set = tokio::task::JoinSet::new();
        let mut failed = Vec::new();
        let mut next = addrs.iter().cloned();
        loop {
            while set.len() < 32 {
                let Some(a) = next.next() else { break };
                set.spawn(async move {
                    let opts = Options {
                        auth: Auth::Insecure,
                        timeout: Duration::from_secs(20),
                    };
                    let c = Client::connect(&a, None, &opts)
                        .await
                        .map_err(|e| format!("{a}: {e:#}"))?;
                    let v = c.version().await.map_err(|e| format!("{a}: {e:#}"))?;
                    match v.version {
                        Some(info) if info.tag == "v1.13.7" => Ok(()),
                        other => Err(format!("{a}: {other:?}")),
                    }
                });
            }
            let Some(done) = set.join_next().await else {
                break;
            };
            if let Err(e) = done.unwrap() {
                failed.push(e);
            }
        }
        failed
    })
}

#[test]
fn a_block_of_addresses_serves_a_node_on_each() {
    let lan = net::subnet(24);
    let block = lan.cidr();
    let addrs: Vec<String> = (0..256u32)
        .map(|i| {
            let base: std::net::Ipv4Addr = block.trim_end_matches("/24").parse().unwrap();
            std::net::Ipv4Addr::from(u32::from(base) + i).to_string()
        })
        .collect();
    let d = Dir::new();
    let mut sim = Running(
        Command::new(assert_cmd::cargo::cargo_bin("talm"))
            .current_dir(d.path())
            .args(["sim", "--node-range", &block])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = sim.0.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    // Many nodes are announced in one line, not one line each.
    let first = lines.next().unwrap().unwrap();
    assert_eq!(
        first,
        format!(
            "256 simulated Talos nodes from {}:50000 to {}:50000 (maintenance mode)",
            addrs[0], addrs[255]
        )
    );
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "serving until interrupted (Ctrl-C)"
    );
    let failed = unanswered(&addrs);
    assert!(
        failed.is_empty(),
        "{} did not answer: {failed:?}",
        failed.len()
    );
    // The CLI path too, on the first, a middle and the last node.
    for ip in [&addrs[0], &addrs[128], &addrs[255]] {
        let v = d.talm(["version", "-i", "-n", ip, "--short"]).ok().stdout;
        assert_eq!(
            v,
            format!(
                "Client:\nTalos v1.13.7\nServer:\n\tNODE:        {ip}\n\tTag:         v1.13.7\n\tSHA:         simulated\n\tBuilt:       \n\tGo version:  go1.26.5\n\tOS/Arch:     linux/amd64\n\tEnabled:     \n"
            ),
        );
    }
}

#[test]
fn bad_ranges_are_refused_by_flag_and_value() {
    let d = Dir::new();
    let a = net::addr();
    d.talm(["sim", "--node-range", "10.0.0.1-10.0.0.5"])
        .expect().stderr("\
Error: --node-range \"10.0.0.1-10.0.0.5\": 10.0.0.1 is not a loopback address
hint: simulated nodes listen on 127.0.0.0/8 only, e.g. --node-range 127.200.0.1-127.200.19.136 (5,000 nodes) or --node-range 127.200.0.0/22
").status(1).run();
    let reversed = format!("{a}-127.0.0.1");
    d.talm(["sim", "--node-range", &reversed])
        .expect()
        .mask(addrs)
        .stderr(
            "\
Error: --node-range \"$A1-127.0.0.1\": the range ends (127.0.0.1) before it starts ($A1)
hint: write the lower address first: --node-range 127.0.0.1-$A1
",
        )
        .status(1)
        .run();
    let o = d
        .talm(["sim", "--node-range", &a])
        .expect().stderr(format!("\
Error: --node-range \"{a}\" is not a range of addresses
hint: give FIRST-LAST or a CIDR block; a single node is --node IP; e.g. --node-range 127.200.0.1-127.200.19.136 (5,000 nodes) or --node-range 127.200.0.0/22
")).status(1).run();
    assert!(
        o.stderr.contains("hint: give FIRST-LAST or a CIDR block"),
        "{}",
        o.stderr
    );
    let range = format!("{a}-{a}");
    d.talm(["sim", "--node", &a, "--node-range", &range])
        .expect()
        .stderr(format!(
            "\
Error: {a} is given twice: --node #1 and --node-range {range}
hint: each simulated node needs an address of its own: drop one, or give it another loopback address
"
        ))
        .status(1)
        .run();
}
