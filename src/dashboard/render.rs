//! Drawing the dashboard: a pure function from the state to a ratatui buffer. Top line as
//! talosctl's header (`<hostname> (<version>): uptime ..., CPU x%, RAM y%`), the screen's body,
//! and talosctl's footer (`[node-a | node-b] --- [Summary] --- [F2: Logs]` on a rule) with the
//! selected node and screen in red.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Widget};

use super::format::{self, NOT_AVAILABLE};
use super::model::{Health, NodeView, Screen, State};

/// A whole frame of `width` × `height` cells.
pub fn frame(state: &State, width: u16, height: u16) -> Buffer {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    render(state, area, &mut buf);
    buf
}

/// Draws `state` into `area` of `buf`.
pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let row = |y: u16| Rect::new(area.x, y, area.width, 1);
    header(state.node(), state.now, row(area.y), buf);
    if area.height < 2 {
        return;
    }
    footer(state, row(area.bottom() - 1), buf);
    let body = Rect::new(area.x, area.y + 1, area.width, area.height - 2);
    match (state.screen, state.node()) {
        (_, None) => {}
        (Screen::Summary, Some(node)) => summary(node, state.cursor, body, buf),
        (Screen::Logs, Some(node)) => logs(state, node, body, buf),
    }
}

fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

fn or_na(v: Option<String>) -> String {
    v.unwrap_or_else(|| NOT_AVAILABLE.to_string())
}

/// The name shown for a node: its hostname, `(no hostname)` when it has none.
fn hostname(node: &NodeView) -> String {
    match node.hostname.as_deref() {
        None => NOT_AVAILABLE.into(),
        Some("") => "(no hostname)".into(),
        Some(h) => h.into(),
    }
}

fn header(node: Option<&NodeView>, now: u64, area: Rect, buf: &mut Buffer) {
    let Some(n) = node else { return };
    let rest = format!(
        " ({}): uptime {}, {}, {} RAM, CPU {}, RAM {}",
        or_na(n.version.clone()),
        or_na(n.boot_time.map(|b| format::uptime(now, b))),
        or_na(n.cpus.as_ref().map(format::cpus)),
        or_na(n.memory.map(|m| format::ibytes(m.total_kib << 10))),
        or_na(n.cpu_usage.map(format::percent)),
        or_na(n.memory_usage().map(format::percent)),
    );
    let line = Line::from(vec![
        Span::styled(hostname(n), bold().fg(Color::Yellow)),
        Span::raw(rest),
    ]);
    buf.set_line(area.x, area.y, &line, area.width);
}

fn footer(state: &State, area: Rect, buf: &mut Buffer) {
    let rule = "─".repeat(usize::from(area.width));
    buf.set_string(area.x, area.y, rule, Style::new());
    let red = Style::new().fg(Color::Red);
    let mut spans = vec![Span::raw("[")];
    for (i, n) in state.nodes.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" | "));
        }
        let style = if i == state.selected {
            red
        } else {
            Style::new()
        };
        spans.push(Span::styled(n.name.clone(), style));
    }
    spans.push(Span::raw("] --- "));
    for (i, s) in Screen::ALL.iter().enumerate() {
        if i > 0 {
            spans.push(Span::raw(" --- "));
        }
        if *s == state.screen {
            spans.extend([Span::raw("["), Span::styled(s.title(), red), Span::raw("]")]);
        } else {
            spans.push(Span::raw(format!("[{}: {}]", s.key(), s.title())));
        }
    }
    buf.set_line(area.x, area.y, &Line::from(spans), area.width);
}

/// Colour of a bar at `share` full.
fn level(share: f64) -> Color {
    if share >= 0.85 {
        Color::Red
    } else if share >= 0.6 {
        Color::Yellow
    } else {
        Color::Green
    }
}

/// ` CPU  ████░░░░ 12.3%<tail>`
fn gauge(label: &str, share: Option<f64>, width: usize, tail: String) -> Line<'static> {
    let mut spans = vec![Span::styled(format!(" {label:<5}"), bold())];
    match share {
        Some(s) => {
            let (full, empty) = format::bar(s, width);
            spans.push(Span::styled(full, Style::new().fg(level(s))));
            spans.push(Span::styled(empty, dim()));
            spans.push(Span::raw(format!(" {:>6}", format::percent(s))));
        }
        None => {
            let (_, empty) = format::bar(0.0, width);
            spans.push(Span::styled(empty, dim()));
            spans.push(Span::raw(format!(" {NOT_AVAILABLE:>6}")));
        }
    }
    spans.push(Span::raw(tail));
    Line::from(spans)
}

fn summary(node: &NodeView, cursor: usize, area: Rect, buf: &mut Buffer) {
    let bar_width = usize::from(area.width.saturating_sub(40)).clamp(10, 40);
    let memory = node
        .memory
        .map(|m| {
            format!(
                "  {} of {}",
                format::ibytes(m.used_kib << 10),
                format::ibytes(m.total_kib << 10)
            )
        })
        .unwrap_or_default();
    let load = node.load.map_or(NOT_AVAILABLE.to_string(), |l| {
        format!("{:.2} {:.2} {:.2}", l[0], l[1], l[2])
    });
    let mut lines = vec![
        gauge("CPU", node.cpu_usage, bar_width, String::new()),
        gauge("RAM", node.memory_usage(), bar_width, memory),
        Line::from(vec![Span::styled(" LOAD ", bold()), Span::raw(load)]),
    ];
    if let Some(e) = &node.error {
        lines.push(Line::styled(format!(" {e}"), Style::new().fg(Color::Red)));
    }
    let top = Rect {
        height: (lines.len() as u16 + 2).min(area.height),
        ..area
    };
    Paragraph::new(lines)
        .block(Block::bordered().title(Span::styled(" Resources ", bold())))
        .render(top, buf);
    let rest = Rect {
        y: top.bottom(),
        height: area.height - top.height,
        ..area
    };
    services(node, cursor, rest, buf);
}

fn state_color(state: &str) -> Color {
    match state {
        "Running" | "Finished" => Color::Green,
        "Failed" | "Stopped" => Color::Red,
        _ => Color::Yellow,
    }
}

fn services(node: &NodeView, cursor: usize, area: Rect, buf: &mut Buffer) {
    if area.height < 3 {
        return;
    }
    let block = Block::bordered()
        .title(Span::styled(" Services ", bold()))
        .title_bottom(Span::styled(" ↑/↓ select · Enter logs ", dim()));
    let inner = block.inner(area);
    block.render(area, buf);
    let id_w = node
        .services
        .iter()
        .map(|s| s.id.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(7, 24)
        + 2;
    let state_w = 11;
    let head = format!(
        " {:<id_w$}{:<state_w$}{:<8}{}",
        "SERVICE", "STATE", "HEALTH", "MESSAGE"
    );
    buf.set_string(inner.x, inner.y, head, bold());
    let rows = usize::from(inner.height.saturating_sub(1));
    if node.services.is_empty() {
        let text = if node.polled {
            " no services listed"
        } else {
            " waiting for the node..."
        };
        buf.set_string(inner.x, inner.y + 1, text, dim());
        return;
    }
    let skip = (cursor + 1).saturating_sub(rows);
    for (i, s) in node.services.iter().enumerate().skip(skip).take(rows) {
        let selected = i == cursor;
        // The highlighted row is one plain reversed bar; the others colour state and health.
        let color = |c: Color| {
            if selected {
                Style::new()
            } else {
                Style::new().fg(c)
            }
        };
        let health_color = match s.health {
            Health::Ok => Color::Green,
            Health::Fail => Color::Red,
            Health::Unknown => Color::Reset,
        };
        let line = Line::from(vec![
            Span::raw(format!(" {:<id_w$}", s.id)),
            Span::styled(
                format!("{:<state_w$}", s.state),
                color(state_color(&s.state)),
            ),
            Span::styled(format!("{:<8}", s.health.text()), color(health_color)),
            Span::raw(s.message.clone()),
        ]);
        let y = inner.y + 1 + (i - skip) as u16;
        buf.set_line(inner.x, y, &line, inner.width);
        if selected {
            let row = Rect::new(inner.x, y, inner.width, 1);
            buf.set_style(row, Style::new().add_modifier(Modifier::REVERSED));
        }
    }
}

fn logs(state: &State, node: &NodeView, area: Rect, buf: &mut Buffer) {
    let view = &state.logs;
    let title = format!(" {} logs: {} ", view.service, hostname(node));
    let block = Block::bordered()
        .title(Span::styled(title, bold()))
        .title_bottom(Span::styled(" ↑/↓ scroll · Esc summary ", dim()));
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = usize::from(inner.height);
    let mut lines: Vec<Line> = Vec::new();
    if let Some(e) = &view.error {
        lines.push(Line::styled(e.clone(), Style::new().fg(Color::Red)));
    } else if !view.loaded {
        lines.push(Line::styled("waiting for the node...", dim()));
    }
    let room = rows.saturating_sub(lines.len());
    let end = view
        .lines
        .len()
        .saturating_sub(view.scroll.min(view.lines.len().saturating_sub(room)));
    let start = end.saturating_sub(room);
    lines.extend(view.lines[start..end].iter().map(|l| Line::raw(l.clone())));
    Paragraph::new(lines).render(inner, buf);
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::super::model::{Cpus, Memory, Sample, Service, Update};
    use super::*;

    /// The text a `width` × `height` terminal shows for `state`.
    fn screen(state: &State, width: u16, height: u16) -> Vec<String> {
        let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
        t.draw(|f| render(state, f.area(), f.buffer_mut())).unwrap();
        let buf = t.backend().buffer();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect()
    }

    fn service(id: &str, state: &str, health: Health, message: &str) -> Service {
        Service {
            id: id.into(),
            state: state.into(),
            health,
            message: message.into(),
        }
    }

    fn state() -> State {
        let mut s = State::new(["10.5.0.2".to_string(), "10.5.0.3".to_string()]);
        s.now = 1_000_000;
        let base = Sample {
            hostname: Some("cp-1".into()),
            version: Some("v1.13.7".into()),
            boot_time: Some(1_000_000 - 3_725),
            cpu: Some(super::super::model::CpuTimes {
                busy: 100.0,
                idle: 900.0,
            }),
            cpus: Some(Cpus {
                count: 4,
                mhz: 2445.406,
            }),
            memory: Some(Memory {
                total_kib: 8 << 20,
                used_kib: 2 << 20,
            }),
            load: Some([0.42, 0.37, 0.3]),
            services: Some(vec![
                service("apid", "Running", Health::Ok, ""),
                service("etcd", "Preparing", Health::Unknown, ""),
                service("kubelet", "Running", Health::Fail, "probe failed"),
            ]),
            error: None,
        };
        s.apply(Update::Sample {
            node: 0,
            sample: base.clone(),
        });
        let mut next = base;
        next.cpu = Some(super::super::model::CpuTimes {
            busy: 125.0,
            idle: 975.0,
        });
        s.apply(Update::Sample {
            node: 0,
            sample: next,
        });
        s
    }

    #[test]
    fn summary_screen() {
        let s = state();
        let lines = screen(&s, 80, 14);
        let want = [
            "cp-1 (v1.13.7): uptime 1h2m5s, 4x2.44GHz, 8.0 GiB RAM, CPU 25.0%, RAM 25.0%     ",
            "┌ Resources ───────────────────────────────────────────────────────────────────┐",
            "│ CPU  ██████████░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░  25.0%                         │",
            "│ RAM  ██████████░░░░░░░░░░░░░░░░░░░░░░░░░░░░░░  25.0%  2.0 GiB of 8.0 GiB     │",
            "│ LOAD 0.42 0.37 0.30                                                          │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            "┌ Services ────────────────────────────────────────────────────────────────────┐",
            "│ SERVICE  STATE      HEALTH  MESSAGE                                          │",
            "│ apid     Running    OK                                                       │",
            "│ etcd     Preparing  ?                                                        │",
            "│ kubelet  Running    Fail    probe failed                                     │",
            "│                                                                              │",
            "└ ↑/↓ select · Enter logs ─────────────────────────────────────────────────────┘",
            "[10.5.0.2 | 10.5.0.3] --- [Summary] --- [F2: Logs]──────────────────────────────",
        ];
        assert_eq!(lines, want);
    }

    #[test]
    fn the_selection_and_colours_are_styles() {
        let s = state();
        let buf = frame(&s, 80, 14);
        // The hostname is yellow and bold, the selected node and screen red.
        assert_eq!(buf[(0, 0)].fg, Color::Yellow);
        assert!(buf[(0, 0)].modifier.contains(Modifier::BOLD));
        assert_eq!(buf[(1, 13)].fg, Color::Red);
        assert_eq!(buf[(12, 13)].fg, Color::Reset);
        assert_eq!(buf[(28, 13)].fg, Color::Red);
        // The cursor's row (apid) is highlighted across the pane.
        assert!(buf[(2, 8)].modifier.contains(Modifier::REVERSED));
        assert!(buf[(70, 8)].modifier.contains(Modifier::REVERSED));
        assert!(!buf[(2, 9)].modifier.contains(Modifier::REVERSED));
        // State and health in colour, except on the highlighted row.
        assert_eq!(buf[(20, 8)].fg, Color::Reset);
        assert_eq!(buf[(20, 9)].fg, Color::Yellow);
        assert_eq!(buf[(20, 10)].fg, Color::Green);
        assert_eq!(buf[(22, 10)].fg, Color::Red);
    }

    #[test]
    fn an_unreached_node_shows_what_is_missing() {
        let mut s = State::new(["10.5.0.9".to_string()]);
        s.apply(Update::Sample {
            node: 0,
            sample: Sample {
                error: Some("node 10.5.0.9: connection refused".into()),
                ..Sample::default()
            },
        });
        let lines = screen(&s, 60, 12);
        assert_eq!(
            lines[0],
            "n/a (n/a): uptime n/a, n/a, n/a RAM, CPU n/a, RAM n/a       "
        );
        assert_eq!(
            lines[2],
            "│ CPU  ░░░░░░░░░░░░░░░░░░░░    n/a                         │"
        );
        assert_eq!(
            lines[5],
            "│ node 10.5.0.9: connection refused                        │"
        );
        assert_eq!(
            lines[9],
            "│ no services listed                                       │"
        );
        assert_eq!(
            lines[11],
            "[10.5.0.9] --- [Summary] --- [F2: Logs]─────────────────────"
        );
    }

    #[test]
    fn logs_screen_follows_the_end_and_scrolls() {
        let mut s = state();
        s.handle(
            super::super::input::Command::Down(super::super::input::Step::Line),
            10,
        );
        s.handle(super::super::input::Command::Open, 10);
        s.apply(Update::Logs {
            node: 0,
            service: "etcd".into(),
            result: Ok((1..=9).map(|i| format!("etcd line {i}")).collect()),
        });
        let want = [
            "cp-1 (v1.13.7): uptime 1h2m5s, 4x2.44GHz, 8.0 GiB RAM, CPU 25.0%, RAM 25.0%     ",
            "┌ etcd logs: cp-1 ─────────────────────────────────────────────────────────────┐",
            "│etcd line 6                                                                   │",
            "│etcd line 7                                                                   │",
            "│etcd line 8                                                                   │",
            "│etcd line 9                                                                   │",
            "└ ↑/↓ scroll · Esc summary ────────────────────────────────────────────────────┘",
            "[10.5.0.2 | 10.5.0.3] --- [F1: Summary] --- [Logs]──────────────────────────────",
        ];
        assert_eq!(screen(&s, 80, 8), want);
        s.handle(super::super::input::Command::Top, 8);
        let lines = screen(&s, 80, 8);
        assert!(lines[2].starts_with("│etcd line 1 "), "{}", lines[2]);
        assert!(lines[5].starts_with("│etcd line 4 "), "{}", lines[5]);
    }

    #[test]
    fn logs_screen_says_why_it_is_empty() {
        let mut s = state();
        s.handle(super::super::input::Command::Show(Screen::Logs), 8);
        let lines = screen(&s, 50, 6);
        assert_eq!(
            lines[1],
            "┌ apid logs: cp-1 ───────────────────────────────┐"
        );
        assert_eq!(
            lines[2],
            "│waiting for the node...                         │"
        );
        s.apply(Update::Logs {
            node: 0,
            service: "apid".into(),
            result: Err("node 10.5.0.2: Logs: not authorized".into()),
        });
        let lines = screen(&s, 50, 6);
        assert_eq!(
            lines[2],
            "│node 10.5.0.2: Logs: not authorized             │"
        );
    }
}
