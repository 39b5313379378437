//! Kubernetes-style JSONPath templates, as talosctl evaluates them for `get -o jsonpath=...`
//! and for the print columns of resource definitions: literal text with `{...}` expressions
//! (`.a.b`, `['k.e.y']`, `[0]`, `[-1]`, `[1:3]`, `[*]`, `..name`, `[?(@.x == "y")]`,
//! `{range ...}...{end}`). `render` is client-go's `Execute` with missing keys allowed (a
//! print column): they give nothing, several results are joined by spaces, maps and lists as
//! compact JSON, scalars as text; `results` is its `FindResults` without them (`get -o
//! jsonpath`): every result on its own, and a missing key is an error.

use anyhow::{bail, Result};
use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    All,
    Descend(String),
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    path: Vec<Step>,
    op: Option<(String, Value)>,
}

/// A parsed template part.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Path(Vec<Step>),
    Range(Vec<Step>, Vec<Part>),
}

/// A parsed template, ready to evaluate against many objects.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`; errors name the expression.
    pub fn parse(text: &str) -> Result<Template> {
        let mut tokens = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                tokens.push((false, rest[..open].to_string()));
            }
            let close = matching_brace(&rest[open..])
                .ok_or_else(|| anyhow::anyhow!("unclosed action in template {text:?}"))?;
            tokens.push((true, rest[open + 1..open + close].trim().to_string()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            tokens.push((false, rest.to_string()));
        }
        let mut it = tokens.into_iter();
        let parts = parse_parts(&mut it, text, false)?;
        Ok(Template { parts })
    }

    /// The template evaluated over `v`.
    pub fn render(&self, v: &Value) -> String {
        let mut out = String::new();
        render_parts(&self.parts, v, &mut out);
        out
    }

    /// Each value the template finds in `v`, in order; its literal text counts as results too.
    /// A key that is missing is an error, as client-go's `FindResults` without
    /// `AllowMissingKeys` (talosctl's `-o jsonpath`): `KEY is not found`.
    pub fn results(&self, v: &Value) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        results_of(&self.parts, v, &mut out)?;
        Ok(out)
    }
}

fn matching_brace(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
    }
    None
}

fn parse_parts(
    it: &mut impl Iterator<Item = (bool, String)>,
    text: &str,
    in_range: bool,
) -> Result<Vec<Part>> {
    let mut parts = Vec::new();
    while let Some((action, body)) = it.next() {
        if !action {
            parts.push(Part::Text(body));
            continue;
        }
        if body == "end" {
            if in_range {
                return Ok(parts);
            }
            bail!("{{end}} without {{range}} in template {text:?}");
        }
        if let Some(expr) = body.strip_prefix("range ") {
            let path = parse_path(expr.trim())?;
            let inner = parse_parts(it, text, true)?;
            parts.push(Part::Range(path, inner));
            continue;
        }
        if let Some(lit) = body.strip_prefix('"').and_then(|b| b.strip_suffix('"')) {
            parts.push(Part::Text(unescape(lit)));
            continue;
        }
        parts.push(Part::Path(parse_path(&body)?));
    }
    if in_range {
        bail!("{{range}} without {{end}} in template {text:?}");
    }
    Ok(parts)
}

fn unescape(s: &str) -> String {
    s.replace("\\n", "\n").replace("\\t", "\t")
}

/// Parses `.a.b[0]['c']..d[*]` (a leading `$` or `@` is the object itself).
fn parse_path(expr: &str) -> Result<Vec<Step>> {
    let bad = |why: &str| anyhow::anyhow!("invalid JSONPath {expr:?}: {why}");
    let s = expr.trim_start_matches(['$', '@']);
    let b = s.as_bytes();
    let mut i = 0;
    let mut steps = Vec::new();
    let ident_end = |from: usize| {
        let mut j = from;
        while j < b.len() && !matches!(b[j], b'.' | b'[') {
            j += 1;
        }
        j
    };
    while i < b.len() {
        match b[i] {
            b'.' if b.get(i + 1) == Some(&b'.') => {
                let end = ident_end(i + 2);
                steps.push(Step::Descend(s[i + 2..end].to_string()));
                i = end;
            }
            b'.' => {
                let end = ident_end(i + 1);
                let name = &s[i + 1..end];
                if name == "*" {
                    steps.push(Step::All);
                } else if !name.is_empty() {
                    steps.push(Step::Field(name.to_string()));
                }
                i = end;
            }
            b'[' => {
                let close = bracket_end(&s[i..]).ok_or_else(|| bad("unclosed ["))? + i;
                steps.push(parse_bracket(&s[i + 1..close]).map_err(|e| bad(&e))?);
                i = close + 1;
            }
            _ => {
                let end = ident_end(i);
                steps.push(Step::Field(s[i..end].to_string()));
                i = end;
            }
        }
    }
    Ok(steps)
}

fn bracket_end(s: &str) -> Option<usize> {
    let mut depth = 0;
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Result<Step, String> {
    let t = inner.trim();
    if t == "*" {
        return Ok(Step::All);
    }
    if let Some(q) = t
        .strip_prefix('\'')
        .and_then(|x| x.strip_suffix('\''))
        .or_else(|| t.strip_prefix('"').and_then(|x| x.strip_suffix('"')))
    {
        return Ok(Step::Field(q.to_string()));
    }
    if let Some(f) = t.strip_prefix("?(").and_then(|x| x.strip_suffix(')')) {
        return parse_filter(f.trim()).map(|f| Step::Filter(Box::new(f)));
    }
    if let Some((a, b)) = t.split_once(':') {
        let num = |x: &str| -> Result<Option<i64>, String> {
            let x = x.trim();
            if x.is_empty() {
                Ok(None)
            } else {
                x.parse()
                    .map(Some)
                    .map_err(|_| format!("bad slice bound {x:?}"))
            }
        };
        let b = b.split(':').next().unwrap_or("");
        return Ok(Step::Slice(num(a)?, num(b)?));
    }
    t.parse()
        .map(Step::Index)
        .map_err(|_| format!("bad index {t:?}"))
}

fn parse_filter(f: &str) -> Result<Filter, String> {
    for op in ["==", "!=", "<=", ">=", "<", ">"] {
        if let Some((l, r)) = f.split_once(op) {
            let r = r.trim();
            let lit = if let Some(s) = r
                .strip_prefix('\'')
                .and_then(|x| x.strip_suffix('\''))
                .or_else(|| r.strip_prefix('"').and_then(|x| x.strip_suffix('"')))
            {
                Value::String(s.to_string())
            } else {
                serde_json::from_str(r).map_err(|_| format!("bad filter value {r:?}"))?
            };
            let path = parse_path(l.trim()).map_err(|e| e.to_string())?;
            return Ok(Filter {
                path,
                op: Some((op.to_string(), lit)),
            });
        }
    }
    let path = parse_path(f).map_err(|e| e.to_string())?;
    Ok(Filter { path, op: None })
}

/// Every value `steps` reaches from `v`.
fn select<'a>(v: &'a Value, steps: &[Step]) -> Vec<&'a Value> {
    let mut cur = vec![v];
    for step in steps {
        let mut next = Vec::new();
        for x in cur {
            apply(x, step, &mut next);
        }
        cur = next;
    }
    cur
}

fn index(len: usize, i: i64) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

fn apply<'a>(x: &'a Value, step: &Step, out: &mut Vec<&'a Value>) {
    match (step, x) {
        (Step::Field(f), Value::Object(m)) => out.extend(m.get(f)),
        (Step::Index(i), Value::Array(a)) => out.extend(index(a.len(), *i).map(|i| &a[i])),
        (Step::Slice(from, to), Value::Array(a)) => {
            let len = a.len() as i64;
            let clamp = |b: i64| if b < 0 { (len + b).max(0) } else { b.min(len) };
            let from = from.map_or(0, clamp);
            let to = to.map_or(len, clamp);
            if from < to {
                out.extend(&a[from as usize..to as usize]);
            }
        }
        (Step::All, Value::Array(a)) => out.extend(a.iter()),
        (Step::All, Value::Object(m)) => out.extend(m.values()),
        (Step::Descend(name), _) => descend(x, name, out),
        (Step::Filter(f), Value::Array(a)) => out.extend(a.iter().filter(|e| keep(e, f))),
        _ => {}
    }
}

fn descend<'a>(x: &'a Value, name: &str, out: &mut Vec<&'a Value>) {
    match x {
        Value::Object(m) => {
            if let Some(v) = m.get(name) {
                out.push(v);
            }
            for v in m.values() {
                descend(v, name, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| descend(v, name, out)),
        _ => {}
    }
}

fn keep(e: &Value, f: &Filter) -> bool {
    let found = select(e, &f.path);
    let Some((op, lit)) = &f.op else {
        return !found.is_empty();
    };
    found.iter().any(|v| {
        let ord = match (v, lit) {
            (Value::Number(a), Value::Number(b)) => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(a, b)| a.partial_cmp(&b)),
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            _ => None,
        };
        use std::cmp::Ordering::*;
        match op.as_str() {
            "==" => *v == lit,
            "!=" => *v != lit,
            "<" => ord == Some(Less),
            "<=" => matches!(ord, Some(Less | Equal)),
            ">" => ord == Some(Greater),
            ">=" => matches!(ord, Some(Greater | Equal)),
            _ => false,
        }
    })
}

/// A value as client-go's JSONPath prints a result: text for scalars, compact JSON for maps and
/// lists.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Bool(_) | Value::Number(_) => v.to_string(),
        _ => crate::gojson::compact(v),
    }
}

/// [`select`], where a field that none of the values has is an error (client-go's `evalField`
/// when missing keys are not allowed).
fn select_found<'a>(v: &'a Value, steps: &[Step]) -> Result<Vec<&'a Value>> {
    let mut cur = vec![v];
    for step in steps {
        let mut next = Vec::new();
        for x in &cur {
            apply(x, step, &mut next);
        }
        if let Step::Field(name) = step {
            if !cur.is_empty() && next.is_empty() {
                bail!("{name} is not found");
            }
        }
        cur = next;
    }
    Ok(cur)
}

fn results_of(parts: &[Part], v: &Value, out: &mut Vec<Value>) -> Result<()> {
    for p in parts {
        match p {
            Part::Text(t) => out.push(Value::String(t.clone())),
            Part::Path(steps) => out.extend(select_found(v, steps)?.into_iter().cloned()),
            Part::Range(steps, inner) => {
                for x in select_found(v, steps)? {
                    match x {
                        Value::Array(a) => {
                            for item in a {
                                results_of(inner, item, out)?;
                            }
                        }
                        other => results_of(inner, other, out)?,
                    }
                }
            }
        }
    }
    Ok(())
}

fn render_parts(parts: &[Part], v: &Value, out: &mut String) {
    for p in parts {
        match p {
            Part::Text(t) => out.push_str(t),
            Part::Path(steps) => {
                let texts: Vec<String> = select(v, steps).into_iter().map(text).collect();
                out.push_str(&texts.join(" "));
            }
            Part::Range(steps, inner) => {
                for x in select(v, steps) {
                    let items: Vec<&Value> = match x {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for item in items {
                        render_parts(inner, item, out);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval(t: &str, v: &Value) -> String {
        Template::parse(t).unwrap().render(v)
    }

    #[test]
    fn paths() {
        let v = json!({
            "metadata": {"id": "eth0", "labels": {"a.b/c": "x"}},
            "spec": {"mtu": 1500, "up": true, "addrs": ["10.0.0.1/24", "fd00::1/64"],
                     "routes": [{"dst": "", "gw": "10.0.0.254"}, {"dst": "10.1.0.0/16", "gw": "10.0.0.253"}]}
        });
        let table: &[(&str, &str)] = &[
            ("{.metadata.id}", "eth0"),
            ("{.spec.mtu}", "1500"),
            ("{.spec.up}", "true"),
            ("{.spec.addrs[0]}", "10.0.0.1/24"),
            ("{.spec.addrs[-1]}", "fd00::1/64"),
            ("{.spec.addrs[*]}", "10.0.0.1/24 fd00::1/64"),
            ("{.spec.addrs[0:1]}", "10.0.0.1/24"),
            ("{.spec.routes[*].gw}", "10.0.0.254 10.0.0.253"),
            ("{.spec.routes[?(@.dst == \"\")].gw}", "10.0.0.254"),
            ("{..gw}", "10.0.0.254 10.0.0.253"),
            ("{.metadata.labels['a.b/c']}", "x"),
            ("{.spec.missing}", ""),
            ("id={.metadata.id} mtu={.spec.mtu}", "id=eth0 mtu=1500"),
            (
                "{range .spec.routes[*]}{.gw}{\"\\n\"}{end}",
                "10.0.0.254\n10.0.0.253\n",
            ),
            ("{.spec.addrs}", r#"["10.0.0.1/24","fd00::1/64"]"#),
            (
                "{.spec.routes[1]}",
                r#"{"dst":"10.1.0.0/16","gw":"10.0.0.253"}"#,
            ),
        ];
        for (t, want) in table {
            assert_eq!(eval(t, &v), *want, "{t}");
        }
    }

    /// The unusual print columns Talos declares.
    #[test]
    fn talos_print_columns() {
        assert_eq!(eval("{@}", &json!("controlplane")), "controlplane");
        assert_eq!(
            eval("{.aliases[:]}", &json!({"aliases": ["a", "b"]})),
            "a b"
        );
        let pod = json!({"conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}]});
        assert_eq!(
            eval("{.conditions[?(@.type==\"Ready\")].status}", &pod),
            "False"
        );
    }

    #[test]
    fn results_are_each_value_found_and_each_literal() {
        let v = json!({"a": [1, {"b": "x"}], "c": "y"});
        let t = Template::parse("{.a[*]}-{.c}{\"\\n\"}{.a[*].b}").unwrap();
        assert_eq!(
            t.results(&v).unwrap(),
            vec![
                json!(1),
                json!({"b": "x"}),
                json!("-"),
                json!("y"),
                json!("\n"),
                json!("x")
            ]
        );
        // A key none of the values has is an error (a print column's render says nothing).
        let t = Template::parse("{.c}{.spec.missing}").unwrap();
        assert_eq!(t.results(&v).unwrap_err().to_string(), "spec is not found");
        let t = Template::parse("{range .a[*]}{.nope}{end}").unwrap();
        assert_eq!(t.results(&v).unwrap_err().to_string(), "nope is not found");
        assert_eq!(eval("{.spec.missing}", &v), "");
    }

    #[test]
    fn bad_templates_are_errors() {
        for t in ["{.a", "{range .a}x", "{end}", "{.a[x]}"] {
            assert!(Template::parse(t).is_err(), "{t}");
        }
    }
}
