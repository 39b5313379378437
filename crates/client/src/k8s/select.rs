//! Label selectors as Kubernetes matches them (`matchLabels` and `matchExpressions`), for the
//! budgets and workloads a client finds for a pod.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether `labels` satisfy `selector`. An empty selector matches everything, as a
/// PodDisruptionBudget's does in policy/v1.
pub fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let exact = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let have = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => have.is_some_and(|v| values.contains(v)),
            "NotIn" => have.is_none_or(|v| !values.contains(v)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => false,
        }
    });
    exact && expressions
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn labels_and_expressions_must_all_hold() {
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
        };
        assert!(matches(&sel, &labels(&[("app", "web")])));
        assert!(matches(&sel, &labels(&[("app", "web"), ("tier", "front")])));
        assert!(!matches(&sel, &labels(&[("app", "web"), ("tier", "db")])));
        assert!(!matches(&sel, &labels(&[("app", "api")])));
        assert!(matches(&LabelSelector::default(), &labels(&[])));
    }
}
