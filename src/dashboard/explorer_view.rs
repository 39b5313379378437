//! Drawing the Resources screen as talosctl's tview widgets look: the level shown fills the
//! body in a box with its title centred on the top border (double lines while it has the
//! keys), a table inside with a bold header row, columns as wide as their widest cell a
//! space apart and the first one taking what is left, the cursor's row reversed; the filter
//! line under the types' box while it is open; the YAML view wrapped to the box's width.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};

use super::explorer::{list_rows, Cursor, Explorer, Level, Loaded};
use super::render::bold;
use super::yamlview::Styled;

const WHITE: Color = Color::White;
const GRAY: Color = Color::DarkGray;

/// A table cell: its text and colour.
type Cell = (String, Color);

pub fn render(e: &Explorer, area: Rect, buf: &mut Buffer) {
    if area.height < 3 || area.width < 3 {
        return;
    }
    match e.level {
        Level::Types => types(e, area, buf),
        Level::List => list(e, area, buf),
        Level::Yaml => yaml(e, area, buf),
    }
}

fn types(e: &Explorer, area: Rect, buf: &mut Buffer) {
    let table_area = Rect {
        height: area.height - u16::from(e.filtering),
        ..area
    };
    let title = " Resource Types (Enter: select, /: filter) ";
    let inner = frame(title, !e.filtering, table_area, buf);
    let head = ["TYPE", "NAMESPACE", "ALIASES"];
    match &e.types {
        None | Some(Loaded::Loading) => message(&head, "Loading...", GRAY, inner, buf),
        Some(Loaded::Failed(err)) => message(&head, err, Color::Red, inner, buf),
        Some(Loaded::Ready(_)) => {
            let rows: Vec<Vec<Cell>> = e
                .shown_types()
                .iter()
                .map(|t| {
                    vec![
                        (t.def.ty.clone(), WHITE),
                        (t.def.namespace.clone(), WHITE),
                        (t.aliases.join(", "), GRAY),
                    ]
                })
                .collect();
            table(&head, &rows, e.type_cursor, inner, buf);
        }
    }
    if e.filtering {
        let y = area.bottom() - 1;
        let label = "filter: ";
        buf.set_stringn(
            area.x,
            y,
            label,
            usize::from(area.width),
            Style::new().fg(Color::Yellow),
        );
        let x = area.x + label.len() as u16;
        let room = usize::from(area.width.saturating_sub(label.len() as u16));
        buf.set_stringn(x, y, &e.filter, room, Style::new());
    }
}

fn list(e: &Explorer, area: Rect, buf: &mut Buffer) {
    let Some(t) = &e.chosen else { return };
    let title = format!(
        " {} (ns: {}) — Enter: view YAML, Esc: back ",
        t.def.display, t.def.namespace
    );
    let inner = frame(&title, true, area, buf);
    let mut head: Vec<String> = ["ID", "VERSION", "PHASE", "OWNER"]
        .map(str::to_string)
        .to_vec();
    head.extend(t.def.columns.iter().map(|c| c.name.to_uppercase()));
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    match &e.rows {
        Loaded::Loading => message(&head, "Loading...", GRAY, inner, buf),
        Loaded::Failed(err) => message(&head, err, Color::Red, inner, buf),
        Loaded::Ready(rows) => {
            let rows: Vec<Vec<Cell>> = rows
                .iter()
                .map(|r| {
                    let phase = if r.phase == "tearingDown" {
                        Color::Red
                    } else {
                        WHITE
                    };
                    let mut cells = vec![
                        (r.id.clone(), WHITE),
                        (r.version.clone(), GRAY),
                        (r.phase.clone(), phase),
                        (r.owner.clone(), GRAY),
                    ];
                    cells.extend(r.columns.iter().map(|c| (c.clone(), WHITE)));
                    cells
                })
                .collect();
            table(&head, &rows, e.row_cursor, inner, buf);
        }
    }
}

fn yaml(e: &Explorer, area: Rect, buf: &mut Buffer) {
    let Some(y) = &e.yaml else { return };
    let inner = frame(&y.title, true, area, buf);
    let rows: Vec<Styled> = y
        .lines
        .iter()
        .flat_map(|l| wrap(l, usize::from(inner.width)))
        .collect();
    for (i, line) in rows
        .iter()
        .skip(y.scroll)
        .take(usize::from(inner.height))
        .enumerate()
    {
        let mut x = inner.x;
        for (text, colour) in line {
            let style = colour.map_or(Style::new(), |c| Style::new().fg(c));
            let (nx, _) = buf.set_stringn(
                x,
                inner.y + i as u16,
                text,
                usize::from(inner.right().saturating_sub(x)),
                style,
            );
            x = nx;
        }
    }
}

/// A coloured line cut into rows of `width` characters.
fn wrap(line: &Styled, width: usize) -> Vec<Styled> {
    let mut rows = vec![Vec::new()];
    let mut used = 0;
    for (text, colour) in line {
        let mut piece = String::new();
        for c in text.chars() {
            if used == width && width > 0 {
                let done = std::mem::take(&mut piece);
                rows.last_mut().unwrap().push((done, *colour));
                rows.push(Vec::new());
                used = 0;
            }
            piece.push(c);
            used += 1;
        }
        rows.last_mut().unwrap().push((piece, *colour));
    }
    rows
}

/// A box around `area` with `title` centred on its top border, double lines when `focused`;
/// returns what is inside.
fn frame(title: &str, focused: bool, area: Rect, buf: &mut Buffer) -> Rect {
    let [h, v, tl, tr, bl, br] = if focused {
        ["═", "║", "╔", "╗", "╚", "╝"]
    } else {
        ["─", "│", "┌", "┐", "└", "┘"]
    };
    let (l, r, t, b) = (area.x, area.right() - 1, area.y, area.bottom() - 1);
    for x in l + 1..r {
        buf[(x, t)].set_symbol(h);
        buf[(x, b)].set_symbol(h);
    }
    for y in t + 1..b {
        buf[(l, y)].set_symbol(v);
        buf[(r, y)].set_symbol(v);
    }
    buf[(l, t)].set_symbol(tl);
    buf[(r, t)].set_symbol(tr);
    buf[(l, b)].set_symbol(bl);
    buf[(r, b)].set_symbol(br);
    let room = area.width - 2;
    let len = title.chars().count().min(usize::from(room)) as u16;
    let x = l + 1 + (room - len) / 2;
    buf.set_stringn(x, t, title, usize::from(room), Style::new().fg(WHITE));
    Rect::new(l + 1, t + 1, area.width - 2, area.height - 2)
}

/// The header row and one unselectable line in `colour` under it (loading, an error).
fn message(head: &[&str], text: &str, colour: Color, area: Rect, buf: &mut Buffer) {
    let widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    let widths = fit(widths, area.width);
    header(head, &widths, area, buf);
    if area.height > 1 {
        buf.set_stringn(
            area.x,
            area.y + 1,
            text,
            usize::from(area.width),
            Style::new().fg(colour),
        );
    }
}

/// Column widths stretched so the first column takes what the others leave.
fn fit(mut widths: Vec<usize>, width: u16) -> Vec<usize> {
    let used: usize = widths.iter().sum::<usize>() + widths.len().saturating_sub(1);
    if let Some(first) = widths.first_mut() {
        *first += usize::from(width).saturating_sub(used);
    }
    widths
}

fn header(head: &[&str], widths: &[usize], area: Rect, buf: &mut Buffer) {
    let cells: Vec<Cell> = head.iter().map(|h| (h.to_string(), WHITE)).collect();
    row(&cells, widths, area.x, area.y, area, bold().fg(WHITE), buf);
}

/// Cells at `y`, each in its column, cut at the area's right edge.
fn row(
    cells: &[Cell],
    widths: &[usize],
    x0: u16,
    y: u16,
    area: Rect,
    base: Style,
    buf: &mut Buffer,
) {
    let mut x = x0;
    for ((text, colour), w) in cells.iter().zip(widths) {
        if x >= area.right() {
            break;
        }
        let room = usize::from(area.right() - x).min(*w);
        buf.set_stringn(x, y, text, room, base.fg(*colour));
        x = x.saturating_add(*w as u16 + 1);
    }
}

/// A table: the header row fixed, the rows from the cursor's page, the cursor's row reversed.
fn table(head: &[&str], rows: &[Vec<Cell>], cursor: Cursor, area: Rect, buf: &mut Buffer) {
    let page = list_rows(area.height + 2, false);
    let mut cursor = cursor;
    cursor.follow(page);
    let shown: Vec<&Vec<Cell>> = rows.iter().skip(cursor.top).take(page).collect();
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &shown {
        for (w, (text, _)) in widths.iter_mut().zip(r.iter()) {
            *w = (*w).max(text.chars().count());
        }
    }
    let widths = fit(widths, area.width);
    header(head, &widths, area, buf);
    for (i, r) in shown.iter().enumerate() {
        let y = area.y + 1 + i as u16;
        if y >= area.bottom() {
            break;
        }
        let selected = cursor.top + i == cursor.at;
        let base = if selected {
            Style::new().add_modifier(Modifier::REVERSED)
        } else {
            Style::new()
        };
        if selected {
            buf.set_style(Rect::new(area.x, y, area.width, 1), base);
        }
        row(r, &widths, area.x, y, area, base, buf);
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};

    use super::super::explorer::{Loaded, Row, TypeRow};
    use super::super::input::{Command, Step};
    use super::super::model::{Screen, State, Update};
    use super::super::render::frame;
    use crate::talos::resources::{Column, Definition};

    fn text(s: &State, w: u16, h: u16) -> Vec<String> {
        let buf = frame(s, w, h);
        (0..h)
            .map(|y| (0..w).map(|x| buf[(x, y)].symbol().to_string()).collect())
            .collect()
    }

    fn ty(name: &str, ns: &str, aliases: &[&str]) -> TypeRow {
        TypeRow {
            def: Definition {
                ty: name.into(),
                namespace: ns.into(),
                display: name.split('.').next().unwrap().trim_end_matches('s').into(),
                columns: vec![Column {
                    name: "Mtu".into(),
                    json_path: "{.mtu}".into(),
                }],
            },
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            all_aliases: aliases.iter().map(|a| a.to_string()).collect(),
        }
    }

    fn state() -> State {
        let mut s = State::new(["10.5.0.2".to_string()]);
        s.handle(Command::Show(Screen::Resources), 12);
        s
    }

    #[test]
    fn types_loading_failing_and_listed() {
        let mut s = state();
        let t = text(&s, 40, 12);
        assert_eq!(t[1], "╔ Resource Types (Enter: select, /: fil╗");
        let head = format!("║TYPE{}NAMESPACE ALIASES║", " ".repeat(17));
        assert_eq!(t[2], head);
        assert_eq!(t[3], format!("║{:<38}║", "Loading..."));
        assert_eq!(t[10], format!("╚{}╝", "═".repeat(38)));
        assert_eq!(frame(&s, 40, 12)[(1, 3)].fg, Color::DarkGray);
        s.apply(Update::Types {
            node: 0,
            result: Err("node 10.5.0.2: denied".into()),
        });
        assert_eq!(
            text(&s, 40, 12)[3],
            format!("║{:<38}║", "node 10.5.0.2: denied")
        );
        assert_eq!(frame(&s, 40, 12)[(1, 3)].fg, Color::Red);
        s.explorer.types = Some(Loaded::Loading);
        s.apply(Update::Types {
            node: 0,
            result: Ok((0..9)
                .map(|i| ty(&format!("T{i}.net.talos.dev"), "network", &["t", "tt"]))
                .collect()),
        });
        // A page of 7 rows under the header: seven down scrolls the list by one.
        for _ in 0..7 {
            s.handle(Command::Down(Step::Line), 12);
        }
        let t = text(&s, 40, 12);
        let line = |i: usize| format!("║T{i}.net.talos.dev     network   t, tt  ║");
        assert_eq!(t[2], head);
        assert_eq!(t[3], line(1));
        assert_eq!(t[9], line(7));
        let buf = frame(&s, 40, 12);
        assert!(buf[(1, 2)].modifier.contains(Modifier::BOLD));
        assert!(buf[(1, 9)].modifier.contains(Modifier::REVERSED));
        assert!(buf[(38, 9)].modifier.contains(Modifier::REVERSED));
        assert!(!buf[(1, 8)].modifier.contains(Modifier::REVERSED));
        assert_eq!(buf[(32, 3)].fg, Color::DarkGray);
        // The filter line under the box; the box gives up its double lines.
        s.handle(Command::Filter, 12);
        s.handle(Command::Type('3'), 12);
        let t = text(&s, 40, 12);
        assert_eq!(t[1], "┌ Resource Types (Enter: select, /: fil┐");
        assert_eq!(t[3], line(3).replace('║', "│"));
        assert_eq!(t[9], format!("└{}┘", "─".repeat(38)));
        assert_eq!(t[10], format!("{:<40}", "filter: 3"));
        assert_eq!(frame(&s, 40, 12)[(0, 10)].fg, Color::Yellow);
    }

    #[test]
    fn a_list_and_a_resources_yaml() {
        let mut s = state();
        s.apply(Update::Types {
            node: 0,
            result: Ok(vec![ty("Links.net.talos.dev", "network", &[])]),
        });
        s.handle(Command::Select, 12);
        let row = |id: &str, phase: &str| {
            Row {
            id: id.into(),
            version: "2".into(),
            phase: phase.into(),
            owner: "network.LinkController".into(),
            columns: vec!["1500".into()],
            value: serde_yaml_ng::from_str(&format!(
                "metadata: {{namespace: network, id: {id}, version: 2}}\nspec: {{mtu: 1500, name: a-very-long-name-that-wraps}}"
            ))
            .unwrap(),
        }
        };
        s.apply(Update::Resources {
            node: 0,
            ty: "Links.net.talos.dev".into(),
            result: Ok(vec![row("lo", "running"), row("eth0", "tearingDown")]),
        });
        let t = text(&s, 60, 12);
        assert_eq!(
            t[1],
            "╔════ Link (ns: network) — Enter: view YAML, Esc: back ════╗"
        );
        assert_eq!(
            t[2],
            "║ID         VERSION PHASE       OWNER                  MTU ║"
        );
        assert_eq!(
            t[3],
            "║eth0       2       tearingDown network.LinkController 1500║"
        );
        assert_eq!(frame(&s, 60, 12)[(20, 3)].fg, Color::Red);
        s.handle(Command::Select, 12);
        let t = text(&s, 30, 12);
        let inner = |l: &str| format!("║{l:<28}║");
        assert_eq!(t[1], "╔ network / eth0 (Esc: back) ╗");
        assert_eq!(t[2], inner("metadata:"));
        assert_eq!(t[7], inner("  mtu: 1500"));
        assert_eq!(t[8], inner("  name: a-very-long-name-tha"));
        assert_eq!(t[9], inner("t-wraps"));
        assert_eq!(frame(&s, 30, 12)[(3, 7)].fg, Color::Cyan);
        assert_eq!(frame(&s, 30, 12)[(8, 7)].fg, Color::Yellow);
        s.handle(Command::Down(Step::Line), 12);
        assert_eq!(text(&s, 30, 12)[2], inner("  namespace: network"));
        s.handle(Command::Back, 12);
        assert_eq!(text(&s, 30, 12)[1].chars().nth(2), Some('L'));
    }
}
