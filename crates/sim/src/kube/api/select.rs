//! Label and field selectors as kube-apiserver reads them from `labelSelector` and
//! `fieldSelector`, and the `LabelSelector` objects of PDBs, Deployments and Services.

use serde_json::Value;

/// How one requirement compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Equals(String),
    NotEquals(String),
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

/// One requirement on a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: Op,
}

impl Requirement {
    fn matches(&self, value: Option<&str>) -> bool {
        match (&self.op, value) {
            (Op::Equals(v), Some(x)) => v == x,
            (Op::Equals(_), None) => false,
            (Op::NotEquals(v), x) => x != Some(v.as_str()),
            (Op::In(vs), Some(x)) => vs.iter().any(|v| v == x),
            (Op::In(_), None) => false,
            (Op::NotIn(vs), x) => x.is_none_or(|x| !vs.iter().any(|v| v == x)),
            (Op::Exists, x) => x.is_some(),
            (Op::DoesNotExist, x) => x.is_none(),
        }
    }
}

/// A conjunction of requirements; empty matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(pub Vec<Requirement>);

/// Splits at commas outside parentheses.
fn terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn set_of(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

impl Selector {
    /// Parses a label selector (`a=b,c!=d,e in (f,g),h notin (i),j,!k`).
    pub fn labels(text: &str) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        for term in terms(text) {
            let t = term.trim();
            if t.is_empty() {
                continue;
            }
            let bad = || format!("unable to parse requirement: found '{t}', expected: identifier");
            let req = if let Some(key) = t.strip_prefix('!') {
                Requirement {
                    key: key.trim().to_string(),
                    op: Op::DoesNotExist,
                }
            } else if let Some((k, v)) = t.split_once("!=") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::NotEquals(v.trim().to_string()),
                }
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::Equals(v.trim().to_string()),
                }
            } else if let Some((k, set)) = t.split_once(" notin ") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::NotIn(set_of(set).ok_or_else(bad)?),
                }
            } else if let Some((k, set)) = t.split_once(" in ") {
                Requirement {
                    key: k.trim().to_string(),
                    op: Op::In(set_of(set).ok_or_else(bad)?),
                }
            } else if t.contains(char::is_whitespace) || t.contains('(') {
                return Err(bad());
            } else {
                Requirement {
                    key: t.to_string(),
                    op: Op::Exists,
                }
            };
            if req.key.is_empty() {
                return Err(bad());
            }
            reqs.push(req);
        }
        Ok(Selector(reqs))
    }

    /// Parses a field selector (`a=b,c==d,e!=f`); every key must be in `known`.
    pub fn fields(text: &str, known: &[&str]) -> Result<Selector, String> {
        let mut reqs = Vec::new();
        for t in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, op) = if let Some((k, v)) = t.split_once("!=") {
                (k, Op::NotEquals(v.to_string()))
            } else if let Some((k, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                (k, Op::Equals(v.to_string()))
            } else {
                return Err(format!(
                    "invalid selector: '{text}'; can't understand '{t}'"
                ));
            };
            if !known.contains(&key) {
                return Err(format!("field label not supported: {key}"));
            }
            reqs.push(Requirement {
                key: key.to_string(),
                op,
            });
        }
        Ok(Selector(reqs))
    }

    /// A `LabelSelector` object (`matchLabels`, `matchExpressions`). A null selector matches
    /// nothing, an empty one everything (as PDBs read them).
    pub fn of_object(sel: &Value) -> Option<Selector> {
        if sel.is_null() {
            return None;
        }
        let mut reqs = Vec::new();
        if let Some(m) = sel["matchLabels"].as_object() {
            for (k, v) in m {
                reqs.push(Requirement {
                    key: k.clone(),
                    op: Op::Equals(v.as_str().unwrap_or_default().to_string()),
                });
            }
        }
        for e in sel["matchExpressions"].as_array().into_iter().flatten() {
            let key = e["key"].as_str().unwrap_or_default().to_string();
            let values: Vec<String> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
            let op = match e["operator"].as_str().unwrap_or_default() {
                "In" => Op::In(values),
                "NotIn" => Op::NotIn(values),
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                _ => return None,
            };
            reqs.push(Requirement { key, op });
        }
        Some(Selector(reqs))
    }

    /// Whether an object's labels match.
    pub fn matches_labels(&self, obj: &Value) -> bool {
        let labels = &obj["metadata"]["labels"];
        self.0
            .iter()
            .all(|r| r.matches(labels.get(&r.key).and_then(Value::as_str)))
    }

    /// Whether an object's fields match (every field reads as a string; absent is empty).
    pub fn matches_fields(&self, obj: &Value) -> bool {
        self.0.iter().all(|r| {
            let v = field(obj, &r.key);
            r.matches(Some(v.as_str()))
        })
    }

    /// kubectl's rendering of a `LabelSelector` (`app=x,tier in (a,b)`), `<none>` when empty.
    pub fn render(&self) -> String {
        if self.0.is_empty() {
            return "<none>".into();
        }
        self.0
            .iter()
            .map(|r| match &r.op {
                Op::Equals(v) => format!("{}={v}", r.key),
                Op::NotEquals(v) => format!("{}!={v}", r.key),
                Op::In(vs) => format!("{} in ({})", r.key, vs.join(",")),
                Op::NotIn(vs) => format!("{} notin ({})", r.key, vs.join(",")),
                Op::Exists => r.key.clone(),
                Op::DoesNotExist => format!("!{}", r.key),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A dotted field of an object as a selector compares it: strings as they are, booleans and
/// numbers in their JSON spelling, absent as empty.
pub fn field(obj: &Value, path: &str) -> String {
    let mut v = obj;
    for part in path.split('.') {
        v = &v[part];
    }
    match v {
        Value::String(s) => s.clone(),
        Value::Null => match path {
            // An absent boolean selects as false (a schedulable node has no field).
            "spec.unschedulable" => "false".into(),
            _ => String::new(),
        },
        other => other.to_string(),
    }
}

/// The field selectors each type supports, besides `metadata.name` and `metadata.namespace`.
pub fn known_fields(resource: &str) -> &'static [&'static str] {
    match resource {
        "pods" => &[
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "nodes" => &["metadata.name", "metadata.namespace", "spec.unschedulable"],
        "events" => &[
            "metadata.name",
            "metadata.namespace",
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "secrets" => &["metadata.name", "metadata.namespace", "type"],
        "namespaces" => &["metadata.name", "metadata.namespace", "status.phase"],
        "replicasets.apps" => &["metadata.name", "metadata.namespace", "status.replicas"],
        _ => &["metadata.name", "metadata.namespace"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}})
    }

    #[test]
    fn label_operators() {
        let s = Selector::labels("app=web,tier in (a, b),env!=prod,owner,!legacy").unwrap();
        assert_eq!(
            s.0,
            vec![
                Requirement {
                    key: "app".into(),
                    op: Op::Equals("web".into())
                },
                Requirement {
                    key: "tier".into(),
                    op: Op::In(vec!["a".into(), "b".into()])
                },
                Requirement {
                    key: "env".into(),
                    op: Op::NotEquals("prod".into())
                },
                Requirement {
                    key: "owner".into(),
                    op: Op::Exists
                },
                Requirement {
                    key: "legacy".into(),
                    op: Op::DoesNotExist
                },
            ]
        );
        assert!(s.matches_labels(&with(json!({"app": "web", "tier": "b", "owner": "x"}))));
        assert!(!s.matches_labels(&with(json!({"app": "web", "tier": "c", "owner": "x"}))));
        assert!(!s.matches_labels(&with(
            json!({"app": "web", "tier": "a", "owner": "x", "legacy": ""})
        )));
        assert!(!s.matches_labels(&with(
            json!({"app": "web", "tier": "a", "env": "prod", "owner": "x"})
        )));
        let n = Selector::labels("app==web,tier notin (a)").unwrap();
        assert!(n.matches_labels(&with(json!({"app": "web"}))));
        assert!(!n.matches_labels(&with(json!({"app": "web", "tier": "a"}))));
        assert!(Selector::labels("a in b").is_err());
    }

    #[test]
    fn field_selectors() {
        let pod = json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}});
        let known = known_fields("pods");
        assert!(
            Selector::fields("spec.nodeName=n1,status.phase!=Succeeded", known)
                .unwrap()
                .matches_fields(&pod)
        );
        assert!(!Selector::fields("metadata.name==q", known)
            .unwrap()
            .matches_fields(&pod));
        assert_eq!(
            Selector::fields("spec.foo=x", known),
            Err("field label not supported: spec.foo".to_string())
        );
        let node = json!({"metadata": {"name": "n"}, "spec": {}});
        let nk = known_fields("nodes");
        assert!(Selector::fields("spec.unschedulable=false", nk)
            .unwrap()
            .matches_fields(&node));
        let cordoned = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert!(Selector::fields("spec.unschedulable=true", nk)
            .unwrap()
            .matches_fields(&cordoned));
    }

    #[test]
    fn label_selector_objects() {
        let sel = json!({"matchLabels": {"app": "x"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]});
        let s = Selector::of_object(&sel).unwrap();
        assert_eq!(s.render(), "app=x,tier in (a,b)");
        assert!(s.matches_labels(&with(json!({"app": "x", "tier": "a"}))));
        assert!(Selector::of_object(&Value::Null).is_none());
        assert!(Selector::of_object(&json!({}))
            .unwrap()
            .matches_labels(&with(json!({}))));
    }
}
