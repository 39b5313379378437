//! The Summary screen as talosctl lays it out: seven rows of three panels side by side
//! (Talos, Kubernetes, network; widths 3:2:3, each text one row down and one column in), then
//! the node's kernel log under a `── Logs ──` rule, following its end, `...` until the node
//! answers and the error in red when it cannot be read.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Style};

use super::model::{NodeView, SUMMARY_TOP_ROWS};
use super::panels::{self, Field, Panel};
use super::render::{bold, rule, wrap};

/// What talosctl shows before any data.
const NO_DATA: &str = "...";

/// Column widths of a grid with these proportions over `width` cells, the last taking what
/// rounding leaves.
pub fn columns(width: u16, proportions: &[u16]) -> Vec<u16> {
    let total: u16 = proportions.iter().sum();
    let mut out: Vec<u16> = proportions
        .iter()
        .map(|p| (u32::from(width) * u32::from(*p) / u32::from(total)) as u16)
        .collect();
    let used: u16 = out.iter().sum();
    if let Some(last) = out.last_mut() {
        *last += width - used;
    }
    out
}

pub fn render(node: &NodeView, area: Rect, buf: &mut Buffer) {
    let top_h = SUMMARY_TOP_ROWS.min(area.height);
    let r = &node.resources;
    let panels = [
        panels::talos(r),
        panels::kubernetes(r, node.kubelet_healthy()),
        panels::network(r),
    ];
    let mut x = area.x;
    for (p, w) in panels.iter().zip(columns(area.width, &[3, 2, 3])) {
        panel(p, Rect::new(x, area.y, w, top_h), buf);
        x += w;
    }
    if area.height <= top_h {
        return;
    }
    let rest = Rect::new(area.x, area.y + top_h, area.width, area.height - top_h);
    rule(Some("Logs"), rest, buf);
    if rest.height < 2 {
        return;
    }
    let pane = Rect::new(
        rest.x + 1,
        rest.y + 1,
        rest.width.saturating_sub(2),
        rest.height - 1,
    );
    logs(node, pane, buf);
}

/// One panel's fields, names padded to the longest, wrapped within the panel.
fn panel(p: &Panel, area: Rect, buf: &mut Buffer) {
    if area.height < 2 || area.width < 2 {
        return;
    }
    let width = usize::from(area.width - 1);
    let name_w = p.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
    let mut y = area.y + 1;
    for (name, value) in p {
        let value_style = match value {
            Field::Text(_) => Style::new(),
            Field::Good(_) => Style::new().fg(Color::Green),
            Field::Bad(_) => Style::new().fg(Color::Red),
        };
        let line = format!("{name:<name_w$} {}", value.text());
        for (i, row) in wrap(&line, width).into_iter().enumerate() {
            if y >= area.bottom() {
                return;
            }
            buf.set_string(area.x + 1, y, &row, value_style);
            if i == 0 {
                buf.set_string(area.x + 1, y, *name, bold());
            }
            y += 1;
        }
    }
}

/// The kernel log's last rows (less what is scrolled up), wrapped to the pane.
fn logs(node: &NodeView, area: Rect, buf: &mut Buffer) {
    let log = &node.kernel;
    let width = usize::from(area.width);
    let mut rows: Vec<(String, Style)> = Vec::new();
    if !log.loaded {
        rows.push((NO_DATA.into(), Style::new()));
    }
    let end = log.lines.len().saturating_sub(log.scroll);
    for l in &log.lines[..end] {
        rows.extend(wrap(l, width).into_iter().map(|r| (r, Style::new())));
    }
    if let Some(e) = &log.error {
        if log.scroll == 0 {
            let red = Style::new().fg(Color::Red);
            rows.extend(wrap(e, width).into_iter().map(|r| (r, red)));
        }
    }
    let skip = rows.len().saturating_sub(usize::from(area.height));
    for (i, (text, style)) in rows.into_iter().skip(skip).enumerate() {
        buf.set_string(area.x, area.y + i as u16, text, style);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_columns_share_the_width() {
        assert_eq!(columns(80, &[3, 2, 3]), [30, 20, 30]);
        assert_eq!(columns(100, &[3, 2, 3]), [37, 25, 38]);
    }
}
