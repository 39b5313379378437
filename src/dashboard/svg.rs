//! A ratatui buffer as an SVG picture: one monospace cell per buffer cell on a dark terminal
//! background, runs of equally styled cells as one `<text>` stretched to exactly their cells
//! (so glyphs from a fallback font still line up), box-drawing characters as lines (so borders
//! join), backgrounds as rectangles.
//! Used for the README's picture of the dashboard.

use std::fmt::Write as _;

use ratatui::buffer::{Buffer, Cell};
use ratatui::style::{Color, Modifier};

/// Cell size and font size in pixels, and the margin around the cells.
const CELL_W: f64 = 8.4;
const CELL_H: f64 = 18.0;
const FONT: f64 = 14.0;
const MARGIN: f64 = 12.0;
/// The terminal's own colours (what `Color::Reset` means).
const BACKGROUND: &str = "#1d1f21";
const FOREGROUND: &str = "#d0d3d4";

/// The 16 ANSI colours, as a dark-theme terminal shows them.
const ANSI: [&str; 16] = [
    "#1d1f21", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#abb2bf",
    "#5c6370", "#ff7b86", "#b5e890", "#ffd68a", "#8cc8ff", "#de9bf0", "#7fd3dd", "#ffffff",
];

/// `color` as an SVG colour; `None` for the terminal default.
fn hex(color: Color) -> Option<String> {
    let ansi = |i: usize| Some(ANSI[i].to_string());
    match color {
        Color::Reset => None,
        Color::Black => ansi(0),
        Color::Red => ansi(1),
        Color::Green => ansi(2),
        Color::Yellow => ansi(3),
        Color::Blue => ansi(4),
        Color::Magenta => ansi(5),
        Color::Cyan => ansi(6),
        Color::Gray => ansi(7),
        Color::DarkGray => ansi(8),
        Color::LightRed => ansi(9),
        Color::LightGreen => ansi(10),
        Color::LightYellow => ansi(11),
        Color::LightBlue => ansi(12),
        Color::LightMagenta => ansi(13),
        Color::LightCyan => ansi(14),
        Color::White => ansi(15),
        Color::Rgb(r, g, b) => Some(format!("#{r:02x}{g:02x}{b:02x}")),
        Color::Indexed(i) if i < 16 => ansi(usize::from(i)),
        Color::Indexed(i) if i >= 232 => {
            let v = 8 + 10 * (i - 232);
            Some(format!("#{v:02x}{v:02x}{v:02x}"))
        }
        Color::Indexed(i) => {
            let i = i - 16;
            let level = |c: u8| if c == 0 { 0 } else { 55 + 40 * c };
            let (r, g, b) = (level(i / 36), level(i / 6 % 6), level(i % 6));
            Some(format!("#{r:02x}{g:02x}{b:02x}"))
        }
    }
}

/// What a run of cells shares: text colour, background (`None` = the terminal's) and weight.
#[derive(PartialEq)]
struct Look {
    fg: String,
    bg: Option<String>,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
}

fn look(cell: &Cell) -> Look {
    let (mut fg, mut bg) = (hex(cell.fg), hex(cell.bg));
    let m = cell.modifier;
    if m.contains(Modifier::REVERSED) {
        let fore = fg.unwrap_or_else(|| FOREGROUND.to_string());
        fg = Some(bg.unwrap_or_else(|| BACKGROUND.to_string()));
        bg = Some(fore);
    }
    Look {
        fg: fg.unwrap_or_else(|| FOREGROUND.to_string()),
        bg,
        bold: m.contains(Modifier::BOLD),
        dim: m.contains(Modifier::DIM),
        italic: m.contains(Modifier::ITALIC),
        underline: m.contains(Modifier::UNDERLINED),
    }
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The arms of a box-drawing character (left, right, up, down), drawn as lines so borders
/// join whatever font the viewer has.
fn arms(symbol: &str) -> Option<&'static str> {
    Some(match symbol {
        "─" => "lr",
        "│" => "ud",
        "┌" => "rd",
        "┐" => "ld",
        "└" => "ru",
        "┘" => "lu",
        "├" => "udr",
        "┤" => "udl",
        "┬" => "lrd",
        "┴" => "lru",
        "┼" => "lrud",
        _ => return None,
    })
}

/// Numbers without needless decimals (`12`, `8.4`).
fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The picture of `buf`.
pub fn to_svg(buf: &Buffer) -> String {
    let area = buf.area;
    let width = MARGIN * 2.0 + CELL_W * f64::from(area.width);
    let height = MARGIN * 2.0 + CELL_H * f64::from(area.height);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace" font-size="{f}" xml:space="preserve">"#,
        w = num(width),
        h = num(height),
        f = num(FONT),
    );
    let _ = writeln!(
        out,
        r#"<rect width="100%" height="100%" rx="6" fill="{BACKGROUND}"/>"#
    );
    for row in 0..area.height {
        let y = area.y + row;
        let mut x = area.x;
        while x < area.right() {
            let first = look(&buf[(x, y)]);
            let start = x;
            let mut text = String::new();
            let mut lines = String::new();
            while x < area.right() && look(&buf[(x, y)]) == first {
                let symbol = buf[(x, y)].symbol();
                match arms(symbol) {
                    Some(arms) => {
                        text.push(' ');
                        let cx = MARGIN + CELL_W * (f64::from(x - area.x) + 0.5);
                        let cy = MARGIN + CELL_H * (f64::from(row) + 0.5);
                        for arm in arms.chars() {
                            let (to, end) = match arm {
                                'l' => ('H', cx - CELL_W / 2.0),
                                'r' => ('H', cx + CELL_W / 2.0),
                                'u' => ('V', cy - CELL_H / 2.0),
                                _ => ('V', cy + CELL_H / 2.0),
                            };
                            let _ = write!(lines, "M{} {}{to}{}", num(cx), num(cy), num(end));
                        }
                    }
                    None => text.push_str(symbol),
                }
                x += 1;
            }
            let cells = f64::from(x - start);
            let left = MARGIN + CELL_W * f64::from(start - area.x);
            let top = MARGIN + CELL_H * f64::from(row);
            if let Some(bg) = &first.bg {
                let _ = writeln!(
                    out,
                    r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{bg}"/>"#,
                    num(left),
                    num(top),
                    num(cells * CELL_W),
                    num(CELL_H),
                );
            }
            if !lines.is_empty() {
                let _ = writeln!(
                    out,
                    r#"<path d="{lines}" stroke="{}" fill="none"/>"#,
                    first.fg
                );
            }
            // Only the visible part: some renderers drop edge spaces and would stretch the
            // glyphs over the whole run.
            let lead = text.chars().take_while(|c| *c == ' ').count();
            let shown = text.trim_matches(' ');
            if shown.is_empty() {
                continue;
            }
            let cells = shown.chars().count() as f64;
            let left = left + CELL_W * lead as f64;
            let mut attrs = format!(r#" fill="{}""#, first.fg);
            if first.bold {
                attrs.push_str(r#" font-weight="bold""#);
            }
            if first.dim {
                attrs.push_str(r#" opacity="0.6""#);
            }
            if first.italic {
                attrs.push_str(r#" font-style="italic""#);
            }
            if first.underline {
                attrs.push_str(r#" text-decoration="underline""#);
            }
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" textLength="{}" lengthAdjust="spacingAndGlyphs"{attrs}>{}</text>"#,
                num(left),
                num(top + CELL_H * 0.75),
                num(cells * CELL_W),
                escape(shown),
            );
        }
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;
    use ratatui::style::Style;

    use super::*;

    #[test]
    fn cells_become_runs_of_text_and_backgrounds() {
        let mut buf = Buffer::empty(Rect::new(0, 0, 6, 2));
        buf.set_string(
            0,
            0,
            "a<b",
            Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD),
        );
        buf.set_string(4, 0, "ok", Style::new().add_modifier(Modifier::REVERSED));
        buf.set_string(0, 1, "──", Style::new().fg(Color::Rgb(1, 2, 255)));
        buf.set_string(4, 1, "│x", Style::new());
        let want = concat!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="74.4" height="60" viewBox="0 0 74.4 60" font-family="'DejaVu Sans Mono', 'Menlo', 'Consolas', monospace" font-size="14" xml:space="preserve">"#,
            "\n",
            r##"<rect width="100%" height="100%" rx="6" fill="#1d1f21"/>"##,
            "\n",
            r##"<text x="12" y="25.5" textLength="25.2" lengthAdjust="spacingAndGlyphs" fill="#e5c07b" font-weight="bold">a&lt;b</text>"##,
            "\n",
            r##"<rect x="45.6" y="12" width="16.8" height="18" fill="#d0d3d4"/>"##,
            "\n",
            r##"<text x="45.6" y="25.5" textLength="16.8" lengthAdjust="spacingAndGlyphs" fill="#1d1f21">ok</text>"##,
            "\n",
            r##"<path d="M16.2 39H12M16.2 39H20.4M24.6 39H20.4M24.6 39H28.8" stroke="#0102ff" fill="none"/>"##,
            "\n",
            r##"<path d="M49.8 39V30M49.8 39V48" stroke="#d0d3d4" fill="none"/>"##,
            "\n",
            r##"<text x="54" y="43.5" textLength="8.4" lengthAdjust="spacingAndGlyphs" fill="#d0d3d4">x</text>"##,
            "\n",
            "</svg>\n",
        );
        assert_eq!(to_svg(&buf), want);
    }

    #[test]
    fn palette_colours() {
        assert_eq!(hex(Color::Reset), None);
        assert_eq!(hex(Color::Indexed(9)).as_deref(), Some("#ff7b86"));
        assert_eq!(hex(Color::Indexed(16)).as_deref(), Some("#000000"));
        assert_eq!(hex(Color::Indexed(231)).as_deref(), Some("#ffffff"));
        assert_eq!(hex(Color::Indexed(255)).as_deref(), Some("#eeeeee"));
    }
}
