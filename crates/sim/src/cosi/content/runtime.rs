//! How the node runs, as Talos's runtime controllers report it: MachineStatus (stage and the
//! readiness conditions still unmet), SecurityState, Version, the Services that run and the
//! legacy MountStatuses of the system disk's mounted partitions.

use serde_yaml_ng::Value;

use super::{map, res, s, Ctx};
use crate::cosi::facts::Res;

/// The services MachineStatus waits for (control planes add etcd and trustd).
fn required(control_plane: bool) -> Vec<&'static str> {
    let mut v = vec!["apid", "machined", "kubelet"];
    if control_plane {
        v.extend(["etcd", "trustd"]);
    }
    v
}

/// Whether Talos checks a service's health (machined has no check).
pub fn checked(id: &str) -> bool {
    id != "machined"
}

/// The node's services and their states as ServiceList reports them: the node's own, its
/// extensions' (`ext-<name>`, once configured), then what the API changed this boot.
pub fn service_states(ctx: &Ctx) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = crate::node::services(ctx.st)
        .into_iter()
        .map(|(id, state)| (id.to_string(), state))
        .collect();
    if ctx.st.config.is_some() {
        out.extend(
            ctx.hw
                .extensions
                .iter()
                .map(|e| (format!("ext-{e}"), "Running")),
        );
    }
    for (id, state) in &mut out {
        if let Some(c) = ctx.st.changes.services.get(id.as_str()) {
            *state = c.state;
        }
    }
    out.sort();
    out
}

/// Whether Talos checks service `id`'s health (machined and extension services have no check).
fn has_check(id: &str) -> bool {
    checked(id) && !id.starts_with("ext-")
}

/// Whether service `id` fails its health check (an injected fault).
fn failing(ctx: &Ctx, id: &str) -> bool {
    ctx.unhealthy.iter().any(|s| s == id)
}

/// MachineStatus: stage, readiness and unmet conditions, with the version it reached.
fn machine_status(ctx: &Ctx) -> Res {
    let services = service_states(ctx);
    let (stage, unmet): (&str, Vec<(&str, String)>) = if ctx.st.rebooting {
        ("rebooting", vec![])
    } else if ctx.st.in_maintenance() {
        ("maintenance", vec![])
    } else {
        // The running services failing their check (by ID), then the required ones not running.
        let mut problems: Vec<String> = services
            .iter()
            .filter(|(id, st)| *st == "Running" && has_check(id) && failing(ctx, id))
            .map(|(id, _)| format!("{id} not healthy"))
            .collect();
        problems.sort();
        for id in required(ctx.is_control_plane()) {
            if !services.iter().any(|(s, st)| *s == id && *st == "Running") {
                problems.push(format!("{id} not running"));
            }
        }
        let mut unmet = Vec::new();
        if !problems.is_empty() {
            unmet.push(("services", problems.join(", ")));
        }
        if !ctx.kubernetes_up() {
            if let Some(h) = ctx.st.hostname(ctx.hw) {
                unmet.push((
                    "nodeReady",
                    format!("node {:?} status is not available yet", h.to_lowercase()),
                ));
            }
        }
        ("running", unmet)
    };
    let ready = unmet.is_empty();
    // Booting (time, network, services waited for), then the stage it is in, then ready.
    let version = match (stage, ready) {
        ("maintenance", _) => 2,
        ("running", false) => 4,
        ("running", true) => 5,
        _ => 6,
    };
    let conditions = unmet
        .into_iter()
        .map(|(name, reason)| map(vec![("name", s(name)), ("reason", s(reason))]))
        .collect();
    res(
        "runtime",
        "MachineStatuses.runtime.talos.dev",
        "machine",
        "runtime.MachineStatusController",
        map(vec![
            ("stage", s(stage)),
            (
                "status",
                map(vec![
                    ("ready", Value::from(ready)),
                    ("unmetConditions", Value::Sequence(conditions)),
                ]),
            ),
        ]),
        version,
    )
}

/// SecurityState: no Secure Boot, SELinux permissive and module signatures enforced (the
/// kernel command line has `selinux=1 module.sig_enforce=1`).
fn security_state() -> Res {
    res(
        "runtime",
        "SecurityStates.talos.dev",
        "securitystate",
        "runtime.SecurityStateController",
        map(vec![
            ("secureBoot", Value::from(false)),
            ("selinuxState", s("enabled, permissive")),
            ("moduleSignatureEnforced", Value::from(true)),
        ]),
        1,
    )
}

fn version(ctx: &Ctx) -> Res {
    res(
        "runtime",
        "Versions.runtime.talos.dev",
        "version",
        "runtime.VersionController",
        map(vec![("name", s("Talos")), ("version", s(&ctx.st.version))]),
        1,
    )
}

/// One Service per running service (Talos destroys the resource when a service stops); a
/// checked service is written again once its health check passes.
fn services(ctx: &Ctx) -> Vec<Res> {
    service_states(ctx)
        .into_iter()
        .filter(|(_, state)| *state == "Running")
        .map(|(id, _)| {
            let checked = has_check(&id);
            let healthy = checked && !failing(ctx, &id);
            res(
                "runtime",
                "Services.v1alpha1.talos.dev",
                id,
                "v1alpha1.ServiceController",
                map(vec![
                    ("running", Value::from(true)),
                    ("healthy", Value::from(healthy)),
                    ("unknown", Value::from(!checked)),
                ]),
                if checked { 2 } else { 1 },
            )
        })
        .collect()
}

/// The legacy MountStatus (`get mounts`) of each mounted partition volume: STATE and
/// EPHEMERAL of an installed, configured node (as `/proc/mounts` lists them).
fn mounts(ctx: &Ctx) -> Vec<Res> {
    let disk = ctx.st.system_disk().filter(|_| !ctx.st.in_maintenance());
    let Some(disk) = disk.and_then(|d| ctx.hw.disks.iter().find(|x| &x.name == d)) else {
        return Vec::new();
    };
    [("STATE", 3, "/system/state"), ("EPHEMERAL", 4, "/var")]
        .into_iter()
        .map(|(id, n, target)| {
            res(
                "runtime",
                "MountStatuses.runtime.talos.dev",
                id,
                "runtime.MountStatusController",
                map(vec![
                    (
                        "source",
                        s(format!(
                            "/dev/{}",
                            crate::world::mounts::partition(&disk.name, n)
                        )),
                    ),
                    ("target", s(target)),
                    ("filesystemType", s("xfs")),
                    ("options", Value::Sequence(vec![])),
                    ("encrypted", Value::from(false)),
                ]),
                1,
            )
        })
        .collect()
}

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    let mut out = vec![machine_status(ctx), security_state(), version(ctx)];
    out.extend(services(ctx));
    out.extend(mounts(ctx));
    out
}

#[cfg(test)]
mod tests {
    use super::super::testing::{alone, configured, hw, keys};
    use super::*;
    use crate::node::state::State;

    #[test]
    fn machine_status_follows_the_stage_and_readiness() {
        let hw = hw();
        let st = State::new("v1.13.7", "n1");
        let ctx = alone(&hw, &st);
        let m = machine_status(&ctx);
        assert_eq!(
            serde_yaml_ng::to_string(&m.spec).unwrap(),
            "stage: maintenance\nstatus:\n  ready: true\n  unmetConditions: []\n"
        );
        assert_eq!(m.version, 2);
        let mut st = configured("controlplane", "CA");
        let ctx = alone(&hw, &st);
        let m = machine_status(&ctx);
        assert_eq!(
            serde_yaml_ng::to_string(&m.spec).unwrap(),
            "stage: running\nstatus:\n  ready: false\n  unmetConditions:\n  - name: services\n    reason: etcd not running\n  - name: nodeReady\n    reason: node \"node-controlplane\" status is not available yet\n"
        );
        st.etcd_bootstrapped = true;
        let ctx = alone(&hw, &st);
        let m = machine_status(&ctx);
        assert_eq!(m.spec["status"]["ready"], Value::from(true));
        assert_eq!(m.version, 5);
        // A reboot under way: the stage moves on (one more version), no conditions checked.
        st.rebooting = true;
        let ctx = alone(&hw, &st);
        let m = machine_status(&ctx);
        assert_eq!(
            serde_yaml_ng::to_string(&m.spec).unwrap(),
            "stage: rebooting\nstatus:\n  ready: true\n  unmetConditions: []\n"
        );
        assert_eq!(m.version, 6);
    }

    #[test]
    fn a_failing_health_check_shows_in_services_and_readiness() {
        let hw = hw();
        let mut st = configured("controlplane", "CA");
        st.etcd_bootstrapped = true;
        let unhealthy = ["kubelet".to_string()];
        let ctx = Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &unhealthy,
            api: None,
        };
        let all = resources(&ctx);
        let kubelet = all.iter().find(|r| r.id == "kubelet").unwrap();
        assert_eq!(
            serde_yaml_ng::to_string(&kubelet.spec).unwrap(),
            "running: true\nhealthy: false\nunknown: false\n"
        );
        assert_eq!(
            serde_yaml_ng::to_string(&all[0].spec["status"]).unwrap(),
            "ready: false\nunmetConditions:\n- name: services\n  reason: kubelet not healthy\n"
        );
    }

    #[test]
    fn services_follow_the_api_and_the_extensions() {
        let mut hw = hw();
        hw.extensions = vec!["iscsi-tools".into()];
        let mut st = configured("worker", "CA");
        st.changes.services.insert(
            "kubelet".into(),
            crate::machined::changes::Service {
                state: "Finished",
                events: vec![],
            },
        );
        let ctx = alone(&hw, &st);
        let all = resources(&ctx);
        let ids: Vec<&str> = all
            .iter()
            .filter(|r| r.ty.starts_with("Services"))
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "apid",
                "containerd",
                "cri",
                "ext-iscsi-tools",
                "machined",
                "trustd",
                "udevd"
            ]
        );
        let ext = all.iter().find(|r| r.id == "ext-iscsi-tools").unwrap();
        assert_eq!(
            serde_yaml_ng::to_string(&ext.spec).unwrap(),
            "running: true\nhealthy: false\nunknown: true\n"
        );
        assert_eq!(
            all[0].spec["status"]["unmetConditions"][0]["reason"],
            Value::from("kubelet not running")
        );
    }

    #[test]
    fn keys_keep_the_go_struct_order() {
        let hw = hw();
        let st = configured("worker", "CA");
        let ctx = alone(&hw, &st);
        let all = resources(&ctx);
        let state = all.iter().find(|r| r.id == "STATE").unwrap();
        assert_eq!(
            serde_yaml_ng::to_string(&state.spec).unwrap(),
            "source: /dev/nvme0n1p3\ntarget: /system/state\nfilesystemType: xfs\noptions: []\nencrypted: false\n"
        );
        assert_eq!(
            keys(&all[1].spec),
            ["secureBoot", "selinuxState", "moduleSignatureEnforced"]
        );
        assert_eq!(keys(&all[2].spec), ["name", "version"]);
        let ids: Vec<&str> = all
            .iter()
            .filter(|r| r.ty.starts_with("Services"))
            .map(|r| r.id.as_str())
            .collect();
        assert_eq!(
            ids,
            [
                "apid",
                "containerd",
                "cri",
                "kubelet",
                "machined",
                "trustd",
                "udevd"
            ]
        );
        let machined = all.iter().find(|r| r.id == "machined").unwrap();
        assert_eq!(
            serde_yaml_ng::to_string(&machined.spec).unwrap(),
            "running: true\nhealthy: false\nunknown: true\n"
        );
        assert_eq!(keys(&all[3].spec), ["running", "healthy", "unknown"]);
    }
}
