//! COSI resources as talm shows them: `{metadata, spec}` maps with the metadata fields talosctl
//! prints and the spec parsed from the YAML the node sends.

use serde_yaml_ng::{Mapping, Value};

use talm_wire::proto::cosi::resource as cosi;

pub use talm_base::humanize::pretty_size;

/// RFC 3339 text of a protobuf timestamp (UTC, whole seconds as Talos prints them).
pub fn timestamp(ts: &prost_types::Timestamp) -> String {
    time::OffsetDateTime::from_unix_timestamp(ts.seconds)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// A resource as `{metadata: {namespace, type, id, version, owner, phase, created, updated,
/// labels?, annotations?}, spec}`.
pub fn to_value(res: &cosi::Resource) -> Value {
    let mut meta = Mapping::new();
    if let Some(md) = &res.metadata {
        meta.insert("namespace".into(), md.namespace.clone().into());
        meta.insert("type".into(), md.r#type.clone().into());
        meta.insert("id".into(), md.id.clone().into());
        meta.insert("version".into(), md.version.clone().into());
        meta.insert("owner".into(), md.owner.clone().into());
        meta.insert("phase".into(), md.phase.clone().into());
        if let Some(t) = &md.created {
            meta.insert("created".into(), timestamp(t).into());
        }
        if let Some(t) = &md.updated {
            meta.insert("updated".into(), timestamp(t).into());
        }
        for (key, map) in [("labels", &md.labels), ("annotations", &md.annotations)] {
            if !map.is_empty() {
                let mut sorted: Vec<_> = map.iter().collect();
                sorted.sort();
                let m: Mapping = sorted
                    .into_iter()
                    .map(|(k, v)| (Value::from(k.clone()), Value::from(v.clone())))
                    .collect();
                meta.insert(key.into(), Value::Mapping(m));
            }
        }
    }
    let spec = res
        .spec
        .as_ref()
        .map(|s| s.yaml_spec.as_str())
        .filter(|s| !s.trim().is_empty())
        .map(|s| talm_base::yaml::from_str(s).unwrap_or_else(|_| Value::String(s.to_string())))
        .unwrap_or(Value::Null);
    let mut out = Mapping::new();
    out.insert("metadata".into(), Value::Mapping(meta));
    out.insert("spec".into(), spec);
    Value::Mapping(out)
}

/// What a resource definition says about its type: full name, default namespace, the name
/// tables show, and the extra columns (name, JSONPath over the spec) talosctl prints.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Definition {
    #[serde(rename = "type")]
    pub ty: String,
    pub namespace: String,
    pub display: String,
    pub columns: Vec<Column>,
}

/// One print column of a definition.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Column {
    pub name: String,
    pub json_path: String,
}

impl Definition {
    /// The definition's facts from a ResourceDefinition resource.
    pub fn of(def: &Value) -> Option<Definition> {
        let spec = def.get("spec")?;
        let text = |k: &str| {
            spec.get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let ty = spec.get("type")?.as_str()?.to_string();
        let display = match text("displayType") {
            d if d.is_empty() => ty.split('.').next().unwrap_or(&ty).to_string(),
            d => d,
        };
        let columns = spec
            .get("printColumns")
            .and_then(Value::as_sequence)
            .map(|cols| {
                cols.iter()
                    .filter_map(|c| {
                        Some(Column {
                            name: c.get("name")?.as_str()?.to_string(),
                            json_path: c.get("jsonPath")?.as_str()?.to_string(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        Some(Definition {
            ty,
            namespace: text("defaultNamespace"),
            display,
            columns,
        })
    }
}

/// Whether `kind` names the definition `def` (its ID, or one of its aliases), case-insensitively.
pub fn matches_definition(def: &Value, kind: &str) -> Option<Definition> {
    let spec = def.get("spec")?;
    let want = kind.to_ascii_lowercase();
    let id = def
        .get("metadata")
        .and_then(|m| m.get("id"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    let aliases = spec
        .get("allAliases")
        .or_else(|| spec.get("aliases"))
        .and_then(Value::as_sequence)
        .cloned()
        .unwrap_or_default();
    let d = Definition::of(def)?;
    let hit = id == want
        || d.ty.to_ascii_lowercase() == want
        || aliases
            .iter()
            .filter_map(Value::as_str)
            .any(|a| a.to_ascii_lowercase() == want);
    hit.then_some(d)
}

/// Resolves a user's kind (`links`, `LinkStatus`, `linkstatuses.net.talos.dev`...) through the
/// node's resource definitions, as talosctl does.
pub async fn resolve(client: &super::client::Client, kind: &str) -> anyhow::Result<Definition> {
    let defs = client
        .list("meta", "ResourceDefinitions.meta.cosi.dev")
        .await?;
    let mut hits: Vec<Definition> = defs
        .iter()
        .map(to_value)
        .filter_map(|d| matches_definition(&d, kind))
        .collect();
    match hits.len() {
        1 => Ok(hits.remove(0)),
        0 => Err(talm_base::error::hinted(
            format!("node {}: resource {kind:?} is not registered", client.node),
            "list the node's resource types with `talm get rd`",
        )),
        _ => Err(talm_base::error::plain(format!(
            "node {}: resource type {kind:?} is ambiguous: {:?}",
            client.node,
            hits.iter().map(|h| h.ty.clone()).collect::<Vec<_>>()
        ))),
    }
}

/// Metadata keys in the order talosctl prints them (maps that passed through scripts come back
/// sorted).
fn ordered_metadata(md: &Value) -> Value {
    const ORDER: [&str; 10] = [
        "namespace",
        "type",
        "id",
        "version",
        "owner",
        "phase",
        "created",
        "updated",
        "labels",
        "annotations",
    ];
    let Some(map) = md.as_mapping() else {
        return md.clone();
    };
    let mut out = Mapping::new();
    for k in ORDER {
        if let Some(v) = map.get(k) {
            out.insert(k.into(), v.clone());
        }
    }
    for (k, v) in map {
        if !out.contains_key(k) {
            out.insert(k.clone(), v.clone());
        }
    }
    Value::Mapping(out)
}

fn meta_text(r: &Value, key: &str) -> String {
    r.get("metadata")
        .and_then(|m| m.get(key))
        .map(|v| match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => String::new(),
        })
        .unwrap_or_default()
}

/// A scalar as Go's yaml.v3 writes an untagged node: plain unless YAML syntax forbids it
/// (numbers and dates stay plain), nothing at all when empty.
fn untagged(s: &str) -> String {
    if s.is_empty() || talm_base::yaml::plain_syntax_ok(s) && !s.contains('\n') {
        s.to_string()
    } else {
        talm_base::yaml::double_quoted(s)
    }
}

fn untagged_line(indent: &str, key: &str, value: &str) -> String {
    match untagged(value) {
        v if v.is_empty() => format!("{indent}{}:\n", untagged(key)),
        v => format!("{indent}{}: {v}\n", untagged(key)),
    }
}

/// A resource's YAML as talosctl's writers print it after `node:`: `metadata:` as COSI
/// marshals it (untagged scalars: `version: 1`, `owner:` when empty), then `spec:`; with
/// `redact` the spec is `<REDACTED>` (a support bundle's sensitive types).
fn document(r: &Value, redact: bool) -> String {
    let mut out = String::from("metadata:\n");
    if let Some(Value::Mapping(md)) = r.get("metadata").map(ordered_metadata) {
        for (k, x) in &md {
            let key = k.as_str().unwrap_or_default();
            match x {
                Value::Mapping(m) => {
                    out.push_str(&format!("    {key}:\n"));
                    for (lk, lv) in m {
                        out.push_str(&untagged_line("        ", &scalar(lk), &scalar(lv)));
                    }
                }
                other => out.push_str(&untagged_line("    ", key, &scalar(other))),
            }
        }
    }
    let spec = if redact {
        Value::String("<REDACTED>".into())
    } else {
        r.get("spec").cloned().unwrap_or(Value::Null)
    };
    let mut m = Mapping::new();
    m.insert("spec".into(), spec);
    out.push_str(&talm_base::yaml::to_string(&Value::Mapping(m)));
    out
}

/// A resource's document as COSI marshals it, `metadata:` then `spec:` (what talosctl's
/// resource explorer shows).
pub fn resource_yaml(r: &Value) -> String {
    document(r, false)
}

/// A metadata scalar's text.
fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

/// The lines talosctl's YAML writer prints before a resource's document.
fn heading(node: &str, event: Option<&str>) -> String {
    match event {
        Some(e) => format!("node: {node}\nevent: {e}\n"),
        None => format!("node: {node}\n"),
    }
}

/// One resource as `talm get -o yaml` (and `-w`) prints it: `node:`, `event:` when watching,
/// then its document.
pub fn yaml_document(node: &str, event: Option<&str>, r: &Value) -> String {
    format!("{}{}", heading(node, event), document(r, false))
}

/// What talosctl's JSON and JSONPath writers read: the resource's YAML read back as data (so
/// `version` is a number and an empty `owner` null), with `node` and `event` added.
fn encodable(node: &str, event: Option<&str>, r: &Value) -> anyhow::Result<serde_json::Value> {
    let text = document(r, false);
    let data: Value = talm_base::yaml::from_str(&text).unwrap_or_else(|_| r.clone());
    let mut data = serde_json::to_value(data)?;
    if let serde_json::Value::Object(m) = &mut data {
        m.insert("node".into(), node.into());
        if let Some(e) = event {
            m.insert("event".into(), e.into());
        }
    }
    Ok(data)
}

/// One resource as `talm get -o json` prints it: Go's JSON of that data, keys sorted, 4-space
/// indent, a newline after.
pub fn json_document(node: &str, event: Option<&str>, r: &Value) -> anyhow::Result<String> {
    Ok(json_4(&encodable(node, event, r)?) + "\n")
}

/// One resource as `talm get -o jsonpath=...` prints it: each result on its own line, maps and
/// lists as 4-space JSON.
pub fn jsonpath_document(
    node: &str,
    event: Option<&str>,
    r: &Value,
    t: &talm_base::jsonpath::Template,
) -> anyhow::Result<String> {
    let data = encodable(node, event, r)?;
    let mut out = String::new();
    let found = t.results(&data).map_err(|e| {
        talm_base::error::hinted(
            format!("error finding result for jsonpath: {e}"),
            "-o yaml shows the keys the resource has (node, metadata, spec)",
        )
    })?;
    for found in found {
        match found {
            serde_json::Value::Object(_) | serde_json::Value::Array(_) => {
                out.push_str(&json_4(&found))
            }
            other => out.push_str(&talm_base::jsonpath::text(&other)),
        }
        out.push('\n');
    }
    Ok(out)
}

/// Resources as `talosctl support` writes them to `resources/<definition>.yaml`: their
/// documents, `---` between; with `redact` every spec is `<REDACTED>` (the sensitive types).
/// "" when there are none.
pub fn bundle_documents(items: &[cosi::Resource], redact: bool) -> String {
    items
        .iter()
        .map(|res| document(&to_value(res), redact))
        .collect::<Vec<_>>()
        .join("---\n")
}

/// The output formats of `talm get`.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    Table,
    Yaml,
    Json,
    JsonPath(talm_base::jsonpath::Template),
}

impl Output {
    /// Parses `-o`: `table`, `yaml`, `json` or `jsonpath=EXPR`.
    pub fn parse(text: &str) -> anyhow::Result<Output> {
        Ok(match text {
            "table" => Output::Table,
            "yaml" => Output::Yaml,
            "json" => Output::Json,
            t => match t.strip_prefix("jsonpath=") {
                Some(expr) => Output::JsonPath(talm_base::jsonpath::Template::parse(expr)?),
                None => {
                    return Err(talm_base::error::hinted(
                        format!("output format {t:?} is not supported"),
                        "use -o table, -o yaml, -o json or -o jsonpath='{.spec}'",
                    ))
                }
            },
        })
    }
}

/// Resources as `talm get` prints them: `table` (NODE NAMESPACE TYPE ID VERSION and the
/// definition's print columns), `yaml` (`node:`, `metadata:`, `spec:` per resource, `---`
/// between), `json` (one object each, 4-space indent) or a JSONPath template per resource.
pub fn format(
    node: &str,
    items: &[Value],
    output: &Output,
    def: &Definition,
) -> anyhow::Result<String> {
    match output {
        Output::Yaml => Ok(items
            .iter()
            .map(|r| yaml_document(node, None, r))
            .collect::<Vec<_>>()
            .join("---\n")),
        Output::Json => items.iter().map(|r| json_document(node, None, r)).collect(),
        Output::JsonPath(t) => items
            .iter()
            .map(|r| jsonpath_document(node, None, r, t))
            .collect(),
        Output::Table => {
            let mut head: Vec<String> = ["NODE", "NAMESPACE", "TYPE", "ID", "VERSION"]
                .map(str::to_string)
                .to_vec();
            head.extend(def.columns.iter().map(|c| c.name.to_uppercase()));
            let templates = def
                .columns
                .iter()
                .map(|c| talm_base::jsonpath::Template::parse(&c.json_path))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut rows = vec![head];
            for r in items {
                let mut row = vec![
                    node.to_string(),
                    meta_text(r, "namespace"),
                    def.display.clone(),
                    meta_text(r, "id"),
                    meta_text(r, "version"),
                ];
                let spec: serde_json::Value =
                    serde_json::to_value(r.get("spec").cloned().unwrap_or(Value::Null))?;
                row.extend(templates.iter().map(|t| t.render(&spec)));
                rows.push(row);
            }
            Ok(table(&rows))
        }
    }
}

/// JSON as talosctl prints it: Go's encoding, keys sorted, indented with 4 spaces.
pub fn json_4(v: &serde_json::Value) -> String {
    talm_base::gojson::indented(v, "    ")
}

/// Rows as talosctl's tables print them (Go's tabwriter, padding 3).
pub fn table(rows: &[Vec<String>]) -> String {
    talm_base::tabwriter::table(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(t: &str) -> Value {
        serde_yaml_ng::from_str(t).unwrap()
    }

    #[test]
    fn tables_show_display_type_and_print_columns() {
        let def = Definition::of(&y(
            "spec: {type: LinkStatuses.net.talos.dev, displayType: LinkStatus, defaultNamespace: network, printColumns: [{name: Type, jsonPath: '{.type}'}, {name: Oper State, jsonPath: '{.operationalState}'}]}",
        ))
        .unwrap();
        let items = [
            y("metadata: {namespace: network, type: LinkStatuses.net.talos.dev, id: eth0, version: 3}\nspec: {type: ether, operationalState: up}"),
            y("metadata: {namespace: network, type: LinkStatuses.net.talos.dev, id: lo, version: 1}\nspec: {type: loopback}"),
        ];
        let t = format("10.0.0.1", &items, &Output::Table, &def).unwrap();
        assert_eq!(
            t,
            "NODE       NAMESPACE   TYPE         ID     VERSION   TYPE       OPER STATE\n\
             10.0.0.1   network     LinkStatus   eth0   3         ether      up\n\
             10.0.0.1   network     LinkStatus   lo     1         loopback   \n"
        );
        let j = format("10.0.0.1", &items[..1], &Output::Json, &def).unwrap();
        assert_eq!(
            j,
            r#"{
    "metadata": {
        "id": "eth0",
        "namespace": "network",
        "type": "LinkStatuses.net.talos.dev",
        "version": 3
    },
    "node": "10.0.0.1",
    "spec": {
        "operationalState": "up",
        "type": "ether"
    }
}
"#
        );
        assert!(Output::parse("wide").is_err());
    }

    fn res(id: &str, owner: &str, spec: &str) -> cosi::Resource {
        let ts = prost_types::Timestamp {
            seconds: 1_700_000_000,
            nanos: 0,
        };
        cosi::Resource {
            metadata: Some(cosi::Metadata {
                namespace: "network".into(),
                r#type: "LinkStatuses.net.talos.dev".into(),
                id: id.into(),
                version: "2".into(),
                owner: owner.into(),
                phase: "running".into(),
                created: Some(ts),
                updated: Some(ts),
                labels: [("talos.dev/x".to_string(), "".to_string())].into(),
                ..Default::default()
            }),
            spec: Some(cosi::Spec {
                yaml_spec: spec.into(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn bundle_documents_as_yaml_v3_writes_them() {
        let items = [
            res(
                "eth0",
                "network.LinkStatusController",
                "mtu: 1500\nkind: \"\"\naliases:\n- a\n",
            ),
            res("lo", "", "mtu: 65536\n"),
        ];
        assert_eq!(
            bundle_documents(&items, false),
            "metadata:\n    namespace: network\n    type: LinkStatuses.net.talos.dev\n    id: eth0\n    version: 2\n    owner: network.LinkStatusController\n    phase: running\n    created: 2023-11-14T22:13:20Z\n    updated: 2023-11-14T22:13:20Z\n    labels:\n        talos.dev/x:\nspec:\n    mtu: 1500\n    kind: \"\"\n    aliases:\n        - a\n---\nmetadata:\n    namespace: network\n    type: LinkStatuses.net.talos.dev\n    id: lo\n    version: 2\n    owner:\n    phase: running\n    created: 2023-11-14T22:13:20Z\n    updated: 2023-11-14T22:13:20Z\n    labels:\n        talos.dev/x:\nspec:\n    mtu: 65536\n"
        );
        assert!(bundle_documents(&items[1..], true).ends_with("spec: <REDACTED>\n"));
        assert_eq!(bundle_documents(&[], true), "");
    }
}
