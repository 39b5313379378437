//! The values of a render in the forms its steps read, made once per distinct values and kept:
//! a fleet renders every node with the same values, and converting them for the preset logic
//! (Rhai's `ARGS.values`), for Tera (`values`) and finding their risky strings (`verify`) on
//! every render took a tenth of it. Values are told apart with mapping order counted
//! (`yaml::ordered`), as a render prints them.

use std::sync::{Arc, Mutex};

use anyhow::Result;
use rhai::Dynamic;
use serde_json::Value as Json;
use serde_yaml_ng::Value as Yaml;

use super::dynamic;
use talm_base::error::hinted;

/// Distinct values kept (a REPL session moving between values files).
const KEPT: usize = 4;

/// One values tree, converted.
pub struct Prepared {
    yaml: Yaml,
    /// As JSON (the context of a template written in Rhai).
    pub json: Json,
    /// As the preset logic sees it: `ARGS.values` (cloned into each run).
    pub rhai: Dynamic,
    /// As Tera sees it (its maps and lists are shared, so a render takes it whole).
    pub tera: tera::Value,
    /// Its strings that could break out of a scalar.
    pub risky: talm_base::yaml::risky::Risky,
}

/// Looked up by comparing each kept tree with the caller's (`memo::Memo` takes its key by value:
/// a lookup there would copy the values tree first).
///
/// Listed in [`talm_base::caches::KEPT`].
static KEPT_VALUES: Mutex<Vec<Arc<Prepared>>> = Mutex::new(Vec::new());

/// The prepared form of `values`, kept or made now.
pub fn of(values: &Yaml) -> Result<Arc<Prepared>> {
    let lock = || KEPT_VALUES.lock().unwrap_or_else(|p| p.into_inner());
    {
        let mut kept = lock();
        if let Some(i) = kept
            .iter()
            .position(|p| talm_base::yaml::ordered::same(&p.yaml, values))
        {
            // Most recently used last: the oldest goes first when full.
            let p = kept.remove(i);
            kept.push(p.clone());
            return Ok(p);
        }
    }
    let made = Arc::new(prepare(values)?);
    let mut kept = lock();
    if kept.len() >= KEPT {
        kept.remove(0);
    }
    kept.push(made.clone());
    Ok(made)
}

fn prepare(values: &Yaml) -> Result<Prepared> {
    let json = serde_json::to_value(values).map_err(|e| {
        let message = match odd_key(values, "") {
            Some((path, key)) => {
                let at = if path.is_empty() { "the top level" } else { path.as_str() };
                let kind = match key {
                    Yaml::Sequence(_) => "a list",
                    Yaml::Mapping(_) => "a mapping",
                    Yaml::Null => "null",
                    _ => "tagged",
                };
                format!("values.yaml: {at} has a key that is {kind}; the templates read keys that are text, numbers or booleans")
            }
            None => format!("the merged values cannot be handed to the templates: {e}"),
        };
        hinted(
            message,
            "write the key as text (quote it) in values.yaml or in the value file or --set that gives it",
        )
    })?;
    Ok(Prepared {
        yaml: values.clone(),
        rhai: dynamic::from_json(&json)?,
        tera: tera::Value::from_serializable(&json),
        risky: talm_base::yaml::risky::risky_in("values", &json),
        json,
    })
}

/// The first mapping key under `v` that is a list, a mapping, null or tagged, with the path of
/// the mapping that holds it (`a.b[0]`).
fn odd_key<'a>(v: &'a Yaml, path: &str) -> Option<(String, &'a Yaml)> {
    match v {
        Yaml::Mapping(m) => m.iter().find_map(|(k, x)| match k {
            Yaml::String(s) => odd_key(x, &join(path, s)),
            Yaml::Bool(_) | Yaml::Number(_) => {
                odd_key(x, &join(path, talm_base::yaml::to_string(k).trim_end()))
            }
            _ => Some((path.to_string(), k)),
        }),
        Yaml::Sequence(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, x)| odd_key(x, &format!("{path}[{i}]"))),
        Yaml::Tagged(t) => odd_key(&t.value, path),
        _ => None,
    }
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_by_content_in_order() {
        let y = |t: &str| -> Yaml { serde_yaml_ng::from_str(t).unwrap() };
        let a = of(&y("{zz_prepared_a: 1, b: \"x: y\"}")).unwrap();
        assert!(Arc::ptr_eq(
            &a,
            &of(&y("{zz_prepared_a: 1, b: \"x: y\"}")).unwrap()
        ));
        assert_eq!(a.risky, vec![("values.b".to_string(), "x: y".to_string())]);
        assert_eq!(a.json, serde_json::json!({"zz_prepared_a": 1, "b": "x: y"}));
        // The same entries in another order print otherwise: prepared apart.
        let b = of(&y("{b: \"x: y\", zz_prepared_a: 1}")).unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(
            b.json.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["b", "zz_prepared_a"]
        );
        let err = of(&y("{a: [{b: {[1, 2]: x}}]}")).err().unwrap();
        assert_eq!(
            err.to_string(),
            "values.yaml: a[0].b has a key that is a list; the templates read keys that are text, numbers or booleans"
        );
    }
}
