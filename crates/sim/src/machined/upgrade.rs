//! What a simulated legacy upgrade does with its flags: `stage` records the upgrade (Talos's META
//! tags) and only reboots, the installer running during the next boot; otherwise the new version
//! runs after the reboot. The sequence's phases are published on the caller's actor, `kexec`
//! left out for a powercycle reboot, as Talos's upgrade sequence does.

use crate::node::state::State;
use talm_wire::proto::machine::{upgrade_request::RebootMode, UpgradeRequest};

/// A staged upgrade as META keeps it: the image and the installer's options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Staged {
    pub image: String,
    /// The tag the node runs once installed.
    pub version: String,
    pub preserve: bool,
    pub force: bool,
}

/// One upgrade request, decided.
#[derive(Debug, Clone)]
pub struct Plan {
    staged: Option<Staged>,
    version: String,
    powercycle: bool,
}

impl Plan {
    pub fn of(req: &UpgradeRequest, mode: RebootMode, version: &str) -> Plan {
        Plan {
            staged: req.stage.then(|| Staged {
                image: req.image.trim().to_string(),
                version: version.to_string(),
                preserve: req.preserve,
                force: req.force,
            }),
            version: version.to_string(),
            powercycle: mode == RebootMode::Powercycle,
        }
    }

    /// Records the upgrade in the node's state (the reboot is the caller's).
    pub fn take(&self, st: &mut State) {
        match &self.staged {
            Some(s) => st.staged_upgrade = Some(s.clone()),
            None => st.pending_version = Some(self.version.clone()),
        }
    }

    /// The sequence Talos runs.
    pub fn sequence(&self) -> &'static str {
        if self.staged.is_some() {
            "stageUpgrade"
        } else {
            "upgrade"
        }
    }

    /// The phases of that sequence, in order.
    pub fn phases(&self) -> Vec<crate::machined::sequences::Phase> {
        use crate::machined::sequences;
        if self.staged.is_some() {
            sequences::stage_upgrade(!self.powercycle)
        } else {
            sequences::upgrade(!self.powercycle)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_and_reboot_mode_shape_the_sequence() {
        let req = |stage| UpgradeRequest {
            image: "ghcr.io/siderolabs/installer:v1.13.8".into(),
            stage,
            ..Default::default()
        };
        let now = Plan::of(&req(false), RebootMode::Default, "v1.13.8");
        assert_eq!(now.sequence(), "upgrade");
        let names = |p: &Plan| p.phases().iter().map(|p| p.name).collect::<Vec<_>>();
        assert!(names(&now).contains(&"upgrade") && names(&now).contains(&"kexec"));
        let cycle = Plan::of(&req(false), RebootMode::Powercycle, "v1.13.8");
        assert!(!names(&cycle).contains(&"kexec"));
        let staged = Plan::of(&req(true), RebootMode::Default, "v1.13.8");
        assert_eq!(staged.sequence(), "stageUpgrade");
        assert!(!names(&staged).contains(&"upgrade"));
        let mut st = State::new("v1.13.7", "id");
        staged.take(&mut st);
        assert_eq!(st.pending_version, None);
        let boots = st.boots;
        st.boot();
        assert_eq!((st.version.as_str(), st.boots), ("v1.13.8", boots + 2));
    }
}
