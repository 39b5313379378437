//! The Tera environment of one project: its templates (by path below `templates/`), the
//! library's (as `talm/...`), and the functions and filters templates may use: `lookup` over the
//! facts of the node being rendered (`current::with_current`, so one compiled environment serves
//! every node), `to_yaml`, `to_json`, `scalar` (free text as a YAML scalar that cannot break
//! out), `indent`, `required`, `fail` (with an optional `hint`, printed as the error's hint instead of
//! "fix the template"). Template errors keep Tera's file:line:column report. Tera
//! bounds recursion itself (components, include cycles, `range`); a render runs watched under
//! the strict profile's time and memory bounds (`sandbox::guard`).

use std::sync::Arc;

use anyhow::Result;
use tera::{Kwargs, State, Tera};

use super::current;
use talm_base::error::hinted;
use talm_wire::facts::Facts;

/// A project's templates, compiled once, ready to render against any node's facts.
pub struct Engine {
    tera: Arc<Tera>,
}

/// The widest `indent` a template may ask for.
const MAX_INDENT: i64 = 1024;

thread_local! {
    /// The `hint` of the `fail()` that stopped the render running on this thread.
    static FAIL_HINT: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// A Tera error as talm prints it; `hint` is the template's own (`fail(hint=...)`), else the
/// template is named as what to fix.
fn tera_err_with(e: tera::Error, hint: Option<String>) -> anyhow::Error {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        text.push_str(&format!("\n{s}"));
        source = s.source();
    }
    hinted(
        text,
        hint.unwrap_or_else(|| "fix the template at the position shown".into()),
    )
}

fn tera_err(e: tera::Error) -> anyhow::Error {
    tera_err_with(e, None)
}

fn msg(m: impl ToString) -> tera::Error {
    tera::Error::message(m)
}

/// `value | to_yaml`: the value as YAML (2-space block style), without the trailing newline.
fn to_yaml(value: &tera::Value, _: Kwargs, _: &State) -> tera::TeraResult<String> {
    let v: serde_yaml_ng::Value = serde_yaml_ng::to_value(value).map_err(msg)?;
    let text = serde_yaml_ng::to_string(&v).map_err(msg)?;
    Ok(text.trim_end_matches('\n').to_string())
}

/// `value | to_json`: compact JSON, as Go's `toJson` prints it (`["a","b"]`, map keys sorted,
/// `<>&` escaped).
fn to_json(value: &tera::Value, _: Kwargs, _: &State) -> tera::TeraResult<String> {
    let v: serde_json::Value = serde_json::to_value(value).map_err(msg)?;
    Ok(talm_base::gojson::compact(&v))
}

/// `value | scalar`: a string as a YAML scalar — as it is when plain YAML reads it back as the
/// same string, double-quoted otherwise (so quotes, line breaks and `: ` cannot break out);
/// numbers and booleans as they are.
fn scalar(value: &tera::Value, _: Kwargs, _: &State) -> tera::TeraResult<String> {
    match value.as_str() {
        Some(s) if talm_base::yaml::plain_ok(s) => Ok(s.to_string()),
        Some(s) => Ok(talm_base::yaml::double_quoted(s)),
        None => Ok(value.to_string()),
    }
}

/// `text | indent(width=N, first=false)`: indents every line but the first (or all when
/// `first=true`) by N spaces; blank lines stay empty.
fn indent(value: &str, kwargs: Kwargs, _: &State) -> tera::TeraResult<String> {
    let width = kwargs.get::<i64>("width")?.unwrap_or(2);
    if !(0..=MAX_INDENT).contains(&width) {
        return Err(msg(format!(
            "indent width {width} is out of range (0 to {MAX_INDENT})"
        )));
    }
    let width = width as usize;
    let first = kwargs.get::<bool>("first")?.unwrap_or(false);
    let pad = " ".repeat(width);
    let mut out = String::with_capacity(value.len() + 16);
    for (i, line) in value.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if (i > 0 || first) && !line.is_empty() {
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    Ok(out)
}

/// `value | required(message="...")`: fails with the message when the value is null or "".
fn required(value: &tera::Value, kwargs: Kwargs, _: &State) -> tera::TeraResult<tera::Value> {
    let empty = value.is_none() || value.as_str().is_some_and(str::is_empty);
    if empty {
        let message = kwargs
            .get::<&str>("message")?
            .unwrap_or("a required value is empty");
        return Err(msg(message));
    }
    Ok(value.clone())
}

impl Engine {
    /// Builds the environment from `(name, source)` pairs.
    pub fn new<'a>(templates: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Engine> {
        let mut tera = Tera::default();
        tera.autoescape_on(Vec::<&'static str>::new());
        tera.register_filter("to_yaml", to_yaml);
        tera.register_filter("to_json", to_json);
        tera.register_filter("scalar", scalar);
        tera.register_filter("indent", indent);
        tera.register_filter("required", required);
        tera.register_function(
            "fail",
            |kwargs: Kwargs, _: &State| -> tera::TeraResult<tera::Value> {
                let message = kwargs
                    .get::<&str>("message")?
                    .unwrap_or("template called fail()");
                let hint = kwargs.get::<&str>("hint")?.filter(|h| !h.is_empty());
                FAIL_HINT.with(|h| *h.borrow_mut() = hint.map(str::to_string));
                Err(msg(message))
            },
        );
        tera.register_function(
            "lookup",
            |kwargs: Kwargs, _: &State| -> tera::TeraResult<tera::Value> {
                let kind = kwargs.must_get::<&str>("kind")?;
                let namespace = kwargs.get::<&str>("namespace")?.unwrap_or("");
                let id = kwargs.get::<&str>("id")?.unwrap_or("");
                Ok(tera::Value::from_serializable(&current::lookup_current(
                    kind, namespace, id,
                )))
            },
        );
        tera.add_raw_templates(templates).map_err(tera_err)?;
        Ok(Engine {
            tera: Arc::new(tera),
        })
    }

    /// Renders a template with the given context for the node of `facts`.
    pub fn render(&self, template: &str, ctx: tera::Context, facts: &Arc<Facts>) -> Result<String> {
        if !self.tera.get_template_names().any(|n| n == template) {
            return Err(hinted(
                format!("template {template} not found"),
                "templates are named by their path below templates/, e.g. controlplane.yaml",
            ));
        }
        let tera = Arc::clone(&self.tera);
        let name = template.to_string();
        let shown = match template.strip_prefix("talm/") {
            Some(lib) => format!("charts/talm/templates/{lib}"),
            None => format!("templates/{template}"),
        };
        let facts = facts.clone();
        crate::sandbox::guard::watched(&shown, &crate::sandbox::Limits::TEMPLATE, move || {
            FAIL_HINT.with(|h| h.borrow_mut().take());
            current::with_current(&facts, || tera.render(&name, &ctx))
                .map_err(|e| tera_err_with(e, FAIL_HINT.with(|h| h.borrow_mut().take())))
        })?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn engine(templates: &[(&str, &str)]) -> Engine {
        Engine::new(templates.iter().copied()).unwrap()
    }

    /// A context from JSON.
    fn ctx(v: serde_json::Value) -> tera::Context {
        tera::Context::from_serialize(&v).unwrap()
    }

    fn facts() -> Arc<Facts> {
        Arc::new(
            Facts::parse(
                "resources:\n  links:\n    - metadata: {id: eth0}\n      spec: {kind: physical, mtu: 1500}\n",
                "facts.yaml",
            )
            .unwrap(),
        )
    }

    #[test]
    fn a_fail_hint_replaces_fix_the_template() {
        let e = engine(&[(
            "t.yaml",
            "{% if values.hinted %}{{ fail(message=\"x is empty\", hint=\"set x in values.yaml\") }}{% else %}{{ fail(message=\"y\") }}{% endif %}",
        )]);
        let hint = |v: serde_json::Value| {
            let err = e.render("t.yaml", ctx(v), &facts()).unwrap_err();
            err.downcast_ref::<talm_base::error::Hinted>()
                .unwrap()
                .hints
                .join("; ")
        };
        assert_eq!(
            hint(serde_json::json!({"values": {"hinted": true}})),
            "set x in values.yaml"
        );
        // The next render's fail() without a hint does not inherit the last one's.
        assert_eq!(
            hint(serde_json::json!({"values": {"hinted": false}})),
            "fix the template at the position shown"
        );
    }

    #[test]
    fn functions_and_filters() {
        let e = engine(&[(
            "t.yaml",
            "{% set l = lookup(kind=\"links\", id=\"eth0\") %}mtu: {{ l.spec.mtu }}\nnone: {{ lookup(kind=\"links\", id=\"x\") | length }}\nv:\n  {{ values.m | to_yaml | indent(width=2) }}\nr: {{ values.name | required(message=\"name is required\") }}\n",
        )]);
        let c = ctx(serde_json::json!({"values": {"m": {"b": [1, 2], "a": "x"}, "name": "n"}}));
        assert_eq!(
            e.render("t.yaml", c, &facts()).unwrap(),
            "mtu: 1500\nnone: 0\nv:\n  b:\n  - 1\n  - 2\n  a: x\nr: n\n"
        );
        let err = e
            .render(
                "t.yaml",
                ctx(serde_json::json!({"values": {"m": 1, "name": ""}})),
                &facts(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("name is required"), "{err}");
    }

    #[test]
    fn errors_name_template_and_position() {
        let e = engine(&[("t.yaml", "a: {{ values.nope }}\n")]);
        let err = e
            .render("t.yaml", ctx(serde_json::json!({"values": {}})), &facts())
            .unwrap_err();
        assert!(err.to_string().contains("t.yaml:1:"), "{err}");
        assert!(e
            .render("missing.yaml", ctx(serde_json::json!({})), &facts())
            .unwrap_err()
            .to_string()
            .contains("template missing.yaml not found"));
        let err = Engine::new([("bad.yaml", "{{ oops ")]).err().unwrap();
        assert!(err.to_string().contains("bad.yaml:1:"), "{err}");
        let e = engine(&[("f.yaml", "{{ fail(message=\"stop here\") }}")]);
        assert!(e
            .render("f.yaml", ctx(serde_json::json!({})), &facts())
            .unwrap_err()
            .to_string()
            .contains("stop here"));
    }
}
