//! Which config changes a simulated node applies without a reboot: Talos 1.13's
//! `CanApplyImmediate`. Only the v1alpha1 document counts (other documents always apply at
//! once); in it `debug`, `cluster`, a list of `machine` keys and, when both configs have
//! `machine.features`, a list of feature keys may change; any other difference needs a reboot.

use serde_yaml_ng::{Mapping, Value};

use crate::node::state::Config;

/// Top-level v1alpha1 keys applied at once.
const TOP: &[&str] = &["debug", "cluster"];

/// `machine` keys applied at once (everything else — type, token, disks, files, env,
/// systemDiskEncryption, udev, baseRuntimeSpecOverrides, features — needs a reboot).
const MACHINE: &[&str] = &[
    "ca",
    "acceptedCAs",
    "time",
    "certSANs",
    "install",
    "network",
    "sysfs",
    "sysctls",
    "logging",
    "controlPlane",
    "kubelet",
    "kernel",
    "registries",
    "pods",
    "seccompProfiles",
    "nodeAnnotations",
    "nodeLabels",
    "nodeTaints",
];

/// `machine.features` keys applied at once when both configs have `machine.features`.
const FEATURES: &[&str] = &[
    "kubernetesTalosAPIAccess",
    "kubePrism",
    "hostDNS",
    "imageCache",
    "nodeAddressSortAlgorithm",
];

/// Drops null values (an absent field and a null one are the same config).
fn clean(v: &Value) -> Value {
    match v {
        Value::Mapping(m) => Value::Mapping(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), clean(v)))
                .collect(),
        ),
        Value::Sequence(s) => Value::Sequence(s.iter().map(clean).collect()),
        other => other.clone(),
    }
}

fn map_at<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Mapping> {
    v.as_mapping_mut()?.get_mut(key)?.as_mapping_mut()
}

fn drop_keys(m: Option<&mut Mapping>, keys: &[&str]) {
    if let Some(m) = m {
        for k in keys {
            m.remove(*k);
        }
    }
}

/// What of two v1alpha1 documents needs a reboot to change: both without the parts applied
/// at once.
fn fixed_parts(cur: &Value, new: &Value) -> (Value, Value) {
    let (mut a, mut b) = (clean(cur), clean(new));
    for v in [&mut a, &mut b] {
        drop_keys(v.as_mapping_mut(), TOP);
    }
    let has = |v: &mut Value, key: &str| map_at(v, key).is_some();
    if has(&mut a, "machine") && has(&mut b, "machine") {
        for v in [&mut a, &mut b] {
            drop_keys(map_at(v, "machine"), MACHINE);
        }
        let features = |v: &mut Value| {
            map_at(v, "machine")
                .and_then(|m| m.get_mut("features"))
                .and_then(Value::as_mapping_mut)
                .is_some()
        };
        if features(&mut a) && features(&mut b) {
            for v in [&mut a, &mut b] {
                let m = map_at(v, "machine").and_then(|m| m.get_mut("features"));
                drop_keys(m.and_then(Value::as_mapping_mut), FEATURES);
            }
        }
    }
    (a, b)
}

/// Why moving from `cur` to `new` needs a reboot, in Talos's words (with the diff of what
/// cannot change at once); `None` when it applies immediately.
pub fn reboot_reason(cur: &Config, new: &Config) -> Option<String> {
    let empty = Value::Mapping(Mapping::new());
    let (a, b) = fixed_parts(
        cur.v1alpha1().unwrap_or(&empty),
        new.v1alpha1().unwrap_or(&empty),
    );
    if a == b {
        return None;
    }
    let text = |v: &Value| serde_yaml_ng::to_string(v).unwrap_or_default();
    Some(format!(
        "this config change can't be applied in immediate mode\ndiff:\n{}",
        crate::machined::apply::unified_diff(&text(&a), &text(&b))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        let docs = talm_wire::config::decode::decode_docs(text).unwrap();
        Config::new(text.to_string(), docs)
    }

    const BASE: &str = "version: v1alpha1\nmachine:\n  type: worker\n  token: abc\n  install:\n    disk: /dev/sda\n    image: ghcr.io/siderolabs/installer:v1.13.7\n  features:\n    rbac: true\n    kubePrism:\n      enabled: true\n      port: 7445\ncluster:\n  clusterName: demo\n";

    fn changed(from: &str, to: &str) -> Option<String> {
        reboot_reason(&config(BASE), &config(&BASE.replacen(from, to, 1)))
    }

    #[test]
    fn talos_applies_its_listed_keys_at_once() {
        // machine.install (an upgrade's writeback), features it lists, cluster, other documents.
        assert_eq!(changed("v1.13.7", "v1.13.9"), None);
        assert_eq!(changed("port: 7445", "port: 7446"), None);
        assert_eq!(changed("clusterName: demo", "clusterName: other"), None);
        assert_eq!(
            changed("  type: worker\n", "  type: worker\n  sysctls:\n    a: \"1\"\n  kernel:\n    modules: [{name: br_netfilter}]\n  nodeLabels: {a: b}\n"),
            None
        );
        let extra = format!("{BASE}---\napiVersion: v1alpha1\nkind: HostnameConfig\nhostname: x\n");
        assert_eq!(reboot_reason(&config(BASE), &config(&extra)), None);
        // A null field is an absent one.
        assert_eq!(
            changed("  token: abc\n", "  token: abc\n  env: null\n"),
            None
        );
    }

    #[test]
    fn any_other_change_needs_a_reboot_and_says_what() {
        assert_eq!(
            changed("type: worker", "type: controlplane").as_deref(),
            Some("this config change can't be applied in immediate mode\ndiff:\n--- a\n+++ b\n@@ -1,6 +1,6 @@\n version: v1alpha1\n machine:\n-  type: worker\n+  type: controlplane\n   token: abc\n   features:\n     rbac: true\n")
        );
        assert!(changed("rbac: true", "rbac: false").is_some());
        assert!(changed("  token: abc\n", "  token: abc\n  env: {A: b}\n").is_some());
        assert!(changed("version: v1alpha1\n", "version: v1alpha1\npersist: true\n").is_some());
        // Without features on one side, the listed feature keys are no exception.
        assert!(changed(
            "  features:\n    rbac: true\n    kubePrism:\n      enabled: true\n      port: 7445\n",
            ""
        )
        .is_some());
    }
}
