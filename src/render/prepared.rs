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

use super::{dynamic, verify};
use crate::error::hinted;

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
    pub risky: verify::Risky,
}

/// Looked up by comparing each kept tree with the caller's (`memo::Memo` takes its key by value:
/// a lookup there would copy the values tree first).
static KEPT_VALUES: Mutex<Vec<Arc<Prepared>>> = Mutex::new(Vec::new());

/// The prepared form of `values`, kept or made now.
pub fn of(values: &Yaml) -> Result<Arc<Prepared>> {
    let lock = || KEPT_VALUES.lock().unwrap_or_else(|p| p.into_inner());
    {
        let mut kept = lock();
        if let Some(i) = kept
            .iter()
            .position(|p| crate::yaml::ordered::same(&p.yaml, values))
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
        hinted(
            format!("the merged values cannot be handed to the templates: {e}"),
            "keys in values.yaml (and --set) must be text, numbers or booleans",
        )
    })?;
    Ok(Prepared {
        yaml: values.clone(),
        rhai: dynamic::from_json(&json)?,
        tera: tera::Value::from_serializable(&json),
        risky: verify::risky_in("values", &json),
        json,
    })
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
        let err = of(&y("{[1]: x}")).err().unwrap();
        assert!(err.to_string().contains("cannot be handed"), "{err}");
    }
}
