//! What a simulated control plane answers to each etcd call (as machined's handlers do):
//! roles, the control-plane check with Talos's API names, the local member or the cluster
//! endpoints, etcd's require-leader and reconfiguration checks, and the effects of leave,
//! remove, forfeit, defragment, alarms, downgrades, snapshot and the recovery upload.

use std::sync::Arc;

use tonic::Status;

use crate::api::Registry;
use crate::etcd::{self, Cluster, Down, Membership, CLUSTER_VERSION, SERVER_VERSION};
use crate::node::{denied, Node};
use talm_wire::proto::machine;

pub const ADMIN: &[&str] = &["os:admin"];
pub const OPERATE: &[&str] = &["os:admin", "os:operator"];
pub const BACKUP: &[&str] = &["os:admin", "os:operator", "os:etcd:backup"];
pub const READ: &[&str] = &["os:admin", "os:operator", "os:reader", "os:etcd:backup"];

/// Any of `allowed` among `roles`, else Talos's denial.
pub fn allow(roles: &[String], allowed: &[&str]) -> Result<(), Status> {
    if roles.iter().any(|r| allowed.contains(&r.as_str())) {
        Ok(())
    } else {
        Err(denied())
    }
}

/// machinehelper.CheckControlplane: the node must have a machine type, and be a control plane.
pub fn control_plane(n: &Node, api: &str) -> Result<(), Status> {
    let st = n.state();
    match &st.config {
        None => Err(Status::unimplemented(format!(
            "machine type is not set, cannot use {api} API"
        ))),
        Some(c) if !c.is_control_plane() => Err(Status::unimplemented(format!(
            "{api} is only available on control plane nodes"
        ))),
        Some(_) => Ok(()),
    }
}

/// What an etcd client dialling the node's own etcd meets when it does not run.
fn local_down() -> String {
    "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\"".into()
}

/// The node's running etcd member.
fn local(n: &Node) -> Result<Membership, String> {
    let st = n.state();
    match (&st.etcd, &st.etcd_down) {
        (Some(m), None) => Ok(m.clone()),
        _ => Err(local_down()),
    }
}

/// The cluster the node's cluster endpoints lead to: its own member's, else one running on
/// another control plane of the same Talos cluster.
fn cluster_of(n: &Node, registry: &Registry) -> Result<Arc<std::sync::Mutex<Cluster>>, String> {
    if let Ok(m) = local(n) {
        return Ok(m.cluster);
    }
    let identity = n
        .state()
        .config
        .as_ref()
        .map(|c| c.cluster_ca().0)
        .unwrap_or_default();
    let nodes: Vec<Arc<Node>> = registry
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    nodes
        .iter()
        .filter(|p| *p.up.borrow() > 0)
        .find_map(|p| {
            let m = local(p).ok()?;
            let same = m.lock().identity == identity;
            same.then_some(m.cluster)
        })
        .ok_or_else(|| "no controlplane endpoints discovered yet".to_string())
}

/// The cluster, locked, with its leader brought up to date; etcd's require-leader refusal
/// when it has none.
fn led<'a>(
    registry: &Registry,
    cluster: &'a Arc<std::sync::Mutex<Cluster>>,
) -> Result<std::sync::MutexGuard<'a, Cluster>, Status> {
    let live = etcd::alive(registry, cluster);
    let mut c = cluster.lock().unwrap_or_else(|e| e.into_inner());
    c.elect(&live);
    if c.leader == 0 {
        return Err(Status::unavailable("etcdserver: no leader"));
    }
    Ok(c)
}

fn member(m: &etcd::Member) -> machine::EtcdMember {
    machine::EtcdMember {
        id: m.id,
        hostname: m.name.clone(),
        peer_urls: m.peer_urls(),
        client_urls: m.client_urls(),
        is_learner: m.learner,
    }
}

pub fn member_list(
    n: &Node,
    roles: &[String],
    registry: &Registry,
    query_local: bool,
) -> Result<machine::EtcdMembers, Status> {
    allow(roles, READ)?;
    control_plane(n, "member list")?;
    let cluster = if query_local {
        local(n).map_err(Status::unavailable)?.cluster
    } else {
        cluster_of(n, registry).map_err(Status::unknown)?
    };
    let c = led(registry, &cluster)?;
    Ok(machine::EtcdMembers {
        metadata: None,
        legacy_members: c.members.iter().map(|m| m.name.clone()).collect(),
        members: c.members.iter().map(member).collect(),
    })
}

pub fn status(
    n: &Node,
    roles: &[String],
    registry: &Registry,
) -> Result<machine::EtcdStatus, Status> {
    allow(roles, READ)?;
    control_plane(n, "etcd status")?;
    let failed = |e: String| Status::unknown(format!("failed to query etcd status: {e}"));
    let m = local(n).map_err(failed)?;
    let live = etcd::alive(registry, &m.cluster);
    let mut c = m.lock();
    c.elect(&live);
    let Some(me) = c.members.iter().find(|x| x.id == m.id).cloned() else {
        return Err(failed(
            "etcdserver: the member has been permanently removed from the cluster".into(),
        ));
    };
    Ok(machine::EtcdStatus {
        metadata: None,
        member_status: Some(machine::EtcdMemberStatus {
            protocol_version: SERVER_VERSION.into(),
            db_size: c.size() as i64,
            db_size_in_use: c.in_use() as i64,
            leader: c.leader,
            raft_index: c.raft_index,
            raft_term: c.term,
            raft_applied_index: c.raft_index,
            errors: Vec::new(),
            is_learner: me.learner,
            member_id: m.id,
            storage_version: CLUSTER_VERSION.into(),
        }),
    })
}

/// The snapshot file of the node's etcd (database and SHA-256 trailer).
pub fn snapshot(n: &Node, roles: &[String]) -> Result<Vec<u8>, Status> {
    allow(roles, BACKUP)?;
    control_plane(n, "etcd snapshot")?;
    let m = local(n).map_err(|e| Status::unknown(format!("failed reading etcd snapshot: {e}")))?;
    let mut bytes = m.lock().snapshot();
    if n.faults().damaged_etcd_snapshot {
        use talm_wire::snapshot::{seal, TRAILER};
        bytes.truncate(bytes.len() - TRAILER);
        let page = talm_wire::etcd_db::PAGE_SIZE;
        for at in [16, page + 16] {
            bytes[at..at + 4].copy_from_slice(b"\xde\xad\xbe\xef");
        }
        bytes = seal(&bytes);
    }
    Ok(bytes)
}

/// etcd's strict reconfiguration check: the voting members left must keep a started majority.
fn may_remove(c: &Cluster, id: u64, live: &std::collections::HashSet<u64>) -> Result<(), String> {
    let rest: Vec<&etcd::Member> = c
        .members
        .iter()
        .filter(|m| !m.learner && m.id != id)
        .collect();
    let started = rest.iter().filter(|m| live.contains(&m.id)).count();
    if started < rest.len() / 2 + 1 {
        return Err("etcdserver: re-configuration failed due to not enough started members".into());
    }
    Ok(())
}

pub fn remove_member(
    n: &Node,
    roles: &[String],
    registry: &Registry,
    id: u64,
) -> Result<machine::EtcdRemoveMemberById, Status> {
    allow(roles, ADMIN)?;
    control_plane(n, "etcd remove member")?;
    let cluster = cluster_of(n, registry)
        .map_err(|e| Status::unknown(format!("failed to create etcd client: {e}")))?;
    let live = etcd::alive(registry, &cluster);
    let mut c = led(registry, &cluster)?;
    if !c.members.iter().any(|m| m.id == id) {
        return Err(Status::not_found(format!(
            "failed to remove member {id}: etcdserver: member not found"
        )));
    }
    may_remove(&c, id, &live).map_err(|e| {
        Status::unknown(format!(
            "failed to remove member: failed to remove member {id}: {e}"
        ))
    })?;
    c.remove(id);
    Ok(machine::EtcdRemoveMemberById { metadata: None })
}

pub fn leave(
    n: &Node,
    roles: &[String],
    registry: &Registry,
) -> Result<machine::EtcdLeaveCluster, Status> {
    allow(roles, ADMIN)?;
    control_plane(n, "etcd leave")?;
    let failed = |e: String| Status::unknown(format!("failed to leave cluster: {e}"));
    let m = local(n).map_err(failed)?;
    {
        let live = etcd::alive(registry, &m.cluster);
        let mut c = led(registry, &m.cluster).map_err(|st| failed(st.message().into()))?;
        if c.members.iter().any(|x| x.id == m.id) {
            may_remove(&c, m.id, &live).map_err(failed)?;
            c.remove(m.id);
        }
    }
    {
        let mut st = n.state();
        st.etcd = None;
        st.etcd_bootstrapped = false;
        st.etcd_down = Some(Down::Left);
    }
    n.journal.service(
        "etcd",
        "etcd: left the cluster, data directory removed (simulated)",
    );
    n.events.service(
        n.machine_id(),
        "etcd",
        "Finished",
        "Service finished successfully",
        "",
    );
    Ok(machine::EtcdLeaveCluster { metadata: None })
}

/// A graceful reset's `leaveEtcd` step: the member leaves the cluster when etcd allows it (the
/// last member cannot: its data goes with the wipe).
pub fn leave_on_reset(n: &Node, graceful: bool, registry: &Registry) {
    let Ok(m) = local(n) else { return };
    if !graceful {
        return;
    }
    let live = etcd::alive(registry, &m.cluster);
    let Ok(mut c) = led(registry, &m.cluster) else {
        return;
    };
    if may_remove(&c, m.id, &live).is_ok() {
        c.remove(m.id);
        drop(c);
        n.journal.service(
            "etcd",
            "etcd: left the cluster before the reset (simulated)",
        );
    }
}

pub fn forfeit(
    n: &Node,
    roles: &[String],
    registry: &Registry,
) -> Result<machine::EtcdForfeitLeadership, Status> {
    allow(roles, ADMIN)?;
    control_plane(n, "etcd forfeit leadership")?;
    let failed = |e: String| Status::unknown(format!("failed to forfeit leadership: {e}"));
    let m = local(n).map_err(failed)?;
    let live = etcd::alive(registry, &m.cluster);
    let mut c = led(registry, &m.cluster)?;
    if c.members.len() == 1 {
        return Err(failed("cannot forfeit leadership, only one member".into()));
    }
    if !c.members.iter().any(|x| x.id == m.id) {
        return Err(Status::unknown(format!(
            "failed to find \"{:016x}\" in list of etcd members",
            m.id
        )));
    }
    let member = c.hand_over(m.id, &live).unwrap_or_default();
    Ok(machine::EtcdForfeitLeadership {
        metadata: None,
        member,
    })
}

pub fn defragment(n: &Node, roles: &[String]) -> Result<machine::EtcdDefragment, Status> {
    allow(roles, OPERATE)?;
    control_plane(n, "etcd defragment")?;
    let m = local(n).map_err(|e| Status::unknown(format!("failed to defragment etcd: {e}")))?;
    m.lock().defragment();
    Ok(machine::EtcdDefragment { metadata: None })
}

fn alarms(c: &Cluster) -> Vec<machine::EtcdMemberAlarm> {
    c.alarms
        .iter()
        .map(|(id, a)| machine::EtcdMemberAlarm {
            member_id: *id,
            alarm: *a,
        })
        .collect()
}

pub fn alarm_list(n: &Node, roles: &[String]) -> Result<machine::EtcdAlarm, Status> {
    allow(roles, READ)?;
    control_plane(n, "etcd alarm list")?;
    let m = local(n).map_err(|e| Status::unknown(format!("failed to list etcd alarms: {e}")))?;
    let member_alarms = alarms(&m.lock());
    Ok(machine::EtcdAlarm {
        metadata: None,
        member_alarms,
    })
}

pub fn alarm_disarm(n: &Node, roles: &[String]) -> Result<machine::EtcdAlarmDisarm, Status> {
    allow(roles, OPERATE)?;
    control_plane(n, "etcd alarm disarm")?;
    let m = local(n).map_err(|e| Status::unknown(format!("failed to disarm etcd alarm: {e}")))?;
    let mut c = m.lock();
    let member_alarms = alarms(&c);
    c.alarms.clear();
    Ok(machine::EtcdAlarmDisarm {
        metadata: None,
        member_alarms,
    })
}

/// Talos's checks of a downgrade target (`MAJOR.MINOR`, 3.5 or later).
fn target_version(v: &str) -> Result<(), Status> {
    if v.is_empty() {
        return Err(Status::invalid_argument(
            "version is required for etcd downgrade",
        ));
    }
    let Some((major, minor)) = v.split_once('.').filter(|(_, m)| !m.contains('.')) else {
        return Err(Status::invalid_argument(
            "version should be in MAJOR.MINOR format",
        ));
    };
    let major: u64 = major
        .parse()
        .map_err(|_| Status::invalid_argument("major version should be a number"))?;
    let minor: u64 = minor
        .parse()
        .map_err(|_| Status::invalid_argument("minor version should be a number"))?;
    if (major, minor) < (3, 5) {
        return Err(Status::invalid_argument(
            "etcd downgrade is only supported to 3.5 and later versions",
        ));
    }
    Ok(())
}

/// Which downgrade call.
#[derive(Clone, Copy, PartialEq)]
pub enum Downgrade {
    Validate,
    Enable,
    Cancel,
}

/// A downgrade call: the cluster version etcd reports afterwards.
pub fn downgrade(
    n: &Node,
    roles: &[String],
    what: Downgrade,
    version: &str,
) -> Result<machine::EtcdClusterDowngrade, Status> {
    allow(roles, ADMIN)?;
    let api = match what {
        Downgrade::Validate => "etcd downgrade validate",
        Downgrade::Enable => "etcd downgrade enable",
        Downgrade::Cancel => "etcd downgrade cancel",
    };
    control_plane(n, api)?;
    if what != Downgrade::Cancel {
        target_version(version)?;
    }
    let failed = |e: String| Status::unknown(format!("failed to query etcd status: {e}"));
    let m = local(n).map_err(failed)?;
    let mut c = m.lock();
    match what {
        Downgrade::Cancel if c.downgrade.is_none() => {
            return Err(Status::failed_precondition(
                "etcdserver: no inflight downgrade job",
            ))
        }
        Downgrade::Cancel => c.downgrade = None,
        _ if version != "3.5" => {
            return Err(Status::invalid_argument(
                "etcdserver: invalid downgrade target version",
            ))
        }
        Downgrade::Enable => c.downgrade = Some(version.to_string()),
        Downgrade::Validate => {}
    }
    Ok(machine::EtcdClusterDowngrade {
        cluster_version: CLUSTER_VERSION.into(),
    })
}

/// Stores an uploaded recovery snapshot (`/var/lib/etcd.snapshot`) for a recovering bootstrap.
pub fn recover(n: &Node, roles: &[String], bytes: Vec<u8>) -> Result<machine::EtcdRecover, Status> {
    allow(roles, ADMIN)?;
    if n.state().installed_disk.is_none() {
        return Err(Status::failed_precondition(
            "etcd service is not ready for recovery yet",
        ));
    }
    control_plane(n, "etcd recover")?;
    n.state().etcd_recovery = Some(bytes);
    Ok(machine::EtcdRecover { metadata: None })
}

/// The bootstrap's etcd: a new cluster, or one restored from the uploaded snapshot. A snapshot
/// that does not restore leaves the etcd service failed (the Bootstrap call itself succeeded).
pub fn start(n: &Node, recover: bool, skip_hash_check: bool) {
    let (identity, name) = {
        let st = n.state();
        let identity = st
            .config
            .as_ref()
            .map(|c| c.cluster_ca().0)
            .unwrap_or_default();
        (
            identity,
            st.hostname(&n.spec.hardware).unwrap_or_else(|| n.name()),
        )
    };
    let addr = n.name();
    let made = if recover {
        let file = n.state().etcd_recovery.take();
        match file {
            None => Err(
                "etcd recovery snapshot not found: upload one with EtcdRecover first".to_string(),
            ),
            Some(file) => talm_wire::snapshot::verified(&file, skip_hash_check)
                .and_then(talm_wire::snapshot::decode)
                .map(|db| Cluster::restore(&identity, &name, &addr, db))
                .map_err(|e| format!("failed to recover etcd from snapshot: {e:#}")),
        }
    } else {
        Ok(Cluster::bootstrap(&identity, &name, &addr))
    };
    match made {
        Ok((cluster, id)) => {
            {
                let mut st = n.state();
                st.etcd = Some(Membership {
                    cluster: Arc::new(std::sync::Mutex::new(cluster)),
                    id,
                });
                st.etcd_bootstrapped = true;
                st.etcd_down = None;
            }
            let how = if recover {
                "etcd: restored from the recovery snapshot as a new one-member cluster (simulated)"
            } else {
                "etcd: bootstrapping a new cluster (simulated)"
            };
            n.etcd_started(how);
        }
        Err(e) => {
            {
                let mut st = n.state();
                st.etcd_down = Some(Down::Failed(e.clone()));
            }
            n.journal.service("etcd", &format!("etcd: {e}"));
            n.events.service(n.machine_id(), "etcd", "Failed", &e, "");
        }
    }
}
