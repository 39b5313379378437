//! What a render must be before anyone sees it: YAML that parses, in which no value (from
//! values, node facts or the preset logic) changed the structure — a value printed verbatim
//! outside a scalar that holds it (a newline, a quote, `: ` breaking out) is an injection.

use anyhow::Result;

use talm_base::error::hinted;
use talm_base::yaml::located::{self, Kind, Node};
use talm_base::yaml::risky::Risky;

fn scalar_ranges(n: &Node, out: &mut Vec<(usize, usize)>) {
    match &n.kind {
        Kind::Scalar(s) => out.push((s.start, s.end)),
        Kind::Seq(items) => items.iter().for_each(|i| scalar_ranges(i, out)),
        Kind::Map(entries) => {
            for (k, v) in entries {
                out.push((k.start, k.end));
                scalar_ranges(v, out);
            }
        }
        Kind::Alias => {}
    }
}

/// Whether byte `at` of `text` lies in a comment.
fn in_comment(text: &str, at: usize) -> bool {
    let line = &text[located::line_start(text, at)..at];
    line.starts_with('#') || line.contains(" #") || line.contains("\t#")
}

/// Checks the output of `template` against the risky strings of its inputs ([`risky_in`]).
pub fn check(template: &str, output: &str, inputs: &[&Risky]) -> Result<()> {
    // Parsed through the kept streams: sealing the render (`template`) reads the same text.
    if let Err(e) = talm_base::yaml::parsed(output) {
        let at = e
            .location()
            .map(|l| format!(" at line {}", l.line()))
            .unwrap_or_default();
        return Err(hinted(
            format!("{template} rendered text that is not valid YAML{at}: {e}"),
            "a value holding a quote, a newline or `: ` may have broken the document: check the values printed near that line, and print them through `| to_json` in the template",
        ));
    }
    if inputs.iter().all(|r| r.is_empty()) {
        return Ok(());
    }
    let ranges = match located::locate(output) {
        Ok(l) => {
            let mut r = Vec::new();
            l.docs.iter().for_each(|d| scalar_ranges(d, &mut r));
            r
        }
        Err(_) => return Ok(()),
    };
    for (path, value) in inputs.iter().flat_map(|r| r.iter()) {
        for (at, _) in output.match_indices(value.as_str()) {
            let end = at + value.len();
            let held = ranges.iter().any(|&(s, e)| s <= at && end <= e);
            let commented = !value.contains(['\n', '\r']) && in_comment(output, at);
            if !held && !commented {
                return Err(hinted(
                    format!(
                        "{template}: the value at {path} would change the structure of the rendered document: it holds {} and is printed as is",
                        what(value)
                    ),
                    format!("fix the value at {path}; a template that prints free text should pass it through `| to_json`"),
                ));
            }
        }
    }
    Ok(())
}

fn what(v: &str) -> &'static str {
    if v.contains(['\n', '\r']) {
        "a line break"
    } else if v.contains(['"', '\'']) {
        "a quote"
    } else if v.contains(": ") || v.ends_with(':') {
        "`: `"
    } else if v.contains(" #") || v.starts_with('#') {
        "`#` (a comment)"
    } else {
        "a leading YAML indicator"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use talm_base::yaml::risky::risky_in;

    #[test]
    fn injected_values_are_refused() {
        let values = json!({"image": "x\nevil: true", "ok": "a: b", "c": "w: x"});
        let values = risky_in("values", &values);
        let ctx = [&values];
        let err = check("templates/cp.yaml", "image: x\nevil: true\n", &ctx).unwrap_err();
        assert!(
            err.to_string()
                .contains("the value at values.image would change the structure"),
            "{err}"
        );
        // The same value held inside a quoted scalar, or only in a comment, is fine.
        check(
            "t",
            "image: \"x\\nevil: true\"\nok: \"a: b\"\n# w: x\n",
            &ctx,
        )
        .unwrap();
        let err = check("t", "ok: a: b\n", &ctx).unwrap_err();
        assert!(err.to_string().contains("not valid YAML"), "{err}");
        // Keys are values too.
        let sysctls = json!({"extraSysctls": {"a: \"1\"\n  evil": "2"}});
        let err = check(
            "t",
            "sysctls:\n  a: \"1\"\n  evil: \"2\"\n",
            &[&risky_in("values", &sysctls)],
        )
        .unwrap_err();
        assert!(err.to_string().contains("(the key"), "{err}");
        // Paths through lists and maps name the leaf.
        let nested = json!({"a": [{"ok": "x"}, {"b": "y\nevil: true"}]});
        let err = check("t", "b: y\nevil: true\n", &[&risky_in("values", &nested)]).unwrap_err();
        assert!(err.to_string().contains("at values.a[1].b would"), "{err}");
    }
}
