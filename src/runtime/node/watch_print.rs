//! `talm get -w`'s printer: one node's resource events as talosctl prints them, a table whose
//! rows are held until the watch has sent what exists, or YAML, JSON or JSONPath documents with
//! the node and the event.

use anyhow::Result;

use crate::proto::cosi::resource as cosi;
use crate::talos::resources::{self, Definition, Output};
use talm_base::jsonpath::Template;

/// Prints `get -w` output for one node's events: rows are held until the watch has sent what
/// exists (BOOTSTRAPPED), then printed as they come.
pub(super) struct WatchPrinter {
    output: Output,
    header_done: bool,
    held: Vec<Vec<String>>,
    flowing: bool,
    first_doc: bool,
}

impl WatchPrinter {
    pub(super) fn new(output: Output) -> Self {
        WatchPrinter {
            output,
            header_done: false,
            held: Vec::new(),
            flowing: false,
            first_doc: true,
        }
    }

    /// One event of the watch on `node`.
    pub(super) fn event(
        &mut self,
        node: &str,
        def: &Definition,
        name: &str,
        e: &cosi::Event,
    ) -> Result<()> {
        if name == "bootstrapped" {
            self.flowing = true;
            return self.flush_held(def);
        }
        let Some(r) = &e.resource else { return Ok(()) };
        let v = resources::to_value(r);
        match &self.output {
            Output::Table => {
                let mark = match name {
                    "created" => "+",
                    "destroyed" => "-",
                    _ => " ",
                };
                let meta = |k: &str| {
                    v.get("metadata")
                        .and_then(|m| m.get(k))
                        .map(|x| match x {
                            serde_yaml_ng::Value::String(s) => s.clone(),
                            serde_yaml_ng::Value::Number(n) => n.to_string(),
                            _ => String::new(),
                        })
                        .unwrap_or_default()
                };
                let spec: serde_json::Value =
                    serde_json::to_value(v.get("spec").cloned().unwrap_or_default())?;
                let mut row = vec![
                    node.to_string(),
                    mark.to_string(),
                    meta("namespace"),
                    def.display.clone(),
                    meta("id"),
                    meta("version"),
                ];
                for c in &def.columns {
                    row.push(Template::parse(&c.json_path)?.render(&spec));
                }
                self.held.push(row);
                if self.flowing {
                    self.flush_held(def)?;
                }
            }
            out => {
                let event = Some(name);
                let text = match out {
                    Output::Yaml => {
                        let sep = if self.first_doc { "" } else { "---\n" };
                        format!("{sep}{}", resources::yaml_document(node, event, &v))
                    }
                    Output::JsonPath(t) => resources::jsonpath_document(node, event, &v, t)?,
                    _ => resources::json_document(node, event, &v)?,
                };
                self.first_doc = false;
                crate::output::write(text.as_bytes())?;
            }
        }
        Ok(())
    }

    fn flush_held(&mut self, def: &Definition) -> Result<()> {
        if !matches!(self.output, Output::Table) {
            return Ok(());
        }
        let mut rows = Vec::new();
        if !self.header_done {
            let mut head: Vec<String> = ["NODE", "*", "NAMESPACE", "TYPE", "ID", "VERSION"]
                .map(str::to_string)
                .to_vec();
            head.extend(def.columns.iter().map(|c| c.name.to_uppercase()));
            rows.push(head);
            self.header_done = true;
        }
        rows.append(&mut self.held);
        crate::output::write(crate::printable::printable(&resources::table(&rows)).as_bytes())
    }
}
