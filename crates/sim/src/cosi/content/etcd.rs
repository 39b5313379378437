//! The node's etcd member as Talos's etcd controller reports it: EtcdMember `local`, with the
//! member ID in hex, while the etcd service runs.

use super::{map, res, s, Ctx};
use crate::cosi::facts::Res;

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    let Some(m) = &ctx.st.etcd else {
        return Vec::new();
    };
    if !ctx.is_control_plane() || !super::etcd_runs(ctx.st) {
        return Vec::new();
    }
    vec![res(
        "etcd",
        "EtcdMembers.etcd.talos.dev",
        "local",
        "etcd.MemberController",
        map(vec![("memberID", s(format!("{:016x}", m.id)))]),
        1,
    )]
}

#[cfg(test)]
mod tests {
    use super::super::testing::{configured, hw};
    use super::*;

    #[test]
    fn only_a_running_member_is_reported() {
        let hw = hw();
        let mut st = configured("controlplane", "CA");
        assert!(resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        })
        .is_empty());
        let (cluster, id) = crate::etcd::Cluster::bootstrap("CA", "node", "127.0.0.11");
        st.etcd = Some(crate::etcd::Membership {
            cluster: std::sync::Arc::new(std::sync::Mutex::new(cluster)),
            id,
        });
        st.etcd_bootstrapped = true;
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        // Compared as data: an ID of digits only (or digits around one `e`) is quoted in YAML.
        assert_eq!(
            r[0].spec,
            serde_yaml_ng::from_str::<serde_yaml_ng::Value>(&format!("memberID: \"{id:016x}\""))
                .unwrap()
        );
    }
}
