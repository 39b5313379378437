//! The `-o` of commands whose output is data, as one value: `write_out(output, items, f)`
//! prints the items as the table `f(items)` builds (`table`, the default), as indented JSON,
//! as YAML, or through a JSONPath template (`jsonpath=EXPR`, one line per item); `data_out`
//! is the data half on its own.

use anyhow::Result;
use rhai::{Dynamic, Engine, EvalAltResult, FnPtr, FuncRegistration, NativeCallContext};

use crate::runtime::native;
use crate::talos::resources::Output;

/// `-o` as scripts hold it: `""` (a script run without the flag) is the table.
pub fn parse(output: &str) -> Result<Output> {
    if output.is_empty() {
        return Ok(Output::Table);
    }
    Output::parse(output)
}

/// The items in a data format (`None` for the table, which the script builds).
pub fn data(value: &Dynamic, output: &Output) -> Result<Option<String>> {
    Ok(Some(match output {
        Output::Table => return Ok(None),
        Output::Json => {
            let v: serde_json::Value = rhai::serde::from_dynamic(value)?;
            serde_json::to_string_pretty(&v)? + "\n"
        }
        Output::Yaml => {
            let v: serde_yaml_ng::Value = rhai::serde::from_dynamic(value)?;
            crate::yaml::to_string(&v)
        }
        Output::JsonPath(t) => {
            let v: serde_json::Value = rhai::serde::from_dynamic(value)?;
            let items = match v {
                serde_json::Value::Array(items) => items,
                one => vec![one],
            };
            items.iter().map(|i| t.render(i) + "\n").collect()
        }
    }))
}

fn write_out(
    ctx: &NativeCallContext,
    output: &str,
    items: Dynamic,
    f: &FnPtr,
) -> Result<(), Box<EvalAltResult>> {
    let output = native(|| parse(output))?;
    if let Some(text) = native(|| data(&items, &output))? {
        return native(|| crate::runtime::log::out(&text));
    }
    let table = f.call_within_context::<Dynamic>(ctx, (items,))?;
    if table.is_unit() {
        return Ok(());
    }
    native(|| match table.clone().into_string() {
        Ok(text) => crate::runtime::log::out(&text),
        Err(kind) => Err(crate::error::hinted(
            format!("the table of write_out returned {table} ({kind}), not text"),
            "return the table's text (`table(rows)`), or () after printing it with out()",
        )),
    })
}

pub fn register(engine: &mut Engine) {
    FuncRegistration::new("write_out")
        .with_comments(["/// Prints `items` as the command's `-o` asks (`output`: table, json, yaml or jsonpath=EXPR; \"\" is table): the table is what `f(items)` returns (text, or () when it printed itself); JSON is indented, JSONPath renders once per item."])
        .register_into_engine(engine, |ctx: NativeCallContext, output: &str, items: Dynamic, f: FnPtr| {
            write_out(&ctx, output, items, &f)
        });
    FuncRegistration::new("data_out")
        .with_comments([
            "/// A value as `-o json` (indented), `-o yaml` or `-o jsonpath=EXPR` prints it.",
        ])
        .register_into_engine(engine, |value: Dynamic, output: &str| {
            native(|| match data(&value, &parse(output)?)? {
                Some(text) => Ok(text),
                None => Err(crate::error::hinted(
                    "data_out prints data, not the table",
                    "use write_out(output, items, |items| table(rows)) for the table",
                )),
            })
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list() -> Dynamic {
        let one = |n: &str, v: i64| {
            let mut m = rhai::Map::new();
            m.insert("node".into(), n.into());
            m.insert("v".into(), v.into());
            Dynamic::from(m)
        };
        Dynamic::from(vec![one("a", 1), one("b", 2)])
    }

    fn shown(output: &str) -> Option<String> {
        data(&list(), &parse(output).unwrap()).unwrap()
    }

    #[test]
    fn output_is_one_value() {
        assert_eq!(shown(""), None);
        assert_eq!(shown("table"), None);
        assert_eq!(
            shown("json").unwrap(),
            "[\n  {\n    \"node\": \"a\",\n    \"v\": 1\n  },\n  {\n    \"node\": \"b\",\n    \"v\": 2\n  }\n]\n"
        );
        assert_eq!(
            shown("yaml").unwrap(),
            "- node: a\n  v: 1\n- node: b\n  v: 2\n"
        );
        assert_eq!(shown("jsonpath={.node}={.v}").unwrap(), "a=1\nb=2\n");
        assert!(parse("xml").is_err());
    }
}
