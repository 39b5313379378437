//! A PodDisruptionBudget's `status` as kube-controller-manager's disruption controller writes
//! it, from the numbers the Eviction subresource judges by (`api::pdb_status`).

use serde_json::{json, Value};

use super::api::PdbStatus;

/// The budget's status from its numbers (`api::pdb_status`, the arithmetic the Eviction
/// subresource judges by).
pub fn status(pdb: &Value, n: &PdbStatus) -> Value {
    let (desired, allowed, healthy, expected) = (
        n.desired_healthy,
        n.disruptions_allowed,
        n.current_healthy,
        n.expected_pods,
    );
    let (status, reason) = match allowed > 0 {
        true => ("True", "SufficientPods"),
        false => ("False", "InsufficientPods"),
    };
    let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(1);
    let since = pdb["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["status"] == status))
        .and_then(|c| c["lastTransitionTime"].as_str().map(str::to_string))
        .unwrap_or_else(super::store::now);
    json!({
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "expectedPods": expected,
        "observedGeneration": generation,
        "conditions": [{
            "type": "DisruptionAllowed",
            "status": status,
            "reason": reason,
            "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": since,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::api::pdb_status;

    fn pod(name: &str, ready: bool) -> Value {
        let st = if ready { "True" } else { "False" };
        json!({"metadata": {"name": name, "namespace": "w", "labels": {"app": "web"}},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": st}]}})
    }

    #[test]
    fn budgets_count_and_percentages() {
        let pdb = |spec: Value| {
            let mut spec = spec;
            spec["selector"] = json!({"matchLabels": {"app": "web"}});
            json!({"metadata": {"generation": 2, "namespace": "w"}, "spec": spec})
        };
        let pods =
            [pod("a", true), pod("b", true), pod("c", true)].map(crate::kube::store::Object::new);
        let of = |spec: Value| {
            let b = pdb(spec);
            status(&b, &pdb_status(&b, &pods))
        };
        let s = of(json!({"minAvailable": 2}));
        assert_eq!(
            (s["desiredHealthy"].clone(), s["disruptionsAllowed"].clone()),
            (json!(2), json!(1))
        );
        assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
        assert_eq!(s["observedGeneration"], 2);
        let s = of(json!({"minAvailable": 3}));
        assert_eq!(s["disruptionsAllowed"], 0);
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(of(json!({"minAvailable": "50%"}))["desiredHealthy"], 2);
        assert_eq!(of(json!({"maxUnavailable": "50%"}))["desiredHealthy"], 1);
        assert_eq!(of(json!({"maxUnavailable": 1}))["desiredHealthy"], 2);
    }
}
