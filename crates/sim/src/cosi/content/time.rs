//! The node's clock as Talos's time sync reports it: TimeStatus, synced after the first
//! exchange with the time server.

use serde_yaml_ng::Value;

use super::{map, res, Ctx};
use crate::cosi::facts::Res;

pub fn resources(ctx: &Ctx) -> Vec<Res> {
    // In a container the host keeps the time: Talos does not sync it.
    let disabled = ctx.hw.platform == "container";
    vec![res(
        "runtime",
        "TimeStatuses.v1alpha1.talos.dev",
        "node",
        "time.SyncController",
        map(vec![
            ("synced", Value::from(true)),
            ("epoch", Value::from(0u64)),
            ("syncDisabled", Value::from(disabled)),
        ]),
        // Written unsynced at start, then synced.
        if disabled { 1 } else { 2 },
    )]
}

#[cfg(test)]
mod tests {
    use super::super::testing::hw;
    use super::*;
    use crate::node::state::State;

    #[test]
    fn time_status_prints_every_field() {
        let hw = hw();
        let st = State::new("v1.13.7", "n1");
        let r = resources(&Ctx {
            hw: &hw,
            st: &st,
            peers: &[],
            unhealthy: &[],
            api: None,
        });
        assert_eq!(
            serde_yaml_ng::to_string(&r[0].spec).unwrap(),
            "synced: true\nepoch: 0\nsyncDisabled: false\n"
        );
        assert_eq!((r[0].id.as_str(), r[0].version), ("node", 2));
    }
}
