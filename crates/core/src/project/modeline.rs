//! Node-file modelines: `# talm: nodes=[...], endpoints=[...], templates=[...]`, written and
//! found the way the Go talm does, with its error messages.

use anyhow::{bail, Result};

use talm_base::error::hinted;

pub const PREFIX: &str = "# talm: ";

/// What a modeline says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Modeline {
    pub nodes: Vec<String>,
    pub endpoints: Vec<String>,
    pub templates: Vec<String>,
}

fn json_list(items: &[String]) -> String {
    talm_base::gojson::compact(&serde_json::Value::from(items.to_vec()))
}

impl Modeline {
    /// The modeline text (no trailing newline): keys in the order nodes, endpoints, templates.
    pub fn render(&self) -> String {
        format!(
            "{PREFIX}nodes={}, endpoints={}, templates={}",
            json_list(&self.nodes),
            json_list(&self.endpoints),
            json_list(&self.templates)
        )
    }

    /// Parses one modeline.
    pub fn parse(line: &str) -> Result<Modeline> {
        let line = line.trim();
        let Some(body) = line.strip_prefix(PREFIX) else {
            bail!("modeline prefix not found");
        };
        let mut m = Modeline::default();
        for part in split_parts(body)? {
            let part = part.trim();
            let Some((key, value)) = part.split_once('=') else {
                bail!("invalid format of modeline part: {part}");
            };
            let key = key.trim();
            let value = value.trim();
            let list: Option<Vec<String>> = serde_json::from_str(value).map_err(|e| {
                anyhow::anyhow!("error parsing JSON array for key {key}, value {value}: {e}")
            })?;
            let list = list.unwrap_or_default();
            match key {
                "nodes" => m.nodes = list,
                "endpoints" => m.endpoints = list,
                "templates" => m.templates = list,
                _ => {}
            }
        }
        Ok(m)
    }
}

/// Splits on commas outside brackets and double-quoted strings.
fn split_parts(body: &str) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    for c in body.chars() {
        if in_str {
            cur.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                cur.push(c);
            }
            '[' => {
                depth += 1;
                cur.push(c);
            }
            ']' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    parts.push(cur);
    Ok(parts)
}

/// A node file taken apart: comments above the modeline, the modeline, and the body after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFile {
    pub leading: Vec<String>,
    pub modeline: Modeline,
    pub body: String,
}

/// Finds and parses the modeline of a node file's text; `file` names it in errors.
pub fn find(text: &str, file: &str) -> Result<NodeFile> {
    let mut leading = Vec::new();
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    for (i, raw) in lines.iter().enumerate() {
        let line = raw.trim_end_matches(['\n', '\r']);
        let trimmed = line.trim();
        if trimmed.starts_with("# talm:") {
            let modeline = Modeline::parse(trimmed).map_err(|e| {
                hinted(
                    format!("{file}:{}: {e}", i + 1),
                    "a modeline looks like: # talm: nodes=[\"10.0.0.1\"], endpoints=[\"10.0.0.1\"], templates=[\"templates/controlplane.yaml\"]",
                )
            })?;
            for (key, list) in [
                ("nodes", &modeline.nodes),
                ("endpoints", &modeline.endpoints),
            ] {
                for (n, addr) in list.iter().enumerate() {
                    if let Err(e) = talm_base::address::check(addr) {
                        return Err(hinted(
                            format!("{file}:{}: modeline {key}[{n}] {addr:?} is not a node address: {e}", i + 1),
                            "nodes and endpoints are IP addresses or DNS names, with an optional port",
                        ));
                    }
                }
            }
            let body = lines[i + 1..].concat();
            check_body(&body, file, i + 1)?;
            return Ok(NodeFile {
                leading,
                modeline,
                body,
            });
        }
        if trimmed.is_empty() || trimmed.starts_with('#') {
            leading.push(line.to_string());
            continue;
        }
        if lines[i + 1..].iter().any(|l| l.starts_with("# talm:")) {
            return Err(hinted(
                format!("{file}: modeline found below non-comment content: first non-comment line was {line:?}"),
                "move the `# talm: ...` line to the top of the file, above the YAML body",
            ));
        }
        break;
    }
    Err(hinted(
        format!("{file}: modeline not found"),
        "node files start with a `# talm: nodes=[...]` modeline; `talm template ... -I` writes one",
    ))
}

/// The modeline among a node file's leading comment lines, without reading the body or
/// checking the addresses: enough to name the file's nodes (progress lines label an item by
/// it). `find` is what reads a node file for use.
pub fn peek(text: &str) -> Option<Modeline> {
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with("# talm:") {
            return Modeline::parse(t).ok();
        }
        if !(t.is_empty() || t.starts_with('#')) {
            return None;
        }
    }
    None
}

/// Refuses a body that is not YAML, naming the file, line and column (`offset` = the lines
/// above the body).
fn check_body(body: &str, file: &str, offset: usize) -> Result<()> {
    // Through the kept streams: merging the body onto the render reads the same text.
    let Err(e) = talm_base::yaml::parsed(body) else {
        return Ok(());
    };
    let (line, col) = e
        .location()
        .map(|l| (l.line() + offset, l.column()))
        .unwrap_or((offset + 1, 1));
    let msg = e.to_string();
    let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
    Err(hinted(
        format!("{file}:{line}:{col}: the node file's body is not YAML: {msg}"),
        "the body below the modeline must be a Talos config patch in YAML; fix it, or re-create the file with `talm template ... -I`",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn peek_reads_the_modeline_only() {
        let file = "# note\n\n# talm: nodes=[\"10.0.0.1\"], endpoints=[\"10.0.0.1\"], templates=[\"templates/controlplane.yaml\"]\nmachine: [unclosed\n";
        assert_eq!(peek(file).unwrap().nodes, s(&["10.0.0.1"]));
        assert!(
            find(file, "n.yaml").is_err(),
            "find checks the body, peek does not"
        );
        assert!(peek("machine: {}\n# talm: nodes=[\"10.0.0.1\"]\n").is_none());
        assert!(peek("# just a comment\n").is_none());
    }

    #[test]
    fn render_and_parse_roundtrip() {
        let m = Modeline {
            nodes: s(&["1.2.3.4"]),
            endpoints: s(&["1.2.3.4"]),
            templates: s(&["templates/controlplane.yaml"]),
        };
        let line = m.render();
        assert_eq!(
            line,
            r#"# talm: nodes=["1.2.3.4"], endpoints=["1.2.3.4"], templates=["templates/controlplane.yaml"]"#
        );
        assert_eq!(Modeline::parse(&line).unwrap(), m);
        assert_eq!(
            Modeline {
                nodes: s(&["<a&b>"]),
                ..Default::default()
            }
            .render(),
            r#"# talm: nodes=["\u003ca\u0026b\u003e"], endpoints=[], templates=[]"#
        );
    }

    #[test]
    fn parsing_rules() {
        assert_eq!(
            Modeline::parse("#talm: nodes=[]").unwrap_err().to_string(),
            "modeline prefix not found"
        );
        let m = Modeline::parse(
            r#"  # talm:   nodes = [ "a,b", "c\"]" ] ,templates=["t"], other=["x"] "#,
        )
        .unwrap();
        assert_eq!(m.nodes, s(&["a,b", "c\"]"]));
        assert_eq!(m.templates, s(&["t"]));
        assert!(Modeline::parse(r#"# talm: nodes=["a"],"#)
            .unwrap_err()
            .to_string()
            .contains("invalid format of modeline part"));
        assert!(Modeline::parse(r#"# talm: nodes=["a"]]]"#)
            .unwrap_err()
            .to_string()
            .contains("error parsing JSON array for key nodes"));
        assert_eq!(
            Modeline::parse("# talm: nodes=null").unwrap().nodes,
            Vec::<String>::new()
        );
        assert_eq!(
            Modeline::parse(r#"# talm: nodes=["a"], nodes=["b"]"#)
                .unwrap()
                .nodes,
            s(&["b"])
        );
    }

    #[test]
    fn finding_the_modeline() {
        let text = "# keep me\n\n# talm: nodes=[\"a\"]\nmachine:\n  # talm: nodes=[\"no\"]\n";
        let f = find(text, "n.yaml").unwrap();
        assert_eq!(f.leading, s(&["# keep me", ""]));
        assert_eq!(f.modeline.nodes, s(&["a"]));
        assert_eq!(f.body, "machine:\n  # talm: nodes=[\"no\"]\n");
        let err = find("machine: {}\n# talm: nodes=[]\n", "n.yaml").unwrap_err();
        assert!(err.to_string().contains(
            "modeline found below non-comment content: first non-comment line was \"machine: {}\""
        ));
        assert!(find("machine: {}\n", "n.yaml")
            .unwrap_err()
            .to_string()
            .contains("modeline not found"));
        assert!(find("# talm: nodes=[\"a\"\n", "n.yaml")
            .unwrap_err()
            .to_string()
            .starts_with("n.yaml:1:"));
        let err = find(
            "# c\n# talm: nodes=[\"a\"]\nmachine:\n  type: [worker\n",
            "n.yaml",
        )
        .unwrap_err();
        assert!(
            err.to_string().starts_with("n.yaml:5:")
                && err.to_string().contains("body is not YAML"),
            "{err}"
        );
    }
}
