//! The StaticPodStatus of a running static pod, as Talos's `k8s.StaticPodStatusController`
//! copies it from the kubelet: the pod's `status` (a Go map, keys sorted) with its conditions,
//! container status, addresses and start time, dated from the node's boot.

use serde_yaml_ng::Value;

use super::podparts::gomap;
use super::{res, s, Ctx};
use crate::cosi::facts::Res;

/// Seconds after the boot when the kubelet started the control plane's pods.
const STARTED_AFTER: i64 = 12;

fn stamp(unix: i64) -> Value {
    let t =
        time::OffsetDateTime::from_unix_timestamp(unix).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    s(t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default())
}

/// The pod `pod` (a StaticPod spec) of node `node` as the kubelet reports it.
pub fn status(ctx: &Ctx, node: &str, id: &str, pod: &Value) -> Res {
    let ip = super::ips(ctx.hw).into_iter().next().unwrap_or_default();
    let started = ctx.st.booted + STARTED_AFTER;
    let image = pod["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let seed = crate::world::mix(
        crate::world::mix(0, &ctx.st.node_id),
        &ctx.st.boots.to_string(),
    );
    let repo = image.split(':').next().unwrap_or(&image).to_string();
    let condition = |ty: &str, at: i64| {
        gomap(vec![
            ("type", s(ty)),
            ("status", s("True")),
            ("lastProbeTime", Value::Null),
            ("lastTransitionTime", stamp(at)),
        ])
    };
    let ips = |ip: &str| Value::Sequence(vec![gomap(vec![("ip", s(ip))])]);
    let status = gomap(vec![
        ("phase", s("Running")),
        (
            "conditions",
            Value::Sequence(vec![
                condition("PodReadyToStartContainers", started + 1),
                condition("Initialized", started),
                condition("Ready", started + 6),
                condition("ContainersReady", started + 6),
                condition("PodScheduled", started),
            ]),
        ),
        ("hostIP", s(&ip)),
        ("hostIPs", ips(&ip)),
        ("podIP", s(&ip)),
        ("podIPs", ips(&ip)),
        ("startTime", stamp(started)),
        (
            "containerStatuses",
            Value::Sequence(vec![gomap(vec![
                ("name", s(id)),
                (
                    "state",
                    gomap(vec![(
                        "running",
                        gomap(vec![("startedAt", stamp(started + 1))]),
                    )]),
                ),
                ("lastState", gomap(vec![])),
                ("ready", Value::from(true)),
                ("restartCount", Value::from(0u64)),
                ("image", s(&image)),
                (
                    "imageID",
                    s(format!(
                        "{repo}@sha256:{}",
                        crate::world::hex(0, &format!("image/{image}"), 64)
                    )),
                ),
                (
                    "containerID",
                    s(format!(
                        "containerd://{}",
                        crate::world::hex(seed, &format!("container/{id}"), 64)
                    )),
                ),
                ("started", Value::from(true)),
            ])]),
        ),
        ("qosClass", s("Burstable")),
    ]);
    res(
        "k8s",
        "StaticPodStatuses.kubernetes.talos.dev",
        format!("kube-system/{id}-{node}"),
        "k8s.StaticPodStatusController",
        status,
        // Pending, then running, then ready.
        3,
    )
}
