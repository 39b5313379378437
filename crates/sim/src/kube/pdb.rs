//! PodDisruptionBudget arithmetic as kube-controller-manager's disruption controller does it:
//! from the budget's `minAvailable` or `maxUnavailable` (a count or a percentage of the pods it
//! selects) and how many of those pods are Ready, the `status` with `disruptionsAllowed` that
//! the Eviction subresource consults.

use serde_json::{json, Value};

/// An int-or-string: a count, or `N%` of `total` (rounded up, as Kubernetes scales both).
fn scaled(v: &Value, total: i64) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let pct: i64 = v.as_str()?.strip_suffix('%')?.trim().parse().ok()?;
    Some((pct * total + 99) / 100)
}

/// How many of `expected` selected pods must stay healthy.
pub fn desired_healthy(spec: &Value, expected: i64) -> i64 {
    if let Some(max) = spec.get("maxUnavailable").and_then(|v| scaled(v, expected)) {
        return (expected - max).max(0);
    }
    spec.get("minAvailable")
        .and_then(|v| scaled(v, expected))
        .unwrap_or(0)
}

/// The budget's status for `expected` selected pods of which `healthy` are Ready.
pub fn status(pdb: &Value, expected: i64, healthy: i64) -> Value {
    let desired = desired_healthy(&pdb["spec"], expected);
    let allowed = (healthy - desired).max(0);
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

    #[test]
    fn budgets_count_and_percentages() {
        let pdb = |spec: Value| json!({"metadata": {"generation": 2}, "spec": spec});
        let s = status(&pdb(json!({"minAvailable": 2})), 3, 3);
        assert_eq!(
            (s["desiredHealthy"].clone(), s["disruptionsAllowed"].clone()),
            (json!(2), json!(1))
        );
        assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
        assert_eq!(s["observedGeneration"], 2);
        let s = status(&pdb(json!({"minAvailable": 3})), 3, 3);
        assert_eq!(s["disruptionsAllowed"], 0);
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(desired_healthy(&json!({"minAvailable": "50%"}), 3), 2);
        assert_eq!(desired_healthy(&json!({"maxUnavailable": "50%"}), 3), 1);
        assert_eq!(desired_healthy(&json!({"maxUnavailable": 1}), 3), 2);
    }
}
