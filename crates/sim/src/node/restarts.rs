//! The calls that take a simulated node down and bring it back changed: the legacy upgrade,
//! reboot and reset, each checked, recorded in the node's state, published as its sequence's
//! events on a new actor, then the node reboots.

use tonic::Status;

use super::{denied, is_admin, uuid, Node};
use talm_wire::proto::machine;

impl Node {
    /// The legacy upgrade; `etcd_check` is the control plane's etcd validation, run after the
    /// request itself was checked (it reads other nodes, so it gets no lock held).
    pub fn upgrade(
        &self,
        req: &machine::UpgradeRequest,
        roles: &[String],
        etcd_check: impl FnOnce(&Node) -> Result<(), Status>,
    ) -> Result<machine::Upgrade, Status> {
        if !is_admin(roles) {
            return Err(denied());
        }
        let mode = self.spec.hardware.platform.as_str();
        if mode == "container" {
            return Err(Status::failed_precondition(
                "method is not supported in container mode",
            ));
        }
        let st = self.state();
        if st.installed_disk.is_none() {
            return Err(Status::failed_precondition("Talos is not installed"));
        }
        let image = req.image.trim();
        let Some(tag) = talm_wire::version::image_tag(image) else {
            return Err(Status::unknown(format!(
                "error validating installer image {image:?}: the image reference has no tag"
            )));
        };
        // The etcd checks read every node's state, this one's too.
        drop(st);
        etcd_check(self)?;
        let mut st = self.state();
        let mode =
            machine::upgrade_request::RebootMode::try_from(req.reboot_mode).unwrap_or_default();
        let plan = crate::machined::upgrade::Plan::of(req, mode, &tag);
        plan.take(&mut st);
        st.last_upgrade = Some(req.clone());
        st.rebooting = true;
        drop(st);
        self.journal.talos(&format!(
            "upgrade request received: staged {}, force {}, reboot mode {}",
            req.stage,
            req.force,
            mode.as_str_name()
        ));
        self.journal.talos(&format!("validating {image:?}"));
        let actor_id = uuid();
        let m = self.machine_id();
        self.events.sequence(m, plan.sequence(), true, &actor_id);
        crate::machined::sequences::publish(self, &plan.phases(), &actor_id);
        self.reboot_soon();
        Ok(machine::Upgrade {
            metadata: None,
            ack: "Upgrade request received".into(),
            actor_id,
        })
    }

    pub fn reboot(&self, roles: &[String]) -> Result<machine::Reboot, Status> {
        if !roles.iter().any(|r| r == "os:admin" || r == "os:operator") {
            return Err(denied());
        }
        self.state().rebooting = true;
        let actor_id = uuid();
        self.journal
            .talos(&format!("reboot via API received. actor id: {actor_id}"));
        self.events
            .sequence(self.machine_id(), "reboot", true, &actor_id);
        self.reboot_soon();
        Ok(machine::Reboot {
            metadata: None,
            actor_id,
        })
    }

    pub fn reset(
        &self,
        req: &machine::ResetRequest,
        roles: &[String],
    ) -> Result<machine::Reset, Status> {
        if !is_admin(roles) {
            return Err(denied());
        }
        use machine::reset_request::WipeMode;
        let mode = WipeMode::try_from(req.mode).unwrap_or(WipeMode::All);
        if mode == WipeMode::SystemDisk && !req.user_disks_to_wipe.is_empty() {
            return Err(Status::unknown("reset failed: invalid input, wipe mode SYSTEM_DISK doesn't support UserDisksToWipe parameter"));
        }
        if mode == WipeMode::UserDisks && !req.system_partitions_to_wipe.is_empty() {
            return Err(Status::unknown("reset failed: invalid input, wipe mode USER_DISKS doesn't support SystemPartitionsToWipe parameter"));
        }
        for p in &req.system_partitions_to_wipe {
            if !["STATE", "EPHEMERAL", "META"].contains(&p.label.as_str()) {
                return Err(Status::unknown(format!(
                    "failed to reset: volume {:?} is not located",
                    p.label
                )));
            }
        }
        let mut st = self.state();
        for d in &req.user_disks_to_wipe {
            let name = d.trim_start_matches("/dev/");
            if !self.spec.hardware.disks.iter().any(|x| x.name == name) {
                return Err(Status::unknown(format!(
                    "failed to reset: disk {d:?} not found"
                )));
            }
            if st.installed_disk.as_deref() == Some(name) {
                return Err(Status::unknown(format!(
                    "failed to reset: disk {d:?} is the system disk"
                )));
            }
        }
        let shape = crate::machined::sequences::ResetShape {
            graceful: req.graceful,
            controlplane: st
                .config
                .as_ref()
                .is_some_and(|c| c.machine_type() != "worker"),
            labels: !req.system_partitions_to_wipe.is_empty(),
            system_disk: matches!(mode, WipeMode::All | WipeMode::SystemDisk),
            user_disks: !req.user_disks_to_wipe.is_empty() && mode != WipeMode::SystemDisk,
            reboot: req.reboot,
        };
        st.reset_pending = true;
        st.last_reset = Some(req.clone());
        st.rebooting = true;
        // Without `reboot` the reset sequence ends by powering the machine off.
        st.changes.powered_off = !req.reboot;
        drop(st);
        let actor_id = uuid();
        self.journal
            .talos(&format!("reset request received. actorID: {actor_id}"));
        self.events
            .sequence(self.machine_id(), "reset", true, &actor_id);
        crate::machined::sequences::publish(
            self,
            &crate::machined::sequences::reset(shape),
            &actor_id,
        );
        self.reboot_soon();
        Ok(machine::Reset {
            metadata: None,
            actor_id,
        })
    }
}
