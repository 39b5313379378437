//! A running pod's `status` as its kubelet reports it (phase, conditions, addresses, one
//! running container status per container), and whether a pod is Ready.

use serde_json::{json, Value};

use super::store::now;

/// Where a pod runs: its node's name and address.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub node: &'a str,
    pub ip: &'a str,
}

pub use super::api::pod_ready as is_ready;

/// A pod's IP: the node's on the host network, else one in the pod network (10.244.0.0/16)
/// derived from the pod's name.
fn pod_ip(pod: &Value, name: &str, at: Place) -> String {
    if pod["spec"]["hostNetwork"].as_bool() == Some(true) {
        return at.ip.to_string();
    }
    let h = crate::world::mix(0, name);
    format!("10.244.{}.{}", (h >> 8) % 256, 2 + h % 250)
}

/// The status of pod `name` (its `spec` as stored) running at `at`, Ready or not.
pub fn status(pod: &Value, name: &str, at: Place, ready: bool) -> Value {
    let t = now();
    let r = if ready { "True" } else { "False" };
    let cond = |ty: &str, status: &str| json!({"type": ty, "status": status, "lastProbeTime": null, "lastTransitionTime": t});
    let seed = crate::world::mix(0, &format!("{name}@{}", at.node));
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    let cname = c["name"].as_str().unwrap_or("");
                    let image = c["image"].as_str().unwrap_or("");
                    let repo = image.split(':').next().unwrap_or(image);
                    json!({
                        "name": cname,
                        "image": image,
                        "imageID": format!("{repo}@sha256:{}", crate::world::hex(0, &format!("image/{image}"), 64)),
                        "containerID": format!("containerd://{}", crate::world::hex(seed, cname, 64)),
                        "ready": ready,
                        "restartCount": 0,
                        "started": true,
                        "state": {"running": {"startedAt": t}},
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let ip = pod_ip(pod, name, at);
    json!({
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers", "True"),
            cond("Initialized", "True"),
            cond("Ready", r),
            cond("ContainersReady", r),
            cond("PodScheduled", "True"),
        ],
        "hostIP": at.ip,
        "hostIPs": [{"ip": at.ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": t,
        "containerStatuses": containers,
        "qosClass": "BestEffort",
    })
}
