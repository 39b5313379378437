//! Evictions and PodDisruptionBudget arithmetic: which budgets cover a pod, how many
//! disruptions a budget allows (the numbers its `status` shows, shared with the disruption
//! controller), and whether an eviction may delete the pod (429 when a budget forbids it).

use serde_json::{json, Value};

use crate::kube::store::Object;

use super::select::Selector;
use super::status::{Failure, Reason};

/// A budget's `status` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PdbStatus {
    pub current_healthy: i64,
    pub desired_healthy: i64,
    pub disruptions_allowed: i64,
    pub expected_pods: i64,
}

impl PdbStatus {
    /// The fields as the PDB's `status` carries them (merge them in; `observedGeneration`
    /// and `conditions` are the controller's).
    pub fn to_json(self) -> Value {
        json!({
            "currentHealthy": self.current_healthy,
            "desiredHealthy": self.desired_healthy,
            "disruptionsAllowed": self.disruptions_allowed,
            "expectedPods": self.expected_pods,
        })
    }
}

/// Whether the pod's `Ready` condition is `True`.
pub fn pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

/// Whether a budget's selector selects the pod (same namespace; a null selector selects none).
pub fn covers(pdb: &Value, pod: &Value) -> bool {
    pdb["metadata"]["namespace"] == pod["metadata"]["namespace"]
        && Selector::of_object(&pdb["spec"]["selector"]).is_some_and(|s| s.matches_labels(pod))
}

/// An int-or-percent scaled to `total` (percentages round up, as the disruption controller
/// does for both fields).
fn scaled(v: &Value, total: i64) -> Option<i64> {
    if let Some(n) = v.as_i64() {
        return Some(n);
    }
    let pct: i64 = v.as_str()?.strip_suffix('%')?.trim().parse().ok()?;
    Some((pct * total + 99) / 100)
}

/// A budget's numbers over `pods` (any pods; those it covers are counted). Expected pods are
/// the covered pods not being deleted (the simulator has no scale subresource lookup).
pub fn pdb_status(pdb: &Value, pods: &[Object]) -> PdbStatus {
    let covered: Vec<&Value> = pods
        .iter()
        .map(|p| &**p)
        .filter(|p| covers(pdb, p) && !terminating(p))
        .collect();
    let expected = covered.len() as i64;
    let healthy = covered.iter().filter(|p| pod_ready(p)).count() as i64;
    let spec = &pdb["spec"];
    let desired = if let Some(min) = scaled(&spec["minAvailable"], expected) {
        min
    } else if let Some(max) = scaled(&spec["maxUnavailable"], expected) {
        (expected - max).max(0)
    } else {
        // Neither set: the API defaults minAvailable to 1.
        1
    };
    PdbStatus {
        current_healthy: healthy,
        desired_healthy: desired,
        disruptions_allowed: (healthy - desired).max(0),
        expected_pods: expected,
    }
}

/// Whether the pod may be evicted now, given the budgets and pods of its namespace.
/// A pod that is not running (pending, finished) goes regardless; an unready pod goes when
/// its budget is met (the default `IfHealthyBudget` policy).
pub fn judge(pod: &Value, pdbs: &[Object], pods: &[Object]) -> Result<(), Failure> {
    let phase = pod["status"]["phase"].as_str().unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" || phase == "Pending" || terminating(pod) {
        return Ok(());
    }
    let covering: Vec<&Value> = pdbs
        .iter()
        .map(|b| &**b)
        .filter(|b| covers(b, pod))
        .collect();
    let pdb = match covering.as_slice() {
        [] => return Ok(()),
        [one] => *one,
        _ => {
            return Err(Failure::new(
                Reason::InternalError,
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    let st = pdb_status(pdb, pods);
    let allowed = if pod_ready(pod) {
        st.disruptions_allowed > 0
    } else {
        st.current_healthy >= st.desired_healthy
    };
    if allowed {
        return Ok(());
    }
    let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
    Err(Failure {
        reason: Reason::TooManyRequests,
        message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
        details: Some(json!({"causes": [{
            "reason": "DisruptionBudget",
            "message": format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                st.desired_healthy, st.current_healthy
            ),
        }]})),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "d", "labels": {"app": "w"}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn pdb(spec: Value) -> Value {
        let mut s = spec;
        s["selector"] = json!({"matchLabels": {"app": "w"}});
        json!({"metadata": {"name": "b", "namespace": "d"}, "spec": s})
    }

    #[test]
    fn min_available_and_max_unavailable() {
        let pods = [pod("a", true), pod("b", true), pod("c", false)].map(Object::new);
        assert_eq!(
            pdb_status(&pdb(json!({"minAvailable": 1})), &pods),
            PdbStatus {
                current_healthy: 2,
                desired_healthy: 1,
                disruptions_allowed: 1,
                expected_pods: 3
            }
        );
        assert_eq!(
            pdb_status(&pdb(json!({"minAvailable": "50%"})), &pods),
            PdbStatus {
                current_healthy: 2,
                desired_healthy: 2,
                disruptions_allowed: 0,
                expected_pods: 3
            }
        );
        assert_eq!(
            pdb_status(&pdb(json!({"maxUnavailable": 1})), &pods),
            PdbStatus {
                current_healthy: 2,
                desired_healthy: 2,
                disruptions_allowed: 0,
                expected_pods: 3
            }
        );
        let mut other = pod("x", true);
        other["metadata"]["namespace"] = "e".into();
        assert_eq!(
            pdb_status(&pdb(json!({"minAvailable": 0})), &[Object::new(other)]).expected_pods,
            0
        );
    }

    #[test]
    fn a_blocking_budget_refuses_with_its_numbers() {
        let pods = [pod("a", true), pod("b", true)].map(Object::new);
        let err = judge(
            &pods[0],
            &[Object::new(pdb(json!({"minAvailable": 2})))],
            &pods,
        )
        .unwrap_err();
        assert_eq!(err.code(), 429);
        assert_eq!(
            err.body()["details"],
            json!({"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget b needs 2 healthy pods and has 2 currently"}]})
        );
        assert!(judge(
            &pods[0],
            &[Object::new(pdb(json!({"minAvailable": 1})))],
            &pods
        )
        .is_ok());
        let mut done = pod("a", false);
        done["status"]["phase"] = "Succeeded".into();
        assert!(judge(
            &done,
            &[Object::new(pdb(json!({"minAvailable": 2})))],
            &pods
        )
        .is_ok());
    }
}
