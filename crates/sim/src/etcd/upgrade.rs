//! The etcd checks machined makes before a control plane takes a legacy upgrade
//! (`MachineService/Upgrade` without `force` or `preserve`, `ValidateForUpgrade`): the cluster
//! must keep quorum while the node is away, and every member must be started and healthy.

use tonic::Status;

use crate::api::Registry;
use crate::etcd;
use crate::node::Node;

/// Why an upgrade of `n` would put etcd at risk, as Talos words it (a plain error, code
/// Unknown); `Ok` for workers, with `force` or `preserve`, and on a node that runs no etcd.
pub fn validate(n: &Node, force: bool, preserve: bool, registry: &Registry) -> Result<(), Status> {
    if force || preserve {
        return Ok(());
    }
    let membership = {
        let st = n.state();
        let control_plane = st.config.as_ref().is_some_and(|c| c.is_control_plane());
        match (&st.etcd, &st.etcd_down) {
            (Some(m), None) if control_plane => m.clone(),
            _ => return Ok(()),
        }
    };
    let refuse = |why: String| Status::unknown(format!("error validating etcd for upgrade: {why}"));
    let alive = etcd::alive(registry, &membership.cluster);
    let mut c = membership.lock();
    c.elect(&alive);
    if c.leader == 0 {
        return Err(refuse("etcdserver: no leader".into()));
    }
    if c.members.len() == 2 {
        return Err(refuse(format!(
            "etcd member count({}) is insufficient to maintain quorum if upgrade commences",
            c.members.len()
        )));
    }
    for m in &c.members {
        if m.name.is_empty() {
            return Err(refuse(format!(
                "etcd member {:016x} is not started, all members must be running to perform an upgrade",
                m.id
            )));
        }
        if !alive.contains(&m.id) {
            return Err(refuse(format!(
                "etcd member {:016x} is not healthy; all members must be healthy to perform an upgrade: context deadline exceeded",
                m.id
            )));
        }
    }
    Ok(())
}
