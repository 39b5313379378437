use serde_json::json;

use super::*;

fn node(name: &str, ip: &str, cp: bool, ready: &str) -> Value {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if cp {
        labels[CONTROL_PLANE_LABEL] = json!("");
    }
    json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {},
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": ready}],
        },
    })
}

fn pod(name: &str, app: &str, ready: bool) -> Value {
    json!({
        "metadata": {"name": name, "labels": {"k8s-app": app}},
        "status": {
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "containerStatuses": [{"name": app, "ready": ready, "state": {"running": {}}}],
        },
    })
}

fn ips(list: &[&str]) -> Vec<Vec<String>> {
    list.iter().map(|ip| vec![ip.to_string()]).collect()
}

#[test]
fn nodes_must_match_the_expected_ones() {
    let nodes = [
        node("cp-1", "10.5.0.2", true, "True"),
        node("w-1", "10.5.0.3", false, "True"),
    ];
    assert_eq!(
        nodes_reported(&ips(&["10.5.0.2", "10.5.0.3"]), &nodes),
        Ok(Outcome::Pass)
    );
    assert_eq!(
        nodes_reported(&ips(&["10.5.0.2", "10.5.0.4"]), &nodes),
        Err("can't find expected node with IPs [\"10.5.0.4\"]".into())
    );
    assert_eq!(
        nodes_reported(&ips(&["10.5.0.3"]), &nodes),
        Err("unexpected nodes with IPs [\"10.5.0.2\"]".into())
    );
}

#[test]
fn a_missing_static_pod_is_named_with_its_node() {
    let all = vec![
        "kube-system/kube-apiserver-cp-1".to_string(),
        "kube-system/kube-controller-manager-cp-1".into(),
        "kube-system/kube-scheduler-cp-1".into(),
    ];
    assert_eq!(
        static_pods(&[("10.5.0.2".into(), all.clone())]),
        Ok(Outcome::Pass)
    );
    assert_eq!(
        static_pods(&[
            ("10.5.0.2".into(), all),
            ("10.5.0.3".into(), vec!["kube-system/kube-controller-manager-cp-2".into()])
        ]),
        Err("missing static pods on node 10.5.0.3: [kube-system/kube-apiserver kube-system/kube-scheduler]".into())
    );
}

#[test]
fn control_plane_components_need_a_ready_pod_per_control_plane() {
    let nodes = [
        node("cp-1", "10.5.0.2", true, "True"),
        node("w-1", "10.5.0.3", false, "True"),
    ];
    let mut pods = vec![
        pod("kube-apiserver-cp-1", "kube-apiserver", true),
        pod("kube-scheduler-cp-1", "kube-scheduler", true),
        pod(
            "kube-controller-manager-cp-1",
            "kube-controller-manager",
            true,
        ),
    ];
    let expected = ips(&["10.5.0.2"]);
    assert_eq!(
        control_plane_components(&expected, &nodes, &[], &pods),
        Ok(Outcome::Pass)
    );
    pods[1] = pod("kube-scheduler-cp-1", "kube-scheduler", false);
    assert_eq!(
        control_plane_components(&expected, &nodes, &[], &pods),
        Err("some pods are not ready for kube-scheduler: [kube-scheduler-cp-1]".into())
    );
    pods.remove(0);
    assert_eq!(
        control_plane_components(&expected, &nodes, &[], &pods),
        Err("expected number of pods for kube-apiserver to be 1, got 0".into())
    );
    let ds = json!({"metadata": {"name": "kube-apiserver", "labels": {"k8s-app": "kube-apiserver"}},
        "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 1}});
    assert_eq!(
        control_plane_components(&expected, &nodes, &[ds], &pods),
        Err("expected current number scheduled for kube-apiserver to be 2, got 1".into())
    );
}

#[test]
fn not_ready_and_cordoned_nodes_are_named() {
    let mut nodes = vec![
        node("cp-1", "10.5.0.2", true, "True"),
        node("w-1", "10.5.0.3", false, "Unknown"),
        node("w-2", "10.5.0.4", false, "False"),
    ];
    assert_eq!(
        nodes_ready(&nodes),
        Err("some nodes are not ready: [w-1 w-2]".into())
    );
    assert_eq!(nodes_ready_unless_no_cni(true, &nodes), Ok(Outcome::Skip));
    assert_eq!(nodes_schedulable(&nodes), Ok(Outcome::Pass));
    nodes[1]["spec"]["unschedulable"] = json!(true);
    nodes[2]["spec"]["unschedulable"] = json!(true);
    assert_eq!(
        nodes_schedulable(&nodes),
        Err("some nodes are not schedulable: [w-1]".into())
    );
}

#[test]
fn kube_proxy_and_coredns_follow_their_pods() {
    let ds = json!({"metadata": {"name": "kube-proxy", "labels": {"k8s-app": "kube-proxy"}},
        "status": {"desiredNumberScheduled": 2}});
    let mut pods = vec![
        pod("kube-proxy-abcde", "kube-proxy", true),
        pod("kube-proxy-fghij", "kube-proxy", true),
    ];
    assert_eq!(kube_proxy(&[], &pods), Ok(Outcome::Skip));
    assert_eq!(
        kube_proxy(std::slice::from_ref(&ds), &pods),
        Ok(Outcome::Pass)
    );
    pods.pop();
    assert_eq!(
        kube_proxy(std::slice::from_ref(&ds), &pods),
        Err("expected 2 ready pods, got 1".into())
    );
    let dep = json!({"metadata": {"name": "coredns", "labels": {"k8s-app": "kube-dns"}},
        "spec": {"replicas": 2}});
    assert_eq!(
        coredns(false, std::slice::from_ref(&dep), &pods),
        Err(
            "no pods found for namespace \"kube-system\" and label selector \"k8s-app=kube-dns\""
                .into()
        )
    );
    let dns = vec![
        pod("coredns-6d4b75cb6d-x2xkp", "kube-dns", true),
        pod("coredns-6d4b75cb6d-z7q9m", "kube-dns", false),
    ];
    assert_eq!(
        coredns(false, std::slice::from_ref(&dep), &dns),
        Err("some pods are not ready: [coredns-6d4b75cb6d-z7q9m]".into())
    );
    assert_eq!(
        coredns(false, std::slice::from_ref(&dep), &dns[1..]),
        Err("no ready pods found for namespace \"kube-system\" and label selector \"k8s-app=kube-dns\"".into())
    );
    assert_eq!(coredns(true, &[dep], &dns), Ok(Outcome::Skip));
    assert_eq!(coredns(false, &[], &dns), Ok(Outcome::Skip));
}
