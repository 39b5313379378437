//! A simulated node's service logs read as the real programs print them: here the kubelet's
//! klog lines (`I1206 04:59:02.123456    2214 server.go:487] ...`), its stamps masked.

use crate::common::expect::addrs;
use crate::common::sim::{template_node, Nodes};
use crate::common::{net, Dir};

/// klog's `Immdd hh:mm:ss.uuuuuu` read as `IMMDD hh:mm:ss.uuuuuu`.
fn klog_stamps(text: &str) -> String {
    text.lines()
        .map(|l| match l.find(": I") {
            Some(at) if l.len() > at + 23 => {
                format!("{}: IMMDD hh:mm:ss.uuuuuu{}\n", &l[..at], &l[at + 23..])
            }
            _ => format!("{l}\n"),
        })
        .collect()
}

#[test]
fn the_kubelet_logs_in_klog_format() {
    let ip = net::addr();
    let nodes = Nodes::start(&[&ip], |_| {});
    let d = Dir::project("generic");
    d.write("nodes/cp.yaml", &template_node(&d, &ip));
    let boots = nodes.boots(&ip);
    d.talm(["apply", "-f", "nodes/cp.yaml", "-i"]).ok();
    nodes.wait_reboot(&ip, boots);
    d.talm(["logs", "kubelet", "-f", "nodes/cp.yaml", "--tail", "4"])
        .expect()
        .mask(addrs)
        .mask(klog_stamps)
        .stdout(
            "\
$A1: IMMDD hh:mm:ss.uuuuuu    2214 kuberuntime_manager.go:262] \"Container runtime initialized\" containerRuntime=\"containerd\" version=\"v2.1.4\" apiVersion=\"v1\"
$A1: IMMDD hh:mm:ss.uuuuuu    2214 server.go:1262] \"Started kubelet\"
$A1: IMMDD hh:mm:ss.uuuuuu    2214 kubelet_node_status.go:75] \"Attempting to register node\" node=\"talos-node\"
$A1: IMMDD hh:mm:ss.uuuuuu    2214 kubelet_node_status.go:78] \"Successfully registered node\" node=\"talos-node\"
",
        )
        .run();
}
