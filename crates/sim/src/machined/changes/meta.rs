//! META on a simulated node: MetaWrite and MetaDelete with Talos's roles, refusals and texts,
//! and the `MetaKeys.runtime.talos.dev` resources that mirror the tags.

use prost::Message;
use serde_yaml_ng::Value;
use tonic::Status;

use crate::cosi::facts::{map, Res};
use crate::node::state::State;
use crate::node::{denied, Node};

/// The COSI type mirroring META.
pub const TYPE: &str = "MetaKeys.runtime.talos.dev";

/// Room for tags in one half of the META partition (Talos keeps two copies in 1 MiB).
const CAPACITY: usize = 256 * 1024;

/// Tag ID as the resource names it: `0x0c`.
pub fn id(key: u8) -> String {
    format!("0x{key:02x}")
}

fn allowed(roles: &[String]) -> Result<(), Status> {
    if roles
        .iter()
        .any(|r| r == "os:admin" || r == "os:meta:writer")
    {
        Ok(())
    } else {
        Err(denied())
    }
}

fn check(node: &Node, key: u32, roles: &[String]) -> Result<u8, Status> {
    allowed(roles)?;
    if node.spec.hardware.platform == "container" {
        return Err(Status::failed_precondition(
            "method is not supported in container mode",
        ));
    }
    u8::try_from(key).map_err(|_| Status::invalid_argument("key must be a uint8"))
}

impl Node {
    /// MetaWrite: stores the tag (replacing one with the same key).
    pub fn meta_write(&self, key: u32, value: &[u8], roles: &[String]) -> Result<(), Status> {
        let key = check(self, key, roles)?;
        let mut st = self.state();
        let used: usize = st
            .changes
            .meta
            .iter()
            .filter(|(k, _)| **k != key)
            .map(|(_, v)| v.len() + 4)
            .sum();
        if used + value.len() + 4 > CAPACITY {
            return Err(Status::resource_exhausted("meta write failed"));
        }
        st.changes.meta.insert(key, value.to_vec());
        drop(st);
        self.journal
            .talos(&format!("META: tag {} written", id(key)));
        Ok(())
    }

    /// MetaDelete: removes the tag, NotFound when there is none.
    pub fn meta_delete(&self, key: u32, roles: &[String]) -> Result<(), Status> {
        let key = check(self, key, roles)?;
        let mut st = self.state();
        if !st.changes.meta.contains_key(&key) {
            return Err(Status::not_found("meta key not found"));
        }
        st.changes.meta.remove(&key);
        drop(st);
        self.journal
            .talos(&format!("META: tag {} deleted", id(key)));
        Ok(())
    }
}

/// The MetaKeys resources of the node.
pub fn resources(st: &State) -> Vec<Res> {
    st.changes
        .meta
        .iter()
        .map(|(k, v)| Res {
            namespace: "runtime",
            ty: TYPE,
            id: id(*k),
            owner: "",
            spec: map(vec![(
                "value",
                Value::String(String::from_utf8_lossy(v).into_owned()),
            )]),
            version: 1,
            annotations: vec![],
        })
        .collect()
}

/// `proto_spec` of a MetaKey.
pub fn proto_spec(ty: &str, spec: &Value) -> Option<Vec<u8>> {
    (ty == TYPE).then(|| {
        talm_wire::proto::talos::resource::definitions::runtime::MetaKeySpec {
            value: spec
                .get("value")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        }
        .encode_to_vec()
    })
}
