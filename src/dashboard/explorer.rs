//! The Resources screen (F3) as talosctl's resource explorer behaves: three levels, one shown
//! at a time, each a list with a cursor. The node's resource types (TYPE, NAMESPACE, ALIASES;
//! `/` filters them by type or alias), then the resources of the type chosen with Enter (ID,
//! VERSION, PHASE, OWNER and the type's print columns, listed again on every poll of the node
//! as talosctl's watch keeps it current), then the YAML of the resource chosen with Enter. Esc
//! goes back a level. The lists come from the node's COSI API through the same client calls
//! `talm get` makes: `meta/ResourceDefinitions.meta.cosi.dev`, then the chosen type.

use serde_yaml_ng::Value;

use super::input::{Command, Step};
use super::yamlview::{self, Styled};
use crate::talos::client::Client;
use crate::talos::resources::{self, Definition};

/// One resource type of the node.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeRow {
    pub def: Definition,
    /// The aliases the definition lists (the ALIASES column).
    pub aliases: Vec<String>,
    /// Every name the type answers to (what the filter searches besides the type).
    pub all_aliases: Vec<String>,
}

/// One resource of the chosen type.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub version: String,
    pub phase: String,
    pub owner: String,
    /// The type's print columns over the spec.
    pub columns: Vec<String>,
    /// `{metadata, spec}`, for the YAML view.
    pub value: Value,
}

/// A list as the node last answered it.
#[derive(Debug, Clone, PartialEq)]
pub enum Loaded<T> {
    Loading,
    Failed(String),
    Ready(T),
}

/// The level shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Types,
    List,
    Yaml,
}

/// What the explorer asks the node for; the answer comes back as an `Update`.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetch {
    Types { node: usize },
    Resources { node: usize, def: Definition },
}

/// A list's cursor and the first row shown.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cursor {
    pub at: usize,
    pub top: usize,
}

impl Cursor {
    /// Moves by `delta` within `len` rows, scrolling a page of `page` rows as little as needed.
    fn shift(&mut self, delta: isize, len: usize, page: usize) {
        let last = len.saturating_sub(1) as isize;
        self.at = (self.at as isize).saturating_add(delta).clamp(0, last) as usize;
        self.follow(page);
    }

    /// Scrolls so the cursor is on the page.
    pub fn follow(&mut self, page: usize) {
        let page = page.max(1);
        if self.at < self.top {
            self.top = self.at;
        } else if self.at >= self.top + page {
            self.top = self.at + 1 - page;
        }
    }
}

/// The YAML view: its title and coloured lines, scrolled by `scroll` lines.
#[derive(Debug, Clone, PartialEq)]
pub struct YamlView {
    pub title: String,
    pub lines: Vec<Styled>,
    pub scroll: usize,
}

/// The explorer's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Explorer {
    pub level: Level,
    /// The node's types, sorted by type; `None` until asked for.
    pub types: Option<Loaded<Vec<TypeRow>>>,
    pub filter: String,
    /// Whether the filter line has the keys.
    pub filtering: bool,
    pub type_cursor: Cursor,
    /// The type chosen with Enter.
    pub chosen: Option<TypeRow>,
    pub rows: Loaded<Vec<Row>>,
    pub row_cursor: Cursor,
    pub yaml: Option<YamlView>,
    requests: Vec<Fetch>,
}

impl Default for Explorer {
    fn default() -> Explorer {
        Explorer {
            level: Level::Types,
            types: None,
            filter: String::new(),
            filtering: false,
            type_cursor: Cursor::default(),
            chosen: None,
            rows: Loaded::Loading,
            row_cursor: Cursor::default(),
            yaml: None,
            requests: Vec::new(),
        }
    }
}

/// Rows of a list in a body of `body` rows: less the border, the header row and the filter
/// line when it shows.
pub fn list_rows(body: u16, filtering: bool) -> usize {
    usize::from(body.saturating_sub(3 + u16::from(filtering))).max(1)
}

impl Explorer {
    /// The requests made since the last call.
    pub fn take_requests(&mut self) -> Vec<Fetch> {
        std::mem::take(&mut self.requests)
    }

    /// The types the filter lets through (by type or alias, case-insensitively).
    pub fn shown_types(&self) -> Vec<&TypeRow> {
        let Some(Loaded::Ready(types)) = &self.types else {
            return Vec::new();
        };
        let f = self.filter.to_lowercase();
        types
            .iter()
            .filter(|t| {
                f.is_empty()
                    || t.def.ty.to_lowercase().contains(&f)
                    || t.all_aliases.iter().any(|a| a.to_lowercase().contains(&f))
            })
            .collect()
    }

    /// The screen was shown for `node`: load what its level shows, unless loaded.
    pub fn shown(&mut self, node: usize) {
        match self.level {
            Level::Types if self.types.is_none() => {
                self.types = Some(Loaded::Loading);
                self.requests.push(Fetch::Types { node });
            }
            Level::List => self.refresh(node),
            _ => {}
        }
    }

    /// The screen was left: the filter line closes and forgets its text (the whole list shows
    /// again, from its top).
    pub fn hidden(&mut self) {
        self.filtering = false;
        if !self.filter.is_empty() {
            self.filter.clear();
            self.type_cursor = Cursor::default();
        }
    }

    /// Another node was chosen: the types load again; a list lists the new node's resources,
    /// the YAML view gives way to that list.
    pub fn node_changed(&mut self, node: usize, active: bool) {
        self.hidden();
        match self.level {
            Level::Types => {
                self.types = None;
                self.type_cursor = Cursor::default();
                if active {
                    self.shown(node);
                }
            }
            Level::List | Level::Yaml => {
                self.level = Level::List;
                self.yaml = None;
                self.rows = Loaded::Loading;
                self.row_cursor = Cursor::default();
                if active {
                    self.refresh(node);
                }
            }
        }
    }

    /// Lists the chosen type again (a poll of the node came in, or the list was opened).
    pub fn refresh(&mut self, node: usize) {
        if let Some(t) = &self.chosen {
            self.requests.push(Fetch::Resources {
                node,
                def: t.def.clone(),
            });
        }
    }

    pub fn types_loaded(&mut self, result: Result<Vec<TypeRow>, String>) {
        self.types = Some(match result {
            Ok(mut types) => {
                types.sort_by(|a, b| a.def.ty.cmp(&b.def.ty));
                Loaded::Ready(types)
            }
            Err(e) => Loaded::Failed(e),
        });
        self.type_cursor = Cursor::default();
    }

    /// A list of `ty` came in; one for a type no longer shown is dropped. The cursor stays on
    /// its row when the list still has it.
    pub fn rows_loaded(&mut self, ty: &str, result: Result<Vec<Row>, String>) {
        if self.level == Level::Types || self.chosen.as_ref().map(|t| t.def.ty.as_str()) != Some(ty)
        {
            return;
        }
        self.rows = match result {
            Ok(mut rows) => {
                rows.sort_by(|a, b| a.id.cmp(&b.id));
                if self.row_cursor.at >= rows.len() {
                    self.row_cursor = Cursor::default();
                }
                Loaded::Ready(rows)
            }
            Err(e) => Loaded::Failed(e),
        };
    }

    /// Applies a key command; `body` is the height of the screen's body. `node` is the node
    /// shown.
    pub fn handle(&mut self, cmd: Command, body: u16, node: usize) {
        let page = list_rows(body, self.filtering);
        let delta = |up: bool, step: Step| {
            let n = step.lines(page) as isize;
            if up {
                -n
            } else {
                n
            }
        };
        let moved = match cmd {
            Command::Up(s) => Some(delta(true, s)),
            Command::Down(s) => Some(delta(false, s)),
            Command::Top => Some(isize::MIN / 2),
            Command::Bottom => Some(isize::MAX / 2),
            _ => None,
        };
        match (self.level, cmd) {
            (Level::Types, Command::Filter) => self.filtering = true,
            (Level::Types, Command::Type(c)) if self.filtering => {
                self.filter.push(c);
                self.type_cursor = Cursor::default();
            }
            (Level::Types, Command::Erase) if self.filtering => {
                self.filter.pop();
                self.type_cursor = Cursor::default();
            }
            (Level::Types, Command::Select) if self.filtering => self.filtering = false,
            (Level::Types, Command::Back) if self.filtering => {
                self.filtering = false;
                self.filter.clear();
                self.type_cursor = Cursor::default();
            }
            (Level::Types, Command::Select) => self.choose_type(node),
            (Level::Types, _) => {
                if let Some(d) = moved {
                    let len = self.shown_types().len();
                    self.type_cursor.shift(d, len, page);
                }
            }
            (Level::List, Command::Select) => self.open_yaml(),
            (Level::List, Command::Back) => {
                self.level = Level::Types;
                self.rows = Loaded::Loading;
            }
            (Level::List, _) => {
                if let (Some(d), Loaded::Ready(rows)) = (moved, &self.rows) {
                    let len = rows.len();
                    self.row_cursor.shift(d, len, page);
                }
            }
            (Level::Yaml, Command::Back) => {
                self.level = Level::List;
                self.yaml = None;
            }
            (Level::Yaml, _) => {
                if let (Some(d), Some(y)) = (moved, self.yaml.as_mut()) {
                    // Wrapping is the view's business: scroll until the last line is on top.
                    let max = y.lines.len().saturating_sub(1) as isize;
                    y.scroll = (y.scroll as isize).saturating_add(d).clamp(0, max) as usize;
                }
            }
        }
    }

    fn choose_type(&mut self, node: usize) {
        let Some(t) = self
            .shown_types()
            .get(self.type_cursor.at)
            .cloned()
            .cloned()
        else {
            return;
        };
        self.chosen = Some(t);
        self.rows = Loaded::Loading;
        self.row_cursor = Cursor::default();
        self.level = Level::List;
        self.refresh(node);
    }

    fn open_yaml(&mut self) {
        let Loaded::Ready(rows) = &self.rows else {
            return;
        };
        let Some(r) = rows.get(self.row_cursor.at) else {
            return;
        };
        let ns = r
            .value
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.yaml = Some(YamlView {
            title: format!(" {ns} / {} (Esc: back) ", r.id),
            lines: yamlview::lines(&resources::resource_yaml(&r.value)),
            scroll: 0,
        });
        self.level = Level::Yaml;
    }
}

/// An error as the explorer shows it: a refusal for the client's role in talosctl's words.
fn shown_error(e: &anyhow::Error) -> String {
    use talm_base::error::node::{Kind, NodeError};
    match e.downcast_ref::<NodeError>() {
        Some(n) if n.kind == Kind::Denied => {
            "access denied: this resource is sensitive and requires elevated permissions".into()
        }
        _ => format!("{e:#}"),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_sequence)
        .map(|s| {
            s.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The node's resource types, as `talm get rd` reads them.
pub async fn types(client: &Client) -> Result<Vec<TypeRow>, String> {
    let defs = client
        .list("meta", "ResourceDefinitions.meta.cosi.dev")
        .await
        .map_err(|e| shown_error(&e))?;
    Ok(defs
        .iter()
        .map(resources::to_value)
        .filter_map(|v| {
            let spec = v.get("spec")?;
            Some(TypeRow {
                def: Definition::of(&v)?,
                aliases: strings(spec.get("aliases")),
                all_aliases: strings(spec.get("allAliases")),
            })
        })
        .collect())
}

/// The resources of `def`'s type in its namespace, as `talm get` lists them.
pub async fn rows(client: &Client, def: &Definition) -> Result<Vec<Row>, String> {
    let list = client
        .list(&def.namespace, &def.ty)
        .await
        .map_err(|e| shown_error(&e))?;
    let templates: Vec<_> = def
        .columns
        .iter()
        .filter_map(|c| talm_base::jsonpath::Template::parse(&c.json_path).ok())
        .collect();
    Ok(list
        .iter()
        .map(|r| {
            let value = resources::to_value(r);
            let md = r.metadata.clone().unwrap_or_default();
            let spec = serde_json::to_value(value.get("spec").cloned().unwrap_or(Value::Null))
                .unwrap_or_default();
            Row {
                id: md.id,
                version: md.version,
                phase: md.phase,
                owner: md.owner,
                columns: templates.iter().map(|t| t.render(&spec)).collect(),
                value,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty(name: &str, ns: &str, aliases: &[&str]) -> TypeRow {
        TypeRow {
            def: Definition {
                ty: name.into(),
                namespace: ns.into(),
                display: name.split('.').next().unwrap().into(),
                columns: vec![],
            },
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            all_aliases: aliases.iter().map(|a| a.to_string()).collect(),
        }
    }

    fn row(id: &str) -> Row {
        Row {
            id: id.into(),
            version: "1".into(),
            phase: "running".into(),
            owner: String::new(),
            columns: vec![],
            value: serde_yaml_ng::from_str(&format!(
                "metadata: {{namespace: network, id: {id}}}\nspec: {{mtu: 1500}}"
            ))
            .unwrap(),
        }
    }

    #[test]
    fn levels_keys_and_requests() {
        let mut e = Explorer::default();
        e.shown(0);
        assert_eq!(e.take_requests(), [Fetch::Types { node: 0 }]);
        e.types_loaded(Ok(vec![
            ty("Routes.net.talos.dev", "network", &["route"]),
            ty("Links.net.talos.dev", "network", &["link"]),
            ty("Members.cluster.talos.dev", "cluster", &["member"]),
        ]));
        let names = |e: &Explorer| -> Vec<String> {
            e.shown_types().iter().map(|t| t.def.ty.clone()).collect()
        };
        assert_eq!(
            names(&e),
            [
                "Links.net.talos.dev",
                "Members.cluster.talos.dev",
                "Routes.net.talos.dev"
            ]
        );
        // `/` filters by type or alias; Esc clears, Enter keeps.
        e.handle(Command::Filter, 20, 0);
        for c in "ROUTE".chars() {
            e.handle(Command::Type(c), 20, 0);
        }
        assert_eq!(names(&e), ["Routes.net.talos.dev"]);
        e.handle(Command::Back, 20, 0);
        assert_eq!((e.filtering, names(&e).len()), (false, 3));
        e.handle(Command::Filter, 20, 0);
        e.handle(Command::Type('m'), 20, 0);
        e.handle(Command::Select, 20, 0);
        assert_eq!((e.filtering, e.filter.as_str()), (false, "m"));
        assert_eq!(names(&e), ["Members.cluster.talos.dev"]);
        e.hidden();
        e.handle(Command::Down(Step::Line), 20, 0);
        e.handle(Command::Down(Step::Line), 20, 0);
        e.handle(Command::Select, 20, 3);
        assert_eq!(e.level, Level::List);
        let want = ty("Routes.net.talos.dev", "network", &["route"]).def;
        assert_eq!(e.take_requests(), [Fetch::Resources { node: 3, def: want }]);
        // A list of another type is dropped; the list comes sorted.
        e.rows_loaded("Links.net.talos.dev", Ok(vec![row("x")]));
        assert_eq!(e.rows, Loaded::Loading);
        e.rows_loaded("Routes.net.talos.dev", Ok(vec![row("b"), row("a")]));
        e.handle(Command::Bottom, 20, 3);
        e.handle(Command::Select, 20, 3);
        assert_eq!(e.level, Level::Yaml);
        let y = e.yaml.as_ref().unwrap();
        assert_eq!(y.title, " network / b (Esc: back) ");
        e.handle(Command::Back, 20, 3);
        assert_eq!(e.level, Level::List);
        e.handle(Command::Back, 20, 3);
        assert_eq!(e.level, Level::Types);
    }

    #[test]
    fn another_node_reloads_what_the_level_shows() {
        let mut e = Explorer::default();
        e.types_loaded(Ok(vec![ty("Links.net.talos.dev", "network", &[])]));
        e.node_changed(1, true);
        assert_eq!(e.types, Some(Loaded::Loading));
        assert_eq!(e.take_requests(), [Fetch::Types { node: 1 }]);
        e.types_loaded(Ok(vec![ty("Links.net.talos.dev", "network", &[])]));
        e.handle(Command::Select, 20, 1);
        e.rows_loaded("Links.net.talos.dev", Ok(vec![row("eth0")]));
        e.handle(Command::Select, 20, 1);
        e.take_requests();
        e.node_changed(0, true);
        assert_eq!((e.level, &e.rows), (Level::List, &Loaded::Loading));
        assert_eq!(e.take_requests().len(), 1);
    }

    #[test]
    fn the_cursor_scrolls_a_page_as_little_as_needed() {
        let mut c = Cursor::default();
        c.shift(12, 30, 5);
        assert_eq!((c.at, c.top), (12, 8));
        c.shift(-5, 30, 5);
        assert_eq!((c.at, c.top), (7, 7));
        c.shift(isize::MAX / 2, 30, 5);
        assert_eq!((c.at, c.top), (29, 25));
        c.shift(isize::MIN / 2, 0, 5);
        assert_eq!((c.at, c.top), (0, 0));
    }
}
