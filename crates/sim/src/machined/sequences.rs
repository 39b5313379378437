//! The phases of Talos v1.13's sequences (`v1alpha1_sequencer.go`) that a simulated node
//! publishes as events on the actor that asked: upgrade, stageUpgrade, reset and shutdown. The
//! `stopEverything` phase of a reset or shutdown carries the `stopAllServices` task talosctl's
//! tracker waits for. Upgrades leave their tasks out: on them the tracker re-watches at that task,
//! which is safe on Talos only because the machine's stage changes first, and a simulated node
//! does not publish those stage changes.

use crate::node::Node;

/// One step of a sequence: a phase, and the task inside it talosctl reads, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Phase {
    pub name: &'static str,
    pub task: Option<&'static str>,
}

const fn phase(name: &'static str) -> Phase {
    Phase { name, task: None }
}

/// `stopEverything`, with its task.
const STOP_EVERYTHING: Phase = Phase {
    name: "stopEverything",
    task: Some("stopAllServices"),
};

/// Talos's `stopAllPhaselist`: services, mounts and volumes down, then everything (`last`).
fn stop_all(kexec: bool, last: Phase) -> Vec<Phase> {
    let mut out: Vec<Phase> = [
        "stopServices",
        "umount",
        "unmountBind",
        "unmountSystem",
        "volumeFinalize",
    ]
    .map(phase)
    .to_vec();
    if kexec {
        out.push(phase("kexec"));
    }
    out.push(last);
    out
}

/// The legacy upgrade: installed now, `kexec` only for the default reboot mode.
pub fn upgrade(kexec: bool) -> Vec<Phase> {
    let mut out: Vec<Phase> = [
        "drain",
        "cleanup",
        "dbus",
        "stopServices",
        "unmount",
        "unmountBind",
        "unmountSystem",
        "volumeFinalize",
        "upgrade",
        "meta",
    ]
    .map(phase)
    .to_vec();
    if kexec {
        out.push(phase("kexec"));
    }
    out.extend([phase("stopEverything"), phase("reboot")]);
    out
}

/// A staged upgrade: nothing installed before the reboot.
pub fn stage_upgrade(kexec: bool) -> Vec<Phase> {
    let mut out = vec![phase("cleanup"), phase("dbus")];
    out.extend(stop_all(kexec, phase("stopEverything")));
    out.push(phase("reboot"));
    out
}

/// What a reset asks for that shapes its sequence.
#[derive(Debug, Clone, Copy, Default)]
pub struct ResetShape {
    pub graceful: bool,
    pub controlplane: bool,
    /// Labels were named (a wipe of some system partitions, kexec kept).
    pub labels: bool,
    pub system_disk: bool,
    pub user_disks: bool,
    pub reboot: bool,
}

pub fn reset(r: ResetShape) -> Vec<Phase> {
    let mut out = Vec::new();
    if r.graceful {
        out.push(phase("drain"));
    }
    out.extend([phase("cleanup"), phase("dbus")]);
    if r.graceful && r.controlplane {
        out.push(phase("leave"));
    }
    out.push(phase("preReset"));
    out.extend(stop_all(r.labels, STOP_EVERYTHING));
    out.push(phase("forceCleanup"));
    if r.system_disk {
        out.push(phase(if r.labels { "resetSpec" } else { "reset" }));
    }
    if r.user_disks {
        out.push(phase("resetUserDisks"));
    }
    out.push(phase(if r.reboot { "reboot" } else { "shutdown" }));
    out
}

pub fn shutdown(force: bool) -> Vec<Phase> {
    let mut out = vec![phase("storeShutdown")];
    if !force {
        out.push(phase("drain"));
    }
    out.extend([phase("cleanup"), phase("dbus")]);
    out.extend(stop_all(false, STOP_EVERYTHING));
    out.push(phase("shutdown"));
    out
}

/// Publishes `phases` on `actor`: each phase's start, its task's start and stop, its stop.
pub fn publish(node: &Node, phases: &[Phase], actor: &str) {
    let m = node.machine_id();
    for p in phases {
        node.events.phase(m, p.name, true, actor);
        if let Some(t) = p.task {
            node.events.task(m, t, true, actor);
            node.events.task(m, t, false, actor);
        }
        node.events.phase(m, p.name, false, actor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(p: &[Phase]) -> Vec<&str> {
        p.iter().map(|p| p.name).collect()
    }

    #[test]
    fn sequences_as_talos_v1_13_builds_them() {
        assert_eq!(
            names(&upgrade(false)),
            [
                "drain",
                "cleanup",
                "dbus",
                "stopServices",
                "unmount",
                "unmountBind",
                "unmountSystem",
                "volumeFinalize",
                "upgrade",
                "meta",
                "stopEverything",
                "reboot"
            ]
        );
        assert_eq!(
            names(&stage_upgrade(true)),
            [
                "cleanup",
                "dbus",
                "stopServices",
                "umount",
                "unmountBind",
                "unmountSystem",
                "volumeFinalize",
                "kexec",
                "stopEverything",
                "reboot"
            ]
        );
        let r = ResetShape {
            graceful: true,
            controlplane: true,
            system_disk: true,
            user_disks: false,
            labels: true,
            reboot: false,
        };
        assert_eq!(
            names(&reset(r)),
            [
                "drain",
                "cleanup",
                "dbus",
                "leave",
                "preReset",
                "stopServices",
                "umount",
                "unmountBind",
                "unmountSystem",
                "volumeFinalize",
                "kexec",
                "stopEverything",
                "forceCleanup",
                "resetSpec",
                "shutdown"
            ]
        );
        assert_eq!(
            names(&shutdown(true)),
            [
                "storeShutdown",
                "cleanup",
                "dbus",
                "stopServices",
                "umount",
                "unmountBind",
                "unmountSystem",
                "volumeFinalize",
                "stopEverything",
                "shutdown"
            ]
        );
        assert_eq!(
            shutdown(false).iter().filter(|p| p.task.is_some()).count(),
            1
        );
    }
}
